//! A counting allocator for tests that bound an analysis's memory: a test
//! binary installs [`Counting`] as its global allocator and measures with
//! [`peak_of`] the most bytes allocated at once while a closure runs.
//! Counts are process-wide, so a test binary that measures should hold a
//! single test (nothing else allocating meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes allocated now and at most.
pub struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = NOW.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's promises about `layout` hold for System too.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            NOW.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from this allocator, that is from System.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// The most bytes allocated at once while `f` runs, beyond those allocated
/// before (0 unless [`Counting`] is the global allocator).
pub fn peak_of(f: impl FnOnce()) -> usize {
    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed).saturating_sub(before)
}

/// Checks that `peaks` (calls, bytes) at (about) doubling numbers of calls do not
/// grow with the calls: memory that grows with the calls grows at every
/// doubling, by more than `slack` bytes once the calls are many enough,
/// while a table that doubles once (its capacity crossing a threshold)
/// grows at one doubling only. So some doubling must add at most `slack`,
/// and no peak may pass `bound`.
pub fn assert_bounded(what: &str, peaks: &[(u64, usize)], slack: usize, bound: usize) {
    let mib = |b: usize| b as f64 / f64::from(1 << 20);
    let shown: Vec<String> = peaks
        .iter()
        .map(|(calls, bytes)| format!("{:.1} MiB at {calls} calls", mib(*bytes)))
        .collect();
    eprintln!("{what}: {}", shown.join(", "));
    assert!(
        peaks.windows(2).all(|w| 10 * w[1].0 >= 19 * w[0].0),
        "{what}: the calls must (about) double"
    );
    let least = peaks
        .windows(2)
        .map(|w| w[1].1.saturating_sub(w[0].1))
        .min()
        .expect("at least two peaks");
    assert!(
        least <= slack,
        "{what}: memory grows with the calls: {}",
        shown.join(", ")
    );
    for &(calls, bytes) in peaks {
        assert!(
            bytes < bound,
            "{what}: {:.1} MiB at {calls} calls",
            mib(bytes)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::assert_bounded;

    const MIB: usize = 1 << 20;

    #[test]
    fn one_table_doubling_is_bounded() {
        assert_bounded(
            "step",
            &[(100, 40 * MIB), (200, 40 * MIB), (400, 43 * MIB)],
            2 * MIB,
            64 * MIB,
        );
    }

    #[test]
    #[should_panic(expected = "memory grows with the calls")]
    fn memory_that_grows_at_every_doubling_is_not() {
        assert_bounded(
            "linear",
            &[(100, 10 * MIB), (200, 13 * MIB), (400, 19 * MIB)],
            2 * MIB,
            64 * MIB,
        );
    }

    #[test]
    #[should_panic(expected = "70.0 MiB at 100 calls")]
    fn a_peak_past_the_bound_is_not() {
        assert_bounded(
            "big",
            &[(100, 70 * MIB), (200, 70 * MIB), (400, 70 * MIB)],
            2 * MIB,
            64 * MIB,
        );
    }
}
