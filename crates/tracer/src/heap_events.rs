//! Heap events that an allocation hook could not apply to the segment
//! table (segments.rs) because another thread held its lock: kept here
//! without a lock, and applied in the order they happened by the next
//! thread that takes the table's lock, before anything else it does there.
//! A hook never waits for a preempted holder, and the table still learns of
//! every block (unless all [`SLOTS`] are taken).
//!
//! A block freed while its allocation still waits here takes the
//! allocation back: a temporary allocated and freed while the lock was
//! busy leaves nothing behind.

use std::sync::atomic::{
    AtomicU8, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};

/// Events held at most.
pub const SLOTS: usize = 128;

/// The length of an event that frees a block. (No block that length is
/// ever allocated.)
pub const FREED: usize = usize::MAX;

const EMPTY: u8 = 0;
/// Being written, taken or taken back, by the one thread that claimed it.
const CLAIMED: u8 = 1;
const READY: u8 = 2;

struct Slot {
    state: AtomicU8,
    /// When it happened, among the events ([`HeapEvents::clock`]).
    order: AtomicU64,
    start: AtomicUsize,
    len: AtomicUsize,
}

impl Slot {
    /// Claims the slot if it is in `state`: whether it was.
    fn claim(&self, state: u8) -> bool {
        self.state.load(Relaxed) == state
            && self
                .state
                .compare_exchange(state, CLAIMED, Acquire, Relaxed)
                .is_ok()
    }
}

/// An event: (order, start, length or [`FREED`]).
pub type Event = (u64, usize, usize);

pub struct HeapEvents {
    slots: [Slot; SLOTS],
    /// Events left and not yet applied (or taken back): none while 0.
    held: AtomicUsize,
    clock: AtomicU64,
}

impl HeapEvents {
    pub const fn new() -> HeapEvents {
        HeapEvents {
            slots: [const {
                Slot {
                    state: AtomicU8::new(EMPTY),
                    order: AtomicU64::new(0),
                    start: AtomicUsize::new(0),
                    len: AtomicUsize::new(0),
                }
            }; SLOTS],
            held: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
        }
    }

    /// Whether events may be waiting or being applied. (An event of a
    /// block is here before the block is handed to the application, or
    /// freed back to the allocator, and counts until the table has it:
    /// whoever sees the block next sees this say so.)
    #[inline]
    pub fn any(&self) -> bool {
        self.held.load(Relaxed) != 0
    }

    /// Keeps the allocation of `len` bytes at `start`: false when every
    /// slot is taken.
    pub fn allocated(&self, start: usize, len: usize) -> bool {
        debug_assert_ne!(len, FREED);
        self.push(start, len)
    }

    /// Keeps the free of the block at `start`: false when every slot is
    /// taken.
    pub fn freed(&self, start: usize) -> bool {
        self.push(start, FREED)
    }

    fn push(&self, start: usize, len: usize) -> bool {
        for slot in &self.slots {
            if slot.claim(EMPTY) {
                self.held.fetch_add(1, Relaxed);
                // The block's events are ordered by its allocator: its free
                // here precedes its next allocation, which takes a later
                // number.
                slot.order.store(self.clock.fetch_add(1, Relaxed), Relaxed);
                slot.start.store(start, Relaxed);
                slot.len.store(len, Relaxed);
                slot.state.store(READY, Release);
                return true;
            }
        }
        false
    }

    /// Takes back the waiting allocation of the block at `start`, freed
    /// now: whether there was one. (A waiting allocation of a block is its
    /// last event: its free would have taken it back, and a thread that
    /// applies the table's events takes them all.)
    pub fn take_back_allocation(&self, start: usize) -> bool {
        if !self.any() {
            return false;
        }
        for slot in &self.slots {
            if slot.start.load(Relaxed) == start && slot.claim(READY) {
                // Read again: claimed, it cannot change now.
                if slot.start.load(Relaxed) == start && slot.len.load(Relaxed) != FREED {
                    slot.state.store(EMPTY, Release);
                    self.held.fetch_sub(1, Relaxed);
                    return true;
                }
                slot.state.store(READY, Release);
            }
        }
        false
    }

