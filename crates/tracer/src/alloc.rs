//! Allocation hooks: the heap blocks the application allocates become
//! memory segments (segments.rs), so a buffer is recorded as (block,
//! offset). The hooks forward to glibc's own entry points (`__libc_malloc`,
//! ...) and add only a lock and a table update while recording; the
//! tracer's own allocations, and MPI's inside a traced call, are not
//! tracked. mmap'ed buffers are not hooked: they get ids on first use like
//! stack buffers.

use crate::call::Allocator;
use crate::segments;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};

const UNSET: u8 = 0;
const CHECKING: u8 = 1;
const ON: u8 = 2;
const OFF: u8 = 3;

/// Whether heap blocks are tracked: only in processes that have MPI (a
/// shell or launcher the library is preloaded into pays nothing), from
/// the start if MPI is linked in, else from MPI_Init on (MPI loaded later,
/// e.g. by Python).
static HEAP: AtomicU8 = AtomicU8::new(UNSET);

fn heap_tracking() -> bool {
    match HEAP.load(Relaxed) {
        ON => true,
        UNSET => first_check(),
        _ => false,
    }
}

#[cold]
fn first_check() -> bool {
    if HEAP
        .compare_exchange(UNSET, CHECKING, Relaxed, Relaxed)
        .is_err()
    {
        return false; // another thread, or dlsym allocating: not tracked yet
    }
    // SAFETY: dlsym with a NUL-terminated name.
    let mpi = !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"PMPI_Init".as_ptr()) }.is_null();
    HEAP.store(if mpi { ON } else { OFF }, Relaxed);
    mpi
}

/// MPI is initialised: track heap blocks from now on.
pub fn start_tracking() {
    HEAP.store(ON, Relaxed);
}

unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

/// Allocations the tracer made while recording calls: after warm-up,
/// recording allocates nothing, so this stops growing (a test checks it).
static RECORDER_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

pub fn recorder_allocations() -> u64 {
    RECORDER_ALLOCATIONS.load(Relaxed)
}

fn track(p: *mut c_void, size: usize) -> *mut c_void {
    match crate::call::allocator() {
        Allocator::Recorder => {
            RECORDER_ALLOCATIONS.fetch_add(1, Relaxed);
        }
        Allocator::Application if !p.is_null() && heap_tracking() => {
            segments::allocated(p as usize, size);
        }
        _ => {}
    }
    p
}

/// # Safety
/// As C's `malloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    track(unsafe { __libc_malloc(size) }, size)
}

/// # Safety
/// As C's `free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if !p.is_null() && !crate::call::in_forked_child() {
        segments::freed(p as usize);
    }
    unsafe { __libc_free(p) }
}

/// # Safety
/// As C's `calloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    track(unsafe { __libc_calloc(n, size) }, n.saturating_mul(size))
}

/// # Safety
/// As C's `realloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    let q = unsafe { __libc_realloc(p, size) };
    // On failure (NULL with size > 0) the old block is untouched and stays.
    if (!q.is_null() || size == 0) && !crate::call::in_forked_child() {
        if !p.is_null() {
            segments::freed(p as usize);
        }
        track(q, size);
    }
    q
}

/// # Safety
/// As C's `reallocarray`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        Some(total) => unsafe { realloc(p, total) },
        None => {
            // SAFETY: errno is thread-local and writable.
            unsafe { *libc::__errno_location() = libc::ENOMEM };
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// As C's `memalign`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    track(unsafe { __libc_memalign(align, size) }, size)
}

/// # Safety
/// As C's `aligned_alloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    unsafe { memalign(align, size) }
}

/// # Safety
/// As C's `posix_memalign`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || align % size_of::<*mut c_void>() != 0 {
        return libc::EINVAL;
    }
    let p = unsafe { memalign(align, size) };
    if p.is_null() {
        return libc::ENOMEM;
    }
    unsafe { *out = p };
    0
}
