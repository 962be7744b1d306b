//! Memory segments: buffers are recorded as (segment id, offset), never as
//! addresses, so that equal behaviour on different ranks encodes equally.
//! Heap blocks become segments through the allocation hooks (alloc.rs);
//! any other address (stack, static data) is a segment of its own. A
//! segment gets its id when an MPI call first uses it, from one pool,
//! smallest free first, and gives it back when its block is freed: the
//! ids count the buffers MPI sees, not every allocation of the process,
//! so ranks that use their buffers alike agree even where one rank
//! allocates more (rank 0 reading input, formatting output).
//!
//! The table is shared by every thread. The hooks only ever *try* its lock:
//! when it is busy (another thread, or an allocation made while the table
//! itself is being updated) the block is simply not tracked, so a hook can
//! never block or recurse.

use crate::objects::IdPool;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, TryLockError};

/// The id of a heap block that no MPI call has used yet.
const UNNAMED: u64 = u64::MAX;

#[derive(Default)]
struct Segments {
    /// Heap blocks: start -> (length, id or [`UNNAMED`]).
    blocks: BTreeMap<usize, (usize, u64)>,
    /// Addresses outside any block: address -> id (never freed).
    loose: FxHashMap<usize, u64>,
    ids: IdPool,
}

static SEGMENTS: Mutex<Option<Segments>> = Mutex::new(None);
/// Number of tracked blocks: lets `free` skip the table when it is empty.
static TRACKED: AtomicUsize = AtomicUsize::new(0);
/// Bumped whenever a tracked block is freed: cached lookups older than
/// that may name a block that no longer exists.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Changes whenever a tracked block is freed: while it stays the same, a
/// buffer address encodes as it did.
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Relaxed)
}

impl Segments {
    /// A block is gone: its id, if it had one, is free again, and cached
    /// lookups that may name it are stale. (An unnamed block was never
    /// looked up: nothing to invalidate.)
    fn forget(&mut self, id: u64) {
        if id != UNNAMED {
            self.ids.give_back(id);
            GENERATION.fetch_add(1, Relaxed);
        }
    }
}

/// A heap block was allocated (from a hook).
pub fn allocated(start: usize, len: usize) {
    if let Some(mut guard) = try_lock() {
        let s = guard.get_or_insert_with(Segments::default);
        if let Some((_, old)) = s.blocks.insert(start, (len.max(1), UNNAMED)) {
            s.forget(old);
        } else {
            TRACKED.fetch_add(1, Relaxed);
        }
    }
}

/// A heap block was freed (from a hook).
pub fn freed(start: usize) {
    if TRACKED.load(Relaxed) == 0 || crate::call::frees_own_blocks() {
        return;
    }
    if let Some(mut guard) = try_lock() {
        if let Some(s) = guard.as_mut() {
            if let Some((_, id)) = s.blocks.remove(&start) {
                TRACKED.fetch_sub(1, Relaxed);
                s.forget(id);
            }
        }
    }
}

/// A segment: `len` bytes from `start` (a loose address is 1 byte long).
#[derive(Clone, Copy, Default)]
struct Segment {
    start: usize,
    len: usize,
    id: u64,
    generation: u64,
}

/// The last few segments looked up: buffers are reused call after call,
/// and a hit costs neither the lock nor the tree.
#[derive(Default)]
pub struct SegmentCache {
    recent: [Segment; 4],
    next: usize,
}

impl SegmentCache {
    /// The segment and offset of `addr`: its heap block, or an id of its own.
    #[inline]
    pub fn locate(&mut self, addr: usize) -> (u64, u64) {
        let generation = GENERATION.load(Relaxed);
        for s in &self.recent {
            if s.generation == generation && s.len > 0 && addr.wrapping_sub(s.start) < s.len {
                return (s.id, (addr - s.start) as u64);
            }
        }
        let s = locate(addr, generation);
        self.recent[self.next] = s;
        self.next = (self.next + 1) % self.recent.len();
        (s.id, (addr - s.start) as u64)
    }
}

fn locate(addr: usize, generation: u64) -> Segment {
    let mut guard = SEGMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let s = guard.get_or_insert_with(Segments::default);
    if let Some((&start, &mut (len, ref mut id))) = s.blocks.range_mut(..=addr).next_back() {
        if addr - start < len {
            if *id == UNNAMED {
                *id = s.ids.take();
            }
            let id = *id;
            return Segment {
                start,
                len,
                id,
                generation,
            };
        }
    }
    let id = match s.loose.get(&addr) {
        Some(&id) => id,
        None => {
            let id = s.ids.take();
            s.loose.insert(addr, id);
            id
        }
    };
    Segment {
        start: addr,
        len: 1,
        id,
        generation,
    }
}

fn try_lock() -> Option<std::sync::MutexGuard<'static, Option<Segments>>> {
    match SEGMENTS.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}
