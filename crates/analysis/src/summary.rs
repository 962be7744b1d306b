//! What a trace holds, from its grammar alone (no expansion).

use mpigram_trace::Trace;

/// One rank's part of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSummary {
    pub rank: u32,
    pub calls: u64,
    /// Distinct call signatures the rank recorded.
    pub signatures: usize,
    pub ending: String,
    pub complete: bool,
}

/// What `mpigram info` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    pub ranks: Vec<RankSummary>,
    /// Distinct call signatures of all ranks.
    pub signatures: usize,
    /// Rules and symbols (runs) of the one grammar of all ranks.
    pub rules: usize,
    pub symbols: usize,
    /// Ranks with distinct streams of calls (equal streams are stored once).
    pub distinct_streams: usize,
    pub bytes: u64,
    pub timing: String,
    pub mpi_library: String,
    /// Ranks of MPI_COMM_WORLD the trace does not hold (not traced, or
    /// their files were lost), as runs of consecutive ranks (first, last):
    /// as many as the ranks it holds, however large the world it names.
    pub missing: Vec<(u32, u32)>,
}

/// The ranks below `world` not among `held`, as runs (first, last).
fn missing_runs(held: impl Iterator<Item = u32>, world: u32) -> Vec<(u32, u32)> {
    let mut held: Vec<u32> = held.filter(|&r| r < world).collect();
    held.sort_unstable();
    held.dedup();
    let mut runs = Vec::new();
    let mut next = 0u32;
    for r in held.into_iter().chain(std::iter::once(world)) {
        if r > next {
            runs.push((next, r - 1));
        }
        next = r.saturating_add(1);
    }
    runs
}

impl TraceSummary {
    pub fn of(trace: &Trace) -> TraceSummary {
        let ranks = trace
            .ranks
            .iter()
            .map(|r| RankSummary {
                rank: r.meta.rank,
                calls: trace.grammar.stream_len(r.meta.rank).unwrap_or(0),
                signatures: r.stats.len(),
                ending: r.meta.describe_end(),
                complete: r.meta.is_complete(),
            })
            .collect();
        let mut starts: Vec<u32> = trace.grammar.streams().iter().map(|&(_, s)| s).collect();
        starts.sort_unstable();
        starts.dedup();
        let first = trace.ranks.first().map(|r| &r.meta);
        let world = trace
            .ranks
            .iter()
            .map(|r| r.meta.world_size)
            .max()
            .unwrap_or(0);
        let missing = missing_runs(trace.ranks.iter().map(|r| r.meta.rank), world);
        TraceSummary {
            ranks,
            signatures: trace.signatures.len(),
            rules: trace.grammar.num_rules(),
            symbols: trace.grammar.num_runs(),
            distinct_streams: starts.len(),
            bytes: trace.bytes(),
            timing: describe_timing(trace),
            mpi_library: first.map_or_else(String::new, |m| m.mpi_library.clone()),
            missing,
        }
    }

    pub fn calls(&self) -> u64 {
        self.ranks.iter().map(|r| r.calls).sum()
    }

    /// Every rank of the run is here, with every call up to MPI_Finalize.
    pub fn is_complete(&self) -> bool {
        self.ranks.iter().all(|r| r.complete) && self.missing.is_empty()
    }
}

/// The run's timing mode, and which ranks' per-call times were recorded
/// but lost in a crash: calls of a killed rank that have no times (a
/// crash journal of an older mpigram kept none for the calls after its
/// last checkpoint).
fn describe_timing(trace: &Trace) -> String {
    let per_call = trace.ranks.iter().find(|r| r.meta.timing.per_call());
    let Some(mode) = per_call.or(trace.ranks.first()).map(|r| &r.meta.timing) else {
        return String::new();
    };
    let mut lost = Vec::new();
    for r in &trace.ranks {
        let calls = trace.grammar.stream_len(r.meta.rank).unwrap_or(0);
        let stored = if mode.lossless {
            &r.times.exact
        } else {
            &r.times.lossy
        };
        let timed = match r.meta.timing.per_call() {
            true => mpigram_trace::timing::calls_in(stored).unwrap_or(calls),
            false if mode.per_call() && !r.meta.is_complete() => 0,
            false => calls,
        };
        if timed < calls {
            lost.push(format!(
                "rank {} after call {timed} of {calls}",
                r.meta.rank
            ));
        }
    }
    let mode = mode.describe();
    match lost.is_empty() {
        true => mode,
        false => format!("{mode}; recorded, lost in the crash: {}", lost.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_grammar::Sequitur;
    use mpigram_trace::timing::ExactWriter;
    use mpigram_trace::{Ending, RankMeta, RankTrace, Timing};

    #[test]
    fn missing_ranks_are_runs_however_large_the_world() {
        let runs = |held: &[u32], world| missing_runs(held.iter().copied(), world);
        assert_eq!(runs(&[0, 1, 2], 3), []);
        assert_eq!(runs(&[1, 4], 6), [(0, 0), (2, 3), (5, 5)]);
        assert_eq!(runs(&[], 2), [(0, 1)]);
        // A forged world size costs one run, not 2^31 entries.
        assert_eq!(runs(&[0], 1 << 31), [(1, (1 << 31) - 1)]);
        assert_eq!(runs(&[7, u32::MAX], u32::MAX), [(0, 6), (8, u32::MAX - 1)]);
    }

    /// A lossless rank of `calls` calls, `timed` of them with times.
    fn rank(calls: u64, timed: u64, ending: Ending) -> Trace {
        let mut grammar = Sequitur::new();
        let mut exact = ExactWriter::default();
        for k in 0..calls {
            grammar.push(0);
            if k < timed {
                exact.push(10 * k, 10 * k + 3);
            }
        }
        let mut t = RankTrace {
            meta: RankMeta {
                rank: 0,
                world_size: 1,
                pid: 1,
                host: String::new(),
                mpi_library: String::new(),
                timing: Timing::parse("lossless", None).unwrap(),
                calls,
                start_ns: 0,
                end_ns: 0,
                ending,
                recorder_allocations: 0,
                ns_per_tick: 1.0,
                cpus: 0,
                cpu_share: None,
                clock_sync: Vec::new(),
                run: 0,
                lost: mpigram_trace::Lost::None,
                ended_in: None,
            },
            signatures: vec![b"sig".to_vec()],
            grammar: grammar.grammar(0),
            stats: vec![Default::default()],
            gaps: Default::default(),
            comms: Vec::new(),
            times: Default::default(),
        };
        t.times.exact = exact.bytes();
        Trace::from_rank(t)
    }

    /// A killed rank whose journal (of an older mpigram) kept no times
    /// after its checkpoint: `info` says so, and from which call on.
    #[test]
    fn times_lost_in_a_crash_are_named() {
        let whole = TraceSummary::of(&rank(102, 102, Ending::Killed));
        assert_eq!(whole.timing, "lossless");
        let lost = TraceSummary::of(&rank(102, 100, Ending::Killed));
        assert_eq!(
            lost.timing,
            "lossless; recorded, lost in the crash: rank 0 after call 100 of 102"
        );
    }
}
