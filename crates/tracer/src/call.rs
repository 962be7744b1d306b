//! Entering and leaving a traced call: the on/off switch, the re-entrancy
//! guard and the clock. This is the hot path of every wrapper.

use crate::encoder::Encoder;
use crate::memo::{InputWords, KeyWords};
use mpigram_mpispec::FuncId;
use std::ffi::c_int;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering::Relaxed,
};

/// How calls are recorded, in one word that every wrapper reads once: the
/// recording state (the low two bits: UNSET, ON, PAUSED or OFF) and the
/// bits CONCURRENT, VERIFY and SAMPLE.
static MODE: AtomicU8 = AtomicU8::new(UNSET | CONCURRENT);

const STATE: u8 = 3;
/// ON is 0: a wrapper's fast path tests that MODE has none of the bits of
/// the state and of its other conditions in one instruction.
const ON: u8 = 0;
const UNSET: u8 = 1;
const PAUSED: u8 = 2;
/// Both bits: a `fetch_or` turns tracing off from any state.
const OFF: u8 = 3;
/// MPI calls may run concurrently: set until MPI_Init or MPI_Init_thread
/// settles on a thread level below MPI_THREAD_MULTIPLE, under which the
/// application guarantees that no two MPI calls overlap (SINGLE, FUNNELED,
/// SERIALIZED): then the tracer's lock is not needed (it costs about 7 ns
/// of the 50 ns budget of a call).
const CONCURRENT: u8 = 4;
/// Calls are verified: each is also encoded in full into the verification
/// stream (`MPIGRAM_VERIFY`; set as the recorder is made).
const VERIFY: u8 = 16;
/// The next call ends a sample of the CPU time of the gap before it
/// (`cpu_share`): it takes the wrappers' slow path ([`where_noted`]),
/// which clears the bit.
const SAMPLE: u8 = 32;

/// The recording state.
fn state() -> u8 {
    MODE.load(Relaxed) & STATE
}

/// Makes the recording state `to` if it is `from`.
fn change_state(from: u8, to: u8) {
    let _ = MODE.fetch_update(Relaxed, Relaxed, |m| {
        (m & STATE == from).then_some(m & !STATE | to)
    });
}

/// MPI settled on `provided` as the thread level: whether MPI calls may
/// run concurrently (see [`CONCURRENT`]).
pub fn set_concurrent(concurrent: bool) {
    if concurrent {
        MODE.fetch_or(CONCURRENT, Relaxed);
    } else {
        MODE.fetch_and(!CONCURRENT, Relaxed);
    }
}

/// Whether MPI calls may run concurrently (see [`CONCURRENT`]).
#[inline(always)]
pub fn concurrent() -> bool {
    MODE.load(Relaxed) & CONCURRENT != 0
}

/// Calls are verified from now on.
pub fn set_verify() {
    MODE.fetch_or(VERIFY, Relaxed);
}

/// The next call ends a sample of the CPU time of the gap before it.
pub fn sample_next() {
    MODE.fetch_or(SAMPLE, Relaxed);
}

/// Where this thread is: outside any traced call, inside the MPI part of
/// one, recording one, or writing out what the tracer recorded.
const OUTSIDE: usize = 0;
const IN_MPI: usize = 1;
const RECORDING: usize = 2;
const WRITING: usize = 3;
/// The bits of a thread's place in [`SERIAL`] (below a [`thread_tag`]).
const PLACE: usize = 3;

