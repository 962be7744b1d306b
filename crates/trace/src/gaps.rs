//! Where the computation before a rank's calls was, beyond each signature's
//! total ([`CallStats::gap_ns`](crate::CallStats::gap_ns)): what aggregated
//! timing keeps so that a benchmark generated from it places computation
//! at the right call sites (`docs/format.md`, "Gaps by predecessor").
//!
//! - **By predecessor** ([`PairGap`]): a signature called after long
//!   computation at one place of the program and after short computation
//!   at another usually follows other calls at each (CG of the NAS
//!   benchmarks sends one signature after a matrix-vector product and after
//!   a dot product). The gaps per (signature, signature of the call
//!   before) tell the places apart where the gap per signature mixes them;
//!   a call site's predecessors, and the pairs' calls, follow from the
//!   grammar, so only the gaps are kept.
//! - **The first call's** ([`Gaps::firsts`]): the computation before a
//!   signature's first call (a program's start-up before the first
//!   iteration of its loop, which the grammar folds into the loop) is
//!   often far from that before the others; spread over the iterations it
//!   would make each of them wait for the slowest rank's share.
//!
//! Both are parts of the gaps per signature: a first call's gap is also in
//! its pair's, and both in the signature's.

use crate::meta::out_of_range;
use mpigram_varint::{ByteReader, DecodeError, PutVarint};

/// The gaps before the calls of one signature that followed one other
/// signature on the rank (its *predecessor*: the signature of the rank's
/// previous call), summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PairGap {
    pub terminal: u32,
    /// The terminal of the call before.
    pub pred: u32,
    pub gap_ns: u64,
}

/// A rank's gaps by predecessor and before first calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gaps {
    /// Sorted. Every pair the rank made, or, read from a summary, those of
    /// the signatures that follow more than one other on some rank (then
    /// a pair may be given for a rank that did not make it: the grammar
    /// counts a pair's calls).
    pub pairs: Vec<PairGap>,
    /// (terminal, the gap before its first call), sorted: every signature
    /// the rank called but its first call, or, read from a summary, those
    /// whose first call is [`apart`] from the others on some rank.
    pub firsts: Vec<(u32, u64)>,
}

/// A first gap is far enough from the later ones' mean to be kept apart
/// when they differ by this many nanoseconds and this fraction of the
/// larger.
pub const FIRST_APART_NS: f64 = 50e3;
pub const FIRST_APART_FRACTION: f64 = 0.25;

/// Whether a first gap of `first` ns is apart from later ones of `rest` ns
/// on average.
pub fn apart(first: f64, rest: f64) -> bool {
    let d = (first - rest).abs();
    d >= FIRST_APART_NS && d >= FIRST_APART_FRACTION * first.max(rest)
}

/// Whether the gap before the first of a signature's `calls` calls, `first`
/// ns of their `gap` ns in all, is [`apart`] from the later ones' mean.
pub fn first_apart(first: u64, calls: u64, gap: u64) -> bool {
    let rest = gap.saturating_sub(first) as f64 / calls.saturating_sub(1).max(1) as f64;
    calls > 1 && apart(first as f64, rest)
}

