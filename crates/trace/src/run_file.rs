//! The whole-run file, `trace.mgr`: its sections, written from a [`Trace`]
//! and read back into one (`docs/format.md`).
//!
//! One RUN section holds what all ranks share: the rank list, the
//! signature table, the grammar, the tables of strings and timing modes,
//! and — by default — the aggregated timing summarised across ranks
//! ([`crate::summary`]). What is particular to each rank goes in chunks of
//! [`RANKS_PER_CHUNK`] ranks (section index = chunk), so that reading one
//! rank reads one chunk: PARTS (metadata and communicator log, as
//! differences between ranks), and where recorded STATS_COLUMNS (every
//! rank's own aggregated timing), LOSSY_TIMES and EXACT_TIMES.

use crate::parts::{Layout, Tables, decode_chunk, encode_chunk};
use crate::rank::{
    bad_section, check_funcs, check_signatures, check_times, checked_name, decode_signature_deltas,
    decode_stats, encode_funcs, encode_signature_deltas, held_kind, put_stats_columns,
    read_signatures, read_stats_columns,
};
use crate::run::Keep;
use crate::summary::{Coding, GapSummary, Quantum, TimingSummary};
use crate::{
    CallStats, CallTimes, ClockSync, CommEntry, Error, Gaps, RankClock, RankMeta, RankPart,
    RankStats, Trace, section,
};
use mpigram_format::TraceFile;
use mpigram_grammar::{Grammar, Progression, StreamId};
use mpigram_varint::{ByteReader, PutVarint};
use rustc_hash::FxHashMap;
use std::path::PathBuf;

/// File kind of a whole-run trace file.
pub const FILE_KIND_RUN: u32 = 2;

/// Ranks per chunk of per-rank sections in a whole-run file.
pub const RANKS_PER_CHUNK: usize = 64;

/// RUN's rank timing: 0, every rank's own in STATS_COLUMNS; else the timing
/// summarised across ranks, coded as [`Coding::Absolute`] (files of format
/// 1), [`Coding::Relative`] (format 2.0) or [`Coding::Compact`] (the
/// compact summary, with PARTS in [`Layout::Summarised`]).
const RANK_TIMING_ABSOLUTE: u32 = 1;
const RANK_TIMING_RELATIVE: u32 = 2;
const RANK_TIMING_COMPACT: u32 = 3;
/// The compact summary followed by where the gaps were, summarised
/// ([`GapSummary`]), where some signature follows more than one other or
/// its first call is apart from the others.
const RANK_TIMING_COMPACT_PAIRS: u32 = 4;

/// In a summarised file, start and end times are kept to a unit of about
/// the run's wall time divided by this (a power of two of nanoseconds).
const TIME_UNIT_SHARE: u64 = 64;

/// Whether a file's one chunk of PARTS ends its RUN section instead of
/// being a section of its own: in [`Layout::Summarised`] files of up to
/// [`RANKS_PER_CHUNK`] ranks (a section costs a dozen bytes of table and
/// as many of zstd frame, a tenth of a small trace).
fn parts_in_run(layout: Layout, ranks: usize) -> bool {
    layout == Layout::Summarised && ranks <= RANKS_PER_CHUNK
}

/// Signatures from which a whole-run file stores its table as
/// SIGNATURE_DELTAS, in a section of its own, rather than plain in RUN: a
/// section costs about 20 bytes (its entry, and a zstd frame of its own),
/// more than deltas save on a few dozen signatures (NPB FT's 17 took 419
/// bytes against 389), and a table of thousands of new signatures is a
/// fifth the size as deltas.
const DELTAS_FROM: usize = 256;

