//! The encoder the wrappers call: turns the C arguments of one call into
//! the bytes of its call signature (see `mpigram_mpispec::encoding`).
//!
//! Outputs are read through pointers only when the call succeeded and the
//! pointer is not NULL: on failure MPI leaves them undefined, and the
//! tracer must never crash the application by reading them.

use crate::abi::{
    Handle, HandleSlot, MPI_Aint, MPI_Comm, MPI_Count, MPI_Offset, MPI_SUCCESS, MPI_Status,
};
use crate::agree::Agreed;
use crate::front::{Front, REQUEST, StatusFields};
use crate::objects::{CommInfo, Objects, RequestInfo, RequestKind};
use mpigram_mpispec::encoding::*;
use mpigram_mpispec::{BufferRef, ConstSet, FUNCS, FuncId, HandleKind, HandleRef, Rank, Status};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// A tag as stored: MPI_ANY_TAG is -1 (its value in MPICH and Open MPI;
/// the standard ABI's is -2), so traces of any MPI agree.
fn canonical_tag(front: &Front, v: i64) -> i64 {
    if v == i64::from(front.ints.MPI_ANY_TAG) {
        -1
    } else {
        v
    }
}

/// How requests of `func` behave: the `*_init` functions (`MPI_Send_init`,
/// `MPI_Bcast_init`, `MPI_Psend_init`, ...) create persistent requests,
/// which completion does not free; only receives, MPI-IO and generalized
/// requests complete with a status MPI defines.
pub(crate) fn request_kind(func: FuncId) -> RequestKind {
    static KINDS: OnceLock<Vec<RequestKind>> = OnceLock::new();
    let kinds = KINDS.get_or_init(|| {
        FUNCS
            .iter()
            .map(|f| RequestKind {
                persistent: f.name.contains("_init"),
                status_defined: f.name.to_ascii_lowercase().contains("recv")
                    || f.name.starts_with("MPI_File_")
                    || f.name == "MPI_Grequest_start",
            })
            .collect()
    });
    let unknown = RequestKind {
        persistent: false,
        status_defined: true,
    };
    kinds.get(func as usize).copied().unwrap_or(unknown)
}

/// A request a call created: its id (pool, index), and its class if it
/// was logged (`RequestTable::add`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Created {
    pub pool: u64,
    pub index: u64,
    pub class: Option<u32>,
}

/// Writes the arguments of one call.
pub struct Encoder<'a> {
    /// The bound front end, found once a call (`crate::front::front`).
    pub(crate) front: &'static Front,
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) objects: &'a mut Objects,
    /// The call returned MPI_SUCCESS: its outputs are defined.
    pub(crate) ok: bool,
    /// The call returned MPI_ERR_IN_STATUS: only then do statuses carry
    /// MPI_ERROR (otherwise the field is left undefined).
    pub(crate) errors_in_statuses: bool,
    /// The first communicator argument of the call (its value), remembered
    /// for the requests the call creates.
    pub(crate) comm: Option<u64>,
    /// The function being recorded.
    pub(crate) func: FuncId,
    /// Communicator of each request of a completion call's array, for
    /// the statuses that follow it.
    pub(crate) request_comms: &'a mut Vec<RequestInfo>,
    /// The communicator MPI_Comm_idup wrote, for the request that follows.
    pub(crate) idup_comm: Option<u64>,
    /// The request the call created.
    pub(crate) created: Option<Created>,
}

