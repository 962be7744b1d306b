//! The test binaries' global allocator: the system's, noting per thread the
//! largest single allocation since the last [`reset`], so that a test can
//! tell a reader that sizes a vector by a forged count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Noting;

#[global_allocator]
static NOTING: Noting = Noting;

thread_local! {
    // A const-initialised Cell needs no allocation and no destructor, so the
    // allocator may use it at any time, also while threads start and end.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

/// Starts noting afresh on this thread.
pub(crate) fn reset() {
    let _ = LARGEST.try_with(|l| l.set(0));
}

/// The largest allocation this thread made since [`reset`], in bytes.
pub fn largest_allocation_since_reset() -> usize {
    LARGEST.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Noting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's promises about `layout` hold for System too.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` came from this allocator, that is from System.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
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
