//! Symbolic ids for MPI objects: what makes equal calls on different ranks
//! (and in different iterations) encode to equal bytes.
//!
//! - Handles of every kind get ids from a free-id pool (smallest free id
//!   first), so ranks that create objects in the same order agree on ids;
//!   predefined handles have fixed ids and null handles their own code.
//! - Requests get ids from a pool per call signature (`crate::requests`).

use crate::agree::Agreed;
use crate::front::front;
use mpigram_mpispec::{HandleKind, HandleRef, RequestRef};
use rustc_hash::FxHashMap;

use crate::requests::RequestTable;
pub use crate::requests::{RequestInfo, RequestKind};

/// Ids handed out smallest-free-first, kept as a bitmap of the ids in use
/// (which is also what ranks exchange to agree on a communicator id).
#[derive(Default)]
pub struct IdPool {
    used: Vec<u64>,
    /// The smallest id not in use (kept as ids are taken and given back:
    /// a window of requests asks for it at every call).
    next: u64,
}

impl IdPool {
    pub fn take(&mut self) -> u64 {
        let id = self.next();
        self.mark(id);
        id
    }

    /// The id [`take`](IdPool::take) would give.
    #[inline(always)]
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Takes `id` if it is free.
    pub fn take_id(&mut self, id: u64) -> bool {
        if self.in_use(id) {
            return false;
        }
        self.mark(id);
        true
    }

    pub fn give_back(&mut self, id: u64) {
        if let Some(bits) = self.used.get_mut((id / 64) as usize) {
            *bits &= !(1 << (id % 64));
            self.next = self.next.min(id);
        }
    }

    /// Gives back every id of the 64 that share `id`'s word of the bitmap,
    /// when the caller gives back all ids in use in the pool (each word of
    /// them once at least): then the smallest free id is 0.
    ///
    /// # Safety
    /// `id` was marked in use (the bitmap holds its word).
    #[inline(always)]
    pub(crate) unsafe fn empty_word_of(&mut self, id: u64) {
        // SAFETY: the caller's.
        unsafe { *self.used.get_unchecked_mut((id / 64) as usize) = 0 };
        self.next = 0;
    }

    pub fn in_use(&self, id: u64) -> bool {
        self.used
            .get((id / 64) as usize)
            .is_some_and(|bits| bits & (1 << (id % 64)) != 0)
    }

    /// The ids in use, 64 to a word, lowest first.
    pub fn bitmap(&self) -> &[u64] {
        &self.used
    }

    #[inline]
    pub(crate) fn mark(&mut self, id: u64) {
        let w = (id / 64) as usize;
        match self.used.get_mut(w) {
            Some(bits) => {
                *bits |= 1 << (id % 64);
                if id == self.next {
                    // Most often the next bit of the same word.
                    let free = !*bits;
                    match free {
                        0 => self.next = self.first_free_from(w + 1),
                        _ => self.next = w as u64 * 64 + u64::from(free.trailing_zeros()),
                    }
                }
            }
            None => self.grow_to_mark(id),
        }
    }

    #[cold]
    fn grow_to_mark(&mut self, id: u64) {
        let w = (id / 64) as usize;
        self.used.resize(w + 1, 0);
        self.used[w] |= 1 << (id % 64);
        if id == self.next {
            self.next = self.first_free_from(w);
        }
    }

    /// The smallest id not in use in words `w` on (none in use past the
    /// bitmap).
    fn first_free_from(&self, w: usize) -> u64 {
        let w = (w..self.used.len())
            .find(|&w| self.used[w] != u64::MAX)
            .unwrap_or(self.used.len());
        let bits = self.used.get(w).copied().unwrap_or(0);
        w as u64 * 64 + u64::from((!bits).trailing_zeros())
    }
}

/// Live objects of one kind: handle value -> (id, references).
#[derive(Default)]
struct HandleTable {
    live: FxHashMap<u64, (u64, u32)>,
    pool: IdPool,
    /// The last handle looked up and its id (most calls repeat the last
    /// call's objects); forgotten when an object of the kind is created
    /// or freed.
    last: Option<(u64, HandleRef)>,
}

