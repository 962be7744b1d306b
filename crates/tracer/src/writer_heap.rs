//! The tracer's own heap (its global allocator): glibc's malloc, through
//! the hooks of alloc.rs, except that the large blocks the tracer frees
//! while it writes out (a part of the trace, a checkpoint of the crash
//! journal: [`call::writing_out`](crate::call::writing_out)) are kept for
//! the next time it writes out, up to the half of the memory budget that
//! writing out may take (budget.rs).
//!
//! Writing a part of 125,000 new signatures takes about 16 MiB of
//! buffers (the signatures' statistics, their bytes, the grammar, the
//! compressed sections). glibc maps blocks that large on their own and
//! unmaps them when they are freed, so every part faulted all of them in
//! again: 0.03 page faults a call of a program whose calls never repeat,
//! a few tens of ns of each of its calls on a virtual machine. A kept block
//! is given again to a block asked for while writing out that it holds
//! (the smallest that does), a block grown while writing out stays where
//! it is while it fits, and the blocks a writing out did not take are
//! freed as it ends (so what is kept is what the last one freed, within
//! what writing out may take). Nothing else changes: blocks asked for
//! outside writing out, small ones, and those over the limit are glibc's
//! as before.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Blocks from this size up are kept (glibc maps them on their own from
/// 128 KiB up, or more once it has seen such blocks freed).
const LARGE: usize = 1 << 20;
/// Most blocks kept at once (a part's writer frees about ten this large).
const SLOTS: usize = 16;
/// glibc's malloc aligns every block to 16 bytes: a kept block serves a
/// layout that asks for no more.
const MALLOC_ALIGN: usize = 16;

/// Bytes the kept blocks may hold in all: none until the tracer knows its
/// budget ([`keep_up_to`]).
static LIMIT: AtomicUsize = AtomicUsize::new(0);

/// A kept block: its address (0: none), its usable bytes, and the
/// writing out that freed it.
#[derive(Clone, Copy)]
struct Block {
    address: usize,
    usable: usize,
    freed_in: u64,
}

const NO_BLOCK: Block = Block {
    address: 0,
    usable: 0,
    freed_in: 0,
};

/// The blocks kept, the number of the writing out under way (or next),
/// and whether it asked glibc for a large block (none kept held it).
struct Kept {
    blocks: [Block; SLOTS],
    writing: u64,
    missed: bool,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept::EMPTY);

/// Keeps up to `bytes` of freed blocks (the writing half of the budget).
pub fn keep_up_to(bytes: usize) {
    LIMIT.store(bytes, Relaxed);
}

/// A writing out ended. If a large block it asked for was not among those
/// kept, the blocks kept before it that it did not take are freed (they
/// did not fit what it asked for, and would otherwise stay on top of what
/// the next one takes); those it freed are kept. (One that asked for no
/// large block, such as most checkpoints of the crash journal, changes
/// nothing.)
pub fn written() {
    let stale = match kept() {
        Some(mut kept) => kept.end_writing(),
        None => return,
    };
    for block in stale.iter().filter(|b| b.address != 0) {
        // SAFETY: a block of glibc's, which no one else holds.
        unsafe { libc::free(block.address as *mut libc::c_void) };
    }
}

/// The kept blocks, if no other thread has them (never waits: a thread
/// that finds them taken, or a forked child whose parent had them, asks
/// glibc instead).
fn kept() -> Option<std::sync::MutexGuard<'static, Kept>> {
    KEPT.try_lock().ok()
}

/// Whether a block of `size` bytes with this alignment is one to keep or
/// take: large, asked for while the tracer writes out.
fn ours(size: usize, align: usize) -> bool {
    size >= LARGE && align <= MALLOC_ALIGN && crate::call::writing() && LIMIT.load(Relaxed) != 0
}

impl Kept {
    const EMPTY: Kept = Kept {
        blocks: [NO_BLOCK; SLOTS],
        writing: 0,
        missed: false,
    };

    /// The smallest kept block of at least `size` usable bytes, taken
    /// (`None` notes a miss).
    fn take(&mut self, size: usize) -> Option<usize> {
        let Some((slot, _)) = self
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.address != 0 && b.usable >= size)
            .min_by_key(|(_, b)| b.usable)
        else {
            self.missed = true;
            return None;
        };
        Some(std::mem::replace(&mut self.blocks[slot], NO_BLOCK).address)
    }

    /// Keeps the block at `address` of `usable` bytes if a slot is free
    /// and the blocks kept stay within `limit` bytes.
    fn keep(&mut self, address: usize, usable: usize, limit: usize) -> bool {
        let Some(slot) = self.blocks.iter().position(|b| b.address == 0) else {
            return false;
        };
        if self.bytes() + usable > limit {
            return false;
        }
        self.blocks[slot] = Block {
            address,
            usable,
            freed_in: self.writing,
        };
        true
    }

    /// Usable bytes of the blocks kept (an empty slot has none).
    fn bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.usable).sum()
    }

    /// Ends the writing out under way: if it missed, gives back the
    /// blocks kept before it (no longer kept); keeps those it freed.
    fn end_writing(&mut self) -> [Block; SLOTS] {
        let mut stale = [NO_BLOCK; SLOTS];
        if self.missed {
            for (block, out) in self.blocks.iter_mut().zip(&mut stale) {
                if block.address != 0 && block.freed_in < self.writing {
                    *out = std::mem::replace(block, NO_BLOCK);
                }
            }
        }
        self.writing += 1;
        self.missed = false;
        stale
    }
}

