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
use mpigram_trace::timing::{Bins, ColumnReader, ExactReader, LossyClock};
use mpigram_trace::{Bases, RankMeta, RankPart, Trace};
use serde::{Deserialize, Serialize};

/// When a call ran, in nanoseconds from the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Stored times that do not decode (found as they are read: a block
    /// forged behind valid checksums).
    #[error("{dir}: rank {rank}'s {section} section: {message}", dir = dir.display())]
    Bad {
        dir: std::path::PathBuf,
        rank: u32,
        section: &'static str,
        message: String,
    },
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
    rank_spans(trace, part, source, run_start_ns)?.collect()
}

/// The spans of [`rank_times`], read as they are needed: one block of
/// stored times (65,536 calls) in memory at a time.
pub fn rank_spans<'t>(
    trace: &'t Trace,
    part: &'t RankPart,
    source: Source,
    run_start_ns: f64,
) -> Result<SpanReader<'t>, TimelineError> {
    let meta = &part.meta;
    let rank = meta.rank;
    let use_exact = match source {
        Source::Best => meta.timing.lossless,
        Source::Lossless => true,
        Source::Lossy => false,
    };
    let reader = |ticks| SpanReader {
        dir: &trace.dir,
        rank,
        ticks,
        clock: RankClock::of(meta),
        run_start_ns,
    };
    if !meta.timing.per_call() {
        // A killed rank whose crash journal (of an older mpigram) kept
        // neither the timing mode nor times, where the other ranks have
        // times: recorded, lost in the crash. The analyses take it as they
        // take any rank's calls without times.
        let timed = |p: &RankPart| p.meta.timing.per_call();
        if !meta.ending.is_complete() && trace.ranks.iter().any(timed) {
            return Ok(reader(Ticks::None));
        }
        return Err(TimelineError::Aggregated { rank });
    }
    if use_exact {
        if !meta.timing.lossless {
            return Err(missing(meta, "lossless"));
        }
        return Ok(reader(Ticks::Exact(ExactReader::new(&part.times.exact))));
    }
    let bases = meta
        .timing
        .lossy
        .as_ref()
        .ok_or_else(|| missing(meta, "lossy"))?;
    Ok(reader(Ticks::Lossy(Box::new(LossyTicks {
        trace,
        bases,
        codes: ColumnReader::new(&part.times.lossy),
        calls: Box::new(trace.grammar.expand(rank).into_iter().flatten()),
        bins: Vec::new(),
        bins_of: vec![None; trace.signatures.len()],
        clock: LossyClock::default(),
    }))))
}

impl<'t> SpanReader<'t> {
    /// A reader of no spans, for reading the calls of a rank without times.
    pub(crate) fn untimed(trace: &'t Trace, part: &RankPart) -> SpanReader<'t> {
        SpanReader {
            dir: &trace.dir,
            rank: part.meta.rank,
            ticks: Ticks::None,
            clock: RankClock::of(&part.meta),
            run_start_ns: 0.0,
        }
    }
}

fn missing(meta: &RankMeta, which: &'static str) -> TimelineError {
    TimelineError::Missing {
        rank: meta.rank,
        which,
        has: meta.timing.describe(),
    }
}

/// One rank's spans, read block by block ([`rank_spans`]).
pub struct SpanReader<'t> {
    /// The trace's directory, for errors.
    dir: &'t std::path::Path,
    rank: u32,
    ticks: Ticks<'t>,
    clock: RankClock,
    run_start_ns: f64,
}

enum Ticks<'t> {
    /// The rank has no per-call times.
    None,
    Exact(ExactReader<'t>),
    Lossy(Box<LossyTicks<'t>>),
}

impl Iterator for SpanReader<'_> {
    type Item = Result<Span, TimelineError>;

    fn next(&mut self) -> Option<Self::Item> {
        let ticks = match &mut self.ticks {
            Ticks::None => return None,
            Ticks::Exact(exact) => exact.next()?.map_err(|e| e.to_string()),
            Ticks::Lossy(lossy) => lossy.next()?,
        };
        Some(match ticks {
            Ok((s, e)) => {
                let at = |t: u64| (self.clock.global_ns(t) - self.run_start_ns).round() as i64;
                Ok(Span {
                    start_ns: at(s),
                    end_ns: at(e),
                })
            }
            Err(message) => {
                let section = match self.ticks {
                    Ticks::Exact(_) => "EXACT_TIMES",
                    _ => "LOSSY_TIMES",
                };
                self.ticks = Ticks::None;
                Err(TimelineError::Bad {
                    dir: self.dir.to_path_buf(),
                    rank: self.rank,
                    section,
                    message,
                })
            }
        })
    }
}

/// A rank's lossy times in ticks, decoded call by call: each call's bins
/// are its function's.
struct LossyTicks<'t> {
    trace: &'t Trace,
    bases: &'t Bases,
    codes: ColumnReader<'t>,
    /// The rank's calls (terminals).
    calls: Box<dyn Iterator<Item = u32> + Send + 't>,
    bins: Vec<Bins>,
    /// The index in `bins` of each signature's bins, once known.
    bins_of: Vec<Option<usize>>,
    clock: LossyClock,
}

impl LossyTicks<'_> {
    fn next(&mut self) -> Option<Result<(u64, u64), String>> {
        let terminal = self.calls.next()?;
        let (i, d) = match self.codes.next()? {
            Ok(codes) => codes,
            Err(e) => return Some(Err(e.to_string())),
        };
        Some(self.decode(terminal, i, d))
    }

    fn decode(&mut self, terminal: u32, i: u64, d: u64) -> Result<(u64, u64), String> {
        let slot = self
            .bins_of
            .get_mut(terminal as usize)
            .ok_or_else(|| format!("call {terminal} is not a signature"))?;
        let b = match *slot {
            Some(b) => b,
            None => {
                let sig = decode_signature(&self.trace.signatures[terminal as usize])
                    .map_err(|e| format!("bad signature {terminal}: {e}"))?;
                let base = self.bases.of(FUNCS[sig.func as usize].name);
                let b = match self.bins.iter().position(|b| b.base() == base) {
                    Some(b) => b,
                    None => {
                        self.bins.push(Bins::new(base)?);
                        self.bins.len() - 1
                    }
                };
                *slot = Some(b);
                b
            }
        };
        let no_bin = || format!("lossy codes {i}, {d} are no bins");
        let (i, d) = (
            u32::try_from(i).map_err(|_| no_bin())?,
            u32::try_from(d).map_err(|_| no_bin())?,
        );
        self.clock.decode(&self.bins[b], i, d).ok_or_else(no_bin)
    }
}
