//! Whether every rank of MPI_COMM_WORLD runs the tracer. The tracer's own
//! communication (clock synchronisation, communicator agreement, the merge
//! at MPI_Finalize) needs every rank: a rank without the tracer
//! (`MPIGRAM_OFF=1` there, or `LD_PRELOAD` given to one executable of an
//! MPMD job) would never join it, and its own next collective could even
//! match the tracer's. So the ranks count themselves first, without MPI:
//! before PMPI_Init each traced rank puts a key in the process manager's
//! key-value space (PMI-1, which MPICH's and Intel MPI's hydra serve on
//! `PMI_FD`, or PMIx, which Open MPI's launchers and `srun --mpi=pmix`
//! serve); MPI_Init itself publishes it (the MPI exchanges its addresses
//! through the same space, behind a fence); after it each rank reads every
//! rank's key.
//! Every traced rank reads the same keys, so all decide alike. A rank
//! with `MPIGRAM_OFF` does nothing at all.
//!
//! A job in which some rank is missing is traced without the collective
//! parts: each traced rank writes its own `rank<N>.mgr`, with no clock
//! synchronisation, and the lowest traced rank says so once. So is a job
//! whose process manager offers neither (the tracer cannot tell: PMI-2,
//! e.g. `srun --mpi=pmi2`), unless `MPIGRAM_ALL_RANKS=1` promises that
//! every rank runs the tracer. The reading costs, per rank of the job, one
//! local round trip (PMI-1) or a lookup in the local store (PMIx).
//!
//! The same keys carry the run id (the lowest traced rank's proposal) and
//! whether a rank found the trace directory locked by another live run
//! (ownership.rs): then no rank of this run traces.

mod pmi1;
mod pmix;

use crate::ownership::Claim;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};
use std::time::Duration;

const UNKNOWN: u8 = 0;
const WHOLE: u8 = 1;
const PARTIAL: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether the census was begun (at the first MPI_Init, MPI_Init_thread
/// or MPI_Session_init): it is taken once, before the MPI library first
/// uses the process manager, never again while it does.
static BEGUN: AtomicBool = AtomicBool::new(false);

/// Whether this is the process's first start of MPI, at which the census
/// is taken (and no other is).
pub fn first_start() -> bool {
    !BEGUN.swap(true, Relaxed)
}

/// How long the process manager may take to answer one request.
const ANSWER_LIMIT: Duration = Duration::from_secs(30);

/// Whether the tracer may communicate with every rank of MPI_COMM_WORLD:
/// the census found them all (or was not taken: no MPI_Init or
/// MPI_Session_init succeeded yet).
pub fn whole_job() -> bool {
    STATE.load(Relaxed) != PARTIAL
}

/// This rank's key, put before PMPI_Init: what [`count`] needs after it.
pub struct Announced {
    space: Option<Space>,
    rank: u32,
    size: u32,
    /// This rank's proposal for the run id: the lowest traced rank's wins.
    candidate: u64,
    claim: Claim,
}

/// What the census found.
pub struct Outcome {
    /// The run id every traced rank of the run agrees on (0: not known).
    pub run: u64,
    /// Another run is alive in the trace directory: this run is not traced.
    pub refused: bool,
    /// Whether this is the lowest traced rank (which speaks for the run
    /// and sweeps the directory).
    pub lowest: bool,
    /// The ranks known to run the tracer (only this one if not known).
    pub traced: Vec<u32>,
}

/// The launcher's rank and size of this process, before MPI_Init: Hydra's
/// PMI variables, Open MPI's, PMIx's or Slurm's.
pub fn launcher_rank_and_size() -> (u32, u32) {
    let first = |names: [&str; 4]| names.iter().find_map(|n| var(n));
    (
        first([
            "PMI_RANK",
            "OMPI_COMM_WORLD_RANK",
            "PMIX_RANK",
            "SLURM_PROCID",
        ])
        .unwrap_or(0),
        first([
            "PMI_SIZE",
            "OMPI_COMM_WORLD_SIZE",
            "PMIX_SIZE",
            "SLURM_NTASKS",
        ])
        .unwrap_or(1),
    )
}

/// This process's rank as its launcher says (hydra, PMIx, Open MPI's,
/// Slurm's), else 0: its world rank before MPI_Init.
pub fn launcher_rank() -> u32 {
    launcher_rank_and_size().0
}

fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Before PMPI_Init: announces this rank, and how it found the trace
/// directory (`claim`), in the job's key-value space.
pub fn announce(claim: Claim) -> Announced {
    let (rank, size) = launcher_rank_and_size();
    let candidate = run_candidate();
    let value = match claim {
        Claim::Busy(pid) => format!("busy-{pid}"),
        Claim::Held | Claim::Unavailable => format!("run-{candidate:x}"),
    };
    let space = (size > 1).then(|| Space::connect(rank, &value)).flatten();
    Announced {
        space,
        rank,
        size,
        candidate,
        claim,
    }
}

/// After PMPI_Init succeeded: reads every rank's key and settles whether
/// the tracer may communicate, and the run id. `world_size` is
/// MPI_COMM_WORLD's.
pub fn count(announced: Announced, world_size: Option<u32>) -> Outcome {
    let Announced {
        space,
        rank,
        size,
        candidate,
        claim,
    } = announced;
    let size = world_size.unwrap_or(size);
    let busy_here = match claim {
        Claim::Busy(pid) => Some(pid),
        _ => None,
    };
    let alone = Outcome {
        run: candidate,
        refused: busy_here.is_some(),
        lowest: rank == 0,
        traced: vec![rank],
    };
    let (state, outcome) = if size <= 1 {
        if let Some(pid) = busy_here {
            say_refused(rank, pid);
        }
        (WHOLE, alone)
    } else {
        match space.map(|mut space| space.values(size)) {
            Some(Ok(values)) => settle(rank, size, &values),
            failed => {
                let whole = promised_whole();
                if rank == 0 && !whole {
                    let why = match failed {
                        Some(Err(e)) => {
                            format!("the process manager's key-value space failed: {e}")
                        }
                        _ => "the process manager offers no PMI-1 or PMIx key-value space".into(),
                    };
                    crate::message::say(&format!(
                        "cannot tell whether every rank runs mpigram ({why}): each rank writes its own rank<N>.mgr, without clock synchronisation or merge; set MPIGRAM_ALL_RANKS=1 if every rank does"
                    ));
                }
                if let Some(pid) = busy_here {
                    say_refused(rank, pid);
                }
                let outcome = Outcome {
                    run: launcher_run_id(),
                    ..alone
                };
                (if whole { WHOLE } else { PARTIAL }, outcome)
            }
        }
    };
    STATE.store(if outcome.refused { PARTIAL } else { state }, Relaxed);
    outcome
}

/// The census from every rank's value (`None`: no key, not traced).
fn settle(rank: u32, size: u32, values: &[Option<String>]) -> (u8, Outcome) {
    let traced: Vec<u32> = (0..size)
        .filter(|&r| values[r as usize].is_some())
        .collect();
    let busy: Vec<(u32, &str)> = values
        .iter()
        .enumerate()
        .filter_map(|(r, v)| Some((r as u32, v.as_deref()?.strip_prefix("busy-")?)))
        .collect();
    let lowest = traced.first() == Some(&rank);
    let run = traced
        .first()
        .and_then(|&r| values[r as usize].as_deref()?.strip_prefix("run-"))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0);
    if let Some(&(_, pid)) = busy.first().filter(|(r, _)| *r == rank) {
        say_refused(rank, pid.parse().unwrap_or(0));
    }
    let whole = traced.len() == size as usize;
    if !whole && lowest && busy.is_empty() {
        crate::message::say(&format!(
            "not every rank of MPI_COMM_WORLD runs mpigram ({} of {size} do): each of them writes its own rank<N>.mgr, without clock synchronisation, communicator agreement or merge",
            traced.len()
        ));
    }
    let outcome = Outcome {
        run,
        refused: !busy.is_empty(),
        lowest,
        traced,
    };
    (if whole { WHOLE } else { PARTIAL }, outcome)
}

