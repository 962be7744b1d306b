//! The test binaries' global allocator: the system's, noting per thread the
//! largest single allocation since the last [`reset`], so that a test can
//! tell a reader that sizes a vector by a forged count, and the most bytes
//! the thread held at once (what it freed of its own allocations taken off),
//! so that a test can tell a reader that holds many decoded sections at once.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Noting;

#[global_allocator]
static NOTING: Noting = Noting;

thread_local! {
    // A const-initialised Cell needs no allocation and no destructor, so the
    // allocator may use it at any time, also while threads start and end.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    /// Bytes allocated minus bytes freed on this thread since [`reset`], and
    /// the most it reached.
    static HELD: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

fn hold(change: isize) {
    let _ = HELD.try_with(|h| {
        let (now, most) = h.get();
        let now = now.saturating_add(change);
        h.set((now, most.max(now)));
    });
}

/// Starts noting afresh on this thread.
pub(crate) fn reset() {
    let _ = LARGEST.try_with(|l| l.set(0));
    let _ = HELD.try_with(|h| h.set((0, 0)));
}

/// The most bytes this thread held at once since [`reset`] (of what it
/// allocated since then).
pub fn most_held_since_reset() -> usize {
    HELD.try_with(|h| h.get().1.max(0) as usize).unwrap_or(0)
}

/// The largest allocation this thread made since `reset`, in bytes.
pub fn largest_allocation_since_reset() -> usize {
    LARGEST.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Noting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        hold(layout.size() as isize);
        // SAFETY: the caller's promises about `layout` hold for System too.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        hold(layout.size() as isize);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        hold(new_size as isize - layout.size() as isize);
        // SAFETY: `ptr` came from this allocator, that is from System.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        hold(-(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn notes_the_largest_allocation_of_this_thread() {
        super::reset();
        let v: Vec<u8> = Vec::with_capacity(12345);
        assert!(super::largest_allocation_since_reset() >= 12345);
        drop(v);
        super::reset();
        assert_eq!(super::largest_allocation_since_reset(), 0);
    }
}
