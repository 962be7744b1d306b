//! Ranks recorded in parts. A rank whose signature table and grammar
//! outgrew the tracer's memory budget (`MPIGRAM_MEMORY`) wrote them out as
//! a completed part, `rank<N>.part<K>.mgr` (a rank trace: the signatures
//! and grammar of a stretch of its calls), and went on with an empty
//! table. Its last file (`trace.mgr`, `rank<N>.mgr` or its crash journal)
//! holds the calls after the last part, while its META counts them all: the
//! difference is what its parts hold. The readers join them here, so that
//! every tool sees one continuous sequence of calls per rank. A part also
//! holds the per-call times of its calls, if recorded (older parts hold
//! none: their times stayed in memory and are in the rank's last file).

use crate::{CallStats, CallTimes, Error, Gaps, PairGap, RankPart, RankTrace, Trace};
use mpigram_grammar::Grammar;
use rustc_hash::FxHashMap;
use std::path::Path;

/// Ending of a part file's name.
const PART_SUFFIX: &str = ".mgr";

/// File name of part `part` (0, 1, ...) of rank `rank`'s calls.
pub fn part_file_name(rank: u32, part: u32) -> String {
    format!("rank{rank}.part{part}{PART_SUFFIX}")
}

/// Whether `name` is a part file's name (of any rank).
pub fn is_part_file_name(name: &str) -> bool {
    let Some((rank, part)) = name
        .strip_prefix("rank")
        .and_then(|n| n.strip_suffix(PART_SUFFIX))
        .and_then(|n| n.split_once(".part"))
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(rank) && digits(part)
}

/// Calls of `rank` that precede the ones `grammar` holds: those of its
/// spilled parts.
fn spilled_calls(grammar: &Grammar, rank: &RankPart) -> u64 {
    let here = grammar.stream_len(rank.meta.rank).unwrap_or(0);
    rank.meta.calls.saturating_sub(here)
}

/// Puts in front of every rank of `trace` (read from `dir`) the calls of
/// its spilled parts: their signatures join the table, their grammars go
/// before the rank's stream, their timing adds to the rank's. `origin`
/// names the file each rank was read from (for errors).
pub(crate) fn join_parts(
    dir: &Path,
    trace: &mut Trace,
    origin: &dyn Fn(u32) -> String,
) -> Result<(), Error> {
    let spilled: Vec<(usize, u64)> = trace
        .ranks
        .iter()
        .enumerate()
        .map(|(i, r)| (i, spilled_calls(&trace.grammar, r)))
        .filter(|&(_, calls)| calls > 0)
        .collect();
    if spilled.is_empty() {
        return Ok(());
    }
    let mut index: FxHashMap<Vec<u8>, u32> = trace
        .signatures
        .iter()
        .enumerate()
        .map(|(t, s)| (s.clone(), t as u32))
        .collect();
    for (i, calls) in spilled {
        let parts = read_parts(dir, &trace.ranks[i], calls, origin)?;
        let rank = trace.ranks[i].meta.rank;
        let mut grammars = Vec::with_capacity(parts.len());
        // The parts' per-call times come first, as their calls do.
        let mut times = CallTimes::default();
        let mut stats: FxHashMap<u32, CallStats> = trace.ranks[i].stats.iter().copied().collect();
        // A first call of a part is not the rank's unless no earlier part
        // has the signature: the parts come first, in order.
        let mut pairs: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        let mut firsts: FxHashMap<u32, u64> = FxHashMap::default();
        let mut join_gaps = |gaps: Gaps| {
            for p in gaps.pairs {
                *pairs.entry((p.terminal, p.pred)).or_default() += p.gap_ns;
            }
            for (t, gap) in gaps.firsts {
                firsts.entry(t).or_insert(gap);
            }
        };
        for part in parts {
            let renumber: Vec<u32> = part
                .signatures
                .into_iter()
                .map(|s| {
                    let next = trace.signatures.len() as u32;
                    *index.entry(s).or_insert_with_key(|s| {
                        trace.signatures.push(s.clone());
                        next
                    })
                })
                .collect();
            for (t, s) in part.stats.iter().enumerate() {
                if s.count > 0 {
                    add(stats.entry(renumber[t]).or_default(), s);
                }
            }
            let mut gaps = part.gaps;
            gaps.renumber(|t| renumber[t as usize]);
            join_gaps(gaps);
            times.append(&part.times);
            let grammar = part.grammar.with_terminals(|t| renumber[t as usize]);
            grammars.push(grammar.map_err(|e| Error::dir(dir, e))?);
        }
        let mut stats: Vec<(u32, CallStats)> = stats.into_iter().collect();
        stats.sort_unstable_by_key(|&(t, _)| t);
        trace.ranks[i].stats = stats;
        join_gaps(std::mem::take(&mut trace.ranks[i].gaps));
        let mut gaps = Gaps {
            pairs: pairs
                .into_iter()
                .map(|((terminal, pred), gap_ns)| PairGap {
                    terminal,
                    pred,
                    gap_ns,
                })
                .collect(),
            firsts: firsts.into_iter().collect(),
        };
        gaps.pairs.sort_unstable();
        gaps.firsts.sort_unstable();
        trace.ranks[i].gaps = gaps;
        let own = &mut trace.ranks[i].times;
        times.append(own);
        *own = times;
        let grammar = std::mem::replace(&mut trace.grammar, Grammar::empty());
        trace.grammar = grammar
            .prepend(rank, &grammars)
            .map_err(|e| Error::dir(dir, e))?;
    }
    Ok(())
}

