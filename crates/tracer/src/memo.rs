//! The call memo: most calls repeat the previous call of their function
//! with the same arguments, and then have the same signature. Each
//! generated wrapper of a function whose parameters are all plain values,
//! handles of existing objects, buffers, single outputs, a status or a
//! created request (wrapgen decides, `keys.rs` there) also builds its
//! call's *key*: the raw words its encoding reads, each exactly the value
//! the encoder is given (an output MPI did not write as the encoder's
//! default for it). A call whose return code and key equal those of one
//! of the function's last encoded calls (an entry each for up to [`WAYS`]
//! call sites that take turns, as a halo exchange's receives from each
//! neighbour do; the fast path compares with the one whose turn it is),
//! with nothing they are encoded through changed since — no object created, freed or first seen, no
//! communicator's place learnt (`Objects::epoch`), no memory block freed
//! (the key of a call with buffers holds `segments::generation`) — has
//! that call's terminal: found by comparing a few words, without encoding
//! the signature or hashing it.
//!
//! A call that creates a request (MPI_Isend, MPI_Irecv, ...) encodes it as
//! (pool, index): the pool follows from the other arguments, the index is
//! the pool's smallest free one at the time. The key holds only whether a
//! request was created, and the memo keeps a terminal per index, so each
//! call of a window of 64 MPI_Isend (64 indices) is recalled too.
//!
//! Under `MPIGRAM_VERIFY` every call is also encoded in full, and the
//! verification stream holds that encoding while the trace holds the
//! memo's terminal: a memo that recalled a wrong terminal makes the
//! decoded trace differ from the stream, which the tests compare.

use crate::abi::{Handle, HandleSlot, MPI_Status};
use crate::encoder::Created;
use crate::front::{Front, REQUEST};
use crate::objects::{Objects, RequestKind};
use mpigram_mpispec::{FuncId, HandleKind};
use std::cell::Cell;
use std::ffi::c_int;

/// Most words a key has (a wrapper's key is checked against it when the
/// tracer is compiled).
pub const MAX_KEY: usize = 16;

/// Builds the input words of one call's key, before the call (generated
/// wrappers): the words its arguments give.
pub struct InputWords {
    front: &'static Front,
}

impl InputWords {
    #[inline(always)]
    pub fn new(front: &'static Front) -> InputWords {
        InputWords { front }
    }

    /// A handle passed by value (its value: the bits that hold it).
    #[inline(always)]
    pub fn handle(&self, kind: HandleKind, h: Handle) -> u64 {
        self.front.value(kind, h)
    }
}

/// Builds the output words of one call's key, after the call (generated
/// wrappers): what MPI wrote, and what the encoding reads besides.
pub struct KeyWords {
    front: &'static Front,
    /// The call returned MPI_SUCCESS: its outputs are defined.
    ok: bool,
    ret: c_int,
    /// The request the call created, if any (see [`KeyWords::created`]).
    request: Cell<Option<u64>>,
}

impl KeyWords {
    #[inline(always)]
    pub fn new(front: &'static Front, ret: c_int) -> KeyWords {
        KeyWords {
            front,
            ok: ret == crate::abi::MPI_SUCCESS,
            ret,
            request: Cell::new(None),
        }
    }

    /// An output handle that names an existing object, as `lookup_out`
    /// reads it.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    #[inline(always)]
    pub unsafe fn handle_out(&self, kind: HandleKind, p: *const HandleSlot) -> u64 {
        if self.ok && !p.is_null() {
            unsafe { self.front.read(kind as usize, p, 0) }
        } else {
            self.front.null(kind)
        }
    }

    /// A number (or address) output, as the encoder reads it: 0 when MPI
    /// did not write it.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    #[inline(always)]
    pub unsafe fn out<T: Copy + Into<i64>>(&self, p: *const T) -> u64 {
        unsafe { self.read(p) }.map_or(0, |v| v.into() as u64)
    }

    /// A rank output: MPI_PROC_NULL (as the encoder records it) when MPI
    /// did not write it.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    #[inline(always)]
    pub unsafe fn rank_out(&self, p: *const c_int) -> u64 {
        let v = unsafe { self.read(p) }.unwrap_or(self.front.ints.MPI_PROC_NULL);
        i64::from(v) as u64
    }

    /// A pointer output (`void **`): NULL when MPI did not write it.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    #[inline(always)]
    pub unsafe fn pointer_out<T>(&self, p: *const *mut T) -> u64 {
        unsafe { self.read(p) }.map_or(0, |v| v as u64)
    }

