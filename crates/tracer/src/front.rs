//! Which MPI the process runs, found out once, at its first MPI call:
//! the ABI front end the wrappers record through is bound then. An MPI
//! whose ABI this library does not know gets one line on stderr and no
//! tracing: every call passes through to it untouched.
//!
//! Families are told apart by what only one of them has:
//! - the MPI 5.0 standard ABI (`libmpi_abi.so`, MPICH 5, Intel MPI):
//!   `MPI_Abi_get_version` gives version 1 (an implementation's own ABI
//!   gives -1);
//! - Open MPI: its predefined objects are variables (`ompi_mpi_comm_world`);
//! - MPICH's ABI (MPICH, Intel MPI, MVAPICH, Cray MPICH): the name
//!   `MPI_Get_library_version` gives.

use crate::abi::{Handle, HandleSlot, MPI_Status};
use crate::symbols;
use mpigram_mpispec::{ConstRef, ConstSet, HandleKind, predefined};
use rustc_hash::FxHashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

pub use crate::fronts::Ints;

/// The ABI families mpigram knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// MPICH's ABI: int handles (MPICH, Intel MPI, MVAPICH, Cray MPICH).
    Mpich,
    /// Open MPI's: handles are pointers to predefined objects.
    OpenMpi,
    /// The MPI 5.0 standard ABI (`libmpi_abi.so`).
    Standard,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Mpich => "MPICH ABI",
            Family::OpenMpi => "Open MPI ABI",
            Family::Standard => "MPI standard ABI",
        }
    }
}

/// The MPI a process runs, as found out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    /// The first line of MPI_Get_library_version ("" if there is none).
    pub version: String,
    /// Its ABI, if mpigram knows it.
    pub family: Option<Family>,
}

impl Library {
    /// The library as a trace names it: `Open MPI v5.0.11, ... [Open MPI ABI]`.
    pub fn describe(&self) -> String {
        match self.family {
            Some(f) => format!("{} [{}]", self.version, f.name()),
            None => self.version.clone(),
        }
    }
}

/// The data of each family's front end, from its probe (`generated/fronts.rs`).
fn data(family: Family) -> &'static FamilyData {
    match family {
        Family::Mpich => &crate::fronts::MPICH,
        Family::OpenMpi => &crate::fronts::OPENMPI,
        Family::Standard => &crate::fronts::STANDARD,
    }
}