impl Gaps {
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.firsts.is_empty()
    }

    /// The pairs of `terminal` (found by bisection: `pairs` is sorted).
    pub fn pairs_of(&self, terminal: u32) -> &[PairGap] {
        let from = self.pairs.partition_point(|p| p.terminal < terminal);
        let to = from + self.pairs[from..].partition_point(|p| p.terminal == terminal);
        &self.pairs[from..to]
    }

    /// The gap before the first call of `terminal`, if kept.
    pub fn first(&self, terminal: u32) -> Option<u64> {
        crate::value_of(&self.firsts, &terminal)
    }

    /// What adds to the gaps per signature, which `stats` gives as (calls,
    /// gap in ns) by terminal: the pairs of the signatures that follow more
    /// than one other, and the first gaps apart from their signature's
    /// later ones. What files keep; the rest (a signature's one pair, its
    /// first gap like the others) serves summarising ranks, in memory.
    pub fn trimmed(&self, stats: impl Fn(u32) -> Option<(u64, u64)>) -> Gaps {
        let pairs = self
            .pairs
            .chunk_by(|a, b| a.terminal == b.terminal)
            .filter(|run| run.len() > 1)
            .flatten()
            .copied()
            .collect();
        let firsts = self
            .firsts
            .iter()
            .copied()
            .filter(|&(t, first)| {
                stats(t).is_some_and(|(calls, gap)| first_apart(first, calls, gap))
            })
            .collect();
        Gaps { pairs, firsts }
    }

    /// Terminals renumbered by `renumber` (a table merged into another).
    pub fn renumber(&mut self, renumber: impl Fn(u32) -> u32) {
        for p in &mut self.pairs {
            p.terminal = renumber(p.terminal);
            p.pred = renumber(p.pred);
        }
        self.pairs.sort_unstable();
        for (t, _) in &mut self.firsts {
            *t = renumber(*t);
        }
        self.firsts.sort_unstable();
    }

    /// Appends the pairs, then the first gaps: each list as its length,
    /// then each entry with its terminal as the step from the previous
    /// one's.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.pairs.len() as u64);
        let mut last = 0;
        for p in &self.pairs {
            out.put_u32(p.terminal - last);
            last = p.terminal;
            out.put_u32(p.pred);
            out.put_u64(p.gap_ns);
        }
        out.put_u64(self.firsts.len() as u64);
        let mut last = 0;
        for &(t, gap) in &self.firsts {
            out.put_u32(t - last);
            last = t;
            out.put_u64(gap);
        }
    }

    pub(crate) fn decode(r: &mut ByteReader<'_>) -> Result<Gaps, DecodeError> {
        let n = r.count()?;
        // 3 varints an entry: a forged count must not size the vector.
        let mut pairs = Vec::with_capacity(n.min(r.remaining() / 3));
        let mut terminal = 0u32;
        for _ in 0..n {
            terminal = next_terminal(r, terminal)?;
            pairs.push(PairGap {
                terminal,
                pred: r.u32()?,
                gap_ns: r.u64()?,
            });
        }
        let n = r.count()?;
        let mut firsts = Vec::with_capacity(n.min(r.remaining() / 2));
        let mut terminal = 0u32;
        for _ in 0..n {
            terminal = next_terminal(r, terminal)?;
            firsts.push((terminal, r.u64()?));
        }
        Ok(Gaps { pairs, firsts })
    }

    /// Every terminal is one of a table of `n` signatures.
    pub(crate) fn check(&self, n: usize) -> Result<(), String> {
        let terminals = self.pairs.iter().flat_map(|p| [p.terminal, p.pred]);
        match terminals
            .chain(self.firsts.iter().map(|&(t, _)| t))
            .find(|&t| t as usize >= n)
        {
            Some(t) => Err(format!(
                "gaps of signature {t}: not in the table of {n} signatures"
            )),
            None => Ok(()),
        }
    }
}

/// The terminal a step after `last`.
fn next_terminal(r: &mut ByteReader<'_>, last: u32) -> Result<u32, DecodeError> {
    let at = r.position();
    let step = r.u32()?;
    last.checked_add(step)
        .ok_or_else(|| out_of_range(at, step.into(), "terminal"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_round_trip_and_renumber_in_order() {
        let mut g = Gaps {
            pairs: vec![
                PairGap {
                    terminal: 1,
                    pred: 4,
                    gap_ns: 10,
                },
                PairGap {
                    terminal: 1,
                    pred: 5,
                    gap_ns: 900,
                },
                PairGap {
                    terminal: 3,
                    pred: 1,
                    gap_ns: 7,
                },
            ],
            firsts: vec![(1, 5_000_000), (3, 2)],
        };
        let mut bytes = Vec::new();
        g.encode(&mut bytes);
        let mut r = ByteReader::new(&bytes);
        assert_eq!(Gaps::decode(&mut r).unwrap(), g);
        r.finish().unwrap();
        assert_eq!(g.first(1), Some(5_000_000));
        let preds = |t| g.pairs_of(t).iter().map(|p| p.pred).collect::<Vec<_>>();
        assert_eq!(
            (preds(0), preds(1), preds(2), preds(3), preds(4)),
            (vec![], vec![4, 5], vec![], vec![1], vec![])
        );
        assert_eq!(g.first(2), None);
        assert!(g.check(6).is_ok());
        assert!(g.check(5).unwrap_err().contains("signature 5"));
        // 1 <-> 5 swapped: the pairs of terminal 1 become terminal 5's, last.
        g.renumber(|t| match t {
            1 => 5,
            5 => 1,
            t => t,
        });
        let terminals: Vec<(u32, u32)> = g.pairs.iter().map(|p| (p.terminal, p.pred)).collect();
        assert_eq!(terminals, [(3, 5), (5, 1), (5, 4)]);
        assert_eq!(g.firsts, [(3, 2), (5, 5_000_000)]);
    }

    #[test]
    fn a_first_gap_is_apart_when_far_in_time_and_in_ratio() {
        // CG.W's start-up: 13.9 ms before a call whose others follow 5 µs.
        assert!(apart(13.9e6, 4.8e3));
        // 40 µs more is too little time to matter, 20 % too little a ratio.
        assert!(!apart(50e3, 10e3));
        assert!(!apart(1.2e6, 1.0e6));
        assert!(apart(0.0, 1e6), "a loop entered without computation");
    }
}
