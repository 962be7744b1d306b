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

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

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

/// Families this build records through.
fn supported(family: Family) -> bool {
    family == Family::Mpich
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
    let ok = library.family.is_some_and(supported);
    if !ok && !library.version.is_empty() {
        let what = match library.family {
            Some(f) => format!(
                "{} ({}) is not supported by this build",
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

/// The MPI library of this process and its ABI family.
pub fn identify() -> Library {
    let version = library_version();
    let family = if standard_abi() {
        Some(Family::Standard)
    } else if !symbol(c"ompi_mpi_comm_world").is_null() {
        ["Open MPI v4.", "Open MPI v5."]
            .iter()
            .any(|v| version.starts_with(v))
            .then_some(Family::OpenMpi)
    } else {
        let mpich_family = ["MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"];
        mpich_family
            .iter()
            .any(|v| version.contains(v))
            .then_some(Family::Mpich)
    };
    Library { version, family }
}

fn symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym only looks a NUL-terminated name up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The real function `name` (PMPI_X, after this library), never a stub.
fn real(name: &CStr) -> *mut c_void {
    // SAFETY: as above.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// Whether `MPI_Abi_get_version` says the standard ABI (major version 1).
fn standard_abi() -> bool {
    let f = real(c"PMPI_Abi_get_version");
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
    let f = real(c"PMPI_Get_library_version");
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
