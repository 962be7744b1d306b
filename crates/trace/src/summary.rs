//! Aggregated timing summarised across ranks: what a whole-run file keeps
//! by default instead of every rank's own (`docs/format.md`, "Timing
//! summarised across ranks").
//!
//! For each call signature and each of two per-rank quantities — the time
//! the rank spent in the signature's calls and the gap before them (the
//! computation that preceded each call, summed) — the ranks whose value
//! stands out are *named* with their own value, and the others are kept as
//! their mean, with the lowest and highest of them. A rank stands out when
//! its value is more than [`OUTLIER_RATIO`] from the median of the ranks
//! *and* differs from it by more than [`OUTLIER_SHARE`] of the run's wall
//! time; at most [`NAMED`] ranks (the furthest from the median) are named
//! per quantity and signature. So the summary's size does not grow with the
//! number of ranks, and a regular program's is the same at 9 ranks as at
//! 10,000. Every stored time is quantised to bins of ratio [`BASE`] (stored
//! `v` of a true `x`: `x / BASE < v <= x`), so the sums over ranks (time per
//! function) are within 1 %, a named rank's value is within 1 %, and an
//! unnamed rank's value lies between the stored lowest and highest (which
//! [`Spread::rest`] gives) and is read as the mean of those ranks.

use crate::meta::out_of_range;
use crate::timing::Bins;
use crate::{CallStats, RankPart};
use mpigram_grammar::{Grammar, RuleId};
use mpigram_varint::{ByteReader, DecodeError, PutVarint};
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

/// Ratio of the bins summarised times are quantised to.
pub const BASE: f64 = 1.01;

/// A rank is named when its value is above the median times this, or below
/// the median divided by it (and [`OUTLIER_SHARE`] holds)...
pub const OUTLIER_RATIO: f64 = 1.25;

/// ... and it differs from the median by more than this share of the run's
/// wall time (differences too small to matter to the run are not named).
pub const OUTLIER_SHARE: f64 = 1e-3;

/// At most this many ranks are named per quantity and signature.
pub const NAMED: usize = 4;

fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| Bins::new(BASE).expect("a valid base"))
}

/// `x` as the summary stores it: the lower edge of its bin.
fn quantised(x: u64) -> u64 {
    let b = bins();
    b.value(b.code(x)).unwrap_or(x)
}

/// One quantity's values over the ranks that made a signature's calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spread {
    /// The ranks that stand out, in rank order, with their values (ns).
    pub named: Vec<(u32, u64)>,
    /// The other ranks, if any.
    pub rest: Option<Rest>,
}

/// The ranks of a [`Spread`] that are not named: every one of them has a
/// value between `lo_ns` and `hi_ns`, and is read as `mean_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rest {
    pub mean_ns: u64,
    pub lo_ns: u64,
    pub hi_ns: u64,
}

