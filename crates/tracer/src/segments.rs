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
//! The table is shared by every thread. A hook that finds its lock busy
//! spins a few times; if it is still busy it leaves its event to the next
//! holder (heap_events.rs) and returns, so a hook never waits for a holder
//! that was preempted. A hook inside the table's own update (an allocation
//! of the tree's) or in a signal handler that interrupted one, on the
//! thread holding the lock, neither waits nor leaves its event.
//!
//! Most of an application's heap blocks are temporaries that no MPI call
//! ever sees, so the hooks keep them off the ordered tree that lookups
//! search: a new block goes to a short list of young blocks and, freed
//! soon after, leaves it again; the young blocks enter the tree only when
//! the list is full or an MPI call looks a buffer up. A free of a block
//! that was never tracked (MPI's own, inside a call) is told apart without
//! the lock by a table of counts by address ([`Filter`]).

use crate::heap_events::{self, FREED, HeapEvents};
use crate::objects::IdPool;
use spin::mutex::{SpinMutex, SpinMutexGuard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// The id of a heap block that no MPI call has used yet.
const UNNAMED: u64 = u64::MAX;

/// Young blocks the list holds (see the module's comment).
const YOUNG: usize = 16;

struct Segments {
    /// Heap blocks: start -> (length, id or [`UNNAMED`]).
    blocks: BTreeMap<usize, (usize, u64)>,
    /// Heap blocks not in `blocks` yet, oldest first: (start, length), all
    /// unnamed; the first `young_len` of them.
    young: [(usize, usize); YOUNG],
    young_len: usize,
    /// Addresses outside any block, sorted: (address, id), gone only when a
    /// block is found to cover one. (Few, and added only by lookups: a
    /// sorted list is the cheapest to search from the allocation hook.)
    loose: Vec<(usize, u64)>,
    ids: IdPool,
    /// Counts the blocks of `blocks` and `young` by start.
    filter: &'static Filter,
    /// Events of hooks that found the lock busy, not applied yet.
    events: &'static HeapEvents,
}

/// A spin lock: its release is a store, where a mutex that may wake a
/// waiter needs a read-modify-write (about 5 ns of each hook here); a hook
/// does not wait for it long ([`wait_for_lock`]), a lookup yields until it
/// is free. Taken through [`held`], which notes the holder.
static SEGMENTS: SpinMutex<Option<Segments>, spin::relax::Yield> = SpinMutex::new(None);
/// The [`thread_tag`](crate::call::thread_tag) of the thread holding
/// [`SEGMENTS`], 0 while none does: set after the lock is taken and cleared
/// before it is released, so a thread that reads its own tag here holds it.
static HOLDER: AtomicUsize = AtomicUsize::new(0);
/// Bumped whenever an address may encode otherwise (see [`generation`]):
/// cached lookups older than that may name a block that no longer exists.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static FILTER: Filter = Filter::new();
static EVENTS: HeapEvents = HeapEvents::new();

/// Set when the free hook could neither take the table's lock nor leave
/// its event: the table may then hold a block that is gone, which a new one
/// may overlap (see [`Segments::add`]). It stays set.
static MISSED_FREE: AtomicBool = AtomicBool::new(false);

/// Changes whenever an address may encode otherwise (a named block freed,
/// a stale block or a loose address found under a new block, or an event
/// left for the lock's next holder, which may be either): while it stays
/// the same, a buffer address encodes as it did.
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Relaxed)
}

/// The table's blocks counted by start, in slots chosen by a hash of the
/// start: a zero count says, without the table's lock, that no block
/// starts there. Written under the lock only; a count that reaches
/// [`Filter::FULL`] stays there (it then only ever says "maybe").
struct Filter([AtomicU8; Filter::SLOTS]);

impl Filter {
    const BITS: u32 = 20;
    const SLOTS: usize = 1 << Filter::BITS;
    const FULL: u8 = u8::MAX;

    const fn new() -> Filter {
        Filter([const { AtomicU8::new(0) }; Filter::SLOTS])
    }

