//! The mpigram trace: which files a trace directory holds and what their
//! sections mean. The tracer writes it through [`RankTrace::write`]; the
//! tools read it with [`Trace::open`]. The container (header, section
//! table, checksums) is `mpigram_format`'s; this crate owns the contents.
//!
//! A trace directory holds the whole run's trace, `trace.mgr` (file kind
//! [`FILE_KIND_RUN`], merged at MPI_Finalize), and a per-rank file,
//! `rank<N>.mgr` (file kind [`FILE_KIND_RANK`]), for each rank that did not
//! take part in the merge (it aborted or exited early). Both kinds have the
//! sections listed in [`section`]; in a whole-run file each holds every
//! rank's part. While a rank runs, its crash journal (`rank<N>.journal`,
//! `rank<N>.checkpoint`, see [`journal`]) sits beside them; a rank that was
//! killed before its calls reached a trace file is read from its journal
//! ([`recover_rank`]). A rank whose table outgrew the tracer's memory
//! budget wrote its earlier calls to part files (`rank<N>.part<K>.mgr`),
//! which [`Trace::open`] puts back in front of its calls.

mod error;
mod gaps;
pub mod journal;
mod meta;
mod one_run;
mod parts;
mod rank;
mod run;
mod run_file;
mod spilled;
pub mod summary;
pub mod timing;

pub use error::Error;

/// The value of `key` in `sorted`, a list of (key, value) sorted by key.
pub(crate) fn value_of<K: Ord, V: Copy>(sorted: &[(K, V)], key: &K) -> Option<V> {
    let i = sorted.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
    Some(sorted[i].1)
}
pub use gaps::{Gaps, PairGap, apart, first_apart};
pub use journal::{recover_rank, recoverable_ranks};
pub use meta::{
    Bases, ClockSync, Ending, Lost, RankClock, RankMeta, Timing, host_name, stored_cpu_share,
};
pub use rank::{
    CallStats, CallTimes, CommEntry, NO_RANK, RankTrace, decode_signature_deltas,
    decode_stats_columns, encode_signature_deltas, encode_stats_columns,
};
pub use run::{RUN_FILE_NAME, RankPart, RankStats, Trace};
pub use run_file::{FILE_KIND_RUN, RANKS_PER_CHUNK};
pub use spilled::{is_part_file_name, part_file_name};

/// File kind of a per-rank trace file.
pub const FILE_KIND_RANK: u32 = 1;

/// Section kinds of a per-rank trace file (META to COMMS, LOSSY_TIMES,
/// EXACT_TIMES) and of a whole-run file (RUN, PARTS, CALL_STATS,
/// LOSSY_TIMES, EXACT_TIMES).
pub mod section {
    /// [`RankMeta`](crate::RankMeta): who wrote the file, when, how it ended.
    pub const META: u32 = 1;
    /// A check that the MPI function ids of the signatures mean what they
    /// mean to the reader.
    pub const FUNCS: u32 = 2;
    /// The call-signature table: terminal -> signature bytes (files
    /// written before 2026-11-29; later ones hold SIGNATURE_DELTAS).
    pub const SIGNATURES: u32 = 3;
    /// The grammar of the rank's stream of terminals.
    pub const GRAMMAR: u32 = 4;
    /// Aggregated timing as rows: per terminal count, total, min, max
    /// duration, gap (files written before 2026-11-30; later ones hold
    /// STATS_COLUMNS).
    pub const CALL_STATS: u32 = 5;
    /// The rank's place in each user communicator, in call order.
    pub const COMMS: u32 = 6;
    /// Lossy timing: blocks of interval and duration codes (see `timing`).
    pub const LOSSY_TIMES: u32 = 8;
    /// Lossless timing: blocks of exact intervals and durations.
    pub const EXACT_TIMES: u32 = 10;
    /// Whole-run file: what all ranks share (rank list, signatures,
    /// grammar, tables, timing summarised across ranks).
    pub const RUN: u32 = 11;
    /// Whole-run file: each rank's metadata and communicator log, per
    /// chunk of ranks.
    pub const PARTS: u32 = 12;
    /// Where the computation before the calls was ([`Gaps`](crate::Gaps)):
    /// in a rank file, and per chunk of ranks in a whole-run file that
    /// keeps every rank's timing.
    pub const GAPS: u32 = 13;
    /// The call-signature table, each signature XORed with the one before
    /// it when they are as long (`crate::rank::encode_signature_deltas`).
    pub const SIGNATURE_DELTAS: u32 = 14;
    /// Aggregated timing as columns (`crate::rank::encode_stats_columns`):
    /// in a rank file, and per chunk of ranks in a whole-run file that
    /// keeps every rank's timing.
    pub const STATS_COLUMNS: u32 = 15;

    /// A section kind's name, for people.
    pub fn name(kind: u32) -> &'static str {
        match kind {
            META => "META",
            FUNCS => "FUNCS",
            SIGNATURES => "SIGNATURES",
            GRAMMAR => "GRAMMAR",
            CALL_STATS => "CALL_STATS",
            COMMS => "COMMS",
            RUN => "RUN",
            PARTS => "PARTS",
            LOSSY_TIMES => "LOSSY_TIMES",
            EXACT_TIMES => "EXACT_TIMES",
            GAPS => "GAPS",
            SIGNATURE_DELTAS => "SIGNATURE_DELTAS",
            STATS_COLUMNS => "STATS_COLUMNS",
            _ => "unknown",
        }
    }
}

/// Ending of a rank's trace file name.
const RANK_FILE_SUFFIX: &str = ".mgr";

/// File name of rank `rank`'s trace in a trace directory.
pub fn rank_file_name(rank: u32) -> String {
    format!("rank{rank}{RANK_FILE_SUFFIX}")
}

/// File name of rank `rank`'s crash journal (see [`journal`]).
pub fn journal_file_name(rank: u32) -> String {
    format!("rank{rank}{}", journal::JOURNAL_SUFFIX)
}

/// File name of the checkpoint that rank `rank`'s crash journal continues.
pub fn checkpoint_file_name(rank: u32) -> String {
    format!("rank{rank}{}", journal::CHECKPOINT_SUFFIX)
}

/// The rank of a file named `rank<N><suffix>`.
fn rank_in_file_name(name: &str, suffix: &str) -> Option<u32> {
    let digits = name.strip_prefix("rank")?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// File name of rank `rank`'s uncompressed signature stream (verification mode).
pub fn verify_file_name(rank: u32) -> String {
    format!("rank{rank}.verify")
}