    /// The words of a status output: whether MPI wrote it, and its bytes
    /// (every field the encoder reads is in them, and MPI_Get_count of the
    /// standard ABI is a function of them).
    ///
    /// # Safety
    /// `p` is NULL, MPI_STATUS_IGNORE, or valid for reads when MPI wrote it.
    #[inline(always)]
    pub unsafe fn status(&self, p: *const MPI_Status) -> [u64; 5] {
        // MPI writes statuses on success and on MPI_ERR_IN_STATUS.
        let statuses_written = self.ok || self.ret == self.front.ints.MPI_ERR_IN_STATUS;
        let written = statuses_written && !p.is_null() && p as usize != self.front.status_ignore;
        if !written {
            return [0; 5];
        }
        let size = self.front.status_size();
        let base = p.cast::<u8>();
        let word = |at: usize| -> u64 {
            // SAFETY: reads within the status's `size` bytes.
            unsafe {
                if at + 8 <= size {
                    base.add(at).cast::<u64>().read_unaligned()
                } else if at + 4 <= size {
                    u64::from(base.add(at).cast::<u32>().read_unaligned())
                } else {
                    0
                }
            }
        };
        [1, word(0), word(8), word(16), word(24)]
    }

    /// A request the call created: its word says whether there is one
    /// (the request's id is found apart, see the module's comment).
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    #[inline(always)]
    pub unsafe fn created(&self, p: *const HandleSlot) -> u64 {
        let h = (self.ok && !p.is_null())
            .then(|| unsafe { self.front.read(REQUEST, p, 0) })
            .filter(|&h| h != self.front.request_null());
        self.request.set(h);
        u64::from(h.is_some())
    }

    /// The generation of the memory-segment map, for calls with buffers.
    #[inline(always)]
    pub fn segments(&self) -> u64 {
        crate::segments::generation()
    }

    /// The request [`created`](KeyWords::created) found.
    #[inline(always)]
    pub fn request(&self) -> Option<u64> {
        self.request.get()
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    #[inline(always)]
    unsafe fn read<T: Copy>(&self, p: *const T) -> Option<T> {
        (self.ok && !p.is_null()).then(|| unsafe { p.read_unaligned() })
    }
}

/// The function's last call that was encoded, and its terminal(s).
struct Entry {
    key: [u64; MAX_KEY],
    ret: c_int,
    /// `Objects::epoch` after it was encoded; `NONE`: nothing remembered.
    epoch: u64,
    terminal: u32,
    /// The request pool of the call, if it created a request; then the
    /// terminal of each index of the pool (`UNKNOWN` where not seen yet),
    /// and the request's class if it was logged (`RequestTable::add`).
    pool: Option<u64>,
    by_index: Vec<u32>,
    class: Option<u32>,
    /// The call's first communicator, which a created request refers to.
    comm: Option<u64>,
    /// How the function's requests behave (`encoder::request_kind`).
    kind: RequestKind,
}

const NONE: u64 = u64::MAX;
const UNKNOWN: u32 = u32::MAX;

impl Entry {
    const EMPTY: Entry = Entry {
        key: [0; MAX_KEY],
        ret: 0,
        epoch: NONE,
        terminal: 0,
        pool: None,
        by_index: Vec::new(),
        class: None,
        comm: None,
        kind: RequestKind {
            persistent: false,
            status_defined: false,
        },
    };
}

/// A call the memo knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recalled {
    pub terminal: u32,
    /// The request the call created: (pool, index) it gets, and its
    /// communicator; entered by [`Recalled::enter`].
    request: Option<(u64, u64, Option<u64>)>,
    handle: u64,
    /// Its class, if it is logged.
    class: Option<u32>,
    /// How the function's requests behave.
    kind: RequestKind,
}

impl Recalled {
    /// Enters the request the call (of `func`) created in `objects`, as
    /// encoding the call would have.
    #[inline(always)]
    pub fn enter(&self, objects: &mut Objects) {
        if let Some((pool, index, comm)) = self.request {
            match self.class {
                Some(class) => objects.add_logged_request(
                    pool,
                    index,
                    class,
                    self.handle,
                    self.kind.status_defined,
                ),
                None => objects.add_request(pool, index, self.handle, self.kind, comm),
            }
        }
    }
}

/// What [`CallMemo::recall`] found when it did not know the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// Another key, return code or epoch than the last call's.
    Changed,
    /// The same call, with a request index not seen yet.
    NewIndex,
}

/// Functions a [`CallMemo`] has room for: a power of two above the number
/// of MPI functions (a test checks it), so that a function's entries are
/// found by a mask, with no bound check.
const FUNC_SLOTS: usize = 1 << 10;

/// Calls a [`CallMemo`] keeps per function: its call sites that take
/// turns (a halo exchange's MPI_Irecv from each neighbour, with its own
/// buffer, peer and tag) each have their own entry.
const WAYS: usize = 8;

mod way {
    use super::WAYS;

    /// The place of one of a function's entries: below [`WAYS`], since
    /// [`Way::new`] makes every one. (A u32: loaded, it needs no extension
    /// to index with.)
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(super) struct Way(u32);