fn say_refused(rank: u32, pid: u32) {
    crate::message::say(&format!(
        "the trace directory {} is in use by another run (process {pid} holds rank {rank}'s lock): this run is not traced",
        crate::tracer::output_dir().display()
    ));
}

/// This rank's proposal for the run id: never 0, and different for every
/// process (host, process id, wall clock).
fn run_candidate() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(crate::tracer::host_name().as_bytes());
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish().max(1)
}

/// Without a key-value space: a run id from what the launcher tells every
/// rank alike (Slurm's job and step, a PMIx namespace), else 0.
fn launcher_run_id() -> u64 {
    use std::hash::{Hash, Hasher};
    let parts: Vec<String> = [
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "PMIX_NAMESPACE",
        "PMI_JOBID",
    ]
    .iter()
    .filter_map(|v| std::env::var(v).ok())
    .collect();
    if parts.is_empty() {
        return 0;
    }
    // A fixed hasher: every rank must compute the same number.
    let mut h = std::hash::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish().max(1)
}

/// `MPIGRAM_ALL_RANKS=1`: the user promises that every rank is traced.
fn promised_whole() -> bool {
    std::env::var("MPIGRAM_ALL_RANKS").is_ok_and(|v| crate::call::parse_switch(&v) == Some(true))
}

/// The name of a rank's key.
fn key(rank: u32) -> String {
    format!("mpigram-{rank}")
}

/// The process manager's key-value space: PMI-1 where the launcher gives
/// its socket (MPICH's and Intel MPI's hydra), else PMIx (Open MPI's
/// launchers, PRRTE, `srun --mpi=pmix`), whose key the MPI's own
/// PMIx_Init puts.
enum Space {
    Pmi1(pmi1::Pmi),
    Pmix,
}

impl Space {
    /// Before PMPI_Init: connects and puts this rank's key (PMI-1), or
    /// leaves it for the MPI's PMIx_Init to put.
    fn connect(rank: u32, value: &str) -> Option<Space> {
        match var::<RawFd>("PMI_FD") {
            Some(fd) => pmi1::Pmi::connect(fd, rank, value).ok().map(Space::Pmi1),
            None if std::env::var_os("PMIX_NAMESPACE").is_some() => {
                pmix::announce(rank, value);
                Some(Space::Pmix)
            }
            None => None,
        }
    }

    /// After PMPI_Init: every rank's value, `None` where its key is not
    /// there.
    fn values(&mut self, size: u32) -> Result<Vec<Option<String>>, String> {
        match self {
            Space::Pmi1(pmi) => pmi.values(size),
            Space::Pmix => pmix::announced()
                .map(|pmix| pmix.values(size))
                .ok_or_else(|| "the MPI library did not initialise PMIx in MPI_Init".into()),
        }
    }
}
