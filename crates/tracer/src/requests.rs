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
//! window of 64 MPI_Isend, then one MPI_Waitall). A new request is first
//! only appended to a *log*, in creation order; the log moves into the
//! table (slots reused through a free list, each handle value mapping to
//! a chain of its live requests' slots, oldest first) at the first lookup.
//! A completion call whose requests are exactly the logged ones, in
//! order, while the table holds none, completes them without their ever
//! entering the table ([`RequestTable::complete_logged`]): the window's
//! requests cost an append each and no hashing. Nothing allocates once the
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
    request: LiveRequest,
}

/// Live requests and their pools.
#[derive(Default)]
pub struct RequestTable {
    /// New requests, oldest first, not yet in the table.
    log: Vec<Logged>,
    /// Whether a logged request is persistent or completes an
    /// MPI_Comm_idup (which a plain completion does not cover).
    log_special: bool,
    /// Whether a logged request's completion has a status MPI defines.
    log_status_defined: bool,
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
    #[inline]
    pub fn next_index(&mut self, pool: u64) -> u64 {
        self.ids[pool as usize].next()
    }

    /// Enters the request `h` created in `pool` with the index
    /// [`next_index`](RequestTable::next_index) gave.
    #[inline(always)]
    pub fn add(
        &mut self,
        h: u64,
        pool: u64,
        index: u64,
        kind: RequestKind,
        comm: Option<u64>,
        idup_comm: Option<u64>,
    ) -> RequestRef {
        self.ids[pool as usize].mark(index);
        self.log_special |= kind.persistent || idup_comm.is_some();
        self.log_status_defined |= kind.status_defined;
        self.log.push(Logged {
            handle: h,
            request: LiveRequest {
                pool: pool as u32,
                index: index as u32,
                kind,
                comm: comm.unwrap_or(NO_COMM),
                idup_comm: idup_comm.unwrap_or(NO_COMM),
            },
        });
        RequestRef::Pooled { pool, index }
    }

    /// The requests completed by a call on `handles` (their values before
    /// it), if those are exactly the logged requests, in order, none of
    /// them persistent or an MPI_Comm_idup's, and the table holds no other:
    /// then each handle names its logged request, whatever the rule for
    /// shared values. Their (pool, index) ids, in order (whether one of
    /// them has a status MPI defines, which the ids do not say:
    /// [`logged_status_defined`](RequestTable::logged_status_defined)).
    #[inline]
    pub fn logged_ids<'a>(&'a self, handles: &[u64]) -> Option<impl Iterator<Item = u64> + 'a> {
        let exact = self.in_table == 0
            && !self.log_special
            && self.log.len() == handles.len()
            && self.log.iter().zip(handles).all(|(l, &h)| l.handle == h);
        exact.then(|| {
            self.log
                .iter()
                .map(|l| u64::from(l.request.pool) << 32 | u64::from(l.request.index))
        })
    }

    /// Whether a logged request's completion has a status MPI defines
    /// (a receive's: its source, tag and count).
    #[inline]
    pub fn logged_status_defined(&self) -> bool {
        self.log_status_defined
    }

    /// The logged requests completed (after [`logged_ids`](RequestTable::logged_ids)
    /// said they are the call's): they leave.
    #[inline]
    pub fn complete_logged(&mut self) {
        for l in &self.log {
            self.ids[l.request.pool as usize].give_back(l.request.index.into());
        }
        self.log.clear();
        self.log_special = false;
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
            let Logged { handle, request } = self.log[i];
            self.enter(handle, request);
        }
        self.log.clear();
        self.log_special = false;
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
        t.add(h, pool, index, ONCE, None, None)
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
