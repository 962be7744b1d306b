//! The live requests of a process, and their symbolic ids.
//!
//! A request gets its id from a pool per call signature (the creating call
//! without its request), so completion order does not change ids: (pool,
//! index), the index being the pool's smallest free one. The table is
//! keyed by handle value *and* creation order: MPICH hands out one shared
//! built-in handle for every request that completed at once (an eager
//! MPI_Isend, one to MPI_PROC_NULL), so several live requests may share a
//! value; they are matched first in, first out.
//!
//! Every MPI_Isend and MPI_Irecv enters a request and every completion
//! takes one out, so this is on the hot path of message-rate codes (a
//! window of 64 MPI_Isend, then one MPI_Waitall). A new request that is
//! neither persistent nor an MPI_Comm_idup's is first only appended to a
//! *log*, in creation order, as its handle, index and *class* (pool, whether
//! its status is defined, communicator: one number for all the requests of
//! a kind of call); the log moves into the table (slots reused through a
//! free list, each handle value mapping to a chain of its live requests'
//! slots, oldest first) at the first lookup. A completion call whose
//! requests are exactly the logged ones, in order, while the table holds
//! none, completes them without their ever entering the table
//! ([`RequestTable::complete_logged`]): the window's requests cost an
//! append of two words each and no hashing. Nothing allocates once the
//! program's most requests at once have been seen.

use crate::intern::Interner;
use crate::objects::IdPool;
use mpigram_mpispec::RequestRef;
use rustc_hash::FxHashMap;

/// No slot: the end of a chain or of the free list.
const NIL: u32 = u32::MAX;

/// A request as the completing call sees it.
#[derive(Clone, Copy)]
pub struct RequestInfo {
    pub id: RequestRef,
    pub comm: Option<u64>,
    pub status_defined: bool,
    pub idup_comm: Option<u64>,
}

impl RequestInfo {
    /// MPI_REQUEST_NULL, or a request never seen.
    pub const NULL: RequestInfo = RequestInfo {
        id: RequestRef::Null,
        comm: None,
        status_defined: false,
        idup_comm: None,
    };
}

/// How a request was created: what completing it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestKind {
    pub persistent: bool,
    /// Whether MPI defines the status of its completion (receives, I/O,
    /// generalized requests) or leaves its fields undefined (sends,
    /// collectives, RMA).
    pub status_defined: bool,
}

/// No communicator, in a [`LiveRequest`] (no handle has this value: a
/// request is copied on every MPI_Isend, so it is kept small).
const NO_COMM: u64 = u64::MAX;

#[derive(Clone, Copy)]
struct LiveRequest {
    pool: u32,
    index: u32,
    kind: RequestKind,
    /// The communicator of the operation, for relative status sources.
    comm: u64,
    /// The communicator of MPI_Comm_idup whose id is agreed at completion.
    idup_comm: u64,
}

impl LiveRequest {
    fn info(&self) -> RequestInfo {
        let comm = |c| (c != NO_COMM).then_some(c);
        RequestInfo {
            id: RequestRef::Pooled {
                pool: self.pool.into(),
                index: self.index.into(),
            },
            comm: comm(self.comm),
            status_defined: self.kind.status_defined,
            idup_comm: comm(self.idup_comm),
        }
    }
}

struct Slot {
    request: LiveRequest,
    /// The next younger live request with the same handle; in a free slot,
    /// the next free slot.
    next: u32,
}

/// The live requests of one handle value, as slots.
#[derive(Clone, Copy)]
struct Chain {
    oldest: u32,
    newest: u32,
}

/// A request created since the log was last moved into the table.
#[derive(Clone, Copy)]
struct Logged {
    handle: u64,
    /// Its id (pool, index), as `pool << 32 | index`.
    id: u64,
    class: u32,
}

/// What the requests created by one kind of call share: all of a logged
/// request but its handle and index.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct RequestClass {
    pool: u32,
    status_defined: bool,
    comm: u64,
}

