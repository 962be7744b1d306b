//! PMIx, the key-value space of Open MPI's launchers (4.x and 5.x), of
//! PRRTE and of Slurm's `srun --mpi=pmix`. The tracer never initialises a
//! PMIx client of its own: an MPI library that uses PMIx initialises it in
//! MPI_Init (Open MPI 5 takes its identity from that call and skips it when
//! the client is initialised already; a second client would be a second
//! connection to the server). Instead the tracer's `PMIx_Init` wraps the
//! library's: right after the MPI's own PMIx_Init succeeds, and before the
//! MPI's fence, it puts and commits this rank's key. The fence collects
//! every rank's committed data (Open MPI's default), so after MPI_Init each
//! rank finds the keys in its local store. Reads ask for the local store
//! only (`pmix.optional`): they never wait for the server, and a launcher
//! that does not collect data leaves each rank alone, all alike.
//!
//! Layouts and numbers are the PMIx standard's (`pmix_common.h`).

use super::key;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// `pmix_proc_t`: a namespace of at most 255 bytes and a rank.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Proc {
    nspace: [c_char; 256],
    rank: u32,
}

/// `pmix_value_t`: a type and a 24-byte union.
#[repr(C)]
struct Value {
    kind: u16,
    data: [u64; 3],
}

/// `pmix_info_t`: a key of at most 511 bytes, flags and a value.
#[repr(C)]
pub struct Info {
    key: [c_char; 512],
    flags: u32,
    value: Value,
}

const PMIX_SUCCESS: c_int = 0;
const PMIX_ERR_INIT: c_int = -31;
const PMIX_BOOL: u16 = 1;
const PMIX_STRING: u16 = 3;
const PMIX_GLOBAL: u8 = 3;

type Init = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type Put = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type Commit = unsafe extern "C" fn() -> c_int;
type Get =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;

/// This rank's key and value, waiting for the MPI's PMIx_Init.
static PENDING: Mutex<Option<(u32, String)>> = Mutex::new(None);

/// The client the MPI initialised, once this rank's key is in it.
static ANNOUNCED: OnceLock<Pmix> = OnceLock::new();

/// The MPI's PMIx client, through which this rank's key was put.
pub(super) struct Pmix {
    get: Get,
    me: Proc,
}

/// Before PMPI_Init, in a job a PMIx server launched: the key the tracer's
/// PMIx_Init is to put.
pub(super) fn announce(rank: u32, value: &str) {
    *PENDING.lock().unwrap_or_else(|e| e.into_inner()) = Some((rank, value.to_owned()));
}

/// After PMPI_Init: the client through which the key was put, if it was.
pub(super) fn announced() -> Option<&'static Pmix> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).take();
    ANNOUNCED.get()
}

/// The PMIx client library's `PMIx_Init`, wrapped: it runs the library's
/// and then, once, puts this rank's key if the census waits for it.
///
/// # Safety
/// As PMIx_Init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PMIx_Init(proc: *mut Proc, info: *mut Info, ninfo: usize) -> c_int {
    let Some(init) = symbol::<Init>(c"PMIx_Init") else {
        return PMIX_ERR_INIT;
    };
    // SAFETY: the library's PMIx_Init with the caller's arguments.
    let rc = unsafe { init(proc, info, ninfo) };
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((rank, value)) = pending.filter(|_| rc == PMIX_SUCCESS && !proc.is_null()) {
        // SAFETY: PMIx_Init succeeded and wrote the caller's identity.
        let me = unsafe { *proc };
        if let Ok(pmix) = Pmix::put(me, rank, &value) {
            let _ = ANNOUNCED.set(pmix);
        }
    }
    rc
}