impl Trace {
    /// The sections: (kind, index, payload). The ranks' aggregated timing
    /// as `keep` says (every rank's own where it cannot be summarised).
    pub(crate) fn sections(&self, keep: Keep) -> Vec<(u32, u32, Vec<u8>)> {
        let summary = keep == Keep::Summary && self.summarisable();
        let (metas, unit, layout) = if summary {
            let (metas, unit) = summarised_metas(&self.ranks);
            (metas, unit, Layout::Summarised)
        } else {
            let metas = self.ranks.iter().map(|r| r.meta.clone()).collect();
            (metas, 1, Layout::Full)
        };
        let tables = Tables::of(metas.iter());
        let mut run = Vec::new();
        let ranks: Vec<u32> = self.ranks.iter().map(|r| r.meta.rank).collect();
        let progressions = mpigram_grammar::progressions(&ranks);
        run.put_u64(progressions.len() as u64);
        for (first, stride, len) in progressions {
            run.put_u32(first);
            run.put_u32(stride);
            run.put_u32(len);
        }
        let run_start = metas
            .iter()
            .map(|m| RankClock::of(m).global_ns(0))
            .fold(f64::INFINITY, f64::min);
        run.put_u64(
            self.run_start_ns
                .map_or(run_start, |s| s.min(run_start))
                .to_bits(),
        );
        run.extend(encode_funcs(&self.signatures));
        let deltas = self.signatures.len() >= DELTAS_FROM;
        match deltas {
            // The table is in SIGNATURE_DELTAS: here, an empty plain one.
            true => run.put_u64(0),
            false => {
                run.put_u64(self.signatures.len() as u64);
                self.signatures.iter().for_each(|s| run.put_blob(s));
            }
        }
        run.put_blob(&self.grammar.encode());
        tables.encode(&mut run);
        if summary {
            // A power of two: its exponent.
            run.put_u32(unit.ilog2());
            let q = Quantum::of_unit(unit);
            let wall = wall_ns(&self.ranks);
            let pairs = GapSummary::of(&self.ranks, wall, q);
            run.put_u32(match pairs.is_empty() {
                true => RANK_TIMING_COMPACT,
                false => RANK_TIMING_COMPACT_PAIRS,
            });
            TimingSummary::of(&self.ranks, self.signatures.len(), wall, q).encode(&mut run);
            if !pairs.is_empty() {
                pairs.encode(&mut run, q);
            }
        } else {
            run.put_u64(unit);
            run.put_u32(0);
        }
        let mut out = vec![(section::RUN, 0, run)];
        if deltas {
            let table = encode_signature_deltas(&self.signatures);
            out.push((section::SIGNATURE_DELTAS, 0, table));
        }
        let lossy = self.ranks.iter().any(|r| r.meta.timing.lossy.is_some());
        let lossless = self.ranks.iter().any(|r| r.meta.timing.lossless);
        let inline = parts_in_run(layout, self.ranks.len());
        for (chunk, parts) in self.ranks.chunks(RANKS_PER_CHUNK).enumerate() {
            let first = chunk * RANKS_PER_CHUNK;
            let chunk_ranks: Vec<_> = parts
                .iter()
                .zip(&metas[first..])
                .map(|(p, m)| (m, p.comms.as_slice()))
                .collect();
            let chunk = chunk as u32;
            if inline {
                encode_chunk(&mut out[0].2, &chunk_ranks, &tables, unit, layout);
            } else {
                let mut rank_parts = Vec::new();
                encode_chunk(&mut rank_parts, &chunk_ranks, &tables, unit, layout);
                out.push((section::PARTS, chunk, rank_parts));
            }
            if !summary {
                // Per rank: the count, the terminals as steps, the columns.
                let mut stats = Vec::new();
                for r in parts {
                    stats.put_u64(r.stats.len() as u64);
                    let mut last = 0;
                    for &(t, _) in &r.stats {
                        stats.put_u32(t - last);
                        last = t;
                    }
                    let numbers: Vec<CallStats> = r.stats.iter().map(|&(_, s)| s).collect();
                    put_stats_columns(&mut stats, &numbers);
                }
                out.push((section::STATS_COLUMNS, chunk, stats));
                let kept: Vec<Gaps> = parts
                    .iter()
                    .map(|r| match keep {
                        Keep::AllForTheMerge => r.gaps.clone(),
                        Keep::Summary | Keep::EveryRanksOwn => r
                            .gaps
                            .trimmed(|t| r.stats_of(t).map(|s| (s.count, s.gap_ns))),
                    })
                    .collect();
                if kept.iter().any(|g| !g.is_empty()) {
                    let mut gaps = Vec::new();
                    kept.iter().for_each(|g| g.encode(&mut gaps));
                    out.push((section::GAPS, chunk, gaps));
                }
            }
            for (recorded, kind, lossy) in [
                (lossy, section::LOSSY_TIMES, true),
                (lossless, section::EXACT_TIMES, false),
            ] {
                if recorded {
                    let mut bytes = Vec::new();
                    for r in parts {
                        bytes.put_blob(if lossy {
                            &r.times.lossy
                        } else {
                            &r.times.exact
                        });
                    }
                    out.push((kind, chunk, bytes));
                }
            }
        }
        out
    }