/// Live requests and their pools.
#[derive(Default)]
pub struct RequestTable {
    /// New requests, oldest first, not yet in the table (never persistent
    /// or an MPI_Comm_idup's: those, which a plain completion does not
    /// cover, go to the table at once).
    log: Vec<Logged>,
    /// Whether a logged request's completion has a status MPI defines.
    log_status_defined: bool,
    /// The classes of logged requests, by number.
    classes: Vec<RequestClass>,
    class_numbers: FxHashMap<RequestClass, u32>,
    /// Live requests in the table (not counting the log).
    in_table: usize,
    slots: Vec<Slot>,
    /// First free slot (`NIL`: none), the free ones linked by `next`.
    free: Option<u32>,
    /// Handle value -> its live requests. A chain is kept when it empties
    /// (`oldest == NIL`): handle values come back, and keeping it makes
    /// the steady state allocate nothing.
    by_handle: FxHashMap<u64, Chain>,
    /// Creating signature (without the request) <-> pool number.
    pools: Interner,
    ids: Vec<IdPool>,
}

impl RequestTable {
    /// The pool of requests created by calls whose signature without the
    /// request is `key`.
    pub fn pool(&mut self, key: &[u8]) -> u64 {
        let (pool, new) = self.pools.intern(key);
        if new {
            self.ids.push(IdPool::default());
        }
        u64::from(pool)
    }

    /// The index the next request of `pool` gets.
    #[inline(always)]
    pub fn next_index(&self, pool: u64) -> u64 {
        self.ids[pool as usize].next()
    }

    /// Enters the request `h` created in `pool` with the index
    /// [`next_index`](RequestTable::next_index) gave. Returns its class,
    /// if it was logged ([`add_logged`](RequestTable::add_logged) enters
    /// the next ones of the class).
    pub fn add(
        &mut self,
        h: u64,
        pool: u64,
        index: u64,
        kind: RequestKind,
        comm: Option<u64>,
        idup_comm: Option<u64>,
    ) -> Option<u32> {
        let comm = comm.unwrap_or(NO_COMM);
        if kind.persistent || idup_comm.is_some() {
            self.ids[pool as usize].mark(index);
            // After the logged ones: the table keeps creation order.
            self.settle();
            let request = LiveRequest {
                pool: pool as u32,
                index: index as u32,
                kind,
                comm,
                idup_comm: idup_comm.unwrap_or(NO_COMM),
            };
            self.enter(h, request);
            return None;
        }
        let class = RequestClass {
            pool: pool as u32,
            status_defined: kind.status_defined,
            comm,
        };
        let next = self.classes.len() as u32;
        let class = *self.class_numbers.entry(class).or_insert_with(|| {
            self.classes.push(class);
            next
        });
        self.add_logged(h, pool, index, class, kind.status_defined);
        Some(class)
    }

    /// Enters the request `h` of class `class` (which [`add`](RequestTable::add)
    /// returned for a request of `pool`; `status_defined` is the class's)
    /// with the index [`next_index`](RequestTable::next_index) gave.
    #[inline(always)]
    pub fn add_logged(&mut self, h: u64, pool: u64, index: u64, class: u32, status_defined: bool) {
        self.ids[pool as usize].mark(index);
        self.log_status_defined |= status_defined;
        self.log.push(Logged {
            handle: h,
            id: pool << 32 | index,
            class,
        });
    }