/// The parts of `rank` that hold its first `calls` calls, in order, each
/// checked against the rank (same rank, process and run; calls that
/// continue the previous part's).
fn read_parts(
    dir: &Path,
    rank: &RankPart,
    calls: u64,
    origin: &dyn Fn(u32) -> String,
) -> Result<Vec<RankTrace>, Error> {
    let r = rank.meta.rank;
    let mut parts = Vec::new();
    let mut done = 0u64;
    while done < calls {
        let name = part_file_name(r, parts.len() as u32);
        let path = dir.join(&name);
        if !path.exists() {
            return Err(Error::dir(
                &dir.join(origin(r)),
                format!(
                    "rank {r}'s first {calls} calls are in its part files, but {name} is missing ({done} found)"
                ),
            ));
        }
        let part = RankTrace::read(&path)?;
        let m = &part.meta;
        let here = part.grammar.stream_len(r).unwrap_or(0);
        let problem = if m.rank != r {
            Some(format!("holds rank {}, not {r}", m.rank))
        } else if m.pid != rank.meta.pid || m.run != rank.meta.run {
            Some(format!(
                "belongs to another run (process {}, rank {r}'s is {})",
                m.pid, rank.meta.pid
            ))
        } else if m.calls != done + here || m.calls > calls {
            Some(format!(
                "holds calls {done}..{} of rank {r}, which has {calls} in parts",
                m.calls
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(Error::dir(&path, problem));
        }
        done = m.calls;
        parts.push(part);
    }
    Ok(parts)
}

/// Adds `more` calls' timing to `s`.
fn add(s: &mut CallStats, more: &CallStats) {
    s.min_ns = if s.count == 0 {
        more.min_ns
    } else {
        s.min_ns.min(more.min_ns)
    };
    s.count += more.count;
    s.total_ns += more.total_ns;
    s.max_ns = s.max_ns.max(more.max_ns);
    s.gap_ns += more.gap_ns;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_file_names() {
        assert_eq!(part_file_name(3, 12), "rank3.part12.mgr");
        assert!(is_part_file_name("rank3.part12.mgr"));
        assert!(!is_part_file_name("rank3.mgr"));
        assert!(!is_part_file_name("rank3.part.mgr"));
        assert!(!is_part_file_name("rankx.part1.mgr"));
        assert!(!crate::rank::is_rank_file_name("rank3.part12.mgr"));
    }
}
