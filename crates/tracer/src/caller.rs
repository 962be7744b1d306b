//! Who called: the application, or the MPI library itself. The Fortran
//! bindings of some MPIs convert handles and statuses through the exported
//! C functions: Intel MPI's `mpi_send_` calls `MPI_Comm_fromint` and
//! `MPI_Type_fromint` before `MPI_Send` (more than half the calls of NAS CG
//! under Intel MPI were such conversions). Those are the library's calls, not
//! the application's. The wrappers of the conversion functions
//! (`wrapgen`'s `is_conversion`) are exported as stubs that pass their
//! return address on as one more argument ([`with_caller`]), and a call from
//! an MPI library (a shared object whose file is `libmpi*`: `libmpi.so`,
//! `libmpifort.so`, `libmpi_mpifh.so`, `libmpich*.so`, `libmpi_abi.so`, ...;
//! not the tracer's own `libmpigram.so`) goes to the real function
//! unrecorded ([`in_mpi_library`]).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Recent callers and whether each is in an MPI library, as `address << 1 |
/// verdict` (0: empty), by a hash of the address: a call site's verdict is
/// looked up, not asked of the dynamic linker every call (`dladdr` scans the
/// object's symbols). A verdict stands for the run: a library unloaded and
/// another loaded at its address, one an MPI library and the other not,
/// would be taken for the first (MPI libraries stay loaded until the end).
static VERDICTS: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// Whether `caller` (a return address; 0: unknown) is in an MPI library.
pub fn in_mpi_library(caller: usize) -> bool {
    if caller == 0 {
        return false;
    }
    let slot = slot(caller);
    let known = slot.load(Relaxed);
    if known >> 1 == caller as u64 {
        return known & 1 == 1;
    }
    let verdict = object_is_mpi(caller);
    slot.store(((caller as u64) << 1) | u64::from(verdict), Relaxed);
    verdict
}

/// The slot of [`VERDICTS`] that holds `caller`'s verdict, if any.
fn slot(caller: usize) -> &'static AtomicU64 {
    &VERDICTS[((caller >> 2).wrapping_mul(0x9e37_79b9) >> 26) & (VERDICTS.len() - 1)]
}

/// Whether the shared object that holds `address` is an MPI library, by
/// its file's name.
fn object_is_mpi(address: usize) -> bool {
    let Some(info) = crate::symbols::object(address as *const libc::c_void) else {
        return false;
    };
    if info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dli_fname is a NUL-terminated path that lives as long as the
    // object.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes();
    let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    file.starts_with(b"libmpi") && !file.starts_with(b"libmpigram")
}

/// The body of an exported stub: calls `$f` with the stub's `$n` arguments
/// and its return address as argument `$n + 1`, as a tail call (`$f`
/// returns to the stub's caller). For functions of one or two integer or
/// pointer arguments (the conversions).
#[cfg(target_arch = "x86_64")]
macro_rules! with_caller {
    (1, $f:path) => {
        core::arch::naked_asm!("mov rsi, qword ptr [rsp]", "jmp {f}", f = sym $f)
    };
    (2, $f:path) => {
        core::arch::naked_asm!("mov rdx, qword ptr [rsp]", "jmp {f}", f = sym $f)
    };
}

#[cfg(target_arch = "aarch64")]
macro_rules! with_caller {
    (1, $f:path) => {
        core::arch::naked_asm!("mov x1, x30", "b {f}", f = sym $f)
    };
    (2, $f:path) => {
        core::arch::naked_asm!("mov x2, x30", "b {f}", f = sym $f)
    };
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use with_caller;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_is_not_mpi_and_the_verdict_is_kept() {
        let strlen = libc::strlen as *const () as usize;
        assert!(!in_mpi_library(strlen));
        assert!(!in_mpi_library(strlen), "again, from the cache");
        assert!(!in_mpi_library(0));
        assert_eq!(slot(strlen).load(Relaxed), (strlen as u64) << 1);
    }
}