    /// The requests completed by a call on `handles` (their values before
    /// it), if those are exactly the logged requests, in order, and the
    /// table holds no other: then each handle names its logged request,
    /// whatever the rule for shared values. Their (pool, index) ids, in
    /// order (whether one of them has a status MPI defines, which the ids
    /// do not say: [`logged_status_defined`](RequestTable::logged_status_defined)).
    #[inline]
    pub fn logged_ids<'a>(
        &'a self,
        handles: &[u64],
    ) -> Option<impl ExactSizeIterator<Item = u64> + Clone + 'a> {
        self.logged_are(handles.len(), |i| handles[i])
            .then(|| self.log.iter().map(|l| l.id))
    }

    /// Whether the `count` handles `handle` gives (by position) are exactly
    /// the logged requests', in order, and the table holds no other (see
    /// [`logged_ids`](RequestTable::logged_ids)): read one by one, where
    /// the call's array is, with no copy.
    #[inline(always)]
    pub fn logged_are(&self, count: usize, handle: impl Fn(usize) -> u64) -> bool {
        self.in_table == 0
            && self.log.len() == count
            && self
                .log
                .iter()
                .enumerate()
                .all(|(i, l)| l.handle == handle(i))
    }

    /// The logged requests' ids and handles, in creation order.
    #[inline(always)]
    pub fn logged(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + Clone + '_ {
        self.log.iter().map(|l| (l.id, l.handle))
    }

    /// Whether a logged request's completion has a status MPI defines
    /// (a receive's: its source, tag and count).
    #[inline]
    pub fn logged_status_defined(&self) -> bool {
        self.log_status_defined
    }

    /// The logged requests completed (after [`logged_ids`](RequestTable::logged_ids)
    /// said they are the call's): they leave. The table holds no request
    /// then, so no request is left: each pool of theirs is emptied, a
    /// word of its ids at a time, with no bit of it to keep.
    #[inline]
    pub fn complete_logged(&mut self) {
        debug_assert_eq!(self.in_table, 0, "logged_ids found the table empty");
        for l in &self.log {
            let (pool, index) = ((l.id >> 32) as usize, l.id & u64::from(u32::MAX));
            debug_assert!(index / 64 < self.ids[pool].bitmap().len() as u64);
            // SAFETY: `add_logged` marked the index in its pool (`ids`
            // never shrinks), which grew the pool's bitmap to hold it.
            unsafe { self.ids.get_unchecked_mut(pool).empty_word_of(index) };
        }
        self.log.clear();
        self.log_status_defined = false;
    }

    /// Moves the log into the table, before any lookup.
    #[inline]
    fn settle(&mut self) {
        if !self.log.is_empty() {
            self.settle_log();
        }
    }

    fn settle_log(&mut self) {
        for i in 0..self.log.len() {
            let Logged { handle, id, class } = self.log[i];
            let class = self.classes[class as usize];
            let request = LiveRequest {
                pool: class.pool,
                index: id as u32,
                kind: RequestKind {
                    persistent: false,
                    status_defined: class.status_defined,
                },
                comm: class.comm,
                idup_comm: NO_COMM,
            };
            self.enter(handle, request);
        }
        self.log.clear();
        self.log_status_defined = false;
    }

    fn enter(&mut self, h: u64, request: LiveRequest) {
        self.in_table += 1;
        let slot = match self.free {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                self.free = (s.next != NIL).then_some(s.next);
                *s = Slot { request, next: NIL };
                slot
            }
            None => {
                self.slots.push(Slot { request, next: NIL });
                (self.slots.len() - 1) as u32
            }
        };
        match self.by_handle.get_mut(&h) {
            Some(chain) if chain.oldest != NIL => {
                self.slots[chain.newest as usize].next = slot;
                chain.newest = slot;
            }
            Some(chain) => {
                *chain = Chain {
                    oldest: slot,
                    newest: slot,
                }
            }
            None => {
                self.by_handle.insert(
                    h,
                    Chain {
                        oldest: slot,
                        newest: slot,
                    },
                );
            }
        }
    }

    /// The oldest live request with handle `h`.
    #[inline]
    pub fn oldest(&mut self, h: u64) -> Option<RequestInfo> {
        self.settle();
        let chain = self.by_handle.get(&h)?;
        (chain.oldest != NIL).then(|| self.slots[chain.oldest as usize].request.info())
    }

    /// The oldest live request with handle `h` completed: a non-persistent
    /// one leaves the table. `None` if there is none.
    #[inline]
    pub fn complete(&mut self, h: u64) -> Option<RequestInfo> {
        let request = self.oldest_taken(h, |r| !r.kind.persistent)?;
        Some(request.info())
    }

    /// The oldest live request with handle `h` was freed (MPI_Request_free).
    pub fn release(&mut self, h: u64) {
        self.oldest_taken(h, |_| true);
    }

    /// The oldest live request with handle `h`, taken out of the table
    /// (its slot freed, its index given back) if `take` says so.
    #[inline]
    fn oldest_taken(
        &mut self,
        h: u64,
        take: impl FnOnce(&LiveRequest) -> bool,
    ) -> Option<LiveRequest> {
        self.settle();
        let chain = self.by_handle.get_mut(&h)?;
        let slot = chain.oldest;
        let s = self.slots.get(slot as usize)?;
        let (request, next) = (s.request, s.next);
        if take(&request) {
            self.in_table -= 1;
            chain.oldest = next;
            if next == NIL {
                chain.newest = NIL;
            }
            self.slots[slot as usize].next = self.free.unwrap_or(NIL);
            self.free = Some(slot);
            self.ids[request.pool as usize].give_back(request.index.into());
        }
        Some(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONCE: RequestKind = RequestKind {
        persistent: false,
        status_defined: true,
    };

    fn add(t: &mut RequestTable, h: u64, key: &[u8]) -> RequestRef {
        let pool = t.pool(key);
        let index = t.next_index(pool);
        t.add(h, pool, index, ONCE, None, None);
        RequestRef::Pooled { pool, index }
    }

    #[test]
    fn slots_are_reused_and_chains_keep_their_order_across_reuse() {
        let mut t = RequestTable::default();
        let a = add(&mut t, 1, b"x");
        let b = add(&mut t, 2, b"x");
        let c = add(&mut t, 1, b"x");
        assert_eq!(t.complete(1).map(|r| r.id), Some(a));
        assert_eq!((t.slots.len(), t.in_table), (3, 2));
        // The freed slot goes to a request of another handle...
        let d = add(&mut t, 3, b"x");
        assert_eq!(d, a, "index 0 of the pool is free again");
        // ... and the chain of handle 1 still ends at its newest.
        let e = add(&mut t, 1, b"x");
        assert_eq!(t.complete(1).map(|r| r.id), Some(c));
        assert_eq!(t.slots.len(), 4, "d took the free slot, e a new one");
        assert_eq!(t.complete(1).map(|r| r.id), Some(e));
        assert_eq!(t.complete(1).map(|r| r.id), None, "handle 1 has none left");
        assert_eq!(t.complete(2).map(|r| r.id), Some(b));
        assert_eq!(t.complete(3).map(|r| r.id), Some(d));
        assert!(t.oldest(3).is_none());
        assert_eq!(t.in_table, 0);
    }

    fn add_kind(t: &mut RequestTable, h: u64, pool: u64, kind: RequestKind) {
        let index = t.next_index(pool);
        t.add(h, pool, index, kind, None, None);
    }

    fn ids(t: &RequestTable, handles: &[u64]) -> Option<Vec<u64>> {
        t.logged_ids(handles).map(Iterator::collect)
    }

    #[test]
    fn a_completion_of_exactly_the_logged_requests_takes_them_without_the_table() {
        let mut t = RequestTable::default();
        // A window: a receive, then two sends sharing one handle value.
        let recv = RequestKind {
            persistent: false,
            status_defined: true,
        };
        let send = RequestKind {
            persistent: false,
            status_defined: false,
        };
        let (r, s) = (t.pool(b"irecv"), t.pool(b"isend"));
        add_kind(&mut t, 7, r, recv);
        add_kind(&mut t, 9, s, send);
        add_kind(&mut t, 9, s, send);
        let window = [7, 9, 9];
        assert_eq!(ids(&t, &window), Some(vec![0, 1 << 32, 1 << 32 | 1]));
        assert!(t.logged_status_defined(), "the receive's status");
        assert_eq!(ids(&t, &[9, 7, 9]), None, "another order");
        assert_eq!(ids(&t, &window[..2]), None, "not all of them");
        t.complete_logged();
        assert!(t.log.is_empty() && t.slots.is_empty(), "never in the table");
        assert_eq!(t.next_index(s), 0, "their indices are free again");
        assert!(
            t.ids.iter().all(|p| p.bitmap().iter().all(|&w| w == 0)),
            "no id in use"
        );
        // A window past one word of ids: every word of it is emptied.
        for h in 0..70 {
            add_kind(&mut t, 100 + h, s, send);
        }
        let window: Vec<u64> = (100..170).collect();
        assert!(ids(&t, &window).is_some());
        t.complete_logged();
        assert!(t.ids.iter().all(|p| p.bitmap().iter().all(|&w| w == 0)));
        assert_eq!((t.next_index(s), t.next_index(r)), (0, 0));
        // A request left in the table (a lookup moved the log there) makes
        // the next window go through the table.
        add_kind(&mut t, 9, s, send);
        assert!(t.oldest(9).is_some());
        add_kind(&mut t, 5, s, send);
        assert_eq!(ids(&t, &[5]), None);
        assert_eq!(ids(&t, &[9, 5]), None);
        assert_eq!(
            t.complete(9).map(|i| i.id),
            Some(RequestRef::Pooled { pool: s, index: 0 })
        );
        assert_eq!(
            t.complete(5).map(|i| i.id),
            Some(RequestRef::Pooled { pool: s, index: 1 })
        );
    }
}