impl Spread {
    /// Summarises `(rank, value)` pairs (any order) of a run of `wall_ns`.
    pub fn of(values: &[(u32, u64)], wall_ns: u64) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut sorted: Vec<u64> = values.iter().map(|&(_, v)| v).collect();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2] as f64;
        let least = wall_ns as f64 * OUTLIER_SHARE;
        let distance = |v: u64| (v as f64 - median).abs();
        let mut candidates: Vec<(u32, u64)> = values
            .iter()
            .copied()
            .filter(|&(_, v)| {
                let v = v as f64;
                (v > median * OUTLIER_RATIO || v * OUTLIER_RATIO < median)
                    && (v - median).abs() > least
            })
            .collect();
        candidates.sort_by(|a, b| distance(b.1).total_cmp(&distance(a.1)).then(a.0.cmp(&b.0)));
        candidates.truncate(NAMED);
        candidates.sort_unstable();
        let rest: Vec<u64> = values
            .iter()
            .filter(|(r, _)| candidates.binary_search_by_key(r, |&(n, _)| n).is_err())
            .map(|&(_, v)| v)
            .collect();
        let rest = (!rest.is_empty()).then(|| {
            let sum: u128 = rest.iter().map(|&v| u128::from(v)).sum();
            let mean = (sum / rest.len() as u128) as u64;
            Rest {
                mean_ns: quantised(mean),
                lo_ns: quantised(*rest.iter().min().expect("not empty")),
                hi_ns: quantised(*rest.iter().max().expect("not empty")),
            }
        });
        Spread {
            named: candidates
                .into_iter()
                .map(|(r, v)| (r, quantised(v)))
                .collect(),
            rest,
        }
    }

    /// The value read for `rank` (one of the ranks summarised).
    pub fn value(&self, rank: u32) -> u64 {
        match self.named.binary_search_by_key(&rank, |&(r, _)| r) {
            Ok(i) => self.named[i].1,
            Err(_) => self.rest.map_or(0, |r| r.mean_ns),
        }
    }

    /// The sum over `ranks` ranks, of which the named are some.
    pub fn total(&self, ranks: u64) -> u64 {
        let named: u64 = self.named.iter().map(|&(_, v)| v).sum();
        let others = ranks.saturating_sub(self.named.len() as u64);
        named.saturating_add(others.saturating_mul(self.rest.map_or(0, |r| r.mean_ns)))
    }

    /// The highest value of the spread's ranks, if it has any.
    fn highest(&self) -> Option<u64> {
        let named = self.named.iter().map(|&(_, v)| v);
        named.chain(self.rest.map(|r| r.hi_ns)).max()
    }

    /// Appends the spread to the columns: a head (named ranks, and
    /// whether the others are none, all alike or a range), the named
    /// (rank step, value), the others' mean code, and their range as code
    /// steps below and above the mean. A named rank's value is its code
    /// as the difference from the others' mean's code (or, with no others,
    /// from the previous named rank's code; the first's from 0).
    fn encode(&self, c: &mut Columns) {
        let b = bins();
        let rest = match self.rest {
            None => REST_NONE,
            Some(r) if r.lo_ns == r.hi_ns => REST_ALIKE,
            Some(_) => REST_RANGE,
        };
        c.heads.put_u64((self.named.len() as u64) << 2 | rest);
        let mean = self.rest.map(|r| b.code(r.mean_ns));
        if let (Some(r), Some(mean)) = (self.rest, mean) {
            c.means.put_u32(mean);
            if rest == REST_RANGE {
                c.ranges.put_u32(mean - b.code(r.lo_ns));
                c.ranges.put_u32(b.code(r.hi_ns) - mean);
            }
        }
        let (mut last, mut base) = (0, mean.unwrap_or(0));
        for &(rank, v) in &self.named {
            c.named.put_u32(rank - last);
            last = rank;
            let code = b.code(v);
            c.named.put_i64(i64::from(code) - i64::from(base));
            if mean.is_none() {
                base = code;
            }
        }
    }

    fn decode(c: &mut ColumnReaders<'_>, coding: Coding) -> Result<Spread, DecodeError> {
        let at = c.heads.position();
        let head = c.heads.u64()?;
        let (count, rest) = (head >> 2, head & 3);
        if count > NAMED as u64 || rest > REST_RANGE {
            return Err(out_of_range(at, head, "summary head"));
        }
        let (rest, mean) = match rest {
            REST_NONE => (None, None),
            _ => {
                let at = c.means.position();
                let mean = c.means.u32()?;
                let (below, above) = match rest {
                    REST_RANGE => (c.ranges.u32()?, c.ranges.u32()?),
                    _ => (0, 0),
                };
                let code = |c: Option<u32>| {
                    c.and_then(|c| bins().value(c))
                        .ok_or_else(|| out_of_range(at, mean.into(), "summarised time"))
                };
                let rest = Rest {
                    mean_ns: code(Some(mean))?,
                    lo_ns: code(mean.checked_sub(below))?,
                    hi_ns: code(mean.checked_add(above))?,
                };
                (Some(rest), Some(mean))
            }
        };
        let mut named = Vec::with_capacity(count as usize);
        let (mut rank, mut base) = (0u32, mean.unwrap_or(0));
        for i in 0..count {
            let at = c.named.position();
            let step = c.named.u32()?;
            rank = match rank.checked_add(step) {
                Some(next) if i == 0 || step > 0 => next,
                _ => return Err(out_of_range(at, step.into(), "named rank")),
            };
            let code = match coding {
                Coding::Absolute => c.named.u32()?,
                Coding::Relative => {
                    let code = relative_code(&mut c.named, base)?;
                    if mean.is_none() {
                        base = code;
                    }
                    code
                }
            };
            named.push((rank, value_of(code, at)?));
        }
        Ok(Spread { named, rest })
    }
}