/// This thread's place while MPI calls may run concurrently (else see
/// [`SERIAL`]): not OUTSIDE while it is inside a traced call, so that the
/// calls the MPI library makes to itself (or user callbacks it runs) are
/// not traced.
///
/// On x86-64 Linux a thread-local of the initial-exec model: its address
/// is the thread pointer plus an offset the loader fixes, two instructions
/// where a `thread_local!` of a preloaded library calls `__tls_get_addr`
/// at each access (about 17 instructions a call at MPI_THREAD_MULTIPLE).
/// The model needs the library loaded with the program (LD_PRELOAD, as
/// mpigram is), or room in the static TLS that the loader keeps for
/// later ones, which 8 bytes find.
#[inline(always)]
fn inside() -> &'static AtomicUsize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let at: usize;
        // SAFETY: the thread pointer plus the offset of `mpigram_inside` in
        // the static TLS block: this thread's 8-byte, 8-aligned word
        // (global_asm below), zero (OUTSIDE) in a new thread, which lives
        // as long as the thread, longer than any call it makes.
        unsafe {
            std::arch::asm!(
                "mov {at}, qword ptr [rip + mpigram_inside@GOTTPOFF]",
                "add {at}, qword ptr fs:0",
                at = out(reg) at,
                options(nostack, readonly, pure),
            );
            &*(at as *const AtomicUsize)
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        thread_local! {
            static INSIDE: AtomicUsize = const { AtomicUsize::new(OUTSIDE) };
        }
        // SAFETY: the thread's own, which outlives its calls.
        INSIDE.with(|inside| unsafe { &*(inside as *const AtomicUsize) })
    }
}

// The word `inside` reads: zero-filled thread-local storage (.tbss), global
// to the library's object files (a debug build spreads them over several)
// and hidden from every other object.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
std::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".globl mpigram_inside",
    ".hidden mpigram_inside",
    ".type mpigram_inside, @tls_object",
    ".size mpigram_inside, 8",
    ".p2align 3",
    "mpigram_inside:",
    ".zero 8",
    ".popsection",
);

/// The thread inside a traced call while MPI calls cannot overlap (a
/// thread level below MPI_THREAD_MULTIPLE: [`concurrent`]), as its
/// [`thread_tag`] plus its place (IN_MPI or RECORDING); 0 while no thread
/// is inside one. A thread-local of a preloaded library costs a call of
/// `__tls_get_addr` at each access; this is one load and one store a call.
static SERIAL: AtomicUsize = AtomicUsize::new(0);

/// A number that tells this thread from every other live one, a multiple
/// of 4 (the thread's control block).
#[inline(always)]
pub fn thread_tag() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tcb: usize;
        // SAFETY: reads the thread pointer, the first word of the thread's
        // control block (its own address, x86-64 TLS ABI).
        unsafe {
            std::arch::asm!("mov {}, fs:0", out(reg) tcb, options(nostack, readonly, preserves_flags, pure));
        }
        tcb
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: no arguments, no failure.
        unsafe { libc::pthread_self() as usize }
    }
}

/// Where this thread is (OUTSIDE, IN_MPI or RECORDING), whichever way it
/// was noted.
fn place() -> usize {
    let own = inside().load(Relaxed);
    if own != OUTSIDE {
        return own;
    }
    let serial = SERIAL.load(Relaxed);
    if serial & !PLACE == thread_tag() {
        serial & PLACE
    } else {
        OUTSIDE
    }
}

/// Where a call that begins names its function
/// (`mpigram_trace::journal::in_call_word`): the crash journal's in-call
/// word while the rank has a journal (the journal clears it as it records
/// the call), else [`NO_JOURNAL`]. So a rank that ends inside a call (MPI
/// ends the process in it, or it is killed while blocked in it) can say
/// which: [`call_in_progress`], and the journal when no handler runs.
static IN_CALL: AtomicPtr<AtomicU32> = AtomicPtr::new(&raw const NO_JOURNAL as *mut AtomicU32);
static NO_JOURNAL: AtomicU32 = AtomicU32::new(0);

/// Makes calls name their function in `word` (the journal's), or in no
/// journal's if null.
pub fn name_calls_in(word: *mut AtomicU32) {
    let word = if word.is_null() {
        &raw const NO_JOURNAL as *mut AtomicU32
    } else {
        word
    };
    IN_CALL.store(word, Relaxed);
}

