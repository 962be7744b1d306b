//! Whether every rank of MPI_COMM_WORLD runs the tracer. The tracer's own
//! communication (clock synchronisation, communicator agreement, the merge
//! at MPI_Finalize) needs every rank: a rank without the tracer
//! (`MPIGRAM_OFF=1` there, or `LD_PRELOAD` given to one executable of an
//! MPMD job) would never join it, and its own next collective could even
//! match the tracer's. So the ranks count themselves first, without MPI:
//! before PMPI_Init each traced rank puts a key in the process manager's
//! key-value space (PMI-1, which MPICH's hydra serves on `PMI_FD`); MPI_Init
//! itself publishes it (MPICH exchanges its addresses through the same
//! space, behind PMI barriers); after it each rank reads every rank's key.
//! Every traced rank reads the same keys, so all decide alike. A rank
//! with `MPIGRAM_OFF` does nothing at all.
//!
//! A job in which some rank is missing is traced without the collective
//! parts: each traced rank writes its own `rank<N>.mgr`, with no clock
//! synchronisation, and the lowest traced rank says so once. So is a job
//! whose process manager offers no PMI-1 space (the tracer cannot tell),
//! unless `MPIGRAM_ALL_RANKS=1` promises that every rank runs the tracer.
//! The reading costs one local round trip per rank of the job.
//!
//! The same keys carry the run id (the lowest traced rank's proposal) and
//! whether a rank found the trace directory locked by another live run
//! (ownership.rs): then no rank of this run traces.

use crate::ownership::Claim;
use std::ffi::c_int;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::time::{Duration, Instant};

const UNKNOWN: u8 = 0;
const WHOLE: u8 = 1;
const PARTIAL: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// How long the process manager may take to answer one request.
const ANSWER_LIMIT: Duration = Duration::from_secs(30);

/// Whether the tracer may communicate with every rank of MPI_COMM_WORLD:
/// the census found them all (or was not taken: a program of MPI sessions,
/// which never calls MPI_Init, behaves as before).
pub fn whole_job() -> bool {
    STATE.load(Relaxed) != PARTIAL
}

/// This rank's key, put before PMPI_Init: what [`count`] needs after it.
pub struct Announced {
    pmi: Option<Pmi>,
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
    let pmi = (size > 1)
        .then(|| var::<RawFd>("PMI_FD"))
        .flatten()
        .and_then(|fd| Pmi::connect(fd, rank, &value).ok());
    Announced {
        pmi,
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
        pmi,
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
        match pmi.map(|mut pmi| pmi.values(size)) {
            Some(Ok(values)) => settle(rank, size, &values),
            failed => {
                let whole = promised_whole();
                if rank == 0 && !whole {
                    let why = match failed {
                        Some(Err(e)) => {
                            format!("the process manager's key-value space failed: {e}")
                        }
                        _ => "the process manager offers no PMI-1 key-value space".into(),
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

/// The PMI-1 wire protocol on the process manager's socket: one request
/// line, one answer line. The socket is MPICH's: the tracer talks on it only
/// before PMPI_Init (which starts MPICH's own conversation with `init`) and
/// right after it returns, when MPICH is not using it.
struct Pmi {
    socket: std::mem::ManuallyDrop<std::fs::File>,
    kvs: String,
}

fn key(rank: u32) -> String {
    format!("mpigram-{rank}")
}

impl Pmi {
    /// Says hello and puts this rank's key.
    fn connect(fd: RawFd, rank: u32, value: &str) -> Result<Pmi, String> {
        // SAFETY: the descriptor the process manager gave this process;
        // never closed by us (ManuallyDrop), MPICH goes on using it.
        let socket = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        let mut pmi = Pmi {
            socket,
            kvs: String::new(),
        };
        let hello = pmi.ask("cmd=init pmi_version=1 pmi_subversion=1")?;
        if !hello.starts_with("cmd=response_to_init") || field(&hello, "rc") != Some("0") {
            return Err(format!(
                "unexpected answer {:?}",
                hello.escape_default().to_string()
            ));
        }
        let name = pmi.ask("cmd=get_my_kvsname")?;
        pmi.kvs = field(&name, "kvsname")
            .ok_or("no key-value space name")?
            .to_owned();
        let put = pmi.ask(&format!(
            "cmd=put kvsname={} key={} value={value}",
            pmi.kvs,
            key(rank)
        ))?;
        if field(&put, "rc") != Some("0") {
            return Err("the process manager refused a key".into());
        }
        Ok(pmi)
    }

    /// Every rank's value, `None` where its key is not there.
    fn values(&mut self, size: u32) -> Result<Vec<Option<String>>, String> {
        (0..size)
            .map(|rank| {
                let got = self.ask(&format!("cmd=get kvsname={} key={}", self.kvs, key(rank)))?;
                Ok((field(&got, "rc") == Some("0"))
                    .then(|| field(&got, "value").unwrap_or("").to_owned()))
            })
            .collect()
    }

    /// Sends one request and reads its one-line answer, within
    /// [`ANSWER_LIMIT`].
    fn ask(&mut self, request: &str) -> Result<String, String> {
        let line = format!("{request}\n");
        self.socket
            .write_all(line.as_bytes())
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + ANSWER_LIMIT;
        let mut answer = Vec::new();
        let mut byte = [0u8];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !readable(&self.socket, left) {
                return Err("no answer".into());
            }
            // One byte at a time: nothing after the answer's end is ours.
            match self.socket.read(&mut byte) {
                Ok(1) if byte[0] == b'\n' => break,
                Ok(1) if answer.len() < 4096 => answer.push(byte[0]),
                Ok(1) => return Err("answer too long".into()),
                Ok(_) => return Err("the process manager closed the socket".into()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        String::from_utf8(answer).map_err(|_| "an answer that is not text".into())
    }
}

/// The value of `name=` in a PMI-1 line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split(' ')
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

/// Waits until `file` can be read, at most `limit`.
fn readable(file: &std::fs::File, limit: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut poll = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = c_int::try_from(limit.as_millis()).unwrap_or(c_int::MAX);
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut poll, 1, ms) > 0 }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_of_answers() {
        let line = "cmd=get_result rc=-1 msg=key_mpigram-1_not_found value=unknown";
        assert_eq!(field(line, "rc"), Some("-1"));
        assert_eq!(field(line, "value"), Some("unknown"));
        assert_eq!(field(line, "kvsname"), None);
        assert_eq!(
            field("cmd=my_kvsname kvsname=kvs_1_0", "kvsname"),
            Some("kvs_1_0")
        );
    }
}
