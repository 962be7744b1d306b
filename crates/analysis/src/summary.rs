//! What a trace holds, from its grammars alone (no expansion).

use mpigram_trace::Trace;

/// One rank's part of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSummary {
    pub rank: u32,
    pub calls: u64,
    pub signatures: usize,
    pub rules: usize,
    pub symbols: usize,
    pub ending: String,
    pub complete: bool,
}

/// What `mpigram info` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    pub ranks: Vec<RankSummary>,
    pub bytes: u64,
    pub timing: &'static str,
    pub mpi_library: String,
}

impl TraceSummary {
    pub fn of(trace: &Trace) -> TraceSummary {
        let ranks = trace
            .ranks
            .iter()
            .map(|r| RankSummary {
                rank: r.meta.rank,
                calls: r.grammar.total_len(),
                signatures: r.signatures.len(),
                rules: r.grammar.num_rules(),
                symbols: r.grammar.num_runs(),
                ending: r.meta.ending.describe(),
                complete: r.meta.ending.is_complete(),
            })
            .collect();
        TraceSummary {
            ranks,
            bytes: trace.bytes(),
            timing: trace.ranks[0].meta.timing.name(),
            mpi_library: trace.ranks[0].meta.mpi_library.clone(),
        }
    }

    pub fn calls(&self) -> u64 {
        self.ranks.iter().map(|r| r.calls).sum()
    }

    pub fn is_complete(&self) -> bool {
        self.ranks.iter().all(|r| r.complete)
    }
}