    /// Whether the ranks' timing can be summarised: aggregated timing only
    /// (per-call times keep every rank's metadata exact), and each rank's
    /// timed calls are its calls in the grammar.
    fn summarisable(&self) -> bool {
        if self.ranks.is_empty() || self.ranks.iter().any(|r| r.meta.timing.per_call()) {
            return false;
        }
        let mut counts: FxHashMap<u32, Vec<(u32, u64)>> = FxHashMap::default();
        self.ranks.iter().all(|part| {
            let Some(start) = self.grammar.start(part.meta.rank) else {
                return false;
            };
            let counts = counts
                .entry(start)
                .or_insert_with(|| self.grammar.terminal_counts(start));
            counts.len() == part.stats.len()
                && counts
                    .iter()
                    .zip(&part.stats)
                    .all(|(&(t, n), &(u, s))| t == u && n == s.count)
        })
    }

    /// Reads a whole-run file: every rank, or only rank `only` (then
    /// `None` if the file does not hold it). One rank costs its chunk of
    /// per-rank data, the signature table and the grammar's rules, not the
    /// other ranks' data.
    pub(crate) fn read_file(file: &TraceFile, only: Option<u32>) -> Result<Option<Trace>, Error> {
        let name = checked_name(file, FILE_KIND_RUN, "a whole-run trace")?;
        let bad = |section| bad_section(&name, section);
        let bytes = file.section(section::RUN, 0)?;
        let mut r = ByteReader::new(&bytes);
        let mut progressions = Vec::new();
        let (mut total, mut position) = (0usize, None);
        for _ in 0..r.count().map_err(bad(section::RUN))? {
            let at = r.position();
            let progression = Progression {
                first: r.u32().map_err(bad(section::RUN))?,
                stride: r.u32().map_err(bad(section::RUN))?,
                len: r.u32().map_err(bad(section::RUN))?,
            };
            if !progression.is_valid() {
                let message = format!("byte {at}: bad rank progression");
                return Err(Error::payload(&name, section::RUN, message));
            }
            if let Some(i) = only.and_then(|rank| progression.position(rank)) {
                position = Some(total + i as usize);
            }
            total = total.saturating_add(progression.len as usize);
            progressions.push(progression);
        }
        let run_start = f64::from_bits(r.u64().map_err(bad(section::RUN))?);
        let funcs = r.u32().map_err(bad(section::RUN))?;
        let plain = read_signatures(&mut r).map_err(bad(section::RUN))?;
        // Files written before 2026-11-30, and files of fewer than
        // DELTAS_FROM signatures, hold the table in RUN.
        let (table, signatures) = match file.find(section::SIGNATURE_DELTAS, 0) {
            None => (section::RUN, plain),
            Some(_) if plain.is_empty() => {
                let table = section::SIGNATURE_DELTAS;
                let bytes = file.section(table, 0)?;
                (table, decode_signature_deltas(&bytes).map_err(bad(table))?)
            }
            Some(_) => {
                let message = "a signature table both here and in SIGNATURE_DELTAS";
                return Err(Error::payload(&name, section::RUN, message));
            }
        };
        check_funcs(funcs, &signatures).map_err(|m| Error::payload(&name, table, m))?;
        check_signatures(&signatures).map_err(|m| Error::payload(&name, table, m))?;
        let grammar_bytes = r.blob().map_err(bad(section::RUN))?;
        let max_streams = total.min(mpigram_grammar::MAX_STREAMS);
        let grammar = match only {
            Some(rank) => Grammar::decode_stream(grammar_bytes, max_streams, rank),
            None => Grammar::decode_streams(grammar_bytes, max_streams),
        }
        .map_err(|e| Error::payload(&name, section::RUN, e))?;
        let tables = Tables::decode(&mut r).map_err(bad(section::RUN))?;
        let unit_at = r.position();
        let unit = r.u64().map_err(bad(section::RUN))?;
        let at = r.position();
        let rank_timing = r.u32().map_err(bad(section::RUN))?;
        let coding = match rank_timing {
            0 => None,
            RANK_TIMING_ABSOLUTE => Some(Coding::Absolute),
            RANK_TIMING_RELATIVE => Some(Coding::Relative),
            RANK_TIMING_COMPACT | RANK_TIMING_COMPACT_PAIRS => Some(Coding::Compact),
            other => {
                let message = format!(
                    "byte {at}: rank timing {other} is not 0 to 4 (written by a newer mpigram?)"
                );
                return Err(Error::payload(&name, section::RUN, message));
            }
        };
        let (unit, layout, quantum) = match coding {
            // The unit's exponent.
            Some(Coding::Compact) if unit < u64::from(u64::BITS) => {
                let unit = 1 << unit;
                (unit, Layout::Summarised, Quantum::of_unit(unit))
            }
            Some(Coding::Compact) => (0, Layout::Summarised, Quantum::default()),
            _ => (unit, Layout::Full, Quantum::default()),
        };
        if unit == 0 {
            let message = format!("byte {unit_at}: bad time unit");
            return Err(Error::payload(&name, section::RUN, message));
        }
        let summary = match coding {
            Some(coding) => Some(
                TimingSummary::decode(&mut r, signatures.len(), coding, quantum)
                    .map_err(bad(section::RUN))?,
            ),
            None => None,
        };
        let pair_summary = match rank_timing {
            RANK_TIMING_COMPACT_PAIRS => Some(
                GapSummary::decode(&mut r, signatures.len(), quantum).map_err(bad(section::RUN))?,
            ),
            _ => None,
        };
        let chunk_ranks = |chunk: usize| -> Vec<u32> {
            progressions
                .iter()
                .flat_map(|p| (0..p.len).map(move |i| p.first + p.stride * i))
                .skip(chunk * RANKS_PER_CHUNK)
                .take(RANKS_PER_CHUNK)
                .collect()
        };
        let mut inline = if parts_in_run(layout, total) {
            let parts = decode_chunk(&mut r, &chunk_ranks(0), &tables, unit, layout);
            Some(parts.map_err(bad(section::RUN))?)
        } else {
            None
        };
        r.finish().map_err(bad(section::RUN))?;
        let chunks = match (only, position) {
            (Some(_), None) => return Ok(None),
            (Some(_), Some(p)) => p / RANKS_PER_CHUNK..p / RANKS_PER_CHUNK + 1,
            (None, _) => 0..total.div_ceil(RANKS_PER_CHUNK),
        };
        let mut ranks = Vec::new();
        for chunk in chunks {
            let index = u32::try_from(chunk)
                .map_err(|_| Error::payload(&name, section::RUN, "too many ranks"))?;
            let parts = match inline.take() {
                Some(parts) => parts,
                None => read_parts(
                    file,
                    index,
                    &chunk_ranks(chunk),
                    &tables,
                    unit,
                    layout,
                    &name,
                )?,
            };
            let parts = read_chunk(file, index, parts, summary.is_none(), &name)?;
            match position {
                Some(p) => ranks.extend(parts.into_iter().nth(p % RANKS_PER_CHUNK)),
                None => ranks.extend(parts),
            }
        }
        if let Some(summary) = &summary {
            summary
                .rank_stats(&grammar, &mut ranks)
                .map_err(|m| Error::payload(&name, section::RUN, m))?;
        }
        if let Some(pairs) = &pair_summary {
            pairs.rank_gaps(&mut ranks);
        }
        let trace = Trace {
            dir: PathBuf::new(),
            signatures,
            grammar,
            ranks,
            run_start_ns: only.map(|_| run_start),
            rank_stats: if summary.is_some() {
                RankStats::Summary
            } else {
                RankStats::Exact
            },
            skipped: Vec::new(),
            notes: Vec::new(),
        };
        trace
            .check()
            .map_err(|m| Error::payload(&name, section::RUN, m))?;
        Ok(Some(trace))
    }

