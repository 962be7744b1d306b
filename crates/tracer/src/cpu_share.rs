//! A rank's share of a processor while it computes: the CPU time of its
//! thread over the wall time of the gaps between its MPI calls, sampled.
//!
//! A gap is what the rank computed between two calls. With more ranks on
//! a host than processors, its wall time is also time the rank waited for
//! a processor; the CPU time of the gap is the computation's own, which a
//! generated benchmark replays (`mpigram gen-bench`). Reading a thread's
//! CPU clock is a system call (a few hundred ns), so one gap in about a
//! millisecond is sampled: after the first call to end past the deadline
//! the clock is read, and [`call::sample_next`](crate::call) sends the
//! next call through the wrappers' slow path, which reads it again as the
//! call begins (the fast path pays nothing for this). Gaps too short to
//! tell (below 10 µs, two clock reads' worth) are not counted, and each
//! such sample doubles the time to the next, up to about a second: a loop of short
//! calls is sampled rarely. The shares of all samples are summed, CPU time
//! over wall time.

use crate::clock::ClockPoint;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Clock ticks a millisecond, measured against CLOCK_MONOTONIC at each
/// sample since the tracer's start (a tick of 1 ns until the first).
static PERIOD: AtomicU64 = AtomicU64::new(PERIOD_NS as u64);
/// Samples are PERIOD << BACK_OFF apart: one more for each gap too short
/// to count, back to 0 at the next one long enough.
static BACK_OFF: AtomicU64 = AtomicU64::new(0);
const MAX_BACK_OFF: u64 = 10;
/// The first call to end at or after this tick begins a sample (none
/// before [`start`]).
static NEXT_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// The sample in progress: the thread that began it (its tag; 0: none),
/// the tick its gap began at and the thread's CPU nanoseconds then.
static PENDING_THREAD: AtomicUsize = AtomicUsize::new(0);
static PENDING_TICK: AtomicU64 = AtomicU64::new(0);
static PENDING_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// The samples' sums: CPU nanoseconds, and wall time in ticks.
static CPU_NS: AtomicU64 = AtomicU64::new(0);
static WALL_TICKS: AtomicU64 = AtomicU64::new(0);

/// Gaps shorter than this are not sampled: the two clock reads would be
/// much of them.
const MIN_GAP_NS: f64 = 10_000.0;
/// Wall time between samples.
const PERIOD_NS: f64 = 1e6;

/// Samples from `start` (the tracer's start) on.
pub fn start(start: ClockPoint) {
    NEXT_AT.store(start.ticks.saturating_add(PERIOD.load(Relaxed)), Relaxed);
}

/// After a call that ended at `end` ticks (recording it, so with the
/// tracer to itself; its clock started at `start`): whether a sample
/// begins.
#[inline(always)]
pub fn after_call(end: u64, start: &ClockPoint) {
    if end >= NEXT_AT.load(Relaxed) {
        begin(end, *start);
    }
}

#[cold]
#[inline(never)]
fn begin(end: u64, start: ClockPoint) {
    let period = (PERIOD_NS / start.ns_per_tick(ClockPoint::now())).max(1.0) as u64;
    PERIOD.store(period, Relaxed);
    NEXT_AT.store(
        end.saturating_add(period << BACK_OFF.load(Relaxed)),
        Relaxed,
    );
    let Some(cpu) = thread_cpu_ns() else {
        // No CPU clock: no more samples.
        NEXT_AT.store(u64::MAX, Relaxed);
        return;
    };
    PENDING_TICK.store(end, Relaxed);
    PENDING_CPU_NS.store(cpu, Relaxed);
    PENDING_THREAD.store(crate::call::thread_tag(), Relaxed);
    crate::call::sample_next();
}

/// The tracer worked in the gap now going on (its start-up after MPI_Init,
/// a part or checkpoint written): the gap is not the application's and
/// is not sampled.
pub fn skip_gap() {
    PENDING_THREAD.store(0, Relaxed);
}

/// As the next call begins, on its thread (`thread`: its tag), at `now`
/// ticks: the sample ends, if this thread began it.
pub fn end(thread: usize, now: u64) {
    if PENDING_THREAD.swap(0, Relaxed) != thread {
        return;
    }
    let wall = now.saturating_sub(PENDING_TICK.load(Relaxed));
    let period = PERIOD.load(Relaxed) as f64;
    // Ticks of the gap, against those of a millisecond (PERIOD_NS).
    if (wall as f64) < period * (MIN_GAP_NS / PERIOD_NS) {
        let b = BACK_OFF.load(Relaxed);
        BACK_OFF.store((b + 1).min(MAX_BACK_OFF), Relaxed);
        return;
    }
    BACK_OFF.store(0, Relaxed);
    let Some(cpu) = thread_cpu_ns() else {
        return;
    };
    CPU_NS.fetch_add(cpu.saturating_sub(PENDING_CPU_NS.load(Relaxed)), Relaxed);
    WALL_TICKS.fetch_add(wall, Relaxed);
}

/// The share of a processor the rank had in the gaps sampled so far, the
/// clock having `ns_per_tick` nanoseconds a tick (`None`: none sampled).
pub fn share(ns_per_tick: f64) -> Option<f64> {
    let wall_ns = WALL_TICKS.load(Relaxed) as f64 * ns_per_tick;
    (wall_ns > 0.0).then(|| (CPU_NS.load(Relaxed) as f64 / wall_ns).min(1.0))
}

/// The calling thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> Option<u64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the timespec given.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// Processors this process may run on (its CPU affinity), if known.
pub fn cpus() -> Option<u32> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set's size is given.
    let ok = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } == 0;
    // SAFETY: reads the set filled above.
    ok.then(|| unsafe { libc::CPU_COUNT(&set) } as u32)
        .filter(|&n| n > 0)
}
