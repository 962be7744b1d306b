//! Entering and leaving a traced call: the on/off switch, the re-entrancy
//! guard and the clock. This is the hot path of every wrapper.

use crate::encoder::Encoder;
use mpigram_mpispec::FuncId;
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

const UNSET: u8 = 0;
const ON: u8 = 1;
const PAUSED: u8 = 2;
const OFF: u8 = 3;

/// Recording state of the process: read by every wrapper.
static STATE: AtomicU8 = AtomicU8::new(UNSET);

/// Where this thread is: outside any traced call, inside the MPI part of
/// one, or recording one.
const OUTSIDE: u8 = 0;
const IN_MPI: u8 = 1;
const RECORDING: u8 = 2;

thread_local! {
    /// Not OUTSIDE while this thread is inside a traced call: calls the MPI
    /// library makes to itself (or user callbacks it runs) are not traced.
    static INSIDE: Cell<u8> = const { Cell::new(OUTSIDE) };
}

/// A traced call in progress.
pub struct Call {
    start: u64,
    /// This thread's INSIDE flag, looked up once per call (a thread-local
    /// lookup is a library call in a shared object). A `Call` never leaves
    /// its thread: the raw pointer makes it neither Send nor Sync.
    inside: *const Cell<u8>,
}

impl Call {
    /// Starts recording a call; `None` when recording is off or paused, or
    /// this thread is already inside a traced call.
    #[inline]
    pub fn begin() -> Option<Call> {
        let state = STATE.load(Relaxed);
        if state != ON && !(state == UNSET && first_use()) {
            return None;
        }
        INSIDE.with(|inside| {
            if inside.get() != OUTSIDE {
                return None;
            }
            inside.set(IN_MPI);
            Some(Call {
                start: crate::clock::now(),
                inside,
            })
        })
    }

    /// When the call began, in clock ticks.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Ends the call: `encode` writes its arguments.
    #[inline]
    pub fn end(self, func: FuncId, ret: c_int, encode: impl Fn(&mut Encoder)) {
        self.end_at(crate::clock::now(), func, ret, encode);
    }

    /// Ends a call whose MPI part ended at `end` (the tracer did work of
    /// its own since, which is not the call's time).
    pub fn end_at(self, end: u64, func: FuncId, ret: c_int, encode: impl Fn(&mut Encoder)) {
        self.flag().set(RECORDING);
        crate::tracer::record(func, ret, self.start, end, encode);
    }
}

impl Call {
    fn flag(&self) -> &Cell<u8> {
        // SAFETY: points to this thread's INSIDE, which outlives the call.
        unsafe { &*self.inside }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.flag().set(OUTSIDE);
    }
}

/// Reads `MPIGRAM_OFF` once: tracing is on unless it is set (and not "0").
#[cold]
fn first_use() -> bool {
    let off = env_says_off();
    let _ = STATE.compare_exchange(UNSET, if off { OFF } else { ON }, Relaxed, Relaxed);
    STATE.load(Relaxed) == ON
}

/// Whether `MPIGRAM_OFF` is set (and not "0"). Uses getenv, which does not
/// allocate: the allocation hooks reach this.
pub fn env_says_off() -> bool {
    // SAFETY: getenv with a NUL-terminated name; the result is read at once.
    let value = unsafe { libc::getenv(c"MPIGRAM_OFF".as_ptr()) };
    !value.is_null() && {
        let v = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
        !v.is_empty() && v != b"0"
    }
}

/// Whether this process must take part in agreeing on a new
/// communicator's id although the call is not recorded: yes when recording
/// is merely paused or was turned off by an error (the other members do
/// not know), no under `MPIGRAM_OFF` or inside another traced call (a
/// call the MPI library makes to itself, on every member alike).
pub fn may_agree() -> bool {
    INSIDE.with(Cell::get) == OUTSIDE && !env_says_off()
}

/// MPI_Pcontrol(0): stop recording until [`resume`].
pub fn pause() {
    let _ = STATE.compare_exchange(ON, PAUSED, Relaxed, Relaxed);
}

/// MPI_Pcontrol(1) (or any non-zero level): record again.
pub fn resume() {
    let _ = STATE.compare_exchange(PAUSED, ON, Relaxed, Relaxed);
}

/// Stops recording for good (after an internal error, or at the end).
pub fn disable() {
    STATE.store(OFF, Relaxed);
}

/// Whether calls are being recorded now, and this thread is not inside
/// one (the allocation hooks ask this).
#[inline]
pub fn recording_here() -> bool {
    let state = STATE.load(Relaxed);
    (state == ON || (state == UNSET && first_use())) && INSIDE.with(Cell::get) == OUTSIDE
}

/// Whether this thread is recording a call now (the allocation hooks count
/// the tracer's own allocations with this).
#[inline]
pub fn in_recorder() -> bool {
    INSIDE.with(Cell::get) == RECORDING
}

/// Runs `f`, which the tracer does for itself while recording a call
/// (a journal checkpoint), with its allocations neither counted as the
/// recorder's nor tracked as the application's.
pub fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    let was = INSIDE.with(|inside| inside.replace(IN_MPI));
    let r = f();
    INSIDE.with(|inside| inside.set(was));
    r
}

/// Whether `MPIGRAM_OFF` turned tracing off (as opposed to a pause).
pub fn is_off() -> bool {
    let state = STATE.load(Relaxed);
    state == OFF || (state == UNSET && !first_use())
}