    /// The parts must agree: one stream per rank, ranks in order,
    /// terminals within the signature table.
    fn check(&self) -> Result<(), String> {
        if let Some(w) = self
            .ranks
            .windows(2)
            .find(|w| w[0].meta.rank >= w[1].meta.rank)
        {
            return Err(format!(
                "ranks out of order or repeated: {} then {}",
                w[0].meta.rank, w[1].meta.rank
            ));
        }
        let streams: Vec<StreamId> = self.grammar.streams().iter().map(|&(s, _)| s).collect();
        let ranks: Vec<StreamId> = self.ranks.iter().map(|r| r.meta.rank).collect();
        if streams != ranks {
            return Err(format!(
                "{} streams for {} ranks, or not the same ranks",
                streams.len(),
                ranks.len()
            ));
        }
        let n = self.signatures.len();
        crate::rank::check_terminals(&self.grammar, n)?;
        if let Some(r) = self
            .ranks
            .iter()
            .find(|r| r.stats.last().is_some_and(|&(t, _)| t as usize >= n))
        {
            return Err(format!(
                "rank {}: timing of a call not in the signature table",
                r.meta.rank
            ));
        }
        for r in &self.ranks {
            r.gaps
                .check(n)
                .map_err(|m| format!("rank {}: {m}", r.meta.rank))?;
        }
        Ok(())
    }
}