/// [`Rest`] kinds in a spread's head: no other ranks, others all alike
/// (one value), others over a range.
const REST_NONE: u64 = 0;
const REST_ALIKE: u64 = 1;
const REST_RANGE: u64 = 2;

/// A summary is stored as columns (all heads, then all named ranks, ...),
/// which compress better than one signature after the other.
#[derive(Default)]
struct Columns {
    heads: Vec<u8>,
    named: Vec<u8>,
    means: Vec<u8>,
    ranges: Vec<u8>,
    max: Vec<u8>,
}

struct ColumnReaders<'a> {
    heads: ByteReader<'a>,
    named: ByteReader<'a>,
    means: ByteReader<'a>,
    ranges: ByteReader<'a>,
    max: ByteReader<'a>,
}

/// How a summary's times are coded (RUN's rank timing 1 and 2): the first
/// files stored each as its bin code; since format 2.0 a named rank's
/// value is a difference from the others' mean, and the longest call one
/// from the highest time of a rank, which mostly takes one byte where a
/// code takes two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Absolute,
    Relative,
}

/// The time of bin `code` (read at byte `at`).
fn value_of(code: u32, at: usize) -> Result<u64, DecodeError> {
    bins()
        .value(code)
        .ok_or_else(|| out_of_range(at, code.into(), "summarised time"))
}

/// A code stored as its difference from `base`.
fn relative_code(r: &mut ByteReader<'_>, base: u32) -> Result<u32, DecodeError> {
    let at = r.position();
    let delta = r.i64()?;
    i64::from(base)
        .checked_add(delta)
        .and_then(|c| u32::try_from(c).ok())
        .ok_or_else(|| out_of_range(at, delta as u64, "summarised time"))
}

/// The summarised timing of one call signature.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignatureTiming {
    /// Each rank's time in the signature's calls.
    pub time: Spread,
    /// Each rank's gaps before them (the computation that preceded them).
    pub gap: Spread,
    /// The longest call, over all ranks (the shortest is not kept).
    pub max_ns: u64,
}

/// Aggregated timing of every signature, summarised across ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimingSummary {
    /// By terminal (signature number).
    pub signatures: Vec<SignatureTiming>,
}

impl TimingSummary {
    /// Summarises the ranks' own timing (`n` signatures, a run of `wall_ns`).
    pub fn of(ranks: &[RankPart], n: usize, wall_ns: u64) -> TimingSummary {
        let mut by_terminal: Vec<Vec<(u32, CallStats)>> = vec![Vec::new(); n];
        for part in ranks {
            for &(t, s) in &part.stats {
                if let Some(v) = by_terminal.get_mut(t as usize) {
                    v.push((part.meta.rank, s));
                }
            }
        }
        let signatures = by_terminal
            .iter()
            .map(|calls| {
                let of = |f: fn(&CallStats) -> u64| -> Vec<(u32, u64)> {
                    calls.iter().map(|(r, s)| (*r, f(s))).collect()
                };
                SignatureTiming {
                    time: Spread::of(&of(|s| s.total_ns), wall_ns),
                    gap: Spread::of(&of(|s| s.gap_ns), wall_ns),
                    max_ns: quantised(calls.iter().map(|(_, s)| s.max_ns).max().unwrap_or(0)),
                }
            })
            .collect();
        TimingSummary { signatures }
    }

