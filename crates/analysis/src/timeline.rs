//! When each call ran: per-call times rebuilt from lossy codes or exact
//! times, on one clock for all ranks.
//!
//! Each rank's times are ticks since its origin; the rank's clock maps
//! them to its CLOCK_MONOTONIC nanoseconds, and its offsets to rank 0's
//! clock (measured at MPI_Init and MPI_Finalize, linear in between:
//! offset and drift) map those to rank 0's. Times are then given from the
//! run's start, the earliest origin of any rank.

use mpigram_mpispec::{FUNCS, decode_signature};
pub use mpigram_trace::RankClock;
use mpigram_trace::timing::{Bins, LossyClock, decode_columns, decode_exact};
use mpigram_trace::{RankMeta, RankPart, Trace};

/// When a call ran, in nanoseconds from the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Which recorded times to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Exact times where recorded, else lossy ones.
    Best,
    Lossy,
    Lossless,
}

#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error(
        "rank {rank} has aggregated timing only (per signature, not per call); record with MPIGRAM_TIMING=lossy or MPIGRAM_TIMING=lossless"
    )]
    Aggregated { rank: u32 },
    #[error("rank {rank} has no {which} timing (it has {has})")]
    Missing {
        rank: u32,
        which: &'static str,
        has: String,
    },
    #[error("rank {rank}: {message}")]
    Bad { rank: u32, message: String },
}

/// When each call of `part` ran, from `source`: one span per call, in
/// call order (fewer than its calls only if the rank's times were recorded
/// but lost in a crash: a crash journal of an older mpigram kept no times
/// after its last checkpoint), in nanoseconds from `run_start_ns`, the
/// run's start ([`Trace::run_start_ns`]).
pub fn rank_times(
    trace: &Trace,
    part: &RankPart,
    source: Source,
    run_start_ns: f64,
) -> Result<Vec<Span>, TimelineError> {
    let meta = &part.meta;
    let rank = meta.rank;
    let use_exact = match source {
        Source::Best => meta.timing.lossless,
        Source::Lossless => true,
        Source::Lossy => false,
    };
    if !meta.timing.per_call() {
        // A killed rank whose crash journal (of an older mpigram) kept
        // neither the timing mode nor times, where the other ranks have
        // times: recorded, lost in the crash. The analyses take it as they
        // take any rank's calls without times.
        let timed = |p: &RankPart| p.meta.timing.per_call();
        if !meta.ending.is_complete() && trace.ranks.iter().any(timed) {
            return Ok(Vec::new());
        }
        return Err(TimelineError::Aggregated { rank });
    }
    let ticks = if use_exact {
        if !meta.timing.lossless {
            return Err(missing(meta, "lossless"));
        }
        decode_exact(&part.times.exact).map_err(|e| TimelineError::Bad {
            rank,
            message: e.to_string(),
        })?
    } else {
        lossy_ticks(trace, part).map_err(|message| match message {
            None => missing(meta, "lossy"),
            Some(message) => TimelineError::Bad { rank, message },
        })?
    };
    let clock = RankClock::of(meta);
    let at = |t: u64| (clock.global_ns(t) - run_start_ns).round() as i64;
    Ok(ticks
        .into_iter()
        .map(|(s, e)| Span {
            start_ns: at(s),
            end_ns: at(e),
        })
        .collect())
}

fn missing(meta: &RankMeta, which: &'static str) -> TimelineError {
    TimelineError::Missing {
        rank: meta.rank,
        which,
        has: meta.timing.describe(),
    }
}

/// The rank's lossy times in ticks; `Err(None)` if it has none.
fn lossy_ticks(trace: &Trace, part: &RankPart) -> Result<Vec<(u64, u64)>, Option<String>> {
    let meta = &part.meta;
    let bases = meta.timing.lossy.as_ref().ok_or(None)?;
    let codes = decode_columns(&part.times.lossy).map_err(|e| Some(e.to_string()))?;
    // The bins of each signature's function.
    let mut bins: Vec<Bins> = Vec::new();
    let mut bins_of: Vec<Option<usize>> = vec![None; trace.signatures.len()];
    let rank = meta.rank;
    let calls = trace.grammar.expand(rank).into_iter().flatten();
    let mut clock = LossyClock::default();
    let mut out = Vec::with_capacity(codes.len());
    for (terminal, (i, d)) in calls.zip(codes) {
        let slot = bins_of
            .get_mut(terminal as usize)
            .ok_or_else(|| Some(format!("call {terminal} is not a signature")))?;
        let b = match *slot {
            Some(b) => b,
            None => {
                let sig = decode_signature(&trace.signatures[terminal as usize])
                    .map_err(|e| Some(format!("bad signature {terminal}: {e}")))?;
                let base = bases.of(FUNCS[sig.func as usize].name);
                let b = match bins.iter().position(|b| b.base() == base) {
                    Some(b) => b,
                    None => {
                        bins.push(Bins::new(base).map_err(Some)?);
                        bins.len() - 1
                    }
                };
                *slot = Some(b);
                b
            }
        };
        let no_bin = || Some(format!("lossy codes {i}, {d} are no bins"));
        let (i, d) = (
            u32::try_from(i).map_err(|_| no_bin())?,
            u32::try_from(d).map_err(|_| no_bin())?,
        );
        let (start, end) = clock.decode(&bins[b], i, d).ok_or_else(no_bin)?;
        out.push((start, end));
    }
    Ok(out)
}