/// The run's wall time: from the earliest start to the latest end.
fn wall_ns(ranks: &[RankPart]) -> u64 {
    let start = ranks.iter().map(|r| r.meta.start_ns).min().unwrap_or(0);
    let end = ranks.iter().map(|r| r.meta.end_ns).max().unwrap_or(0);
    end.saturating_sub(start)
}

/// The metadata a summarised file keeps: times counted from the run's
/// first start and rounded down to a unit of about 1/256 of the run (a
/// power of two of nanoseconds, returned); on each host every rank with the
/// clock measurements of the rank whose clock was measured best (ranks of a
/// host share its clock); no tick calibration (with aggregated timing only,
/// nothing is in ticks).
fn summarised_metas(ranks: &[RankPart]) -> (Vec<RankMeta>, u64) {
    let share = (wall_ns(ranks) / TIME_UNIT_SHARE).max(1);
    let unit = 1u64 << share.ilog2();
    let origin = ranks.iter().map(|r| r.meta.start_ns).min().unwrap_or(0) / unit * unit;
    let error = |m: &RankMeta| {
        m.clock_sync
            .iter()
            .map(|s| s.error_ns)
            .max()
            .unwrap_or(u64::MAX)
    };
    let mut best: FxHashMap<&str, &RankMeta> = FxHashMap::default();
    for r in ranks {
        let m = &r.meta;
        let b = best.entry(&m.host).or_insert(m);
        if error(m) < error(b) {
            *b = m;
        }
    }
    let time = |ns: u64| ns.saturating_sub(origin) / unit * unit;
    let metas = ranks
        .iter()
        .map(|r| {
            let b = best[r.meta.host.as_str()];
            RankMeta {
                start_ns: time(r.meta.start_ns),
                end_ns: time(r.meta.end_ns),
                ns_per_tick: 1.0,
                clock_sync: b
                    .clock_sync
                    .iter()
                    .map(|s| ClockSync {
                        at_ns: time(s.at_ns),
                        ..*s
                    })
                    .collect(),
                ..r.meta.clone()
            }
        })
        .collect();
    (metas, unit)
}