/// A value an MPI gives a constant: a number, or the address of a
/// variable of the library (Open MPI's predefined objects; MPICH's
/// MPI_UNWEIGHTED holds its value).
#[derive(Clone, Copy, Debug)]
pub enum Value {
    Int(i64),
    /// The address of this variable.
    Address(&'static CStr),
    /// The pointer this variable holds.
    Held(&'static CStr),
    /// The MPI does not define it.
    Absent,
}

impl Value {
    fn resolve(self) -> Option<u64> {
        match self {
            Value::Int(v) => Some(v as u64),
            Value::Address(name) => {
                let p = symbols::anywhere(name);
                (!p.is_null()).then_some(p as u64)
            }
            Value::Held(name) => {
                let p = symbols::anywhere(name);
                // SAFETY: the variable is a pointer of the MPI library
                // (`extern T * const NAME`), readable for the process's life.
                (!p.is_null()).then(|| unsafe { p.cast::<usize>().read() } as u64)
            }
            Value::Absent => None,
        }
    }
}

/// Where an MPI_Status keeps what the trace records.
#[derive(Clone, Copy, Debug)]
pub struct StatusLayout {
    pub size: usize,
    pub source: usize,
    pub tag: usize,
    pub error: usize,
    pub count: Count,
}

/// How a status holds the received size.
#[derive(Clone, Copy, Debug)]
pub enum Count {
    /// MPICH: the low 32 bits, then the high bits shifted left by one
    /// above the cancelled bit.
    LowHighCancelled { low: usize, high: usize },
    /// Open MPI: a size_t of bytes and an int flag.
    BytesAndFlag { bytes: usize, cancelled: usize },
    /// The standard ABI keeps them in its internal fields: asked with
    /// MPI_Get_count_c(MPI_BYTE) and MPI_Test_cancelled.
    Query,
}

/// Generated per family from its probe: everything its front end needs.
pub struct FamilyData {
    /// Bytes of a handle of each kind (then of a request) in memory.
    pub widths: [u8; SLOTS],
    pub status: StatusLayout,
    pub ints: Ints,
    /// The null handle of each kind (then MPI_REQUEST_NULL).
    pub nulls: [Value; SLOTS],
    /// (kind, fixed id, value) of each predefined handle it has.
    pub predefined: &'static [(HandleKind, u32, Value)],
    /// Per [`ConstSet`]: (value in this MPI, id) of each constant it defines.
    pub consts: &'static [&'static [(i64, u32)]],
    pub in_place: Value,
    pub status_ignore: Value,
    pub statuses_ignore: Value,
    pub unweighted: Value,
    pub weights_empty: Value,
}

/// Handle types: the kinds, then requests.
pub const SLOTS: usize = HandleKind::ALL.len() + 1;
pub const REQUEST: usize = HandleKind::ALL.len();

/// The bound front end: how this process's MPI represents handles,
/// statuses and constants, resolved once.
#[allow(non_snake_case)]
pub struct Front {
    widths: [u8; SLOTS],
    masks: [u64; SLOTS],
    nulls: [u64; SLOTS],
    predefined: Vec<FxHashMap<u64, u32>>,
    status: StatusLayout,
    consts: &'static [&'static [(i64, u32)]],
    pub ints: Ints,
    /// Whether the MPI has MPI 4.0's large-count functions (`MPI_X_c`;
    /// Open MPI 4.1 has none).
    pub large_counts: bool,
    pub in_place: usize,
    pub status_ignore: usize,
    pub statuses_ignore: usize,
    pub unweighted: usize,
    pub weights_empty: usize,
    // The predefined handles the tracer itself uses.
    pub MPI_COMM_WORLD: Handle,
    pub MPI_COMM_SELF: Handle,
    pub MPI_REQUEST_NULL: Handle,
    pub MPI_INT: Handle,
    pub MPI_BYTE: Handle,
    pub MPI_UINT64_T: Handle,
    pub MPI_INT64_T: Handle,
    pub MPI_BOR: Handle,
    pub MPI_MIN: Handle,
}

