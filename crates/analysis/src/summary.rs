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
    /// Ranks of MPI_COMM_WORLD the trace does not hold: not traced, or
    /// their files were lost.
    pub missing: Vec<u32>,
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
        let missing = (0..world).filter(|&r| trace.rank(r).is_none()).collect();
        TraceSummary {
            ranks,
            signatures: trace.signatures.len(),
            rules: trace.grammar.num_rules(),
            symbols: trace.grammar.num_runs(),
            distinct_streams: starts.len(),
            bytes: trace.bytes(),
            timing: first.map_or_else(String::new, |m| m.timing.describe()),
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
