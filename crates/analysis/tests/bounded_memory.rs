//! The analyses hold what is in flight, not the calls: the most memory
//! `critical-path` and `profile` allocate while reading a trace (beyond
//! the trace as opened) is the same for 200,000 calls as for 800,000,
//! and under a bound. Counted by this test binary's allocator; one test,
//! so that nothing else allocates meanwhile.

mod common;

use mpigram_analysis::critical_path;
use mpigram_analysis::profile::{self, Options};
use mpigram_analysis::timeline::Source;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

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

#[global_allocator]
static COUNTING: Counting = Counting;

/// The most bytes allocated at once while `f` runs, beyond those allocated before.
fn peak_of(f: impl FnOnce()) -> usize {
    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed) - before
}

#[test]
fn critical_path_and_profile_hold_what_is_in_flight_not_the_calls() {
    let mut peaks = Vec::new();
    for iterations in [25_000u64, 100_000] {
        let trace = common::two_ranks(iterations);
        let path = peak_of(|| {
            let a = critical_path::analyse(&trace, Source::Best, false).unwrap();
            assert_eq!(a.calls, 2 * (2 + 4 * iterations));
            assert!(a.path.segments.len() as u64 > iterations);
        });
        let profile = peak_of(|| {
            let p = profile::profile(&trace, &Options::default()).unwrap();
            assert_eq!(p.calls, 2 * (2 + 4 * iterations));
            assert!(p.wait_states.len() as u64 >= iterations / 3);
        });
        peaks.push((iterations, path, profile));
    }
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    let (small, large) = (peaks[0], peaks[1]);
    for (what, s, l) in [
        ("critical-path", small.1, large.1),
        ("profile", small.2, large.2),
    ] {
        eprintln!(
            "{what}: {:.1} MiB at {} calls, {:.1} MiB at {} calls",
            mib(s),
            2 * (2 + 4 * small.0),
            mib(l),
            2 * (2 + 4 * large.0)
        );
        // Four times the calls: the same memory, within 2 MiB (the 256 KiB
        // write buffers of the temporary files fill up), under 64 MiB.
        assert!(l <= s + (2 << 20), "{what}: {} then {} bytes", s, l);
        assert!(l < 64 << 20, "{what}: {l} bytes");
    }
}