impl Front {
    fn new(d: &FamilyData) -> Option<Front> {
        let masks = d.widths.map(|w| {
            if w >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * w)) - 1
            }
        });
        let nulls =
            std::array::from_fn(|i| d.nulls[i].resolve().map_or(u64::MAX, |v| v & masks[i]));
        let mut predefined = vec![FxHashMap::default(); HandleKind::ALL.len()];
        for &(kind, id, value) in d.predefined {
            if let Some(v) = value.resolve() {
                predefined[kind as usize].insert(v & masks[kind as usize], id);
            }
        }
        let named = |kind: HandleKind, name: &str| -> Option<Handle> {
            let id = predefined_id_of(kind, name)?;
            let (_, _, value) = d
                .predefined
                .iter()
                .find(|(k, i, _)| *k == kind && *i == id)?;
            value.resolve().map(|v| Handle(v as usize))
        };
        let null = |slot: usize| Handle(nulls[slot] as usize);
        let pointer = |v: Value| v.resolve().map_or(0, |v| v as usize);
        Some(Front {
            widths: d.widths,
            masks,
            nulls,
            predefined,
            status: d.status,
            consts: d.consts,
            ints: d.ints,
            large_counts: !symbols::next(c"PMPI_Type_get_envelope_c").is_null(),
            in_place: pointer(d.in_place),
            status_ignore: pointer(d.status_ignore),
            statuses_ignore: pointer(d.statuses_ignore),
            unweighted: pointer(d.unweighted),
            weights_empty: pointer(d.weights_empty),
            MPI_COMM_WORLD: named(HandleKind::Comm, "MPI_COMM_WORLD")?,
            MPI_COMM_SELF: named(HandleKind::Comm, "MPI_COMM_SELF")?,
            MPI_REQUEST_NULL: null(REQUEST),
            MPI_INT: named(HandleKind::Datatype, "MPI_INT")?,
            MPI_BYTE: named(HandleKind::Datatype, "MPI_BYTE")?,
            MPI_UINT64_T: named(HandleKind::Datatype, "MPI_UINT64_T")?,
            MPI_INT64_T: named(HandleKind::Datatype, "MPI_INT64_T")?,
            MPI_BOR: named(HandleKind::Op, "MPI_BOR")?,
            MPI_MIN: named(HandleKind::Op, "MPI_MIN")?,
        })
    }

    /// The value of a handle of `kind` passed by value (`word`): the bits
    /// of the register that hold it.
    #[inline]
    pub fn value(&self, kind: HandleKind, word: Handle) -> u64 {
        word.0 as u64 & self.masks[kind as usize]
    }

    /// The value of a request passed by value.
    #[inline]
    pub fn request(&self, word: Handle) -> u64 {
        word.0 as u64 & self.masks[REQUEST]
    }

    /// The handle of type `slot` (a kind, or [`REQUEST`]) at `p[i]`.
    ///
    /// # Safety
    /// `p` is valid for `i + 1` handles of this MPI's type.
    #[inline]
    pub unsafe fn read(&self, slot: usize, p: *const HandleSlot, i: usize) -> u64 {
        let w = usize::from(self.widths[slot]);
        let at = unsafe { p.cast::<u8>().add(i * w) };
        if w == 4 {
            u64::from(unsafe { at.cast::<u32>().read_unaligned() })
        } else {
            unsafe { at.cast::<u64>().read_unaligned() }
        }
    }

    /// Appends the `n` handles of type `slot` at `p` to `out`: [`read`](Front::read)
    /// of each, with the handles' width tested once.
    ///
    /// # Safety
    /// `p` is valid for `n` handles of this MPI's type.
    pub unsafe fn read_all(&self, slot: usize, p: *const HandleSlot, n: usize, out: &mut Vec<u64>) {
        // SAFETY (both arms): per the caller.
        if self.widths[slot] == 4 {
            let p = p.cast::<u32>();
            out.extend((0..n).map(|i| u64::from(unsafe { p.add(i).read_unaligned() })));
        } else {
            let p = p.cast::<u64>();
            out.extend((0..n).map(|i| unsafe { p.add(i).read_unaligned() }));
        }
    }

    /// The null handle of `kind` (u64::MAX if this MPI has none).
    #[inline]
    pub fn null(&self, kind: HandleKind) -> u64 {
        self.nulls[kind as usize]
    }

    /// MPI_REQUEST_NULL's value.
    #[inline]
    pub fn request_null(&self) -> u64 {
        self.nulls[REQUEST]
    }

    /// The fixed id of a predefined handle.
    #[inline]
    pub fn predefined_id(&self, kind: HandleKind, value: u64) -> Option<u32> {
        self.predefined[kind as usize].get(&value).copied()
    }

    /// `v`, an integer of `set`, as stored: by name if it is one of the
    /// set's constants in this MPI (for flags, if every bit is one).
    pub fn constant(&self, set: ConstSet, v: i64) -> ConstRef {
        let table = self.consts.get(set as usize).copied().unwrap_or(&[]);
        if set.is_flags() {
            let (mut rest, mut mask) = (v, 0u64);
            for &(bit, id) in table {
                if rest & bit == bit {
                    rest &= !bit;
                    mask |= 1 << id;
                }
            }
            return if rest == 0 {
                ConstRef::Flags(mask)
            } else {
                ConstRef::Plain(v)
            };
        }
        match table.iter().find(|(value, _)| *value == v) {
            Some(&(_, id)) => ConstRef::Named(id),
            None => ConstRef::Plain(v),
        }
    }

    /// Bytes of one MPI_Status.
    pub fn status_size(&self) -> usize {
        self.status.size
    }

    /// The fields of the status at `p[i]`.
    ///
    /// # Safety
    /// `p` is valid for `i + 1` statuses MPI wrote.
    pub unsafe fn status(&self, p: *const MPI_Status, i: usize) -> StatusFields {
        let base = unsafe { p.cast::<u8>().add(i * self.status.size) };
        let int = |off: usize| unsafe { base.add(off).cast::<c_int>().read_unaligned() };
        let (count, cancelled) = match self.status.count {
            Count::LowHighCancelled { low, high } => {
                let hi = int(high) as u32;
                (
                    u64::from(int(low) as u32) | u64::from(hi >> 1) << 32,
                    hi & 1 != 0,
                )
            }
            Count::BytesAndFlag { bytes, cancelled } => (
                unsafe { base.add(bytes).cast::<u64>().read_unaligned() },
                int(cancelled) != 0,
            ),
            Count::Query => {
                let status = base.cast::<MPI_Status>();
                let (mut count, mut flag) = (0i64, 0);
                // SAFETY: local queries on a status MPI wrote.
                unsafe {
                    crate::pmpi::MPI_Get_count_c()(status, self.MPI_BYTE, &mut count);
                    crate::pmpi::MPI_Test_cancelled()(status, &mut flag);
                }
                (count.max(0) as u64, flag != 0)
            }
        };
        StatusFields {
            source: int(self.status.source),
            tag: int(self.status.tag),
            error: int(self.status.error),
            count,
            cancelled,
        }
    }
}