    #[inline]
    fn slot(&self, start: usize) -> &AtomicU8 {
        // Blocks are 16-byte aligned: the bits above those, mixed.
        let h = ((start >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - Filter::BITS);
        &self.0[h as usize]
    }

    /// Whether a tracked block may start at `start`.
    #[inline]
    fn may_hold(&self, start: usize) -> bool {
        self.slot(start).load(Relaxed) != 0
    }

    fn add(&self, start: usize) {
        let slot = self.slot(start);
        let n = slot.load(Relaxed);
        if n < Filter::FULL {
            slot.store(n + 1, Relaxed);
        }
    }

    fn remove(&self, start: usize) {
        let slot = self.slot(start);
        let n = slot.load(Relaxed);
        if n > 0 && n < Filter::FULL {
            slot.store(n - 1, Relaxed);
        }
    }
}

impl Segments {
    fn new(filter: &'static Filter, events: &'static HeapEvents) -> Segments {
        Segments {
            blocks: BTreeMap::new(),
            young: [(0, 0); YOUNG],
            young_len: 0,
            loose: Vec::new(),
            ids: IdPool::default(),
            filter,
            events,
        }
    }

    /// Applies the events hooks left while the lock was busy, in their
    /// order: before anything else a holder of the lock does.
    #[inline]
    fn catch_up(&mut self) {
        if self.events.any() {
            self.apply_events();
        }
    }

    #[cold]
    #[inline(never)]
    fn apply_events(&mut self) {
        let mut taken = [(0, 0, 0); heap_events::SLOTS];
        let n = self.events.take(&mut taken);
        for &(_, start, len) in &taken[..n] {
            if len == FREED {
                self.remove(start);
            } else {
                self.add(start, len);
            }
        }
        self.events.applied(n);
    }

    /// A heap block of `len` bytes was allocated at `start`. It joins the
    /// young ones unless it may replace or cover what lookups have seen: a
    /// block there already (one whose free the hook missed), a loose
    /// address, or, once a free was missed, a block that is gone. Then it
    /// enters the tree at once, so that the encoding of an address changes
    /// (with the generation) before the next call, never between a call's
    /// key and its encoding.
    #[inline(always)]
    fn add(&mut self, start: usize, len: usize) {
        let len = len.max(1);
        if self.filter.may_hold(start) {
            if let Some(young) = self.young[..self.young_len]
                .iter_mut()
                .find(|(s, _)| *s == start)
            {
                young.1 = len;
                return;
            }
        } else if !MISSED_FREE.load(Relaxed) && !self.covers_loose(start, len) {
            if self.young_len == YOUNG {
                self.settle();
            }
            self.young[self.young_len] = (start, len);
            self.young_len += 1;
            self.filter.add(start);
            return;
        }
        self.enter(start, len);
        self.filter.add(start);
    }

    /// Whether a loose address lies in the `len` bytes at `start`.
    #[inline]
    fn covers_loose(&self, start: usize, len: usize) -> bool {
        self.loose
            .get(self.loose_from(start))
            .is_some_and(|&(addr, _)| addr - start < len)
    }

    /// The place in `loose` of the first address at `addr` or above.
    #[inline]
    fn loose_from(&self, addr: usize) -> usize {
        self.loose.partition_point(|&(a, _)| a < addr)
    }

    /// The heap block at `start` was freed: whether it was tracked.
    #[inline(always)]
    fn remove(&mut self, start: usize) -> bool {
        let young = &mut self.young[..self.young_len];
        // Newest first: a temporary is freed soon after it was allocated.
        if let Some(i) = young.iter().rposition(|&(s, _)| s == start) {
            // (Mostly the last one: nothing to move.)
            for j in i + 1..young.len() {
                young[j - 1] = young[j];
            }
            self.young_len -= 1;
            self.filter.remove(start);
            return true;
        }
        let Some((_, id)) = self.blocks.remove(&start) else {
            return false;
        };
        self.filter.remove(start);
        self.forget(id);
        true
    }

    /// Moves the young blocks into the tree, oldest first.
    fn settle(&mut self) {
        for i in 0..self.young_len {
            let (start, len) = self.young[i];
            self.enter(start, len);
        }
        self.young_len = 0;
    }