/// The function of the traced call this thread is inside, if it is inside
/// one (as the at-exit handler asks when MPI exits the process in a call):
/// the call that began last, of any thread.
pub fn call_in_progress() -> Option<FuncId> {
    if place() != IN_MPI {
        return None;
    }
    // SAFETY: IN_CALL points to a static or to the journal's mapping,
    // which is never unmapped.
    let word = unsafe { &*IN_CALL.load(Relaxed) }.load(Relaxed);
    mpigram_trace::journal::in_call_of_word(word).ok().flatten()
}

/// Marks the branch that calls it as rarely taken (what
/// `std::hint::cold_path` does from Rust 1.95 on).
#[cold]
#[inline(always)]
pub fn cold_path() {}

/// Names `func` as the call in progress, for the crash journal: one store
/// of a constant (see IN_CALL).
#[inline(always)]
fn note_in_call(func: FuncId) {
    // SAFETY: IN_CALL points to a static or to the journal's mapping, which
    // is never unmapped.
    unsafe { &*IN_CALL.load(Relaxed) }.store(mpigram_trace::journal::in_call_word(func), Relaxed);
}

/// A traced call in progress.
pub struct Call {
    start: u64,
    /// Where this thread's place is noted: its `inside()` word, looked up once per
    /// call, or SERIAL. A `Call` never leaves its thread: the raw pointer
    /// makes it neither Send nor Sync.
    flag: *const AtomicUsize,
    /// What the place is noted with: 0 in `inside()`, the thread's tag in SERIAL.
    tag: usize,
    /// When the call began, recording was on, no two MPI calls could
    /// overlap and calls were not verified: a keyed call the memo knows
    /// needs neither the tracer's lock nor its encoding.
    recalls_alone: bool,
    /// The bound front end, found as the call began: [`recalled`](Call::recalled)
    /// does not look for it again (a second atomic load of the front end's
    /// cell, which the compiler cannot merge with the first).
    front: Option<&'static crate::front::Front>,
}

impl Call {
    /// Starts recording a call of `func`; `None` when recording is off or
    /// paused, or this thread is already inside a traced call.
    #[inline]
    pub fn begin(func: FuncId) -> Option<Call> {
        let mut call = Call::enter(func)?;
        call.start = crate::clock::now();
        Some(call)
    }

    /// [`begin`](Call::begin) for a wrapper with a key (memo.rs), without
    /// starting the clock: [`keyed`](Call::keyed) does, once the call's
    /// input words are compared with the memo's.
    #[inline(always)]
    pub fn enter(func: FuncId) -> Option<Call> {
        let mode = MODE.load(Relaxed);
        let (flag, tag) = match mode & (STATE | CONCURRENT | SAMPLE) {
            ON => (&raw const SERIAL, thread_tag()),
            // Recording, and calls may overlap: this thread's own flag.
            CONCURRENT => (inside() as *const AtomicUsize, 0),
            _ => where_noted(mode)?,
        };
        // SAFETY: this thread's `inside()`, or a static.
        let noted = unsafe { &*flag };
        if noted.load(Relaxed) != OUTSIDE {
            return None;
        }
        noted.store(tag | IN_MPI, Relaxed);
        note_in_call(func);
        Some(Call {
            start: 0,
            flag,
            tag,
            recalls_alone: mode & (STATE | CONCURRENT | VERIFY) == ON,
            front: None,
        })
    }

    /// Whether a call may take a fast path: recording is on, no two MPI
    /// calls can overlap, calls are not verified and this thread is not
    /// inside a traced call. A keyed wrapper asks before anything else, so
    /// that a call that may not (every call at MPI_THREAD_MULTIPLE) goes
    /// its other way at once, before the fast path's code saves registers.
    #[inline(always)]
    pub fn may_recall() -> bool {
        MODE.load(Relaxed) & (STATE | CONCURRENT | VERIFY | SAMPLE) == ON
            && SERIAL.load(Relaxed) == OUTSIDE
    }