impl Pmix {
    /// Puts and commits this rank's key in the initialised client.
    fn put(me: Proc, rank: u32, value: &str) -> Result<Pmix, String> {
        if me.rank != rank {
            return Err(format!("PMIx says rank {}, the launcher {rank}", me.rank));
        }
        let put: Put = symbol(c"PMIx_Put").ok_or("no PMIx_Put")?;
        let commit: Commit = symbol(c"PMIx_Commit").ok_or("no PMIx_Commit")?;
        let get: Get = symbol(c"PMIx_Get").ok_or("no PMIx_Get")?;
        let text = CString::new(value).map_err(|_| "a value with a NUL byte")?;
        let mut v = Value {
            kind: PMIX_STRING,
            data: [text.as_ptr() as u64, 0, 0],
        };
        let name = CString::new(key(rank)).map_err(|_| "a key with a NUL byte")?;
        // SAFETY: the client's functions with their standard signatures;
        // PMIx copies the value.
        unsafe {
            status(put(PMIX_GLOBAL, name.as_ptr(), &mut v), "PMIx_Put")?;
            status(commit(), "PMIx_Commit")?;
        }
        Ok(Pmix { get, me })
    }

    /// Every rank's value, `None` where its key is not in this rank's
    /// local store.
    pub(super) fn values(&self, size: u32) -> Vec<Option<String>> {
        let mut optional = Info {
            key: [0; 512],
            flags: 0,
            value: Value {
                kind: PMIX_BOOL,
                data: [1, 0, 0],
            },
        };
        for (d, s) in optional.key.iter_mut().zip(c"pmix.optional".to_bytes()) {
            *d = *s as c_char;
        }
        (0..size)
            .map(|rank| {
                let proc = Proc { rank, ..self.me };
                let name = CString::new(key(rank)).ok()?;
                let mut got: *mut Value = std::ptr::null_mut();
                // SAFETY: PMIx_Get with a valid proc, key and one info;
                // on success `got` is a value PMIx allocated with malloc
                // (a string value's text too), released here.
                unsafe {
                    if (self.get)(&proc, name.as_ptr(), &optional, 1, &mut got) != PMIX_SUCCESS
                        || got.is_null()
                    {
                        return None;
                    }
                    let text = ((*got).kind == PMIX_STRING && (*got).data[0] != 0).then(|| {
                        let ptr = (*got).data[0] as *mut c_char;
                        let text = CStr::from_ptr(ptr).to_string_lossy().into_owned();
                        libc::free(ptr.cast());
                        text
                    });
                    libc::free(got.cast());
                    text
                }
            })
            .collect()
    }
}

fn status(code: c_int, what: &str) -> Result<(), String> {
    if code == PMIX_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} returned {code}"))
    }
}

/// A function of the PMIx client library the MPI loaded: the next
/// definition after this library's, or, where the library was loaded into
/// a local scope (a plugin's dependency, as Open MPI 4's PMIx component
/// loads it), the one of the loaded `libpmix.so.2`.
fn symbol<F: Copy>(name: &CStr) -> Option<F> {
    // SAFETY: dlsym by name; dlopen with RTLD_NOLOAD only finds a library
    // already loaded (its reference is kept: never unloaded under the MPI).
    let ptr = unsafe {
        let next = libc::dlsym(libc::RTLD_NEXT, name.as_ptr());
        if next.is_null() {
            let lib = libc::dlopen(c"libpmix.so.2".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
            if lib.is_null() {
                return None;
            }
            libc::dlsym(lib, name.as_ptr())
        } else {
            next
        }
    };
    if ptr.is_null() || size_of::<F>() != size_of::<*mut c_void>() {
        return None;
    }
    // SAFETY: F is the function pointer type of the symbol's signature.
    Some(unsafe { std::mem::transmute_copy(&ptr) })
}

#[cfg(test)]
mod tests {
    use super::{Info, Proc, Value};
    use std::mem::{offset_of, size_of};

    /// The layouts of PMIx's `pmix_common.h` (4.x and 5.x, x86-64).
    #[test]
    fn layouts_are_the_standard_s() {
        assert_eq!(size_of::<Proc>(), 260);
        assert_eq!(offset_of!(Proc, rank), 256);
        assert_eq!(size_of::<Value>(), 32);
        assert_eq!(offset_of!(Value, data), 8);
        assert_eq!(size_of::<Info>(), 552);
        assert_eq!(offset_of!(Info, flags), 512);
        assert_eq!(offset_of!(Info, value), 520);
    }
}
