//! Each rank's clock against rank 0's, measured at MPI_Init and again at
//! MPI_Finalize, so that readers put all ranks on one clock (offset and
//! drift) and a message never seems to arrive before it was sent.
//!
//! The ranks form a binomial tree: in step k (bit = 2^k), each rank below
//! `bit` measures the rank `bit` above it. A measurement is a few ping-pong
//! round trips: the parent notes its clock before sending and after the
//! reply, the child puts its clock in the reply, and the round trip with
//! the shortest time gives the estimate (the child's clock read at the
//! middle of it) and its error (half that round trip). The parent then
//! sends the child its offset to rank 0 (the parent's own plus the
//! measured one) and the sum of the errors along the way. log2(P) steps,
//! each a few microseconds on a fast network. A child on the parent's
//! host (same host name and boot) shares its clock (CLOCK_MONOTONIC is
//! one clock per machine): its offset is the parent's, with no error
//! added, and nothing is measured. That matters most where ranks
//! outnumber cores, when a round trip waits for the scheduler and its
//! half would be milliseconds of error.
//!
//! Every rank takes part, on the tracer's own duplicate of MPI_COMM_WORLD,
//! with every message completed; none does where not every rank runs the
//! tracer (census.rs).

use crate::abi::{Handle, MPI_Comm, MPI_SUCCESS};
use crate::clock::monotonic_ns;
use crate::front::front;
use mpigram_trace::ClockSync;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// Round trips per measurement: the shortest is kept.
const ROUNDS: usize = 12;

const TAG: c_int = 0x6d67;

/// The tracer's duplicate of MPI_COMM_WORLD, from MPI_Init to MPI_Finalize.
static COMM: Mutex<Option<MPI_Comm>> = Mutex::new(None);

/// At MPI_Init (which succeeded): duplicates MPI_COMM_WORLD for the
/// tracer and measures this rank's clock.
pub fn at_init() {
    if crate::call::sits_out() || !crate::census::whole_job() {
        return;
    }
    let mut comm = Handle(0);
    // SAFETY: MPI is initialised; the new handle goes to a local.
    if unsafe { crate::pmpi::MPI_Comm_dup()(front().MPI_COMM_WORLD, comm.out()) } != MPI_SUCCESS {
        return;
    }
    *lock() = Some(comm);
    measure_and_keep(comm);
}

/// At MPI_Finalize, before the merge: measures again, and frees the
/// tracer's communicator.
pub fn at_finalize() {
    let Some(mut comm) = lock().take() else {
        return;
    };
    measure_and_keep(comm);
    // SAFETY: the tracer's own communicator, freed once.
    unsafe { crate::pmpi::MPI_Comm_free()((&raw mut comm).cast()) };
}

fn measure_and_keep(comm: MPI_Comm) {
    if let Some(sync) = measure(comm) {
        crate::tracer::with(|t| t.clock_sync.push(sync));
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<MPI_Comm>> {
    COMM.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// This rank's clock against rank 0's over `comm`; `None` if MPI failed.
fn measure(comm: MPI_Comm) -> Option<ClockSync> {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: PMPI queries on a valid communicator, into locals.
    unsafe {
        if crate::pmpi::MPI_Comm_rank()(comm, &mut rank) != MPI_SUCCESS
            || crate::pmpi::MPI_Comm_size()(comm, &mut size) != MPI_SUCCESS
        {
            return None;
        }
    }
    let host = host_clock();
    // Rank 0 is the reference: offset 0, no error. An error of
    // UNKNOWN says a measurement on the way failed; the rank still serves
    // its children, who would otherwise wait forever.
    let mut mine = [0i64, 0i64];
    let mut bit = 1;
    while bit < size {
        if rank < bit && rank + bit < size {
            let child = rank + bit;
            let [offset, error] = mine;
            let same_clock = recv(comm, child).is_some_and(|[theirs, _]| theirs == host);
            send(comm, child, [i64::from(!same_clock), 0]);
            let result = if same_clock {
                mine
            } else {
                match (ping(comm, child), error) {
                    (Some([est, half_rtt]), 0..) => [offset + est, error + half_rtt],
                    _ => [0, UNKNOWN],
                }
            };
            send(comm, child, result);
        } else if rank >= bit && rank < 2 * bit {
            let parent = rank - bit;
            send(comm, parent, [host, 0]);
            if recv(comm, parent).is_none_or(|[measure, _]| measure != 0) {
                pong(comm, parent);
            }
            mine = recv(comm, parent).unwrap_or([0, UNKNOWN]);
        }
        bit *= 2;
    }
    let [offset_ns, error_ns] = mine;
    (error_ns >= 0).then(|| ClockSync {
        at_ns: monotonic_ns(),
        offset_ns,
        error_ns: error_ns as u64,
    })
}

/// The error of an offset that could not be measured.
const UNKNOWN: i64 = -1;

/// Names this machine's clock: a hash of the host name and the kernel's
/// boot id (and of the test shift, see `crate::clock`, which makes a rank
/// a machine of its own).
fn host_clock() -> i64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    crate::tracer::host_name().hash(&mut h);
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap_or_default()
        .hash(&mut h);
    crate::clock::test_shift().hash(&mut h);
    h.finish() as i64
}

/// The parent's side: (child's clock minus ours, half the best round trip).
fn ping(comm: MPI_Comm, child: c_int) -> Option<[i64; 2]> {
    let mut best = [0, i64::MAX];
    for _ in 0..ROUNDS {
        let t1 = monotonic_ns() as i64;
        send(comm, child, [t1, 0]);
        let [theirs, _] = recv(comm, child)?;
        let t2 = monotonic_ns() as i64;
        let half = (t2 - t1) / 2;
        if half < best[1] {
            best = [theirs - (t1 + half), half];
        }
    }
    Some(best)
}

/// The child's side: answers each ping with its clock.
fn pong(comm: MPI_Comm, parent: c_int) {
    for _ in 0..ROUNDS {
        let _ = recv(comm, parent);
        send(comm, parent, [monotonic_ns() as i64, 0]);
    }
}

fn send(comm: MPI_Comm, to: c_int, words: [i64; 2]) {
    // SAFETY: a two-element buffer, alive during the blocking send. A
    // failure shows at the receiver.
    unsafe {
        crate::pmpi::MPI_Send()(
            words.as_ptr().cast::<c_void>(),
            2,
            front().MPI_INT64_T,
            to,
            TAG,
            comm,
        );
    }
}

fn recv(comm: MPI_Comm, from: c_int) -> Option<[i64; 2]> {
    let mut words = [0i64; 2];
    // SAFETY: a two-element buffer, alive during the blocking receive.
    let rc = unsafe {
        crate::pmpi::MPI_Recv()(
            words.as_mut_ptr().cast::<c_void>(),
            2,
            front().MPI_INT64_T,
            from,
            TAG,
            comm,
            std::ptr::without_provenance_mut(front().status_ignore),
        )
    };
    (rc == MPI_SUCCESS).then_some(words)
}