    /// Starts a call of a keyed wrapper's fast path, once [`may_recall`](Call::may_recall)
    /// said it may: `Some` if the input words `inputs` gives are the
    /// memo's; then [`recalled`](Call::recalled) makes it. `None` changes
    /// nothing: the wrapper then makes its call in full ([`enter`](Call::enter),
    /// [`keyed`](Call::keyed)), with its arguments where it was given them
    /// (this path holds them across no call). `narrow` says which words
    /// are sign-extended 32-bit integers, of which only the low halves are
    /// compared (`CallMemo::same_inputs`).
    #[inline(always)]
    pub fn recalling<const I: usize>(
        func: FuncId,
        inputs: impl FnOnce(&InputWords) -> [u64; I],
        narrow: [bool; I],
    ) -> Option<Call> {
        // The memo is read without the lock: the wrapper asked first.
        debug_assert!(Call::may_recall(), "a fast path taken where it may not be");
        Call::begin_known(func, |front| {
            let words = inputs(&InputWords::new(front));
            // SAFETY: MPI calls cannot overlap.
            unsafe { crate::tracer::same_inputs(func, &words, narrow) }
        })
    }

    /// Starts a call of `func` on a fast path: `Some` if [`may_recall`](Call::may_recall)
    /// says it may and `known` (which may read the tracer: no other thread
    /// uses it) says that the call's record is known before it is made;
    /// then [`made`](Call::made) makes it. `None` changes nothing.
    #[inline(always)]
    pub fn recalling_if(
        func: FuncId,
        known: impl FnOnce(&'static crate::front::Front) -> bool,
    ) -> Option<Call> {
        if !Call::may_recall() {
            return None;
        }
        Call::begin_known(func, known)
    }

    /// A fast path's call of `func`, if `known` says its record is known
    /// (after [`may_recall`](Call::may_recall) said true).
    #[inline(always)]
    fn begin_known(
        func: FuncId,
        known: impl FnOnce(&'static crate::front::Front) -> bool,
    ) -> Option<Call> {
        // SAFETY: recording is on, which needs a bound front end.
        let front = unsafe { crate::front::bound_front() };
        if !known(front) {
            return None;
        }
        let tag = thread_tag();
        SERIAL.store(tag | IN_MPI, Relaxed);
        note_in_call(func);
        Some(Call {
            start: 0,
            flag: &raw const SERIAL,
            tag,
            recalls_alone: true,
            front: Some(front),
        })
    }

    /// Makes a call that [`recalling_if`](Call::recalling_if) started:
    /// `mpi` is the MPI call, `record` records it with its start and end
    /// in clock ticks (nothing kept across the MPI call but the call).
    #[inline(always)]
    pub fn made<R>(mut self, mpi: impl FnOnce() -> R, record: impl FnOnce(&R, (u64, u64))) -> R {
        self.start = crate::clock::now();
        let r = mpi();
        let end = crate::clock::now();
        // `recalls_alone`: the place is noted in SERIAL. The tag is read
        // again rather than kept across the MPI call (in a register the
        // call must preserve, saved and restored).
        SERIAL.store(thread_tag() | RECORDING, Relaxed);
        record(&r, (self.start, end));
        SERIAL.store(OUTSIDE, Relaxed);
        std::mem::forget(self);
        r
    }

    /// Makes the call of a wrapper with a key (memo.rs), after
    /// [`enter`](Call::enter): `inputs` gives the words its arguments give,
    /// `mpi` makes the MPI call, `code` says its return code, `outputs`
    /// gives the words MPI wrote and `encode` writes the call's arguments,
    /// made again from its input words, if the memo does not know the
    /// call. The input words are compared with the memo's before the MPI
    /// call: a call whose inputs are the memo's keeps neither them nor its
    /// arguments across it (the memo has them), and the clock starts after
    /// the comparison.
    #[inline(always)]
    pub fn keyed<const I: usize, const O: usize, R>(
        mut self,
        func: FuncId,
        inputs: impl FnOnce(&InputWords) -> [u64; I],
        mpi: impl FnOnce() -> R,
        code: impl FnOnce(&R) -> c_int,
        outputs: impl FnOnce(&KeyWords) -> [u64; O],
        encode: impl FnOnce(&mut Encoder, &[u64; I]),
    ) -> R {
        // SAFETY: a `Call` exists only while recording is on, which needs
        // a bound front end (`first_use`).
        let front = unsafe { crate::front::bound_front() };
        let words = inputs(&InputWords::new(front));
        // SAFETY: with `recalls_alone`, MPI calls cannot overlap.
        if !(self.recalls_alone && unsafe { crate::tracer::known_inputs(func, &words) }) {
            // The words are kept across the MPI call on this path only.
            cold_path();
            self.start = crate::clock::now();
            let r = mpi();
            let end = crate::clock::now();
            self.note(RECORDING);
            let ret = code(&r);
            let k = KeyWords::new(front, ret);
            let key = (&words, &outputs(&k));
            crate::recording::record_keyed(func, ret, (self.start, end), key, k.request(), encode);
            return r;
        }
        self.front = Some(front);
        self.recalled(func, mpi, code, outputs, encode)
    }

    /// A keyed call whose input words are the memo's (see
    /// [`recalling`](Call::recalling)): the MPI call, then its record.
    #[inline(always)]
    pub fn recalled<const I: usize, const O: usize, R>(
        self,
        func: FuncId,
        mpi: impl FnOnce() -> R,
        code: impl FnOnce(&R) -> c_int,
        outputs: impl FnOnce(&KeyWords) -> [u64; O],
        encode: impl FnOnce(&mut Encoder, &[u64; I]),
    ) -> R {
        let front = match self.front {
            Some(front) => front,
            // SAFETY: as in `keyed`.
            None => unsafe { crate::front::bound_front() },
        };
        self.made(mpi, |r, times| {
            let ret = code(r);
            let k = KeyWords::new(front, ret);
            let words = outputs(&k);
            crate::recording::record_same_inputs::<I, O>(
                func,
                ret,
                times,
                &words,
                k.request(),
                encode,
            );
        })
    }

    /// When the call began, in clock ticks.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Ends the call: `encode` writes its arguments.
    #[inline]
    pub fn end(self, func: FuncId, ret: c_int, encode: impl FnOnce(&mut Encoder)) {
        self.end_at(crate::clock::now(), func, ret, encode);
    }

    /// Ends a call whose record `record` makes, given the call's start and
    /// end in clock ticks.
    #[inline]
    pub fn end_with(self, record: impl FnOnce((u64, u64))) {
        let end = crate::clock::now();
        self.note(RECORDING);
        record((self.start, end));
    }

    /// Ends a call whose MPI part ended at `end` (the tracer did work of
    /// its own since, which is not the call's time).
    pub fn end_at(self, end: u64, func: FuncId, ret: c_int, encode: impl FnOnce(&mut Encoder)) {
        self.note(RECORDING);
        crate::recording::record(func, ret, self.start, end, encode);
    }
}

/// Where a call that begins while recording is not on, or MPI calls may
/// overlap, notes its place (see [`Call`]'s `flag` and `tag`), if it is
/// recorded (apart from [`Call::enter`]: the arguments of a wrapper are
/// kept across no call on its fast path).
#[cold]
#[inline(never)]
fn where_noted(mode: u8) -> Option<(*const AtomicUsize, usize)> {
    if mode & SAMPLE != 0 {
        MODE.fetch_and(!SAMPLE, Relaxed);
        if mode & STATE == ON {
            crate::cpu_share::end(thread_tag(), crate::clock::now());
        }
    }
    let state = mode & STATE;
    if state != ON && !(state == UNSET && first_use()) {
        return None;
    }
    Some(match concurrent() {
        true => (inside() as *const AtomicUsize, 0),
        false => (&raw const SERIAL, thread_tag()),
    })
}

impl Call {
    #[inline(always)]
    fn note(&self, place: usize) {
        // SAFETY: points to this thread's `inside()`, which outlives the call,
        // or to a static.
        unsafe { &*self.flag }.store(self.tag | place, Relaxed);
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // SAFETY: as in `note`.
        unsafe { &*self.flag }.store(OUTSIDE, Relaxed);
    }
}

/// Reads `MPIGRAM_OFF` once: tracing is on unless it says off.
#[cold]
fn first_use() -> bool {
    let off = env_says_off();
    if off && off_value_is_wrong() && launcher_rank_is_zero() {
        // Static text: this may run inside an allocation hook.
        let line = b"mpigram: MPIGRAM_OFF must be 1, true, yes, on (off) or 0, false, no, off (on); tracing is off\n";
        // SAFETY: writes from a static buffer of that length.
        unsafe { libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len()) };
    }
    // The process's MPI must be one mpigram records (`crate::front`).
    let on = !off && crate::front::bind();
    change_state(UNSET, if on { ON } else { OFF });
    state() == ON
}

/// Whether `MPIGRAM_OFF` turns tracing off: `1`, `true`, `yes` or `on`
/// (`0`, `false`, `no`, `off` or empty leave it on). Any other value is a
/// mistake, said once (by rank 0), and turns tracing off:
/// the user meant something, and an untraced rank harms nothing. Read
/// once, with getenv, which does not allocate: the allocation hooks reach
/// this (once only: getenv while the program changes its environment, from
/// inside setenv's realloc, would read a half-built table).
pub fn env_says_off() -> bool {
    static OFF_ENV: AtomicU8 = AtomicU8::new(UNSET);
    match OFF_ENV.load(Relaxed) {
        UNSET => {}
        v => return v == OFF,
    }
    // SAFETY: getenv with a NUL-terminated name; the result is read at once.
    let value = unsafe { libc::getenv(c"MPIGRAM_OFF".as_ptr()) };
    let off = !value.is_null() && {
        let v = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
        !v.is_empty() && parse_switch(v) != Some(false)
    };
    OFF_ENV.store(if off { OFF } else { ON }, Relaxed);
    off
}

fn off_value_is_wrong() -> bool {
    // SAFETY: as in env_says_off.
    let value = unsafe { libc::getenv(c"MPIGRAM_OFF".as_ptr()) };
    !value.is_null()
        && parse_switch(unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes()).is_none()
}

/// Whether the launcher's rank variable is absent or 0, without
/// allocating (the one rank that speaks for the job before MPI_Init).
fn launcher_rank_is_zero() -> bool {
    // SAFETY: getenv with a NUL-terminated name; the result is read at once.
    let value = unsafe { libc::getenv(c"PMI_RANK".as_ptr()) };
    value.is_null() || unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes() == b"0"
}

/// A yes/no setting: `1/true/yes/on` or `0/false/no/off`, any case.
pub fn parse_switch(value: impl AsRef<[u8]>) -> Option<bool> {
    let v = value.as_ref();
    let is = |words: [&str; 4]| words.iter().any(|w| v.eq_ignore_ascii_case(w.as_bytes()));
    if is(["1", "true", "yes", "on"]) {
        Some(true)
    } else if is(["0", "false", "no", "off"]) {
        Some(false)
    } else {
        None
    }
}

/// Whether this process must take part in agreeing on a new
/// communicator's id although the call is not recorded: yes when recording
/// is merely paused or was turned off by an error (the other members do
/// not know), no under `MPIGRAM_OFF` or inside another traced call (a
/// call the MPI library makes to itself, on every member alike). Where not
/// every rank runs the tracer the agreement itself does nothing (agree.rs).
pub fn may_agree() -> bool {
    place() == OUTSIDE && !sits_out()
}

/// Whether this process takes no part in the tracer's own communication
/// (clock synchronisation, the merge): under `MPIGRAM_OFF`, or under an MPI
/// mpigram does not record. Either holds on every rank alike.
pub fn sits_out() -> bool {
    env_says_off() || !crate::front::is_bound()
}

/// MPI_Pcontrol(0): stop recording until [`resume`].
pub fn pause() {
    change_state(ON, PAUSED);
}

/// MPI_Pcontrol(1) (or any non-zero level): record again.
pub fn resume() {
    change_state(PAUSED, ON);
}

/// Stops recording for good (after an internal error, or at the end).
pub fn disable() {
    MODE.fetch_or(OFF, Relaxed);
}

/// Whose a heap block allocated now on this thread is, as the allocation
/// hooks ask (they never decide whether to record, which needs the MPI
/// library).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    /// The tracer, recording a call (counted: after warm-up, none).
    Recorder,
    /// The application, while calls are recorded (or may be: no MPI call
    /// came yet): its blocks are tracked.
    Application,
    /// MPI inside a call, the tracer writing out, or an application that
    /// is not traced.
    Other,
}