    impl Way {
        /// The place `i` (taken modulo [`WAYS`], which it is below).
        #[inline(always)]
        pub(super) fn new(i: usize) -> Way {
            Way((i % WAYS) as u32)
        }

        /// The first place.
        pub(super) const FIRST: Way = Way(0);

        #[inline(always)]
        pub(super) fn index(self) -> usize {
            self.0 as usize
        }
    }
}
use way::Way;

/// The entries of one function, and which one its next call is expected
/// to be: the one that followed the last one's the time before.
struct Ways {
    entries: [Entry; WAYS],
    /// The entry of the function's last call.
    last: Way,
    /// The entry its next call is expected to match (`after[last]`).
    next: Way,
    /// By entry, the entry of the call that came after it last.
    after: [Way; WAYS],
    /// The entry to give to the next call no entry holds.
    victim: Way,
}

impl Ways {
    const EMPTY: Ways = Ways {
        entries: [const { Entry::EMPTY }; WAYS],
        last: Way::FIRST,
        next: Way::FIRST,
        after: [Way::FIRST; WAYS],
        victim: Way::FIRST,
    };

    /// The function's call took entry `way`: it is the last one, and the
    /// one after the last's.
    #[inline(always)]
    fn took(&mut self, way: Way) {
        self.after[self.last.index()] = way;
        self.last = way;
        self.next = self.after[way.index()];
    }

    /// The function's call took the entry expected (which is the one after
    /// the last's already).
    #[inline(always)]
    fn took_expected(&mut self) {
        self.last = self.next;
        self.next = self.after[self.next.index()];
    }

    /// The entry that holds a call with the input words `inputs` (`narrow`
    /// as [`same_words`] says), if one does.
    #[inline(always)]
    fn holding<const I: usize>(&self, inputs: &[u64; I], narrow: [bool; I]) -> Option<Way> {
        self.entries
            .iter()
            .position(|e| e.epoch != NONE && same_words(&e.key, inputs, narrow))
            .map(Way::new)
    }

    /// The entry expected next.
    #[inline(always)]
    fn expected(&self) -> &Entry {
        // SAFETY: a Way is below WAYS (way::Way::new), the entries' number;
        // the bound check would be two instructions of every call's
        // fast path, before and after its MPI call.
        unsafe { self.entries.get_unchecked(self.next.index()) }
    }
}

/// Entries per function, each its own call.
pub struct CallMemo {
    funcs: [Ways; FUNC_SLOTS],
}

impl CallMemo {
    /// A memo that knows no call (a static: see `tracer::MEMO`).
    pub const fn new() -> CallMemo {
        CallMemo {
            funcs: [const { Ways::EMPTY }; FUNC_SLOTS],
        }
    }

    /// Forgets every call (their terminals are another table's).
    pub fn forget(&mut self) {
        for ways in &mut self.funcs {
            for entry in &mut ways.entries {
                entry.epoch = NONE;
                entry.by_index.clear();
            }
        }
    }

    #[inline(always)]
    fn ways(&self, func: FuncId) -> &Ways {
        &self.funcs[func as usize & (FUNC_SLOTS - 1)]
    }

    #[inline(always)]
    fn ways_mut(&mut self, func: FuncId) -> &mut Ways {
        &mut self.funcs[func as usize & (FUNC_SLOTS - 1)]
    }
}

/// Whether the first `I` words of `key` are `inputs`; a word `narrow`
/// says is a sign-extended 32-bit integer (as every call of the function
/// makes it) is compared by its low 32 bits only: two such words with the
/// same low halves have the same high ones.
#[inline(always)]
fn same_words<const I: usize>(key: &[u64; MAX_KEY], inputs: &[u64; I], narrow: [bool; I]) -> bool {
    // A compare and a branch per word (a narrow word's compare reads
    // its argument's 32-bit register as it is).
    key.iter()
        .zip(inputs)
        .zip(narrow)
        .all(|((&a, &b), narrow)| match narrow {
            true => a as u32 == b as u32,
            false => a == b,
        })
}

impl CallMemo {
    /// Whether the input words of a call of `func` (its key's first `I`
    /// words, which the call's arguments give before MPI runs it) equal
    /// those of the entry its call is expected to match. Changes nothing.
    #[inline(always)]
    pub fn same_inputs<const I: usize>(
        &self,
        func: FuncId,
        inputs: &[u64; I],
        narrow: [bool; I],
    ) -> bool {
        same_words(&self.ways(func).expected().key, inputs, narrow)
    }