/// What the tracer knows of a communicator: the caller's place in it.
#[derive(Clone, Copy, Debug)]
pub struct CommInfo {
    pub rank: i32,
    pub size: i32,
    pub remote_size: i32,
    pub inter: bool,
    /// MPI_COMM_WORLD rank of the first member of the (local) group; -1 if
    /// unknown or outside the world.
    pub leader: i32,
    /// Which creation made the communicator (see `crate::agree::Agreed`);
    /// 0 if not agreed.
    pub instance: u64,
}

/// A communicator's appearance in a rank's calls: the caller's place in it,
/// which relative ranks are decoded against. Kept per rank, outside the
/// signatures, so that the signatures stay equal across ranks.
#[derive(Clone, Copy, Debug)]
pub struct CommRecord {
    /// Index of the call during which the communicator was created or first seen.
    pub seq: u64,
    pub id: HandleRef,
    pub info: CommInfo,
}

/// Every table of symbolic ids of one process.
#[derive(Default)]
pub struct Objects {
    /// Index of the call being recorded.
    pub seq: u64,
    /// Changes whenever what a raw argument encodes to may change: an
    /// object created, freed or first seen, a communicator's place learnt.
    /// (Requests are apart: a created request's id is found by its pool.)
    epoch: u64,
    /// Every communicator the caller's rank was learnt for, in call order.
    pub comm_log: Vec<CommRecord>,
    /// The communicator each window was created over.
    win_comms: FxHashMap<u64, u64>,
    /// Recent buffer lookups.
    pub segments: crate::segments::SegmentCache,
    /// MPI_COMM_WORLD's entry of `comms`, looked up first: most calls use it.
    world: Option<(u64, CommInfo)>,
    /// One table per kind, indexed by `HandleKind as usize`.
    handles: [HandleTable; HandleKind::ALL.len()],
    requests: RequestTable,
    comms: FxHashMap<u64, CommInfo>,
    callbacks: FxHashMap<usize, u64>,
}

/// Pool of requests the tracer first sees at completion (created while
/// recording was paused, or by an untraced path).
const UNKNOWN_POOL: &[u8] = &[];