/// See [`Allocator`].
#[inline]
pub fn allocator() -> Allocator {
    match place() {
        RECORDING => Allocator::Recorder,
        OUTSIDE => {
            let state = state();
            if state == ON || (state == UNSET && !env_says_off()) {
                Allocator::Application
            } else {
                Allocator::Other
            }
        }
        _ => Allocator::Other,
    }
}

/// Runs `f`, which the tracer or MPI does for itself (the tracer's
/// communication at MPI_Init and MPI_Finalize, MPI's own finalization), as
/// inside MPI: no call traced, its allocations neither counted as the
/// recorder's nor tracked as the application's.
pub fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    in_place(IN_MPI, f)
}

/// Runs `f`, in which the tracer writes out what it recorded (a crash
/// journal's checkpoint or a part of the trace while recording a call, the
/// merge at MPI_Finalize): as [`uncounted`], and what it frees is its own,
/// never the application's (see [`frees_own_blocks`]). The gap it falls
/// in is the tracer's, not sampled for the rank's CPU share.
pub fn writing_out<R>(f: impl FnOnce() -> R) -> R {
    crate::cpu_share::skip_gap();
    let r = in_place(WRITING, f);
    crate::writer_heap::written();
    r
}

fn in_place<R>(place: usize, f: impl FnOnce() -> R) -> R {
    let was = inside().swap(place, Relaxed);
    // Calls that begin while MPI calls cannot overlap look at SERIAL only.
    let serial = SERIAL
        .compare_exchange(0, thread_tag() | place, Relaxed, Relaxed)
        .is_ok();
    let r = f();
    if serial {
        SERIAL.store(0, Relaxed);
    }
    inside().store(was, Relaxed);
    r
}