/// What a status says.
pub struct StatusFields {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    /// Received bytes.
    pub count: u64,
    pub cancelled: bool,
}

/// The fixed id of the predefined handle `name` of `kind`.
fn predefined_id_of(kind: HandleKind, name: &str) -> Option<u32> {
    predefined(kind)
        .iter()
        .position(|n| *n == name)
        .map(|i| i as u32)
}

static FRONT: once_cell::sync::OnceCell<Front> = once_cell::sync::OnceCell::new();

/// The bound front end. Only reached once [`bind`] succeeded (every
/// recorded call, the tracer's own communication); before, the MPICH one.
#[inline]
pub fn front() -> &'static Front {
    match FRONT.get() {
        Some(f) => f,
        None => unbound(),
    }
}

/// The bound front end, without [`front`]'s test (a traced call's).
///
/// # Safety
/// [`bind`] succeeded: recording is on (a `call::Call` exists).
#[inline(always)]
pub unsafe fn bound_front() -> &'static Front {
    // SAFETY: bind() sets FRONT before it succeeds, and it stays set.
    unsafe { FRONT.get_unchecked() }
}

#[cold]
fn unbound() -> &'static Front {
    static FALLBACK: OnceLock<Option<Front>> = OnceLock::new();
    FALLBACK
        .get_or_init(|| Front::new(&crate::fronts::MPICH))
        .as_ref()
        .expect("MPICH's front end needs no library variable")
}

const UNBOUND: u8 = 0;
const BOUND: u8 = 1;
const REFUSED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNBOUND);

/// The MPI found by [`bind`].
static LIBRARY: OnceLock<Library> = OnceLock::new();

/// The process's MPI library, once [`bind`] found it out.
pub fn library() -> Option<&'static Library> {
    LIBRARY.get()
}