impl Objects {
    /// See `epoch`: while it stays the same, equal raw arguments other than
    /// requests and buffers encode alike (buffers: `segments::generation`).
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The id of an existing object; an object never seen before (created
    /// while recording was paused) is adopted.
    #[inline]
    pub fn handle(&mut self, kind: HandleKind, h: u64) -> HandleRef {
        let table = &mut self.handles[kind as usize];
        if let Some((last, id)) = table.last {
            if last == h {
                return id;
            }
        }
        let id = self.lookup(kind, h);
        self.handles[kind as usize].last = Some((h, id));
        id
    }

    fn lookup(&mut self, kind: HandleKind, h: u64) -> HandleRef {
        self.id_of(kind, h, 0)
    }

    /// An object a call created. MPI may return a handle that is already
    /// live (a reference-counted object handed out again): same id, one
    /// more reference.
    pub fn create(&mut self, kind: HandleKind, h: u64) -> HandleRef {
        self.handles[kind as usize].last = None;
        self.id_of(kind, h, 1)
    }

    /// The id of `h`, adding `more` references to a live object; an object
    /// not seen before gets the smallest free id and one reference.
    fn id_of(&mut self, kind: HandleKind, h: u64, more: u32) -> HandleRef {
        if let Some(fixed) = Self::fixed(kind, h) {
            return fixed;
        }
        let table = &mut self.handles[kind as usize];
        if let Some((id, refs)) = table.live.get_mut(&h) {
            *refs += more;
            return HandleRef::User(*id);
        }
        let id = table.pool.take();
        table.live.insert(h, (id, 1));
        self.epoch += 1;
        HandleRef::User(id)
    }

    /// A communicator a call created, named by the id its members agreed
    /// on if there is one and it is free here, else by the smallest free id.
    pub fn create_comm(&mut self, comm: u64, agreed: Option<Agreed>) -> HandleRef {
        let id = self.create_comm_id(comm, agreed.and_then(|a| a.id));
        if id != HandleRef::Null {
            self.learn_comm(comm, agreed);
        }
        id
    }

    /// Asks MPI for the caller's place in the new `comm` and logs it.
    fn learn_comm(&mut self, comm: u64, agreed: Option<Agreed>) {
        if let Some(mut info) = crate::pmpi_query::comm_info(crate::abi::Handle(comm as usize)) {
            info.instance = agreed.map_or(0, |a| a.instance);
            self.set_comm(comm, info);
        }
    }

    /// The id of a new communicator, without asking MPI about it (it may
    /// not be usable yet: MPI_Comm_idup).
    pub fn create_comm_id(&mut self, comm: u64, agreed: Option<u64>) -> HandleRef {
        let (kind, h) = (HandleKind::Comm, comm);
        let table = &mut self.handles[kind as usize];
        if let Some(id) = agreed {
            if Self::fixed(kind, h).is_none()
                && !table.live.contains_key(&h)
                && table.pool.take_id(id)
            {
                table.last = None;
                table.live.insert(h, (id, 1));
                self.epoch += 1;
                return HandleRef::User(id);
            }
        }
        self.create(kind, h)
    }

    /// The communicator ids in use, 64 to a word (see `crate::agree`).
    pub fn comm_ids_in_use(&self) -> &[u64] {
        self.handles[HandleKind::Comm as usize].pool.bitmap()
    }

    /// The members of `comm` (from MPI_Comm_idup) agreed when its request
    /// completed: it is named by the agreed id from now on, if that is
    /// free here, and its place is logged under that id.
    pub fn rebind_comm(&mut self, comm: u64, agreed: Agreed) {
        self.epoch += 1;
        let table = &mut self.handles[HandleKind::Comm as usize];
        let Some((old, _)) = table.live.get_mut(&comm) else {
            return;
        };
        if let Some(id) = agreed.id {
            if *old != id && table.pool.take_id(id) {
                table.pool.give_back(*old);
                *old = id;
                table.last = None;
            }
        }
        self.learn_comm(comm, Some(agreed));
    }

    /// An object a call freed (its handle before the call).
    pub fn free(&mut self, kind: HandleKind, h: u64) -> HandleRef {
        self.epoch += 1;
        self.handles[kind as usize].last = None;
        if let Some(fixed) = Self::fixed(kind, h) {
            return fixed;
        }
        if kind == HandleKind::Comm {
            self.comms.remove(&h);
        }
        let table = &mut self.handles[kind as usize];
        match table.live.get_mut(&h) {
            Some((id, refs)) => {
                let id = *id;
                *refs -= 1;
                if *refs == 0 {
                    table.live.remove(&h);
                    table.pool.give_back(id);
                }
                HandleRef::User(id)
            }
            // Freed without ever being seen: give it an id that is free again at once.
            None => {
                let id = table.pool.take();
                table.pool.give_back(id);
                HandleRef::User(id)
            }
        }
    }

    fn fixed(kind: HandleKind, h: u64) -> Option<HandleRef> {
        let f = front();
        if h == f.null(kind) {
            return Some(HandleRef::Null);
        }
        f.predefined_id(kind, h).map(HandleRef::Predefined)
    }

    /// Learns the caller's place in `comm` (a user communicator gets its id
    /// here if it has none yet) and logs it for the decoder.
    pub fn set_comm(&mut self, comm: u64, info: CommInfo) {
        self.epoch += 1;
        let h = comm;
        self.comms.insert(h, info);
        if comm == front().value(HandleKind::Comm, front().MPI_COMM_WORLD) {
            self.world = Some((h, info));
        }
        let id = self.handle(HandleKind::Comm, h);
        if matches!(id, HandleRef::User(_)) {
            self.comm_log.push(CommRecord {
                seq: self.seq,
                id,
                info,
            });
        }
    }

    pub fn set_win_comm(&mut self, win: u64, comm: u64) {
        self.epoch += 1;
        self.win_comms.insert(win, comm);
    }

    pub fn win_comm(&self, win: u64) -> Option<u64> {
        self.win_comms.get(&win).copied()
    }

    #[inline]
    pub fn comm(&self, comm: u64) -> Option<CommInfo> {
        let h = comm;
        match self.world {
            Some((world, info)) if world == h => Some(info),
            _ => self.comms.get(&h).copied(),
        }
    }

    /// A request a call created; `key` is the creating signature without
    /// the request. Its id, and its class if it is logged
    /// (`RequestTable::add`).
    pub fn create_request(
        &mut self,
        h: u64,
        key: &[u8],
        kind: RequestKind,
        comm: Option<u64>,
        idup_comm: Option<u64>,
    ) -> (RequestRef, Option<u32>) {
        if h == front().request_null() {
            return (RequestRef::Null, None);
        }
        let pool = self.requests.pool(key);
        let index = self.requests.next_index(pool);
        let class = self.requests.add(h, pool, index, kind, comm, idup_comm);
        (RequestRef::Pooled { pool, index }, class)
    }

    /// The index the next request of `pool` gets.
    #[inline(always)]
    pub fn next_request_index(&self, pool: u64) -> u64 {
        self.requests.next_index(pool)
    }

    /// A request a call created in `pool` (as one [`create_request`](Objects::create_request)
    /// made, which was not logged), with the index
    /// [`next_request_index`](Objects::next_request_index) gave.
    pub fn add_request(
        &mut self,
        pool: u64,
        index: u64,
        h: u64,
        kind: RequestKind,
        comm: Option<u64>,
    ) {
        self.requests.add(h, pool, index, kind, comm, None);
    }

    /// A request of the class `class` (as one [`create_request`](Objects::create_request)
    /// logged in `pool`, with that class) a call created, with the index
    /// [`next_request_index`](Objects::next_request_index) gave.
    #[inline(always)]
    pub fn add_logged_request(
        &mut self,
        pool: u64,
        index: u64,
        class: u32,
        h: u64,
        status_defined: bool,
    ) {
        self.requests
            .add_logged(h, pool, index, class, status_defined);
    }

    /// The oldest live request with handle `h` (adopted if unknown).
    pub fn request(&mut self, h: u64) -> RequestInfo {
        if h == front().request_null() {
            return RequestInfo::NULL;
        }
        if let Some(r) = self.requests.oldest(h) {
            return r;
        }
        self.adopt_request(h)
    }

    /// A request first seen at its use or completion (created while
    /// recording was paused, or by an untraced path): it joins the
    /// unknown pool.
    #[cold]
    fn adopt_request(&mut self, h: u64) -> RequestInfo {
        let unknown = RequestKind {
            persistent: false,
            status_defined: true,
        };
        let (id, _) = self.create_request(h, UNKNOWN_POOL, unknown, None, None);
        RequestInfo {
            id,
            comm: None,
            status_defined: true,
            idup_comm: None,
        }
    }

    /// The request with handle `h` completed: non-persistent ones are freed.
    #[inline]
    pub fn complete_request(&mut self, h: u64) -> RequestInfo {
        match self.requests.complete(h) {
            Some(info) => info,
            None => self.request(h),
        }
    }

    /// The (pool, index) ids of the requests a call on `handles` completes,
    /// if they are exactly the requests created since the last lookup
    /// (`RequestTable::logged_ids`).
    #[inline]
    pub fn logged_request_ids<'a>(
        &'a self,
        handles: &[u64],
    ) -> Option<impl ExactSizeIterator<Item = u64> + Clone + 'a> {
        self.requests.logged_ids(handles)
    }

    /// The request table, for [`RequestTable::logged_are`] and
    /// [`RequestTable::logged`].
    #[inline(always)]
    pub fn requests(&self) -> &RequestTable {
        &self.requests
    }

    /// Whether one of those requests has a status MPI defines
    /// (`RequestTable::logged_status_defined`).
    #[inline]
    pub fn logged_status_defined(&self) -> bool {
        self.requests.logged_status_defined()
    }

    /// The requests [`logged_request_ids`](Objects::logged_request_ids)
    /// named completed.
    #[inline]
    pub fn complete_logged_requests(&mut self) {
        self.requests.complete_logged();
    }

    /// The request with handle `h` was freed (MPI_Request_free).
    pub fn free_request(&mut self, h: u64) -> RequestInfo {
        let info = self.request(h);
        self.requests.release(h);
        info
    }

    /// Id of a callback function, by first use.
    pub fn callback(&mut self, f: usize) -> u64 {
        let next = self.callbacks.len() as u64;
        *self.callbacks.entry(f).or_insert_with(|| {
            self.epoch += 1;
            next
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARED: u64 = 0x2c00_0001;
    const ONCE: RequestKind = RequestKind {
        persistent: false,
        status_defined: true,
    };
    const PERSISTENT: RequestKind = RequestKind {
        persistent: true,
        status_defined: false,
    };

    /// The pool's next id is always the smallest free one, however ids
    /// are taken, claimed and given back (checked against a plain set,
    /// across several bitmap words).
    #[test]
    fn an_id_pool_hands_out_its_smallest_free_id() {
        let mut pool = IdPool::default();
        let mut used = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        for step in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = (x >> 33) % 300;
            match (x >> 20) % 4 {
                0 | 1 => {
                    let taken = pool.take();
                    assert!(used.insert(taken), "step {step}: {taken} was in use");
                }
                2 => assert_eq!(pool.take_id(id), used.insert(id), "step {step}"),
                _ => {
                    if used.remove(&id) {
                        pool.give_back(id);
                    }
                }
            }
            let smallest = (0..).find(|i| !used.contains(i)).unwrap();
            assert_eq!(pool.next(), smallest, "step {step}");
        }
    }

    #[test]
    fn requests_sharing_a_handle_are_matched_in_creation_order() {
        let mut o = Objects::default();
        let a = o
            .create_request(SHARED, b"isend-to-null", ONCE, None, None)
            .0;
        let b = o
            .create_request(SHARED, b"isend-to-null", ONCE, None, None)
            .0;
        let c = o.create_request(SHARED, b"irecv", ONCE, None, None).0;
        assert_eq!(a, RequestRef::Pooled { pool: 0, index: 0 });
        assert_eq!(b, RequestRef::Pooled { pool: 0, index: 1 });
        assert_eq!(c, RequestRef::Pooled { pool: 1, index: 0 });
        assert_eq!(o.complete_request(SHARED).id, a);
        assert_eq!(o.complete_request(SHARED).id, b);
        assert_eq!(o.complete_request(SHARED).id, c);
        // Freed indices are reused smallest first.
        assert_eq!(
            o.create_request(SHARED, b"isend-to-null", ONCE, None, None)
                .0,
            a
        );
    }

    #[test]
    fn persistent_requests_survive_completion_until_freed() {
        let mut o = Objects::default();
        let (r, class) = o.create_request(7, b"send_init", PERSISTENT, None, None);
        assert_eq!(class, None, "not logged");
        assert_eq!(o.complete_request(7).id, r);
        assert_eq!(o.complete_request(7).id, r);
        assert_eq!(o.free_request(7).id, r);
        // Gone now: seeing it again adopts it into the unknown pool.
        assert_eq!(o.request(7).id, RequestRef::Pooled { pool: 1, index: 0 });
    }

    #[test]
    fn handle_ids_come_from_a_pool_and_reference_counts_are_kept() {
        let mut o = Objects::default();
        let k = HandleKind::Group;
        assert_eq!(o.create(k, 100), HandleRef::User(0));
        assert_eq!(o.create(k, 200), HandleRef::User(1));
        assert_eq!(
            o.create(k, 100),
            HandleRef::User(0),
            "same live handle again"
        );
        assert_eq!(o.free(k, 100), HandleRef::User(0));
        assert_eq!(o.handle(k, 100), HandleRef::User(0), "one reference left");
        assert_eq!(o.free(k, 100), HandleRef::User(0));
        assert_eq!(o.create(k, 300), HandleRef::User(0), "id 0 is free again");
        assert_eq!(o.handle(k, 200), HandleRef::User(1));
        assert_eq!(o.handle(k, front().null(k)), HandleRef::Null);
    }
}