/// Whether this thread is writing out what the tracer recorded
/// ([`writing_out`]).
#[inline]
pub fn writing() -> bool {
    place() == WRITING
}

/// Whether this thread runs the tracer's own code, which frees only the
/// tracer's blocks: recording a call, or writing out (the free hook then
/// looks up no application block; a part of 10^6 signatures frees as many).
#[inline]
pub fn frees_own_blocks() -> bool {
    matches!(place(), RECORDING | WRITING)
}

/// Set in a child forked from the rank (without exec): it is not the
/// rank, and the tracer does nothing in it — records nothing, writes
/// nothing at its exit, notes no signal in the rank's crash journal,
/// tracks no allocation.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Whether this process is a child forked from a traced rank.
#[inline]
pub fn in_forked_child() -> bool {
    FORKED.load(Relaxed)
}

extern "C" fn at_fork_child() {
    FORKED.store(true, Relaxed);
    MODE.fetch_or(OFF, Relaxed);
}

/// Makes every later fork() turn the tracer off in the child. Once per
/// process, when the tracer is made.
pub fn watch_forks() {
    // SAFETY: registers a handler that only stores two atomics.
    unsafe { libc::pthread_atfork(None, None, Some(at_fork_child)) };
}

/// Whether `MPIGRAM_OFF` turned tracing off (as opposed to a pause).
pub fn is_off() -> bool {
    let state = state();
    state == OFF || (state == UNSET && !first_use())
}