impl Encoder<'_> {
    pub fn ok(&self) -> bool {
        self.ok
    }

    pub fn int(&mut self, v: i64) {
        put_int(self.out, v);
    }

    /// A tag: MPI_ANY_TAG is stored as -1, whatever this MPI's value.
    pub fn tag(&mut self, v: i64) {
        put_int(self.out, canonical_tag(self.front, v));
    }

    pub fn address(&mut self, v: i64) {
        put_int(self.out, v);
    }

    /// An integer of a set of named constants: stored by name.
    pub fn constant(&mut self, set: ConstSet, v: i64) {
        put_const(self.out, self.front.constant(set, v));
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn constant_out(&mut self, set: ConstSet, p: *const c_int) {
        // Not written (the call failed): a plain 0, whatever 0 names in this MPI.
        match unsafe { self.read(p) } {
            Some(v) => self.constant(set, v.into()),
            None => put_const(self.out, mpigram_mpispec::ConstRef::Plain(0)),
        }
    }

    /// A rank in `comm`: relative to the caller's rank where `comm` is an
    /// intra-communicator the tracer knows, else absolute.
    pub fn rank(&mut self, v: i64, comm: MPI_Comm) {
        let info = self.comm_info(self.front.value(HandleKind::Comm, comm));
        put_rank(self.out, self.rank_value(v, info));
    }

    /// An int that is often the caller's rank in `comm` (MPI_Comm_split's
    /// key): that rank as such where it is the rule (`rule`: the argument
    /// is its caller's rank on every rank of `comm`, `crate::agree::own_ranks`),
    /// any other value by value.
    pub fn own_rank_int(&mut self, v: i64, comm: MPI_Comm, rule: bool) {
        let other = (!(rule && self.is_own_rank(v, comm))).then(|| mpigram_varint::zigzag(v));
        put_own_rank(self.out, other);
    }

    /// A constant of `set` that is often the caller's rank in `comm`
    /// (MPI_Comm_split's colour): that rank as such where it is the rule,
    /// else as [`constant`](Self::constant).
    pub fn own_rank_constant(&mut self, set: ConstSet, v: i64, comm: MPI_Comm, rule: bool) {
        let other =
            (!(rule && self.is_own_rank(v, comm))).then(|| const_code(self.front.constant(set, v)));
        put_own_rank(self.out, other);
    }

    /// Whether `v` is the caller's rank in `comm`, an intra-communicator
    /// the tracer knows (what relative ranks are decoded against).
    fn is_own_rank(&mut self, v: i64, comm: MPI_Comm) -> bool {
        let info = self.comm_info(self.front.value(HandleKind::Comm, comm));
        matches!(info, Some(CommInfo { inter: false, rank, .. }) if v == i64::from(rank))
    }

    /// A collective's root: absolute, since every rank names the same one
    /// (MPI_ROOT and MPI_PROC_NULL of inter-communicators as constants).
    pub fn root(&mut self, v: i64) {
        put_rank(self.out, self.rank_value(v, None));
    }

    /// `v` as encoded, given what is known of the caller's place in its communicator.
    fn rank_value(&self, v: i64, comm: Option<CommInfo>) -> Rank {
        let k = &self.front.ints;
        match v {
            v if v == i64::from(k.MPI_PROC_NULL) => Rank::ProcNull,
            v if v == i64::from(k.MPI_ANY_SOURCE) => Rank::AnySource,
            v if v == i64::from(k.MPI_ROOT) => Rank::Root,
            v => match comm {
                Some(CommInfo {
                    inter: false, rank, ..
                }) => Rank::Relative(v - i64::from(rank)),
                _ => Rank::Absolute(v),
            },
        }
    }

    pub fn buffer(&mut self, p: *const c_void) {
        let b = if p.is_null() {
            BufferRef::Null
        } else if p as usize == self.front.in_place {
            BufferRef::InPlace
        } else {
            let (id, offset) = self.objects.segments.locate(p as usize);
            BufferRef::Segment { id, offset }
        };
        put_buffer(self.out, b);
    }

    /// A NUL-terminated string, or NULL.
    ///
    /// # Safety
    /// `p` is NULL or points to a NUL-terminated string.
    pub unsafe fn string(&mut self, p: *const c_char) {
        let s = (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes());
        put_str(self.out, s);
    }

    /// At most `len` bytes of a string, up to its NUL.
    ///
    /// # Safety
    /// `p` is NULL or points to `len` readable bytes.
    pub unsafe fn string_n(&mut self, p: *const c_char, len: usize) {
        let s = (!p.is_null()).then(|| {
            let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
            &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(len)]
        });
        put_str(self.out, s);
    }

    pub fn callback(&mut self, f: *const c_void) {
        let id = (!f.is_null()).then(|| self.objects.callback(f as usize));
        put_callback(self.out, id);
    }

    /// An existing object, passed by value.
    pub fn handle(&mut self, kind: HandleKind, h: Handle) {
        self.handle_value(kind, self.front.value(kind, h));
    }

    /// An existing object, by its value.
    pub fn handle_value(&mut self, kind: HandleKind, h: u64) {
        if kind == HandleKind::Comm && self.comm.is_none() {
            self.comm = Some(h);
        }
        let id = self.objects.handle(kind, h);
        put_handle(self.out, id);
    }

    /// An object the call created (its handle after the call).
    pub fn new_handle(&mut self, kind: HandleKind, h: Handle) {
        self.new_handle_value(kind, self.front.value(kind, h));
    }

    fn new_handle_value(&mut self, kind: HandleKind, h: u64) {
        let id = if self.ok {
            self.objects.create(kind, h)
        } else {
            HandleRef::Null
        };
        if let (HandleKind::Win, HandleRef::User(_), Some(comm)) = (kind, id, self.comm) {
            // A window's group is its communicator's: ranks in it are encoded against the comm.
            self.objects.set_win_comm(h, comm);
        }
        put_handle(self.out, id);
    }

    /// A rank in `win`'s group: relative to the caller's rank where the
    /// tracer saw the window created, else absolute.
    pub fn win_rank(&mut self, v: i64, win: crate::abi::MPI_Win) {
        let comm = self
            .objects
            .win_comm(self.front.value(HandleKind::Win, win));
        let info = comm.and_then(|comm| self.comm_info(comm));
        put_rank(self.out, self.rank_value(v, info));
    }

    /// An object the call created, read through `p`.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn new_handle_out(&mut self, kind: HandleKind, p: *const HandleSlot) {
        match unsafe { self.read_handle(kind as usize, p) } {
            Some(h) => self.new_handle_value(kind, h),
            None => put_handle(self.out, HandleRef::Null),
        }
    }

    /// An object the call freed (its handle before the call).
    pub fn free_handle(&mut self, kind: HandleKind, h_before: Handle) {
        let id = self.objects.free(kind, self.front.value(kind, h_before));
        put_handle(self.out, id);
    }

    /// A communicator the call created, named by the id its members agreed
    /// on (see `crate::agree`); also learns the caller's place in it.
    pub fn new_comm(&mut self, comm: u64, agreed: Option<Agreed>) {
        if !self.ok {
            put_handle(self.out, HandleRef::Null);
            return;
        }
        let id = self.objects.create_comm(comm, agreed);
        put_handle(self.out, id);
    }

    /// A communicator the call wrote through `p`, with its agreed id.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn new_comm_out(&mut self, p: *const HandleSlot, agreed: Option<Agreed>) {
        match unsafe { self.read_handle(HandleKind::Comm as usize, p) } {
            Some(comm) => self.new_comm(comm, agreed),
            None => put_handle(self.out, HandleRef::Null),
        }
    }

    /// The communicator MPI_Comm_idup writes: MPICH assigns its handle at
    /// the call, but it is usable (and its id agreed) only once the request
    /// completes; until then it has its local id, and its ranks are learnt
    /// at its first use.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn new_comm_pending(&mut self, p: *const HandleSlot) {
        let id = match unsafe { self.read_handle(HandleKind::Comm as usize, p) } {
            Some(comm) if comm != self.front.null(HandleKind::Comm) => {
                self.idup_comm = Some(comm);
                self.objects.create_comm_id(comm, None)
            }
            _ => HandleRef::Null,
        };
        put_handle(self.out, id);
    }

    pub fn free_comm(&mut self, before: MPI_Comm) {
        self.free_handle(HandleKind::Comm, before);
    }

    /// A request the call created, pooled by the signature encoded so far.
    /// Requests of the `*_init` functions (`MPI_Send_init`,
    /// `MPI_Bcast_init`, `MPI_Psend_init`, ...) are persistent: completion
    /// does not free them, MPI_Request_free does.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn new_request(&mut self, p: *const HandleSlot) {
        let kind = request_kind(self.func);
        let (id, class) = match unsafe { self.read_handle(REQUEST, p) } {
            Some(h) => {
                self.objects
                    .create_request(h, self.out, kind, self.comm, self.idup_comm.take())
            }
            None => (mpigram_mpispec::RequestRef::Null, None),
        };
        if let mpigram_mpispec::RequestRef::Pooled { pool, index } = id {
            self.created = Some(Created { pool, index, class });
        }
        put_request(self.out, id);
    }

    /// An existing request that this call does not complete.
    pub fn request(&mut self, h: Handle) {
        let id = self.objects.request(self.front.request(h)).id;
        put_request(self.out, id);
    }

    // --- completion calls (hand-written wrappers) ---

    /// A request (its handle before the call) that the call completed if
    /// `done`; returns what the status of its completion refers to.
    pub fn completed_request(&mut self, h: u64, done: bool) -> RequestInfo {
        let info = if done {
            let info = self.objects.complete_request(h);
            if let Some(comm) = info.idup_comm {
                if let Some(agreed) = crate::agree::finish(comm) {
                    self.objects.rebind_comm(comm, agreed);
                }
            }
            info
        } else {
            self.objects.request(h)
        };
        put_request(self.out, info.id);
        info
    }

    /// A request freed by MPI_Request_free (its handle before the call).
    pub fn freed_request(&mut self, h: u64) {
        let info = if self.ok {
            self.objects.free_request(h)
        } else {
            self.objects.request(h)
        };
        put_request(self.out, info.id);
    }

    /// The array of requests of a completion call (handles before the
    /// call); `done(i)` says whether the call completed the i-th.
    pub fn completed_requests(&mut self, saved: Option<&[u64]>, done: impl Fn(usize) -> bool) {
        self.request_comms.clear();
        let Some(saved) = saved else {
            self.array_len(None);
            return;
        };
        self.array_len(Some(saved.len()));
        for (i, &h) in saved.iter().enumerate() {
            let info = self.completed_request(h, done(i));
            self.request_comms.push(info);
        }
    }

    /// The status of the completion of `request` (or MPI_STATUS_IGNORE).
    ///
    /// # Safety
    /// As for [`Encoder::status`].
    pub unsafe fn completion_status(&mut self, p: *const MPI_Status, request: Option<RequestInfo>) {
        let ignored = p.is_null() || p as usize == self.front.status_ignore;
        match request {
            Some(r) if !r.status_defined && !ignored && self.statuses_written() => {
                put_status_undefined(self.out)
            }
            Some(r) => unsafe { self.status_in(p, r.comm) },
            None => unsafe { self.status_in(p, None) },
        }
    }

    /// The status of the `i`-th request of the array just encoded.
    ///
    /// # Safety
    /// As for [`Encoder::status`].
    pub unsafe fn request_status(&mut self, p: *const MPI_Status, i: Option<usize>) {
        let request = i.and_then(|i| self.request_comms.get(i).copied());
        unsafe { self.completion_status(p, request) };
    }

    /// The statuses of the requests `which` of the array just encoded
    /// (status k belongs to request `which[k]`), or MPI_STATUSES_IGNORE.
    ///
    /// # Safety
    /// `p` is MPI_STATUSES_IGNORE, NULL, or valid for `which.len()` reads
    /// when the call succeeded.
    pub unsafe fn request_statuses(
        &mut self,
        p: *const MPI_Status,
        which: impl ExactSizeIterator<Item = usize>,
    ) {
        if !self.statuses_written() || p.is_null() || p as usize == self.front.statuses_ignore {
            self.array_len(None);
            return;
        }
        self.array_len(Some(which.len()));
        let size = self.front.status_size();
        for (k, i) in which.enumerate() {
            // SAFETY: k < which.len(), within the caller's array.
            let status = unsafe { p.cast::<u8>().add(k * size) }.cast::<MPI_Status>();
            let request = self.request_comms.get(i).copied();
            unsafe { self.completion_status(status, request) };
        }
    }

    /// A status the call wrote (or MPI_STATUS_IGNORE), for an operation on `comm`.
    ///
    /// # Safety
    /// `p` is NULL, MPI_STATUS_IGNORE, or valid for reads when the call succeeded.
    pub unsafe fn status(&mut self, p: *const MPI_Status, comm: Option<MPI_Comm>) {
        let comm = comm.map(|c| self.front.value(HandleKind::Comm, c));
        unsafe { self.status_in(p, comm) };
    }

    /// A status the call wrote, for an operation on the communicator of value `comm`.
    ///
    /// # Safety
    /// As for [`Encoder::status`].
    unsafe fn status_in(&mut self, p: *const MPI_Status, comm: Option<u64>) {
        let written =
            self.statuses_written() && !p.is_null() && p as usize != self.front.status_ignore;
        let status = written.then(|| self.status_value(&unsafe { self.front.status(p, 0) }, comm));
        put_status(self.out, status.as_ref());
    }

    /// Whether MPI wrote the call's statuses: on success, and on
    /// MPI_ERR_IN_STATUS (where each status says how its request ended).
    fn statuses_written(&self) -> bool {
        self.ok || self.errors_in_statuses
    }

    pub(crate) fn status_value(&self, s: &StatusFields, comm: Option<u64>) -> Status {
        let source = match comm {
            Some(c) => self.rank_value(i64::from(s.source), self.objects.comm(c)),
            None => Rank::Absolute(i64::from(s.source)),
        };
        Status {
            source,
            tag: canonical_tag(self.front, i64::from(s.tag)),
            count: s.count,
            cancelled: s.cancelled,
            error: if self.errors_in_statuses {
                i64::from(s.error)
            } else {
                0
            },
        }
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn int_out(&mut self, p: *const c_int) {
        let v = unsafe { self.read(p) }.map_or(0, i64::from);
        self.int(v);
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn rank_out(&mut self, p: *const c_int, comm: MPI_Comm) {
        match unsafe { self.read(p) } {
            Some(v) => self.rank(i64::from(v), comm),
            None => put_rank(self.out, Rank::ProcNull),
        }
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn address_out(&mut self, p: *const MPI_Aint) {
        let v: i64 = unsafe { self.read(p) }.unwrap_or(0);
        self.address(v);
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn offset_out(&mut self, p: *const MPI_Offset) {
        let v = unsafe { self.read(p) }.unwrap_or(0);
        self.address(v);
    }

    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn count_out(&mut self, p: *const MPI_Count) {
        let v = unsafe { self.read(p) }.unwrap_or(0);
        self.address(v);
    }

    /// Starts an array of `len` elements; `None`: not recorded.
    pub fn array_len(&mut self, len: Option<usize>) {
        put_array_len(self.out, len);
    }

    /// Coordinates in `comm`'s Cartesian grid that the call wrote: relative
    /// to the caller's own coordinates (asked through PMPI), with the
    /// grid's dimensions, so that every rank asking for its own (or its
    /// neighbour's) records the same; absolute if the grid cannot be asked.
    ///
    /// # Safety
    /// `p` is NULL or valid for `len` reads when the call succeeded.
    pub unsafe fn coords_out(&mut self, p: *const c_int, len: Option<usize>, comm: MPI_Comm) {
        const MAX_DIMS: usize = 16;
        let Some(n) = len.filter(|_| self.ok && !p.is_null()) else {
            put_coords(self.out, None);
            return;
        };
        // SAFETY: i < n, per the caller.
        let value = |i: usize| i64::from(unsafe { p.add(i).read_unaligned() });
        let (mut dims, mut periods, mut own) = ([0; MAX_DIMS], [0; MAX_DIMS], [0; MAX_DIMS]);
        let mut ndims = 0;
        // SAFETY: PMPI queries of a communicator the call accepted, into
        // local arrays of MAX_DIMS entries (asked only when n fits).
        let grid = n <= MAX_DIMS
            && unsafe { crate::pmpi::MPI_Cartdim_get()(comm, &mut ndims) } == MPI_SUCCESS
            && ndims as usize == n
            && unsafe {
                crate::pmpi::MPI_Cart_get()(
                    comm,
                    ndims,
                    dims.as_mut_ptr(),
                    periods.as_mut_ptr(),
                    own.as_mut_ptr(),
                )
            } == MPI_SUCCESS;
        if grid {
            let dims = dims.map(i64::from);
            let offsets = (0..n).map(|i| value(i) - i64::from(own[i]));
            put_coords_parts(self.out, Some(&dims[..n]), offsets);
        } else {
            put_coords_parts(self.out, None, (0..n).map(value));
        }
    }

    /// Reads an output: `None` when the call failed or `p` is NULL.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn read<T: Copy>(&self, p: *const T) -> Option<T> {
        (self.ok && !p.is_null()).then(|| unsafe { p.read_unaligned() })
    }

    /// Reads an output handle of type `slot` (its value): `None` when the
    /// call failed or `p` is NULL.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads when the call succeeded.
    pub unsafe fn read_handle(&self, slot: usize, p: *const HandleSlot) -> Option<u64> {
        (self.ok && !p.is_null()).then(|| unsafe { self.front.read(slot, p, 0) })
    }

    // --- lengths and significance, for the generated wrappers ---

    pub fn comm_size(&mut self, comm: MPI_Comm) -> usize {
        self.comm_info(self.front.value(HandleKind::Comm, comm))
            .map_or(0, |c| c.size.max(0) as usize)
    }

    pub fn comm_remote_size(&mut self, comm: MPI_Comm) -> usize {
        self.comm_info(self.front.value(HandleKind::Comm, comm))
            .map_or(0, |c| c.remote_size.max(0) as usize)
    }

    pub fn is_inter(&mut self, comm: MPI_Comm) -> bool {
        self.comm_info(self.front.value(HandleKind::Comm, comm))
            .is_some_and(|c| c.inter)
    }

    /// Whether the caller is the root of a rooted collective on `comm`.
    pub fn is_root(&mut self, root: c_int, comm: MPI_Comm) -> bool {
        match self.comm_info(self.front.value(HandleKind::Comm, comm)) {
            Some(c) if c.inter => root == self.front.ints.MPI_ROOT,
            Some(c) => root == c.rank,
            None => false,
        }
    }

    /// What the tracer knows of `comm`, asking MPI for communicators it
    /// has not seen yet (created while recording was paused).
    fn comm_info(&mut self, comm: u64) -> Option<CommInfo> {
        if let Some(info) = self.objects.comm(comm) {
            return Some(info);
        }
        // Only a call that succeeded proves `comm` valid: asking MPI about
        // an invalid handle could raise a fatal error in the application.
        if !self.ok || comm == self.front.null(HandleKind::Comm) {
            return None;
        }
        let info = crate::pmpi_query::comm_info(Handle(comm as usize))?;
        self.objects.set_comm(comm, info);
        Some(info)
    }
}
