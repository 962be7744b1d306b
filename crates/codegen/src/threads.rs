//! Threads that called MPI at once. A rank's calls are one stream in the
//! trace, in the order they returned, and the benchmark makes them in that
//! order on one thread (`docs/gen-bench.md`, "Threads"). Where no two of a
//! rank's calls were in progress at the same time, that is the order the
//! original ran them in. Where threads called MPI at once
//! (MPI_THREAD_MULTIPLE), it is an order the original never ran, and
//! blocking calls made in it can wait for each other across ranks: the
//! benchmarks of `tests/mpi/threads` and of Intel MPI's IMB-MT (two threads
//! a rank, each with an MPI_Sendrecv ring on a communicator of its own,
//! whose calls returned in one order on one rank and in the other on the
//! next) deadlocked. Lossless times tell: a call that began before the
//! rank's call before it had returned was made while that one was in
//! progress. Lossy times are estimates, and aggregated timing keeps no
//! call's times: they cannot tell.

use crate::timing::Sites;
use mpigram_analysis::timeline::{Source, rank_spans};
use mpigram_mpispec::{FUNCS, Signature, Value};
use mpigram_trace::Trace;

/// What the trace tells of its threads' calls.
#[derive(Debug, PartialEq, Eq)]
pub enum Threads {
    /// No rank's calls were in progress at the same time (or no rank was
    /// given MPI_THREAD_MULTIPLE): the benchmark makes them in the
    /// original's order.
    OneAtATime,
    /// A call began before the rank's previous call had returned.
    AtOnce(Overlap),
    /// MPI_THREAD_MULTIPLE, and some rank has no lossless times to tell.
    Untold,
}

/// The first call found made while the call before it was in progress.
#[derive(Debug, PartialEq, Eq)]
pub struct Overlap {
    pub rank: u32,
    /// The call's number on its rank (from 0).
    pub call: u64,
    pub func: &'static str,
    pub previous: &'static str,
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {}'s call {} ({}) began before its call {} ({}) had returned: threads called \
             MPI at once, and the benchmark, which makes a rank's calls one after another on one \
             thread, can deadlock",
            self.rank,
            self.call,
            self.func,
            self.call - 1,
            self.previous
        )
    }
}

/// What `trace` (with the decoded signatures `sigs`) tells of its threads'
/// calls: one pass over the lossless times of the ranks that have them,
/// made only if some rank was given MPI_THREAD_MULTIPLE; it stops at the
/// first call that overlaps the one before.
pub fn threads(trace: &Trace, sigs: &[Signature]) -> Result<Threads, String> {
    if !sigs.iter().any(provides_multiple) {
        return Ok(Threads::OneAtATime);
    }
    let mut untold = false;
    for part in &trace.ranks {
        let rank = part.meta.rank;
        let Some(start) = trace.grammar.start(rank) else {
            continue;
        };
        if !part.meta.timing.lossless {
            untold = true;
            continue;
        }
        let spans = rank_spans(trace, part, Source::Lossless, trace.run_start_ns())
            .map_err(|e| e.to_string())?;
        let mut before: Option<(i64, u32)> = None;
        for (call, ((_, terminal), span)) in
            Sites::new(&trace.grammar, start).zip(spans).enumerate()
        {
            let span = span.map_err(|e| e.to_string())?;
            if let Some((end, previous)) = before
                && span.start_ns < end
            {
                let name = |t: u32| {
                    sigs.get(t as usize)
                        .map_or("an unknown function", |s| FUNCS[s.func as usize].name)
                };
                return Ok(Threads::AtOnce(Overlap {
                    rank,
                    call: call as u64,
                    func: name(terminal),
                    previous: name(previous),
                }));
            }
            before = Some((span.end_ns, terminal));
        }
    }
    Ok(if untold {
        Threads::Untold
    } else {
        Threads::OneAtATime
    })
}

/// Whether `sig` is an MPI_Init_thread that provided MPI_THREAD_MULTIPLE.
fn provides_multiple(sig: &Signature) -> bool {
    let func = &FUNCS[sig.func as usize];
    func.name == "MPI_Init_thread"
        && func.params.iter().zip(&sig.args).any(|(param, value)| {
            param.name == "provided"
                && matches!(value, Value::Const(set, c)
                    if set.text(*c).as_deref() == Some("MPI_THREAD_MULTIPLE"))
        })
}