/// The PARTS section of chunk `index`, whose ranks are `ranks`.
fn read_parts(
    file: &TraceFile,
    index: u32,
    ranks: &[u32],
    tables: &Tables,
    unit: u64,
    layout: Layout,
    name: &str,
) -> Result<Vec<(RankMeta, Vec<CommEntry>)>, Error> {
    let bad = |section| bad_section(name, section);
    let bytes = file.section(section::PARTS, index)?;
    let mut r = ByteReader::new(&bytes);
    let parts = decode_chunk(&mut r, ranks, tables, unit, layout).map_err(bad(section::PARTS))?;
    r.finish().map_err(bad(section::PARTS))?;
    Ok(parts)
}

/// The ranks of chunk `index`, whose metadata and communicator logs are
/// `parts`: with STATS_COLUMNS (CALL_STATS in older files) if `stats`
/// (every rank's own timing), per-call times where recorded. One section
/// at a time is decoded, parsed and let go, so a chunk costs one decoded
/// section (bounded by the container's reader) beyond what it holds.
fn read_chunk(
    file: &TraceFile,
    index: u32,
    parts: Vec<(RankMeta, Vec<CommEntry>)>,
    stats: bool,
    name: &str,
) -> Result<Vec<RankPart>, Error> {
    let bad = |section| bad_section(name, section);

    let mut all_stats = vec![Vec::new(); parts.len()];
    if stats {
        // Files written before 2026-11-30 hold rows (CALL_STATS).
        let kind = held_kind(file, index, section::STATS_COLUMNS, section::CALL_STATS);
        let bytes = file.section(kind, index)?;
        let mut r = ByteReader::new(&bytes);
        for rank_stats in &mut all_stats {
            let count = r.count().map_err(bad(kind))?;
            // 6 varints an entry: a forged count must not size the vector.
            let mut terminals = Vec::with_capacity(count.min(r.remaining() / 6));
            let mut rows = Vec::new();
            let mut t = 0u32;
            for _ in 0..count {
                let at = r.position();
                t = t.checked_add(r.u32().map_err(bad(kind))?).ok_or_else(|| {
                    let message = format!("byte {at}: terminal out of range");
                    Error::payload(name, kind, message)
                })?;
                terminals.push(t);
                if kind == section::CALL_STATS {
                    rows.push(decode_stats(&mut r).map_err(bad(kind))?);
                }
            }
            if kind == section::STATS_COLUMNS {
                rows = read_stats_columns(&mut r, count).map_err(bad(kind))?;
            }
            *rank_stats = terminals.into_iter().zip(rows).collect();
        }
        r.finish().map_err(bad(kind))?;
    }
    let mut all_gaps = vec![Gaps::default(); parts.len()];
    // Absent where no rank of the chunk recorded where its gaps were.
    if stats && file.find(section::GAPS, index).is_some() {
        let bytes = file.section(section::GAPS, index)?;
        let mut r = ByteReader::new(&bytes);
        for gaps in &mut all_gaps {
            *gaps = Gaps::decode(&mut r).map_err(bad(section::GAPS))?;
        }
        r.finish().map_err(bad(section::GAPS))?;
    }

    let mut times = vec![CallTimes::default(); parts.len()];
    for kind in [section::LOSSY_TIMES, section::EXACT_TIMES] {
        // Absent where no rank recorded such times.
        let bytes = match file.find(kind, index) {
            Some(_) => file.section(kind, index)?,
            None => Default::default(),
        };
        let mut r = ByteReader::new(&bytes);
        for ((meta, _), times) in parts.iter().zip(&mut times) {
            let (recorded, stored) = match kind {
                section::LOSSY_TIMES => (meta.timing.lossy.is_some(), &mut times.lossy),
                _ => (meta.timing.lossless, &mut times.exact),
            };
            if r.remaining() > 0 || recorded {
                *stored = r.blob().map_err(bad(kind))?.to_vec();
                check_times(name, kind, stored)?;
            }
            if !recorded && !stored.is_empty() {
                let message = format!("rank {}: times it did not record", meta.rank);
                return Err(Error::payload(name, kind, message));
            }
        }
        r.finish().map_err(bad(kind))?;
    }
    Ok(parts
        .into_iter()
        .zip(all_stats)
        .zip(all_gaps)
        .zip(times)
        .map(|((((meta, comms), stats), gaps), times)| RankPart {
            meta,
            stats,
            gaps,
            comms,
            times,
        })
        .collect())
}