    /// Whether an entry of `func` holds the input words `inputs` (compared
    /// as [`same_inputs`](CallMemo::same_inputs) does), asked when the
    /// expected one does not: the entry found becomes the one expected, as
    /// though it had followed the function's last call the time before. A
    /// call site that follows another only at times (a loop's first call
    /// after another loop) is then recalled by a search of the entries,
    /// not made in full.
    #[cold]
    #[inline(never)]
    pub fn expect_holding<const I: usize>(
        &mut self,
        func: FuncId,
        inputs: &[u64; I],
        narrow: [bool; I],
    ) -> bool {
        let ways = self.ways_mut(func);
        let Some(way) = ways.holding(inputs, narrow) else {
            return false;
        };
        ways.after[ways.last.index()] = way;
        ways.next = way;
        true
    }

    /// The input words of the entry a call of `func` is expected to match
    /// (its key's first `I`).
    pub fn inputs<const I: usize>(&self, func: FuncId) -> [u64; I] {
        const { assert!(I <= MAX_KEY, "a key longer than MAX_KEY") };
        let mut words = [0; I];
        words.copy_from_slice(&self.ways(func).expected().key[..I]);
        words
    }

    /// The terminal of a call of `func` whose inputs
    /// [`same_inputs`](CallMemo::same_inputs) found equal to the expected
    /// entry's, which returned `ret` with the output words `outputs` and
    /// created the request `request` (its handle), if that entry's call
    /// had them too and `objects` did not change since. The entry is then
    /// the function's last; a recalled request is entered by
    /// [`Recalled::enter`].
    #[inline(always)]
    pub fn recall_outputs<const I: usize, const O: usize>(
        &mut self,
        func: FuncId,
        ret: c_int,
        outputs: &[u64; O],
        request: Option<u64>,
        objects: &Objects,
    ) -> Result<Recalled, Miss> {
        let ways = self.ways_mut(func);
        let r = recall_entry::<I, O>(ways.expected(), ret, outputs, request, objects)?;
        ways.took_expected();
        Ok(r)
    }

    /// The terminal of a call of `func` with the input words `inputs`,
    /// the rest as [`recall_outputs`](CallMemo::recall_outputs) says, from
    /// whichever entry holds those inputs.
    #[inline(always)]
    pub fn recall<const I: usize, const O: usize>(
        &mut self,
        func: FuncId,
        ret: c_int,
        (inputs, outputs): (&[u64; I], &[u64; O]),
        request: Option<u64>,
        objects: &mut Objects,
    ) -> Result<Recalled, Miss> {
        let ways = self.ways_mut(func);
        let way = ways.holding(inputs, [false; I]).ok_or(Miss::Changed)?;
        let r = recall_entry::<I, O>(&ways.entries[way.index()], ret, outputs, request, objects)?;
        ways.took(way);
        Ok(r)
    }

    /// A call [`recall`](CallMemo::recall) missed (`miss`) was encoded to
    /// `terminal`, leaving `objects` at `epoch`; it created the request
    /// `created`, if any, on communicator `comm`. It takes the entry that
    /// holds its inputs, else the oldest given.
    #[allow(clippy::too_many_arguments)]
    pub fn remember<const I: usize, const O: usize>(
        &mut self,
        func: FuncId,
        ret: c_int,
        (inputs, outputs): (&[u64; I], &[u64; O]),
        miss: Miss,
        epoch: u64,
        terminal: u32,
        created: Option<Created>,
        comm: Option<u64>,
    ) {
        const { assert!(I + O <= MAX_KEY, "a key longer than MAX_KEY") };
        let ways = self.ways_mut(func);
        let way = match ways.holding(inputs, [false; I]) {
            Some(way) => way,
            None => {
                let way = ways.victim;
                ways.victim = Way::new(way.index() + 1);
                // A new call site follows itself until a call says otherwise.
                ways.after[way.index()] = way;
                way
            }
        };
        let entry = &mut ways.entries[way.index()];
        let pool = created.map(|c| c.pool);
        if miss == Miss::Changed || entry.epoch != epoch || entry.pool != pool {
            entry.by_index.clear();
        }
        entry.class = created.and_then(|c| c.class);
        entry.key[..I].copy_from_slice(inputs);
        entry.key[I..I + O].copy_from_slice(outputs);
        entry.ret = ret;
        entry.epoch = epoch;
        entry.terminal = terminal;
        entry.pool = pool;
        entry.comm = comm;
        entry.kind = crate::encoder::request_kind(func);
        if let Some(Created { index, .. }) = created {
            let i = index as usize;
            if i >= entry.by_index.len() {
                entry.by_index.resize(i + 1, UNKNOWN);
            }
            entry.by_index[i] = terminal;
        }
        ways.took(way);
    }
}