    /// Enters a block of `len` bytes at `start` in the tree (counted in the
    /// filter by the caller). Live blocks do not overlap, so a block or a
    /// loose address it overlaps is stale: a free or an allocation that a
    /// hook missed (its lock was busy, or MPI allocated the memory). That
    /// goes, and an address it held encodes otherwise from now on, so the
    /// lookups cached before are stale too.
    fn enter(&mut self, start: usize, len: usize) {
        let end = start.saturating_add(len);
        let before = self.blocks.range(..start).next_back();
        let first = match before {
            Some((&s, &(l, _))) if s.saturating_add(l) > start => s,
            _ => start,
        };
        while let Some((&s, _)) = self.blocks.range(first..end).next() {
            if let Some((_, id)) = self.blocks.remove(&s) {
                self.filter.remove(s);
                self.forget(id);
            }
        }
        let (lo, hi) = (self.loose_from(start), self.loose_from(end));
        if lo < hi {
            for (_, id) in self.loose.drain(lo..hi) {
                self.ids.give_back(id);
            }
            GENERATION.fetch_add(1, Relaxed);
        }
        self.blocks.insert(start, (len, UNNAMED));
    }

    /// The segment of `addr` (named now if it was not).
    fn find(&mut self, addr: usize, generation: u64) -> Segment {
        self.settle();
        if let Some((&start, &mut (len, ref mut id))) = self.blocks.range_mut(..=addr).next_back() {
            if addr - start < len {
                if *id == UNNAMED {
                    *id = self.ids.take();
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
        let at = self.loose_from(addr);
        let id = match self.loose.get(at) {
            Some(&(a, id)) if a == addr => id,
            _ => {
                let id = self.ids.take();
                self.loose.insert(at, (addr, id));
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

/// A heap block was allocated (from a hook). (Out of line: the hook's
/// other cases save no registers.)
#[inline(never)]
pub fn allocated(start: usize, len: usize) {
    match SEGMENTS.try_lock() {
        Some(guard) => held(guard).get().add(start, len),
        None => allocated_while_busy(start, len),
    }
}

/// The busy case, out of line on its own: a hook's fast path that shared it
/// kept the lock's state in memory, 5 instructions a hook more.
#[cold]
#[inline(never)]
fn allocated_while_busy(start: usize, len: usize) {
    match wait_for_lock() {
        Hook::Locked(mut table) => table.get().add(start, len),
        Hook::Busy => {
            // (Not tracked when every slot is taken.)
            if EVENTS.allocated(start, len) {
                event_left();
            }
        }
        Hook::Nested => {}
    }
}

/// A heap block was freed (from a hook).
#[inline]
pub fn freed(start: usize) {
    if (FILTER.may_hold(start) || EVENTS.any()) && !crate::call::frees_own_blocks() {
        remove(start);
    }
}

#[inline(never)]
fn remove(start: usize) {
    match SEGMENTS.try_lock() {
        Some(guard) => {
            held(guard).get().remove(start);
        }
        None => removed_while_busy(start),
    }
}

#[cold]
#[inline(never)]
fn removed_while_busy(start: usize) {
    match wait_for_lock() {
        Hook::Locked(mut table) => {
            table.get().remove(start);
        }
        Hook::Busy => {
            // Its allocation may be being applied now: the free is left
            // whether or not the table counts the block yet.
            if EVENTS.take_back_allocation(start) {
                // Never in the table: nothing changes.
            } else if EVENTS.freed(start) {
                event_left();
            } else {
                MISSED_FREE.store(true, Relaxed);
            }
        }
        Hook::Nested => {}
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
        let generation = generation();
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
    held(SEGMENTS.lock()).get().find(addr, generation)
}

/// The table, locked, with its holder noted in [`HOLDER`].
struct Held(SpinMutexGuard<'static, Option<Segments>>);

impl Held {
    /// The table, with the events left while the lock was busy applied.
    fn get(&mut self) -> &mut Segments {
        let table = self
            .0
            .get_or_insert_with(|| Segments::new(&FILTER, &EVENTS));
        table.catch_up();
        table
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Before the guard, the field, releases the lock.
        HOLDER.store(0, Relaxed);
    }
}

#[inline]
fn held(guard: SpinMutexGuard<'static, Option<Segments>>) -> Held {
    HOLDER.store(crate::call::thread_tag(), Relaxed);
    Held(guard)
}

/// An event was left: until it is applied, a call must not be recalled
/// with a buffer's encoding from before it (the call memo and the lookup
/// cache are keyed by the generation), but look its buffers up, which
/// applies it.
#[cold]
fn event_left() {
    GENERATION.fetch_add(1, Relaxed);
}

/// Spins a hook waits for a busy lock before it leaves its event: the
/// table's lock is held for a lookup or a hook's update, well under a
/// microsecond, unless its holder was preempted.
const HOOK_SPINS: u32 = 64;

/// How a hook found the table's lock.
enum Hook {
    Locked(Held),
    /// Held by another thread, past a few spins.
    Busy,
    /// Held by this thread: the hook is inside the table's update.
    Nested,
}

/// The table's lock for a hook that found it busy: after a few spins,
/// unless this thread holds it.
#[cold]
#[inline(never)]
fn wait_for_lock() -> Hook {
    if HOLDER.load(Relaxed) == crate::call::thread_tag() {
        return Hook::Nested;
    }
    for _ in 0..HOOK_SPINS {
        std::hint::spin_loop();
        if let Some(guard) = SEGMENTS.try_lock() {
            return Hook::Locked(held(guard));
        }
    }
    Hook::Busy
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with a filter of its own (the hooks' is shared by the
    /// process).
    fn table() -> Segments {
        // SAFETY: zero is a valid AtomicU8.
        let filter: Box<Filter> = unsafe { Box::new_zeroed().assume_init() };
        Segments::new(Box::leak(filter), Box::leak(Box::new(HeapEvents::new())))
    }

    const HEAP: usize = 0x5555_0000_0000;

    fn in_tree(s: &Segments, start: usize) -> bool {
        s.blocks.contains_key(&start)
    }

    #[test]
    fn a_temporary_block_never_enters_the_tree() {
        let mut s = table();
        for i in 0..1000 {
            let start = HEAP + (i % 3) * 64;
            s.add(start, 48);
            assert!(s.filter.may_hold(start));
            assert!(s.remove(start));
            assert!(!s.filter.may_hold(start), "its count went back to zero");
        }
        assert!(s.blocks.is_empty());
        assert_eq!(s.young_len, 0);
    }

    #[test]
    fn young_blocks_settle_when_the_list_is_full_and_are_freed_from_the_tree() {
        let mut s = table();
        let starts: Vec<usize> = (0..=YOUNG).map(|i| HEAP + i * 4096).collect();
        for &start in &starts {
            s.add(start, 4096);
        }
        // The 17th block found the list full: the first 16 went to the tree.
        assert!(starts[..YOUNG].iter().all(|&b| in_tree(&s, b)));
        assert!(!in_tree(&s, starts[YOUNG]));
        assert_eq!(s.young_len, 1);
        // A block freed from the middle of the tree, another from the list.
        assert!(s.remove(starts[3]));
        assert!(s.remove(starts[YOUNG]));
        assert!(!in_tree(&s, starts[3]) && s.young_len == 0);
        assert!(!s.remove(starts[3]), "freed twice: no longer tracked");
        assert!(!s.filter.may_hold(starts[3]));
    }

    #[test]
    fn a_lookup_names_the_block_around_an_address_and_a_free_gives_its_id_back() {
        let mut s = table();
        let (a, b) = (HEAP, HEAP + 1024);
        s.add(a, 1000);
        s.add(b, 64);
        let g = generation();
        // Young blocks are settled by the lookup, found by interior addresses.
        let sa = s.find(a + 100, g);
        assert_eq!((sa.start, sa.len, sa.id), (a, 1000, 0));
        let sb = s.find(b + 63, g);
        assert_eq!((sb.start, sb.id), (b, 1));
        assert_eq!(s.find(a + 999, g).id, 0, "named once");
        // Past its end: an address of its own.
        let loose = s.find(a + 1000, g);
        assert_eq!((loose.start, loose.len, loose.id), (a + 1000, 1, 2));
        // Freeing a named block gives its id back and makes cached lookups
        // stale; freeing an unnamed one does neither.
        s.remove(a);
        assert!(generation() > g);
        let c = HEAP + 8192;
        s.add(c, 16);
        let g = generation();
        s.add(HEAP + 9000, 16);
        s.remove(HEAP + 9000);
        assert_eq!(s.find(c, g).id, 0, "the smallest free id, a's");
    }

    #[test]
    fn a_block_whose_free_was_missed_is_replaced() {
        let mut s = table();
        // Young, then in the tree: allocated again at the same start
        // without the free in between (the hook found the lock busy).
        for settle in [false, true] {
            s.add(HEAP, 32);
            if settle {
                s.settle();
            }
            s.add(HEAP, 64);
            assert_eq!(s.find(HEAP + 40, 0).start, HEAP, "the new length");
            assert!(s.remove(HEAP));
            assert!(!s.remove(HEAP), "one block, not two");
            assert!(!s.filter.may_hold(HEAP));
        }
    }

    #[test]
    fn events_left_while_the_lock_was_busy_are_applied_in_their_order() {
        let mut s = table();
        s.add(HEAP, 64);
        let first = s.find(HEAP, 0);
        let g = generation();
        // While another thread held the lock: the named block freed, a
        // larger one allocated in its place, a temporary allocated and
        // freed.
        assert!(s.events.freed(HEAP));
        assert!(s.events.allocated(HEAP, 128));
        assert!(s.events.allocated(HEAP + 4096, 32));
        assert!(s.events.take_back_allocation(HEAP + 4096));
        s.catch_up();
        assert!(!s.events.any());
        assert!(generation() > g, "the named block is gone");
        let again = s.find(HEAP + 100, 0);
        assert_eq!(
            (again.start, again.len, again.id),
            (HEAP, 128, first.id),
            "the new block, with the id the free gave back"
        );
        assert!(
            !s.filter.may_hold(HEAP + 4096),
            "the temporary left nothing"
        );
        assert_eq!(s.blocks.len(), 1);
    }

    #[test]
    fn a_hook_that_finds_the_lock_busy_leaves_its_event_and_a_new_generation() {
        // The process's table (the hooks themselves are off in tests: no
        // MPI), held by this thread while another's hooks run.
        let start = 0x7777_0000_0000;
        let hook_while_held = |hook: fn(usize)| {
            let table = held(SEGMENTS.lock());
            let g = generation();
            std::thread::spawn(move || hook(start)).join().unwrap();
            assert!(generation() > g, "calls must look their buffers up");
            assert!(EVENTS.any());
            drop(table);
        };
        hook_while_held(|start| allocated(start, 64));
        let s = locate(start + 10, generation());
        assert_eq!((s.start, s.len), (start, 64), "applied before the lookup");
        assert!(!EVENTS.any());
        hook_while_held(freed);
        let s = locate(start + 10, generation());
        assert_eq!((s.start, s.len), (start + 10, 1), "the block is gone");
        assert_ne!(s.id, UNNAMED);
    }

    #[test]
    fn a_block_over_a_stale_one_or_a_loose_address_replaces_them_and_stales_lookups() {
        let mut s = table();
        // A named block whose free was missed, and an address MPI's memory
        // held (loose), both where a new block now lies.
        s.add(HEAP + 64, 256);
        let stale = s.find(HEAP + 64, 0);
        let loose = s.find(HEAP + 512, 0);
        assert_eq!((stale.id, loose.start, loose.len), (0, HEAP + 512, 1));
        let g = generation();
        s.add(HEAP, 1024);
        s.settle();
        assert!(generation() > g, "lookups cached before are stale");
        for addr in [HEAP + 64, HEAP + 512] {
            let now = s.find(addr, 0);
            assert_eq!((now.start, now.len), (HEAP, 1024), "{addr:#x}");
        }
        assert_eq!(s.blocks.len(), 1);
        assert!(
            !s.filter.may_hold(HEAP + 64),
            "the stale block is uncounted"
        );
        // Both ids were given back: the new block took the smallest.
        assert_eq!(s.find(HEAP, 0).id, 0);
        // A new block that overlaps nothing leaves the others.
        s.add(HEAP + 4096, 64);
        s.settle();
        assert_eq!(s.blocks.len(), 2);
        assert_eq!(s.find(HEAP + 100, 0).id, 0);
    }

    #[test]
    fn a_free_of_a_block_never_tracked_is_told_apart_without_the_table() {
        let mut s = table();
        s.add(HEAP, 32);
        assert!(!s.filter.may_hold(HEAP + 16));
        assert!(!s.remove(HEAP + 16));
        assert!(
            s.filter.may_hold(HEAP),
            "the tracked block is still counted"
        );
    }

    #[test]
    fn a_full_count_stays_full() {
        let s = table();
        for _ in 0..Filter::FULL {
            s.filter.add(HEAP);
        }
        s.filter.remove(HEAP);
        assert_eq!(s.filter.slot(HEAP).load(Relaxed), Filter::FULL);
        assert!(s.filter.may_hold(HEAP));
    }
}