    /// Takes every waiting event into `out`, oldest first: how many. One
    /// thread at a time (the table's lock holder), which says when it has
    /// applied them ([`HeapEvents::applied`]).
    pub fn take(&self, out: &mut [Event; SLOTS]) -> usize {
        let mut n = 0;
        for slot in &self.slots {
            if slot.claim(READY) {
                out[n] = (
                    slot.order.load(Relaxed),
                    slot.start.load(Relaxed),
                    slot.len.load(Relaxed),
                );
                n += 1;
                slot.state.store(EMPTY, Release);
            }
        }
        out[..n].sort_unstable_by_key(|e| e.0);
        n
    }

    /// The `n` events taken are in the table now.
    pub fn applied(&self, n: usize) {
        self.held.fetch_sub(n, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(events: &HeapEvents) -> Vec<(usize, usize)> {
        let mut out = [(0, 0, 0); SLOTS];
        let n = events.take(&mut out);
        events.applied(n);
        out[..n].iter().map(|&(_, s, l)| (s, l)).collect()
    }

    #[test]
    fn events_come_out_in_the_order_they_happened() {
        let events = HeapEvents::new();
        assert!(!events.any());
        assert!(events.allocated(0x100, 16));
        assert!(events.allocated(0x200, 32));
        assert!(events.freed(0x50));
        assert!(events.any());
        assert_eq!(taken(&events), [(0x100, 16), (0x200, 32), (0x50, FREED)]);
        assert!(!events.any(), "all taken");
        assert!(taken(&events).is_empty());
        // Slots freed at the front are reused, the order still kept.
        assert!(events.freed(0x200));
        assert!(events.allocated(0x200, 8));
        assert_eq!(taken(&events), [(0x200, FREED), (0x200, 8)]);
    }

    #[test]
    fn a_free_takes_back_its_blocks_waiting_allocation_only() {
        let events = HeapEvents::new();
        assert!(!events.take_back_allocation(0x100), "nothing waits");
        assert!(events.freed(0x100));
        assert!(
            !events.take_back_allocation(0x100),
            "a free is not an allocation"
        );
        assert!(events.allocated(0x100, 64));
        assert!(events.allocated(0x300, 64));
        assert!(events.take_back_allocation(0x100));
        assert!(!events.take_back_allocation(0x100), "taken back once");
        assert_eq!(taken(&events), [(0x100, FREED), (0x300, 64)]);
    }

    #[test]
    fn taken_events_count_until_applied() {
        let events = HeapEvents::new();
        assert!(events.allocated(0x100, 16));
        let mut out = [(0, 0, 0); SLOTS];
        assert_eq!(events.take(&mut out), 1);
        assert!(
            events.any(),
            "a free of the block still takes the slow path"
        );
        assert!(!events.take_back_allocation(0x100), "taken, not waiting");
        events.applied(1);
        assert!(!events.any());
    }

    #[test]
    fn a_full_table_says_so() {
        let events = HeapEvents::new();
        for i in 0..SLOTS {
            assert!(events.allocated(0x1000 + 16 * i, 16));
        }
        assert!(!events.allocated(0x9000, 16));
        assert!(!events.freed(0x9000));
        assert!(events.take_back_allocation(0x1000));
        assert!(events.freed(0x9000), "a slot taken back is free again");
        assert_eq!(taken(&events).len(), SLOTS);
    }

    #[test]
    fn threads_keep_every_event() {
        let events = HeapEvents::new();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let events = &events;
                scope.spawn(move || {
                    for i in 0..20 {
                        let start = (t + 1) << 20 | i << 4;
                        assert!(events.allocated(start, 16));
                        if i % 2 == 0 {
                            assert!(events.take_back_allocation(start));
                        }
                    }
                });
            }
        });
        let mut left = taken(&events);
        left.sort_unstable();
        let expected: Vec<_> = (0..4usize)
            .flat_map(|t| {
                (1..20usize)
                    .step_by(2)
                    .map(move |i| ((t + 1) << 20 | i << 4, 16))
            })
            .collect();
        assert_eq!(left, expected);
    }
}