/// The terminal of a call whose inputs are `entry`'s, which returned `ret`
/// with the output words `outputs` and created the request `request`, if
/// `entry`'s call had them too and `objects` did not change since.
#[inline(always)]
fn recall_entry<const I: usize, const O: usize>(
    entry: &Entry,
    ret: c_int,
    outputs: &[u64; O],
    request: Option<u64>,
    objects: &Objects,
) -> Result<Recalled, Miss> {
    const { assert!(I + O <= MAX_KEY, "a key longer than MAX_KEY") };
    let mut differ = entry.epoch ^ objects.epoch() | (entry.ret ^ ret) as u64;
    for (a, b) in entry.key[I..I + O].iter().zip(outputs) {
        differ |= a ^ b;
    }
    if differ != 0 {
        return Err(Miss::Changed);
    }
    let (Some(pool), Some(handle)) = (entry.pool, request) else {
        return Ok(Recalled {
            terminal: entry.terminal,
            request: None,
            handle: 0,
            class: None,
            kind: entry.kind,
        });
    };
    let index = objects.next_request_index(pool);
    match entry.by_index.get(index as usize) {
        Some(&terminal) if terminal != UNKNOWN => Ok(Recalled {
            terminal,
            request: Some((pool, index, entry.comm)),
            handle,
            class: entry.class,
            kind: entry.kind,
        }),
        _ => Err(Miss::NewIndex),
    }
}

/// MPI_Waitall calls that completed exactly the requests created since
/// the one before (`RequestTable::logged_ids`), as OSU's `osu_bw` and halo
/// exchanges call it: the signature of one is a function of its count,
/// whether it records statuses, the bytes of the statuses it records that
/// MPI defines (a receive's: every field the encoder reads is in them; the
/// requests' communicators are in their ids) and the ids of those
/// requests, which, all equal again, give the same terminal. The last
/// [`WAITALLS`] such calls that differ are kept (a window's and a halo
/// exchange's, taking turns).
#[derive(Default)]
pub struct WaitallMemo {
    known: [KnownWaitall; WAITALLS],
    /// The entry [`knows`](WaitallMemo::knows) found last.
    found: Cell<usize>,
    /// The entry [`learn`](WaitallMemo::learn) filled last.
    learning: usize,
    /// The entry the next call no entry holds takes.
    victim: usize,
}

/// MPI_Waitall calls a [`WaitallMemo`] keeps.
const WAITALLS: usize = 4;

#[derive(Default)]
struct KnownWaitall {
    count: c_int,
    statuses: bool,
    /// The call's statuses array, when it records defined ones; else empty.
    status_bytes: Vec<u8>,
    ids: Vec<u64>,
    /// `None`: nothing remembered.
    terminal: Option<u32>,
}

impl KnownWaitall {
    /// Whether this is a call of `count` requests with the ids `ids`,
    /// recording statuses or not.
    #[inline(always)]
    fn is(&self, count: c_int, statuses: bool, ids: impl ExactSizeIterator<Item = u64>) -> bool {
        count == self.count
            && statuses == self.statuses
            && ids.len() == self.ids.len()
            && ids.zip(&self.ids).all(|(id, &known)| id == known)
    }
}

impl WaitallMemo {
    /// The terminal of a successful MPI_Waitall of `count` requests with
    /// the ids `ids`, recording statuses or not, if it is a kept one's;
    /// `status_bytes` are its statuses array when it records statuses MPI
    /// defines for one of the requests, else empty.
    #[inline]
    pub fn recall(
        &self,
        count: c_int,
        statuses: bool,
        status_bytes: &[u8],
        ids: impl ExactSizeIterator<Item = u64> + Clone,
    ) -> Option<u32> {
        self.knows(count, statuses, ids)
            .filter(|_| self.same_status_bytes(status_bytes))
    }

    /// [`recall`](WaitallMemo::recall) before the call, when its statuses
    /// are not written yet: the terminal if all but the statuses' bytes
    /// are a kept call's; [`same_status_bytes`](WaitallMemo::same_status_bytes)
    /// then says about those.
    #[inline(always)]
    pub fn knows(
        &self,
        count: c_int,
        statuses: bool,
        ids: impl ExactSizeIterator<Item = u64> + Clone,
    ) -> Option<u32> {
        // From the one found last: a program's MPI_Waitall calls repeat.
        let found = self.found.get();
        let i = (0..WAITALLS).map(|k| (found + k) % WAITALLS).find(|&i| {
            let k = &self.known[i];
            k.terminal.is_some() && k.is(count, statuses, ids.clone())
        })?;
        self.found.set(i);
        self.known[i].terminal
    }

    /// The terminal of the call [`knows`](WaitallMemo::knows) found last.
    #[inline(always)]
    pub fn terminal(&self) -> Option<u32> {
        self.known[self.found.get() % WAITALLS].terminal
    }

    /// Whether the statuses' bytes that go into the signature (see
    /// [`recall`](WaitallMemo::recall)) are those of the call
    /// [`knows`](WaitallMemo::knows) found last.
    #[inline(always)]
    pub fn same_status_bytes(&self, status_bytes: &[u8]) -> bool {
        let kept = self.known[self.found.get() % WAITALLS]
            .status_bytes
            .as_slice();
        // No bytes, most often (statuses ignored, or undefined): no memcmp.
        // Not only a call saved: on AVX-512, glibc's memcmp reads a short
        // array with a masked load, which from an empty Vec's dangling
        // address took about 80 ns (`docs/measured.md`). (`intern::same`
        // avoids memcmp too, but a window's statuses are kilobytes, which
        // memcmp compares faster.)
        status_bytes.len() == kept.len() && (kept.is_empty() || status_bytes == kept)
    }

