//! Fatal signals: the rank's crash journal notes which one killed it.
//! The handlers are installed at MPI_Init over whatever was there (UCX
//! installs its own for SIGSEGV, SIGBUS, SIGFPE and SIGILL, which print a
//! backtrace and re-raise) and chain to it, so the process dies as it
//! would have: same signal, same status. A signal the process ignores
//! stays ignored.
//!
//! The handler does only async-signal-safe work: one atomic store into the
//! journal's mapping, `sigaction`, `raise`, and a call of the previous
//! handler.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};

/// The signals that end a process unless handled.
const FATAL: [c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGTERM,
    libc::SIGINT,
];

/// The action each of `FATAL` had before ours; written before ours is
/// installed, read only by the handler.
struct Previous([UnsafeCell<MaybeUninit<libc::sigaction>>; FATAL.len()]);

// SAFETY: each slot is written once, before the handler that reads it is
// installed (`install` runs once).
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous([const { UnsafeCell::new(MaybeUninit::uninit()) }; 7]);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the handlers (once per process).
pub fn install() {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    for (i, &signal) in FATAL.iter().enumerate() {
        // SAFETY: sigaction with valid pointers; the slot is not yet read
        // by anyone (our handler for `signal` is installed after it).
        unsafe {
            let mut old = MaybeUninit::<libc::sigaction>::zeroed();
            if libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) != 0 {
                continue;
            }
            let old = old.assume_init();
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            PREVIOUS.0[i].get().write(MaybeUninit::new(old));
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_fatal_signal as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | (old.sa_flags & libc::SA_RESTART);
            ours.sa_mask = old.sa_mask;
            libc::sigaction(signal, &ours, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: errno is this thread's; restored so the interrupted code
    // does not see ours.
    let errno = unsafe { *libc::__errno_location() };
    let replaced = crate::journal::note_signal(signal);
    if let Some(i) = FATAL.iter().position(|&s| s == signal) {
        // SAFETY: written by `install` before this handler was installed.
        let previous = unsafe { (*PREVIOUS.0[i].get()).assume_init_ref() };
        let handler = previous.sa_sigaction;
        if handler == libc::SIG_DFL {
            // Die of it: the default action back, and the signal again.
            // It is blocked while we run, so it arrives when we return
            // (a fault that repeats on return dies the same way).
            unsafe {
                libc::sigaction(signal, previous, std::ptr::null_mut());
                libc::raise(signal);
            }
        } else {
            // SAFETY: the previous handler, called as it was installed.
            unsafe {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                        std::mem::transmute(handler);
                    f(signal, info, context);
                } else {
                    let f: extern "C" fn(c_int) = std::mem::transmute(handler);
                    f(signal);
                }
            }
            // It returned. After a fault (or abort()) the process dies all
            // the same: the fault repeats, abort() raises again with the
            // default action, and a handler such as UCX's resets it before
            // returning. After SIGTERM or SIGINT it lives on: this was not
            // how it ended.
            if matches!(signal, libc::SIGTERM | libc::SIGINT) {
                crate::journal::unnote_signal(replaced);
            }
        }
    }
    unsafe { *libc::__errno_location() = errno };
}