/// Finds out which MPI the process runs and binds its front end: true if
/// calls can be recorded. An MPI library whose ABI is not supported gets
/// one line on stderr; a process without MPI, nothing. Called once, at the
/// first MPI call (never from the allocation hooks: MPI may not be
/// initialised enough to answer then).
#[cold]
pub fn bind() -> bool {
    match STATE.load(Relaxed) {
        BOUND => return true,
        REFUSED => return false,
        _ => {}
    }
    let library = identify();
    let front = library
        .family
        .filter(|&f| supported_version(f, &library.version))
        .and_then(|f| Front::new(data(f)));
    let ok = front.is_some();
    if let Some(front) = front {
        let _ = FRONT.set(front);
    }
    if !ok && !library.version.is_empty() {
        let what = match library.family {
            Some(f) => format!(
                "{} ({}): a version this mpigram does not record",
                library.version,
                f.name()
            ),
            None => format!("unknown MPI library \"{}\"", library.version),
        };
        eprintln!("mpigram: {what}: not tracing; every MPI call passes through untouched");
    }
    let _ = LIBRARY.set(library);
    STATE.store(if ok { BOUND } else { REFUSED }, Relaxed);
    ok
}

/// Whether a front end is bound (the MPI is one mpigram records).
pub fn is_bound() -> bool {
    STATE.load(Relaxed) == BOUND
}

/// Whether mpigram records this version of a family: Open MPI's
/// predefined objects changed layout before 4.0 (tested: 4.1, 5.0).
fn supported_version(family: Family, version: &str) -> bool {
    match family {
        Family::OpenMpi => ["Open MPI v4.", "Open MPI v5."]
            .iter()
            .any(|v| version.starts_with(v)),
        Family::Mpich | Family::Standard => true,
    }
}

/// The MPI library of this process and its ABI family.
pub fn identify() -> Library {
    let version = library_version();
    let family = if standard_abi() {
        Some(Family::Standard)
    } else if !symbols::anywhere(c"ompi_mpi_comm_world").is_null() {
        Some(Family::OpenMpi)
    } else {
        let mpich_family = ["MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"];
        mpich_family
            .iter()
            .any(|v| version.contains(v))
            .then_some(Family::Mpich)
    };
    Library { version, family }
}

/// Whether `MPI_Abi_get_version` says the standard ABI (major version 1).
fn standard_abi() -> bool {
    let f = symbols::next(c"PMPI_Abi_get_version");
    if f.is_null() {
        return false;
    }
    type AbiGetVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
    // SAFETY: `f` is PMPI_Abi_get_version, of this C type (legal at any time).
    let f = unsafe { std::mem::transmute::<*mut c_void, AbiGetVersion>(f) };
    let (mut major, mut minor) = (-1, -1);
    let ret = unsafe { f(&mut major, &mut minor) };
    ret == 0 && major == 1
}

/// The largest MPI_MAX_LIBRARY_VERSION_STRING of the MPIs mpigram knows.
const MAX_LIBRARY_VERSION: usize = 8192;

/// The first line of MPI_Get_library_version ("" without one).
pub fn library_version() -> String {
    let f = symbols::next(c"PMPI_Get_library_version");
    if f.is_null() {
        return String::new();
    }
    type GetLibraryVersion = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
    // SAFETY: `f` is PMPI_Get_library_version, of this C type in every MPI
    // (legal before MPI_Init and after MPI_Finalize).
    let f = unsafe { std::mem::transmute::<*mut c_void, GetLibraryVersion>(f) };
    let mut buf = vec![0u8; MAX_LIBRARY_VERSION + 1];
    let mut len: c_int = 0;
    // SAFETY: buf holds the longest version string of any of them.
    if unsafe { f(buf.as_mut_ptr().cast(), &mut len) } != 0 {
        return String::new();
    }
    let end = (len.max(0) as usize).min(MAX_LIBRARY_VERSION);
    let end = buf[..end].iter().position(|&b| b == 0).unwrap_or(end);
    String::from_utf8_lossy(&buf[..end])
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_owned()
}