    /// Such a call was not recalled: it is kept from now on, once
    /// [`encoded`](WaitallMemo::encoded) says its terminal, in place of
    /// the call of the same requests (with other statuses' bytes), else of
    /// the oldest kept.
    pub fn learn(
        &mut self,
        count: c_int,
        statuses: bool,
        status_bytes: &[u8],
        ids: impl ExactSizeIterator<Item = u64> + Clone,
    ) {
        let i = match self
            .known
            .iter()
            .position(|k| k.is(count, statuses, ids.clone()))
        {
            Some(i) => i,
            None => {
                let i = self.victim;
                self.victim = (i + 1) % WAITALLS;
                i
            }
        };
        let known = &mut self.known[i];
        known.count = count;
        known.statuses = statuses;
        known.status_bytes.clear();
        known.status_bytes.extend_from_slice(status_bytes);
        known.ids.clear();
        known.ids.extend(ids);
        known.terminal = None;
        self.learning = i;
    }

    /// The call [`learn`](WaitallMemo::learn) saw last was encoded to
    /// `terminal`.
    pub fn encoded(&mut self, terminal: u32) {
        self.known[self.learning].terminal = Some(terminal);
    }

    /// An MPI_Waitall this memo cannot know was recorded: no call is kept.
    pub fn forget(&mut self) {
        for known in &mut self.known {
            known.terminal = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_mpispec::{RequestRef, func};

    const OK: c_int = crate::abi::MPI_SUCCESS;
    const ISEND: RequestKind = RequestKind {
        persistent: false,
        status_defined: false,
    };

    /// Runs `f` with a memo that knows no call, on a thread with room for
    /// it (a memo is larger than a test thread's stack).
    fn with_memo(f: impl FnOnce(&mut CallMemo, &mut Objects) + Send) {
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn_scoped(scope, || f(&mut CallMemo::new(), &mut Objects::default()))
                .expect("a thread")
                .join()
                .expect("the test passes");
        });
    }

    /// Recalls, and on a miss remembers `encoded` as the terminal.
    fn call<const N: usize>(
        memo: &mut CallMemo,
        objects: &mut Objects,
        key: [u64; N],
        encoded: u32,
    ) -> Option<u32> {
        match memo.recall(func::MPI_Comm_rank, OK, (&key, &[]), None, objects) {
            Ok(r) => Some(r.terminal),
            Err(miss) => {
                let epoch = objects.epoch();
                memo.remember(
                    func::MPI_Comm_rank,
                    OK,
                    (&key, &[]),
                    miss,
                    epoch,
                    encoded,
                    None,
                    None,
                );
                None
            }
        }
    }

    /// Every function has its own entry (an entry shared by two would
    /// recall one's terminal for the other's call with the same words).
    #[test]
    fn every_function_has_a_slot_of_its_own() {
        assert!(mpigram_mpispec::FUNCS.len() <= FUNC_SLOTS);
    }

    #[test]
    fn a_repeated_call_is_recalled_until_its_words_or_the_objects_change() {
        with_memo(|memo, objects| {
            assert_eq!(call(memo, objects, [91, 0], 7), None);
            assert_eq!(call(memo, objects, [91, 0], 0), Some(7));
            assert_eq!(call(memo, objects, [91, 1], 8), None, "another output");
            assert_eq!(call(memo, objects, [91, 1], 0), Some(8));
            objects.create(HandleKind::Group, 5);
            assert_eq!(
                call(memo, objects, [91, 1], 9),
                None,
                "an object was created"
            );
            assert_eq!(call(memo, objects, [91, 1], 0), Some(9));
            objects.free(HandleKind::Group, 5);
            assert_eq!(call(memo, objects, [91, 1], 10), None, "one was freed");
            let other_ret = memo.recall(func::MPI_Comm_rank, 1, (&[91, 1], &[]), None, objects);
            assert_eq!(other_ret, Err(Miss::Changed), "another return code");
        });
    }