    /// Writes the summary, [`Coding::Relative`].
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut c = Columns::default();
        for s in &self.signatures {
            s.time.encode(&mut c);
            s.gap.encode(&mut c);
            let highest = s.time.highest().map_or(0, |v| bins().code(v));
            c.max
                .put_i64(i64::from(bins().code(s.max_ns)) - i64::from(highest));
        }
        for column in [c.heads, c.named, c.means, c.ranges, c.max] {
            out.put_blob(&column);
        }
    }

    /// Reads the timing of `n` signatures.
    pub fn decode(
        r: &mut ByteReader<'_>,
        n: usize,
        coding: Coding,
    ) -> Result<TimingSummary, DecodeError> {
        let mut c = ColumnReaders {
            heads: ByteReader::new(r.blob()?),
            named: ByteReader::new(r.blob()?),
            means: ByteReader::new(r.blob()?),
            ranges: ByteReader::new(r.blob()?),
            max: ByteReader::new(r.blob()?),
        };
        // A forged count must not size the vector: 3 bytes at least each.
        let mut signatures = Vec::with_capacity(n.min(c.heads.remaining() / 2));
        for _ in 0..n {
            let time = Spread::decode(&mut c, coding)?;
            let gap = Spread::decode(&mut c, coding)?;
            let at = c.max.position();
            let longest = match coding {
                Coding::Absolute => c.max.u32()?,
                Coding::Relative => {
                    let highest = time.highest().map_or(0, |v| bins().code(v));
                    relative_code(&mut c.max, highest)?
                }
            };
            signatures.push(SignatureTiming {
                time,
                gap,
                max_ns: value_of(longest, at)?,
            });
        }
        for column in [c.heads, c.named, c.means, c.ranges, c.max] {
            column.finish()?;
        }
        Ok(TimingSummary { signatures })
    }

    /// Every rank's timing as the summary gives it: for each signature the
    /// rank's grammar calls, its named value or the mean of the others.
    pub fn rank_stats(&self, grammar: &Grammar, ranks: &mut [RankPart]) -> Result<(), String> {
        let mut counts: FxHashMap<RuleId, Vec<(u32, u64)>> = FxHashMap::default();
        for part in ranks {
            let rank = part.meta.rank;
            let Some(start) = grammar.start(rank) else {
                continue;
            };
            let counts = counts
                .entry(start)
                .or_insert_with(|| grammar.terminal_counts(start));
            part.stats = counts
                .iter()
                .map(|&(t, count)| {
                    let s = self
                        .signatures
                        .get(t as usize)
                        .ok_or_else(|| format!("no timing for signature {t}"))?;
                    Ok((
                        t,
                        CallStats {
                            count,
                            total_ns: s.time.value(rank),
                            min_ns: 0,
                            max_ns: s.max_ns,
                            gap_ns: s.gap.value(rank),
                        },
                    ))
                })
                .collect::<Result<_, String>>()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outliers_are_named_and_the_rest_kept_as_their_mean() {
        // 16 ranks near 1 ms; rank 3 at 5 ms, rank 9 at 0.1 ms; run of 0.1 s.
        let mut values: Vec<(u32, u64)> =
            (0..16).map(|r| (r, 1_000_000 + r as u64 * 1_000)).collect();
        values[3].1 = 5_000_000;
        values[9].1 = 100_000;
        let s = Spread::of(&values, 100_000_000);
        let named: Vec<u32> = s.named.iter().map(|&(r, _)| r).collect();
        assert_eq!(named, [3, 9]);
        let v3 = s.value(3);
        assert!(v3 <= 5_000_000 && v3 as f64 > 5_000_000.0 / BASE, "{v3}");
        let rest = s.rest.unwrap();
        let true_mean = (0..16)
            .filter(|r| ![3, 9].contains(r))
            .map(|r| 1_000_000 + r * 1_000)
            .sum::<u64>() as f64
            / 14.0;
        assert!(rest.mean_ns as f64 <= true_mean && rest.mean_ns as f64 > true_mean / BASE);
        assert!(rest.lo_ns <= 1_000_000 && rest.hi_ns <= 1_015_000 && rest.hi_ns > 1_000_000);
        assert_eq!(s.value(4), rest.mean_ns);
        let exact: u64 = values.iter().map(|&(_, v)| v).sum();
        let total = s.total(16);
        assert!(
            total <= exact && total as f64 > exact as f64 / BASE,
            "{total} {exact}"
        );
    }

    #[test]
    fn small_differences_and_many_outliers_are_bounded() {
        // A 30 % difference worth less than 0.1 % of the run is not named.
        let s = Spread::of(&[(0, 1_000), (1, 1_300), (2, 1_000)], 1_000_000_000);
        assert!(s.named.is_empty());
        // Every rank an outlier: only the NAMED furthest are named, and the
        // rest bound the others.
        let values: Vec<(u32, u64)> = (0..64).map(|r| (r, 1u64 << (r % 20))).collect();
        let s = Spread::of(&values, 1_000);
        assert_eq!(s.named.len(), NAMED);
        let rest = s.rest.unwrap();
        for &(r, v) in &values {
            if s.named.iter().all(|&(n, _)| n != r) {
                assert!(
                    rest.lo_ns <= v && (v as f64) < rest.hi_ns as f64 * BASE,
                    "{r} {v}"
                );
            }
        }
    }

    #[test]
    fn summaries_round_trip_and_bad_codes_are_refused() {
        let values: Vec<(u32, u64)> = (0..10).map(|r| (r * 3, 7_000 + r as u64)).collect();
        let mut time = Spread::of(&values, 10_000);
        time.named.push((40, quantised(90_000)));
        let summary = TimingSummary {
            signatures: vec![
                SignatureTiming {
                    time,
                    gap: Spread::of(&[(5, 123_456_789)], 10),
                    max_ns: quantised(9_999),
                },
                SignatureTiming::default(),
            ],
        };
        let mut bytes = Vec::new();
        summary.encode(&mut bytes);
        let mut r = ByteReader::new(&bytes);
        assert_eq!(
            TimingSummary::decode(&mut r, 2, Coding::Relative).unwrap(),
            summary
        );
        r.finish().unwrap();
        // A code past the last bin; more named ranks than a summary names.
        for (heads, named) in [
            (vec![1 << 2], vec![0, 0xff, 0xff, 0x0f]),
            (vec![20 << 2], vec![]),
        ] {
            let mut bad = Vec::new();
            for column in [heads, named, vec![], vec![], vec![]] {
                bad.put_blob(&column);
            }
            for coding in [Coding::Absolute, Coding::Relative] {
                assert!(TimingSummary::decode(&mut ByteReader::new(&bad), 1, coding).is_err());
            }
        }
        // A relative code below bin 0.
        let mut bad = Vec::new();
        for column in [vec![1 << 2], vec![0, 1], vec![], vec![], vec![0]] {
            bad.put_blob(&column);
        }
        assert!(TimingSummary::decode(&mut ByteReader::new(&bad), 1, Coding::Relative).is_err());
    }

    /// The first coding, every time as its bin code, still reads: files of
    /// format 1 have it. The relative coding of the same summary is shorter.
    #[test]
    fn the_absolute_coding_of_earlier_files_still_reads() {
        let b = bins();
        let (named, mean, lo, hi, longest) = (1_500_000, 1_000_000, 900_000, 1_100_000, 1_400_000);
        let q = quantised;
        let summary = TimingSummary {
            signatures: vec![SignatureTiming {
                time: Spread {
                    named: vec![(3, q(named))],
                    rest: Some(Rest {
                        mean_ns: q(mean),
                        lo_ns: q(lo),
                        hi_ns: q(hi),
                    }),
                },
                gap: Spread::default(),
                max_ns: q(longest),
            }],
        };
        // As format 1 wrote it: heads, named (rank step, code), means, ranges, longest.
        let mut columns = [Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        columns[0].put_u64(1 << 2 | REST_RANGE);
        columns[0].put_u64(REST_NONE);
        columns[1].put_u32(3);
        columns[1].put_u32(b.code(named));
        columns[2].put_u32(b.code(mean));
        columns[3].put_u32(b.code(mean) - b.code(lo));
        columns[3].put_u32(b.code(hi) - b.code(mean));
        columns[4].put_u32(b.code(longest));
        let mut old = Vec::new();
        columns.iter().for_each(|c| old.put_blob(c));
        let mut r = ByteReader::new(&old);
        assert_eq!(
            TimingSummary::decode(&mut r, 1, Coding::Absolute).unwrap(),
            summary
        );
        r.finish().unwrap();
        let mut new = Vec::new();
        summary.encode(&mut new);
        // The named value (1.5 times the mean) and the longest call: one byte each instead of two.
        assert_eq!(new.len() + 2, old.len());
        let mut r = ByteReader::new(&new);
        assert_eq!(
            TimingSummary::decode(&mut r, 1, Coding::Relative).unwrap(),
            summary
        );
    }
}