/// A kept block of at least `size` usable bytes, taken.
fn take(size: usize) -> Option<*mut u8> {
    kept()?.take(size).map(|address| address as *mut u8)
}

/// Keeps the block at `p` (one of glibc's) if there is room for it.
fn keep(p: *mut u8) -> bool {
    // SAFETY: `p` is a live block of glibc's malloc.
    let usable = unsafe { libc::malloc_usable_size(p.cast()) };
    kept().is_some_and(|mut kept| kept.keep(p as usize, usable, LIMIT.load(Relaxed)))
}

/// See the module's documentation.
pub struct WriterHeap;

// SAFETY: every block is one of glibc's, given by `System` or kept after
// it gave it (and then given to one owner at a time), and glibc's `free`
// and `realloc` take any of its blocks whatever size they were asked for.
unsafe impl GlobalAlloc for WriterHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ours(layout.size(), layout.align())
            && let Some(p) = take(layout.size())
        {
            return p;
        }
        // SAFETY: as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if ours(layout.size(), layout.align())
            && let Some(p) = take(layout.size())
        {
            // SAFETY: the block holds `layout.size()` bytes.
            unsafe { p.write_bytes(0, layout.size()) };
            return p;
        }
        // SAFETY: as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if ours(layout.size(), layout.align()) && keep(p) {
            return;
        }
        // SAFETY: as the caller's.
        unsafe { System.dealloc(p, layout) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ours(new_size, layout.align()) {
            // SAFETY: `p` is a live block of glibc's malloc.
            if new_size <= unsafe { libc::malloc_usable_size(p.cast()) } {
                return p;
            }
            if let Some(q) = take(new_size) {
                // SAFETY: both blocks hold the bytes copied, and are two.
                unsafe { std::ptr::copy_nonoverlapping(p, q, layout.size()) };
                // SAFETY: as the caller's.
                unsafe { self.dealloc(p, layout) };
                return q;
            }
        }
        // SAFETY: as the caller's.
        unsafe { System.realloc(p, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest block that holds a request is given, once.
    #[test]
    fn the_smallest_block_that_holds_the_size_is_taken() {
        let mut kept = Kept::EMPTY;
        assert!(kept.keep(0x1000, 4 << 20, 64 << 20));
        assert!(kept.keep(0x2000, 2 << 20, 64 << 20));
        assert!(kept.keep(0x3000, 8 << 20, 64 << 20));
        assert_eq!(kept.bytes(), 14 << 20);
        assert_eq!(kept.take(3 << 20), Some(0x1000));
        assert_eq!(kept.take(3 << 20), Some(0x3000));
        assert_eq!(kept.take(3 << 20), None, "no block left holds 3 MiB");
        assert_eq!(kept.take(1 << 20), Some(0x2000));
        assert_eq!(kept.bytes(), 0);
        assert_eq!(kept.take(1), None);
    }

    /// Blocks are kept only within the limit, and in the slots there are.
    #[test]
    fn no_more_is_kept_than_the_limit_and_the_slots() {
        let mut kept = Kept::EMPTY;
        assert!(kept.keep(0x1000, 6 << 20, 10 << 20));
        assert!(!kept.keep(0x2000, 5 << 20, 10 << 20), "kept past the limit");
        assert!(kept.keep(0x2000, 4 << 20, 10 << 20));
        assert_eq!(kept.bytes(), 10 << 20);
        let mut kept = Kept::EMPTY;
        for i in 0..SLOTS {
            assert!(kept.keep(0x1000 * (i + 1), LARGE, usize::MAX));
        }
        assert!(
            !kept.keep(0x100_0000, LARGE, usize::MAX),
            "kept with no slot free"
        );
        assert!(kept.take(LARGE).is_some());
        assert!(kept.keep(0x100_0000, LARGE, usize::MAX));
    }

    /// A block a writing out did not take is given back as it ends if it
    /// asked for one that none held; one it freed stays for the next.
    #[test]
    fn blocks_left_untaken_by_a_writing_out_that_missed_are_given_back() {
        let mut kept = Kept::EMPTY;
        assert!(kept.keep(0x1000, 2 << 20, usize::MAX));
        assert!(kept.keep(0x2000, 3 << 20, usize::MAX));
        assert!(kept.end_writing().iter().all(|b| b.address == 0));
        // One that takes a block and misses none gives back nothing.
        assert_eq!(kept.take(3 << 20), Some(0x2000));
        assert!(kept.keep(0x2000, 3 << 20, usize::MAX));
        assert!(kept.end_writing().iter().all(|b| b.address == 0));
        assert_eq!(kept.bytes(), 5 << 20);
        // The next takes one, misses a larger one, and frees another.
        assert_eq!(kept.take(3 << 20), Some(0x2000));
        assert_eq!(kept.take(9 << 20), None);
        assert!(kept.keep(0x3000, 5 << 20, usize::MAX));
        let stale: Vec<usize> = kept
            .end_writing()
            .iter()
            .map(|b| b.address)
            .filter(|&a| a != 0)
            .collect();
        assert_eq!(stale, [0x1000]);
        assert_eq!(kept.bytes(), 5 << 20);
        assert_eq!(kept.take(1 << 20), Some(0x3000));
    }
}