    /// Call sites that take turns (a halo exchange's receives from each
    /// neighbour) each keep their terminal, and the one whose turn it is
    /// is the one the fast path compares with.
    #[test]
    fn call_sites_that_take_turns_are_each_recalled() {
        with_memo(|memo, objects| {
            let sites: Vec<[u64; 2]> = (0..4).map(|k| [0x1000 + k, k]).collect();
            for (k, &site) in sites.iter().enumerate() {
                assert_eq!(call(memo, objects, site, 10 + k as u32), None, "first turn");
            }
            // The second turn finds each in its entry, and learns their order
            // (the last site's next was not known before).
            for (k, &site) in sites.iter().enumerate() {
                assert_eq!(call(memo, objects, site, 0), Some(10 + k as u32));
            }
            for _ in 0..3 {
                for (k, site) in sites.iter().enumerate() {
                    let expected = memo.same_inputs(func::MPI_Comm_rank, site, [false; 2]);
                    assert!(expected, "site {k} is the one expected");
                    assert_eq!(call(memo, objects, *site, 0), Some(10 + k as u32));
                }
            }
            // As many more sites as there are entries: the oldest give way.
            for k in 0..WAYS as u64 {
                assert_eq!(call(memo, objects, [0x2000 + k, k], 20), None);
            }
            assert_eq!(call(memo, objects, sites[0], 30), None, "forgotten");
            assert_eq!(call(memo, objects, sites[0], 0), Some(30));
            assert_eq!(
                call(memo, objects, [0x2000 + WAYS as u64 - 1, 7], 0),
                Some(20)
            );
        });
    }

    /// A loop's call site after another loop's (a window of sends, then a
    /// halo exchange's): not the one expected, it is found among the
    /// entries before MPI runs the call, and the fast path recalls it.
    #[test]
    fn a_call_site_that_was_not_expected_is_found_and_recalled() {
        with_memo(|memo, objects| {
            let (window, halo) = ([0x1000, 100], [0x2000, 10]);
            for (site, terminal) in [(window, 5), (halo, 6)] {
                assert_eq!(call(memo, objects, site, terminal), None);
                assert_eq!(call(memo, objects, site, 0), Some(terminal));
            }
            // The halo's site followed itself: the window's is not expected.
            let narrow = [false, true];
            assert!(!memo.same_inputs(func::MPI_Comm_rank, &window, narrow));
            assert!(memo.expect_holding(func::MPI_Comm_rank, &window, narrow));
            assert!(memo.same_inputs(func::MPI_Comm_rank, &window, narrow));
            let recalled = memo.recall_outputs::<2, 0>(func::MPI_Comm_rank, OK, &[], None, objects);
            assert_eq!(recalled.map(|r| r.terminal), Ok(5));
            // The halo's site is expected next: it followed the window's
            // the time before.
            assert!(memo.same_inputs(func::MPI_Comm_rank, &halo, narrow));
            let unknown = [0x3000, 100];
            assert!(!memo.expect_holding(func::MPI_Comm_rank, &unknown, narrow));
            assert!(
                memo.same_inputs(func::MPI_Comm_rank, &halo, narrow),
                "unchanged"
            );
            // The window's site follows the halo's from now on.
            assert_eq!(call(memo, objects, halo, 0), Some(6));
            assert!(memo.same_inputs(func::MPI_Comm_rank, &window, narrow));
        });
    }

    #[test]
    fn a_narrow_word_is_compared_by_its_low_half() {
        with_memo(|memo, objects| {
            let key = [i64::from(-2i32) as u64, 7];
            call(memo, objects, key, 4);
            let same =
                |words: [u64; 2]| memo.same_inputs(func::MPI_Comm_rank, &words, [true, false]);
            assert!(same(key));
            assert!(!same([i64::from(-3i32) as u64, 7]), "another low half");
            assert!(!same([i64::from(-2i32) as u64, 8]), "a wide word differs");
        });
    }

    #[test]
    fn learning_a_communicator_forgets_every_call() {
        with_memo(|memo, objects| {
            call(memo, objects, [1, 2, 3], 4);
            assert_eq!(call(memo, objects, [1, 2, 3], 0), Some(4));
            let info = crate::objects::CommInfo {
                rank: 1,
                size: 2,
                remote_size: 0,
                inter: false,
                leader: 0,
                instance: 0,
            };
            objects.set_comm(0x8400_0000, info);
            assert_eq!(call(memo, objects, [1, 2, 3], 5), None);
        });
    }

    /// An MPI_Isend of the memo's test: recalled, or encoded as the
    /// encoder does (its pool and next index) and remembered.
    fn isend(memo: &mut CallMemo, objects: &mut Objects, h: u64) -> (u32, RequestRef, bool) {
        let key = [1, 2, 1];
        match memo.recall(func::MPI_Isend, OK, (&key, &[]), Some(h), objects) {
            Ok(r) => {
                r.enter(objects);
                let (pool, index, _) = r.request.expect("a request");
                (r.terminal, RequestRef::Pooled { pool, index }, true)
            }
            Err(miss) => {
                let (id, class) = objects.create_request(h, b"isend", ISEND, None, None);
                let RequestRef::Pooled { pool, index } = id else {
                    panic!("no request created");
                };
                let terminal = 100 + index as u32;
                let epoch = objects.epoch();
                let created = Some(Created { pool, index, class });
                memo.remember(
                    func::MPI_Isend,
                    OK,
                    (&key, &[]),
                    miss,
                    epoch,
                    terminal,
                    created,
                    None,
                );
                (terminal, id, false)
            }
        }
    }

    #[test]
    fn a_waitall_is_recalled_only_with_the_same_count_statuses_and_ids() {
        let mut memo = WaitallMemo::default();
        let window = [0, 1, 1 << 32];
        assert_eq!(
            memo.recall(3, false, &[], window.into_iter()),
            None,
            "nothing seen"
        );
        memo.learn(3, false, &[], window.into_iter());
        assert_eq!(
            memo.recall(3, false, &[], window.into_iter()),
            None,
            "not encoded yet"
        );
        memo.encoded(42);
        assert_eq!(memo.recall(3, false, &[], window.into_iter()), Some(42));
        assert_eq!(
            memo.recall(3, true, &[], window.into_iter()),
            None,
            "statuses"
        );
        // Recorded statuses: recalled only with the same bytes.
        memo.learn(3, true, &[1, 2, 3], window.into_iter());
        memo.encoded(43);
        assert_eq!(
            memo.recall(3, true, &[1, 2, 3], window.into_iter()),
            Some(43)
        );
        assert_eq!(
            memo.recall(3, true, &[1, 2, 4], window.into_iter()),
            None,
            "a status"
        );
        // Before the call, its statuses unwritten: known but for them.
        assert_eq!(memo.knows(3, true, window.into_iter()), Some(43));
        assert!(memo.same_status_bytes(&[1, 2, 3]));
        assert!(!memo.same_status_bytes(&[1, 2, 4]));
        assert_eq!(
            memo.knows(3, false, window.into_iter()),
            Some(42),
            "the call without statuses is kept too"
        );
        assert_eq!(memo.knows(3, true, [0, 1].into_iter()), None, "fewer ids");
        assert_eq!(
            memo.recall(3, true, &[], window.into_iter()),
            None,
            "none defined"
        );
        memo.learn(3, false, &[], window.into_iter());
        memo.encoded(42);
        assert_eq!(
            memo.recall(4, false, &[], window.into_iter()),
            None,
            "count"
        );
        assert_eq!(
            memo.recall(3, false, &[], [0, 1].into_iter()),
            None,
            "fewer ids"
        );
        assert_eq!(
            memo.recall(3, false, &[], [0, 1, 1 << 32, 2].into_iter()),
            None,
            "more ids"
        );
        assert_eq!(
            memo.recall(3, false, &[], [1, 0, 1 << 32].into_iter()),
            None
        );
        memo.forget();
        assert_eq!(
            memo.recall(3, false, &[], window.into_iter()),
            None,
            "forgotten"
        );
        // Calls that take turns (a window's and a halo exchange's) are each
        // kept, up to WAITALLS of them; one more gives the oldest's place.
        let halo = [2 << 32, 3 << 32];
        for (n, ids) in [(3, &window[..]), (2, &halo[..])] {
            memo.learn(n, false, &[], ids.iter().copied());
            memo.encoded(50 + n as u32);
        }
        for _ in 0..2 {
            assert_eq!(memo.recall(3, false, &[], window.into_iter()), Some(53));
            assert_eq!(memo.recall(2, false, &[], halo.into_iter()), Some(52));
        }
        for n in 10..10 + WAITALLS as u64 {
            memo.learn(1, false, &[], [n].into_iter());
            memo.encoded(n as u32);
        }
        assert_eq!(memo.recall(3, false, &[], window.into_iter()), None);
        assert_eq!(memo.recall(1, false, &[], [13].into_iter()), Some(13));
    }

    #[test]
    fn each_request_index_of_a_pool_has_its_own_terminal() {
        with_memo(|memo, objects| {
            // A window of two requests: the first window is encoded.
            let (a, ra, recalled) = isend(memo, objects, 0xa1);
            assert_eq!((a, recalled), (100, false));
            let (b, rb, recalled) = isend(memo, objects, 0xa2);
            assert_eq!((b, recalled), (101, false), "index 1 not seen yet");
            assert_eq!(objects.complete_request(0xa1).id, ra);
            assert_eq!(objects.complete_request(0xa2).id, rb);
            // The next window is recalled, and its requests are entered.
            assert_eq!(isend(memo, objects, 0xb1), (100, ra, true));
            assert_eq!(isend(memo, objects, 0xb2), (101, rb, true));
            assert_eq!(objects.complete_request(0xb2).id, rb);
            assert_eq!(objects.complete_request(0xb1).id, ra);
            // An object created in between: every index is encoded again.
            objects.create(HandleKind::Datatype, 0x4c00_0001);
            assert_eq!(isend(memo, objects, 0xc1), (100, ra, false));
            assert_eq!(isend(memo, objects, 0xc2), (101, rb, false));
        });
    }
}
