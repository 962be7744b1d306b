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
//! time and by more than [`OUTLIER_MADS`] median absolute deviations; at
//! most [`NAMED`] ranks (the furthest from the median) are named
//! per quantity and signature. So the summary's size does not grow with the
//! number of ranks, and a regular program's is the same at 9 ranks as at
//! 10,000. Every stored time is quantised to a [`Quantum`]: bins of ratio
//! [`BASE`] over multiples of a unit, `1 / UNIT_SHARE` of the run's time
//! unit (itself at most 1/64 of its wall time). A stored `v` of a true `x`
//! is `x` quantised down (`x - v` below 1 % of `x` or below the unit,
//! whichever is larger), except that a time below the unit but not 0 is
//! stored as the unit: no call that took time reads as taking none. So the
//! sums over ranks (time per function) are within 1 % plus a unit a rank,
//! a named rank's value likewise, and an unnamed rank's value lies between
//! the stored lowest and highest (which [`Spread::rest`] gives, widened to
//! steps of [`RANGE_STEP`] bins) and is read as the mean of those ranks.

use crate::meta::out_of_range;
use crate::timing::Bins;
use crate::{CallStats, Gaps, PairGap, RankPart, first_apart};
use mpigram_grammar::{Grammar, RuleId};
use mpigram_varint::{ByteReader, DecodeError, PutVarint};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Ratio of the bins summarised times are quantised to.
pub const BASE: f64 = 1.01;

/// A rank is named when its value is above the median times this, or below
/// the median divided by it (and [`OUTLIER_SHARE`] holds)...
pub const OUTLIER_RATIO: f64 = 1.25;

/// ... and it differs from the median by more than this share of the run's
/// wall time (differences too small to matter to the run are not named).
pub const OUTLIER_SHARE: f64 = 1e-2;

/// ... and its distance from the median is more than this many times the
/// ranks' median distance from the median (the Hampel identifier: three
/// standard deviations of normally distributed values, 3 × 1.4826 median
/// absolute deviations): where every rank's value varies as much (a noisy
/// or oversubscribed machine), none stands out.
pub const OUTLIER_MADS: f64 = 3.0 * 1.4826;

/// At most this many ranks are named per quantity and signature.
pub const NAMED: usize = 4;

/// Summarised times are multiples of the run's time unit (a power of two
/// of nanoseconds, at most 1/64 of its wall time) divided by this: times
/// that small (below 1/65,536 of the run) do not matter to the run, and
/// most times of short calls become one-byte codes.
pub const UNIT_SHARE: u64 = 1 << 10;

/// The lowest and highest of the ranks not named are kept to steps of this
/// many bins (8.3 %), widened outwards: a range then mostly takes a byte.
pub const RANGE_STEP: u32 = 8;

fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| Bins::new(BASE).expect("a valid base"))
}

/// What a summary's times are quantised to: bins of ratio [`BASE`] over
/// multiples of `2^shift` ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quantum {
    /// The unit is `2^shift` ns (0 in files before rank timing 3).
    pub shift: u32,
}

impl Quantum {
    /// The quantum of a run whose time unit is `unit` ns (a power of two):
    /// `unit / UNIT_SHARE`, at least 1 ns.
    pub fn of_unit(unit: u64) -> Quantum {
        Quantum {
            shift: unit.max(1).ilog2().saturating_sub(UNIT_SHARE.ilog2()),
        }
    }

    /// The code of `x`: the bin of its whole units, at least one unit if
    /// `x` is not 0 (a call that took time is never read as taking none).
    fn code(self, x: u64) -> u32 {
        let units = x >> self.shift;
        bins().code(if units == 0 && x > 0 { 1 } else { units })
    }

    /// The time of bin `code`, if it is one and the time fits.
    fn value(self, code: u32) -> Option<u64> {
        let units = bins().value(code)?;
        (units <= u64::MAX >> self.shift).then(|| units << self.shift)
    }

    /// The code of the longest time there is.
    fn highest_code(self) -> u32 {
        self.code(u64::MAX)
    }

    /// `x` as the summary stores it: the lower edge of its bin (one unit
    /// for a time below it but not 0).
    pub fn quantised(self, x: u64) -> u64 {
        self.value(self.code(x)).unwrap_or(x)
    }
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
/// value between `lo_ns` and `hi_ns` (in the bin of `lo_ns` if they are
/// equal), and is read as `mean_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rest {
    pub mean_ns: u64,
    pub lo_ns: u64,
    pub hi_ns: u64,
}

impl Spread {
    /// Summarises `(rank, value)` pairs (any order) of a run of `wall_ns`,
    /// quantised to `q`.
    pub fn of(values: &[(u32, u64)], wall_ns: u64, q: Quantum) -> Spread {
        match *values {
            [] => Spread::default(),
            // Every signature of a 1-rank run, and those only one rank
            // calls: no outlier, the rest that value; without the sorts and
            // the four vectors of `of_many` (thousands of instructions a
            // signature, most of a large whole-run file's summary).
            [(_, v)] => Spread::alike(v, q),
            _ => Spread::of_many(values, wall_ns, q),
        }
    }

    /// The spread of one value: the rest, all `v`.
    fn alike(v: u64, q: Quantum) -> Spread {
        let ns = q.value(q.code(v)).expect("a code of a time");
        Spread {
            named: Vec::new(),
            rest: Some(Rest {
                mean_ns: ns,
                lo_ns: ns,
                hi_ns: ns,
            }),
        }
    }

    /// [`of`](Spread::of), for any number of values but none.
    fn of_many(values: &[(u32, u64)], wall_ns: u64, q: Quantum) -> Spread {
        let mut sorted: Vec<f64> = values.iter().map(|&(_, v)| v as f64).collect();
        sorted.sort_unstable_by(f64::total_cmp);
        let median = median_of_sorted(&sorted);
        let distance = |v: u64| (v as f64 - median).abs();
        let mut distances: Vec<f64> = sorted.iter().map(|&v| (v - median).abs()).collect();
        distances.sort_unstable_by(f64::total_cmp);
        let least =
            (wall_ns as f64 * OUTLIER_SHARE).max(median_of_sorted(&distances) * OUTLIER_MADS);
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
            let mean = q.code((sum / rest.len() as u128) as u64);
            let lo = q.code(*rest.iter().min().expect("not empty"));
            let hi = q.code(*rest.iter().max().expect("not empty"));
            // Outwards: from the lowest's bin to past the highest's.
            let (below, above) = match lo == hi {
                true => (0, 0),
                false => (steps(mean - lo), steps(hi + 1 - mean)),
            };
            let value = |code| q.value(code).expect("a code of a time");
            Rest {
                mean_ns: value(mean),
                lo_ns: value(mean.saturating_sub(below * RANGE_STEP)),
                hi_ns: value(q.highest_code().min(mean + above * RANGE_STEP)),
            }
        });
        Spread {
            named: candidates
                .into_iter()
                .map(|(r, v)| (r, q.quantised(v)))
                .collect(),
            rest,
        }
    }

    /// The value read for `rank` (one of the ranks summarised).
    pub fn value(&self, rank: u32) -> u64 {
        crate::value_of(&self.named, &rank).unwrap_or_else(|| self.rest.map_or(0, |r| r.mean_ns))
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

    /// The spread's head: how many ranks are named, and whether the others
    /// are none, all alike or a range.
    fn head(&self) -> u64 {
        let rest = match self.rest {
            None => REST_NONE,
            Some(r) if r.lo_ns == r.hi_ns => REST_ALIKE,
            Some(_) => REST_RANGE,
        };
        (self.named.len() as u64) << 2 | rest
    }

    /// Appends the spread but its head to the columns: the named (rank
    /// step, value), the others' mean code, and their range as steps of
    /// [`RANGE_STEP`] codes below and above the mean. A named rank's value is its code as the
    /// difference from the others' mean's code (or, with no others, from
    /// the previous named rank's code; the first's from 0).
    fn encode(&self, c: &mut Columns, q: Quantum) {
        let mean = self.rest.map(|r| q.code(r.mean_ns));
        if let (Some(r), Some(mean)) = (self.rest, mean) {
            c.means.put_u32(mean);
            if r.lo_ns != r.hi_ns {
                c.ranges.put_u32(steps(mean - q.code(r.lo_ns)));
                c.ranges.put_u32(steps(q.code(r.hi_ns) - mean));
            }
        }
        let (mut last, mut base) = (0, mean.unwrap_or(0));
        for &(rank, v) in &self.named {
            c.named.put_u32(rank - last);
            last = rank;
            let code = q.code(v);
            c.named.put_i64(i64::from(code) - i64::from(base));
            if mean.is_none() {
                base = code;
            }
        }
    }

    /// Reads a spread whose head is `head` (read at byte `at` of the heads).
    fn decode(
        c: &mut ColumnReaders<'_>,
        head: u64,
        at: usize,
        coding: Coding,
        q: Quantum,
    ) -> Result<Spread, DecodeError> {
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
                    c.and_then(|c| q.value(c))
                        .ok_or_else(|| out_of_range(at, mean.into(), "summarised time"))
                };
                let rest = match coding {
                    Coding::Compact => Rest {
                        mean_ns: code(Some(mean))?,
                        lo_ns: code(Some(mean.saturating_sub(below.saturating_mul(RANGE_STEP))))?,
                        hi_ns: code(Some(
                            q.highest_code()
                                .min(mean.saturating_add(above.saturating_mul(RANGE_STEP))),
                        ))?,
                    },
                    Coding::Absolute | Coding::Relative => Rest {
                        mean_ns: code(Some(mean))?,
                        lo_ns: code(mean.checked_sub(below))?,
                        hi_ns: code(mean.checked_add(above))?,
                    },
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
                Coding::Relative | Coding::Compact => {
                    let code = relative_code(&mut c.named, base)?;
                    if mean.is_none() {
                        base = code;
                    }
                    code
                }
            };
            named.push((rank, value_of(q, code, at)?));
        }
        Ok(Spread { named, rest })
    }
}

/// The median of sorted values (of an even count, the mean of the middle
/// two), not empty.
fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0
}

/// `bins` bins in steps of [`RANGE_STEP`], rounded up; the lowest code
/// of a range is at least 0.
fn steps(bins: u32) -> u32 {
    bins.div_ceil(RANGE_STEP)
}

/// [`Rest`] kinds in a spread's head: no other ranks, others all alike
/// (one value), others over a range.
const REST_NONE: u64 = 0;
const REST_ALIKE: u64 = 1;
const REST_RANGE: u64 = 2;

/// Bits of one spread's head in a signature's head ([`Coding::Compact`]).
const HEAD_BITS: u32 = 5;

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

/// How a summary is coded (RUN's rank timing 1, 2 and 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// Files of format 1: each time as its bin code, in nanoseconds.
    Absolute,
    /// Rank timing 2 (format 2.0): a named rank's value as a difference from the others'
    /// mean, and the longest call one from the highest time of a rank,
    /// which mostly takes one byte where a code takes two.
    Relative,
    /// Rank timing 3, the compact summary: as `Relative`, over bins of
    /// the run's [`Quantum`], ranges in steps of [`RANGE_STEP`] bins, and
    /// one head per signature for both its spreads.
    Compact,
}

/// The time of bin `code` (read at byte `at`).
fn value_of(q: Quantum, code: u32, at: usize) -> Result<u64, DecodeError> {
    q.value(code)
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
    /// What every time is quantised to.
    pub quantum: Quantum,
    /// By terminal (signature number).
    pub signatures: Vec<SignatureTiming>,
}

impl TimingSummary {
    /// Summarises the ranks' own timing (`n` signatures, a run of
    /// `wall_ns`), quantised to `q`.
    pub fn of(ranks: &[RankPart], n: usize, wall_ns: u64, q: Quantum) -> TimingSummary {
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
                    time: Spread::of(&of(|s| s.total_ns), wall_ns, q),
                    gap: Spread::of(&of(|s| s.gap_ns), wall_ns, q),
                    max_ns: q.quantised(calls.iter().map(|(_, s)| s.max_ns).max().unwrap_or(0)),
                }
            })
            .collect();
        TimingSummary {
            quantum: q,
            signatures,
        }
    }

    /// Writes the summary, [`Coding::Compact`] (its quantum is the
    /// reader's to know).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let q = self.quantum;
        let mut c = Columns::default();
        for s in &self.signatures {
            c.heads.put_u64(s.time.head() | s.gap.head() << HEAD_BITS);
            s.time.encode(&mut c, q);
            s.gap.encode(&mut c, q);
            let highest = s.time.highest().map_or(0, |v| q.code(v));
            c.max
                .put_i64(i64::from(q.code(s.max_ns)) - i64::from(highest));
        }
        for column in [c.heads, c.named, c.means, c.ranges, c.max] {
            out.put_blob(&column);
        }
    }

    /// Reads the timing of `n` signatures, quantised to `quantum` (1 ns
    /// before [`Coding::Compact`]).
    pub fn decode(
        r: &mut ByteReader<'_>,
        n: usize,
        coding: Coding,
        quantum: Quantum,
    ) -> Result<TimingSummary, DecodeError> {
        let q = quantum;
        let mut c = ColumnReaders {
            heads: ByteReader::new(r.blob()?),
            named: ByteReader::new(r.blob()?),
            means: ByteReader::new(r.blob()?),
            ranges: ByteReader::new(r.blob()?),
            max: ByteReader::new(r.blob()?),
        };
        // A forged count must not size the vector: 2 bytes at least each.
        let mut signatures = Vec::with_capacity(n.min(c.heads.remaining()));
        for _ in 0..n {
            let at = c.heads.position();
            let (time, gap) = match coding {
                Coding::Compact => {
                    let head = c.heads.u64()?;
                    let mask = (1 << HEAD_BITS) - 1;
                    if head >> (2 * HEAD_BITS) != 0 {
                        return Err(out_of_range(at, head, "summary head"));
                    }
                    let time = Spread::decode(&mut c, head & mask, at, coding, q)?;
                    let gap = Spread::decode(&mut c, head >> HEAD_BITS, at, coding, q)?;
                    (time, gap)
                }
                Coding::Absolute | Coding::Relative => {
                    let head = c.heads.u64()?;
                    let time = Spread::decode(&mut c, head, at, coding, q)?;
                    let at = c.heads.position();
                    let head = c.heads.u64()?;
                    (time, Spread::decode(&mut c, head, at, coding, q)?)
                }
            };
            let at = c.max.position();
            let longest = match coding {
                Coding::Absolute => c.max.u32()?,
                Coding::Relative | Coding::Compact => {
                    let highest = time.highest().map_or(0, |v| q.code(v));
                    relative_code(&mut c.max, highest)?
                }
            };
            signatures.push(SignatureTiming {
                time,
                gap,
                max_ns: value_of(q, longest, at)?,
            });
        }
        for column in [c.heads, c.named, c.means, c.ranges, c.max] {
            column.finish()?;
        }
        Ok(TimingSummary {
            quantum,
            signatures,
        })
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

/// Where the gaps were ([`Gaps`]), summarised across ranks: for each
/// signature that follows more than one other on some rank, each of its
/// pairs with the gaps of the ranks that made it, and for each signature
/// whose first call is apart (`first_apart`) from its others on some rank, the first
/// gaps of the ranks that call it, each as a [`Spread`] (a signature that
/// follows one other everywhere has its gap per signature). A regular
/// program's is as small at 10,000 ranks as at 9, and empty where no
/// signature follows two others and no first call is apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GapSummary {
    /// (terminal, predecessor, gaps), sorted.
    pub pairs: Vec<(u32, u32, Spread)>,
    /// (terminal, first gaps), sorted.
    pub firsts: Vec<(u32, Spread)>,
}

impl GapSummary {
    /// Summarises the ranks' gaps (a run of `wall_ns`, quantised to `q`).
    /// Only what may move [`OUTLIER_SHARE`] of a rank's computation or more
    /// is kept: the pairs of a signature with that much computation before
    /// its calls on some rank, and first gaps that long which are not a
    /// pair's whole (the grammar tells where a pair of one call is). A share
    /// of the computation, not of the run: on a loaded machine, or after a
    /// long start-up, the run grows, and the placement matters as much.
    pub fn of(ranks: &[RankPart], wall_ns: u64, q: Quantum) -> GapSummary {
        let mut multi: FxHashSet<u32> = FxHashSet::default();
        let mut apart_somewhere: FxHashSet<u32> = FxHashSet::default();
        for part in ranks {
            let computation: u64 = part.stats.iter().map(|(_, s)| s.gap_ns).sum();
            let least = (computation as f64 * OUTLIER_SHARE) as u64;
            let stats = |t: u32| part.stats_of(t);
            for w in part.gaps.pairs.windows(2) {
                let t = w[0].terminal;
                if t == w[1].terminal && stats(t).is_some_and(|s| s.gap_ns >= least) {
                    multi.insert(t);
                }
            }
            for &(t, first) in &part.gaps.firsts {
                let Some(s) = stats(t) else {
                    continue;
                };
                // A first gap that is all of a pair's (one call after a
                // predecessor only it follows) is kept with the pair.
                let own_pair = part.gaps.pairs_of(t).iter().any(|p| p.gap_ns == first);
                if first >= least && !own_pair && first_apart(first, s.count, s.gap_ns) {
                    apart_somewhere.insert(t);
                }
            }
        }
        let mut by_pair: BTreeMap<(u32, u32), Vec<(u32, u64)>> = BTreeMap::new();
        let mut by_first: BTreeMap<u32, Vec<(u32, u64)>> = BTreeMap::new();
        for part in ranks {
            let rank = part.meta.rank;
            for p in part
                .gaps
                .pairs
                .iter()
                .filter(|p| multi.contains(&p.terminal))
            {
                by_pair
                    .entry((p.terminal, p.pred))
                    .or_default()
                    .push((rank, p.gap_ns));
            }
            for &(t, first) in &part.gaps.firsts {
                if apart_somewhere.contains(&t) {
                    by_first.entry(t).or_default().push((rank, first));
                }
            }
        }
        GapSummary {
            pairs: by_pair
                .into_iter()
                .map(|((t, pred), gaps)| (t, pred, Spread::of(&gaps, wall_ns, q)))
                .collect(),
            firsts: by_first
                .into_iter()
                .map(|(t, gaps)| (t, Spread::of(&gaps, wall_ns, q)))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.firsts.is_empty()
    }

    /// Writes the keys (pairs' terminal steps and predecessors, then the
    /// first gaps' terminal steps), then all spreads as columns, as
    /// [`TimingSummary::encode`] does.
    pub fn encode(&self, out: &mut Vec<u8>, q: Quantum) {
        let mut keys = Vec::new();
        let mut c = Columns::default();
        keys.put_u64(self.pairs.len() as u64);
        let mut last = 0;
        for (t, pred, gaps) in &self.pairs {
            keys.put_u32(t - last);
            last = *t;
            keys.put_u32(*pred);
            c.heads.put_u64(gaps.head());
            gaps.encode(&mut c, q);
        }
        keys.put_u64(self.firsts.len() as u64);
        let mut last = 0;
        for (t, gaps) in &self.firsts {
            keys.put_u32(t - last);
            last = *t;
            c.heads.put_u64(gaps.head());
            gaps.encode(&mut c, q);
        }
        for column in [keys, c.heads, c.named, c.means, c.ranges] {
            out.put_blob(&column);
        }
    }

    /// Reads gaps of a table of `n` signatures, quantised to `q`.
    pub fn decode(r: &mut ByteReader<'_>, n: usize, q: Quantum) -> Result<GapSummary, DecodeError> {
        let mut keys = ByteReader::new(r.blob()?);
        let mut c = ColumnReaders {
            heads: ByteReader::new(r.blob()?),
            named: ByteReader::new(r.blob()?),
            means: ByteReader::new(r.blob()?),
            ranges: ByteReader::new(r.blob()?),
            max: ByteReader::new(&[]),
        };
        let terminal = |keys: &mut ByteReader<'_>, last: u32| -> Result<u32, DecodeError> {
            let at = keys.position();
            let step = keys.u32()?;
            last.checked_add(step)
                .filter(|&t| (t as usize) < n)
                .ok_or_else(|| out_of_range(at, step.into(), "terminal"))
        };
        let spread = |c: &mut ColumnReaders<'_>| -> Result<Spread, DecodeError> {
            let at = c.heads.position();
            let head = c.heads.u64()?;
            Spread::decode(c, head, at, Coding::Compact, q)
        };
        let count = keys.count()?;
        // Two bytes a pair at least: a forged count must not size the vector.
        let mut pairs = Vec::with_capacity(count.min(keys.remaining() / 2));
        let mut t = 0u32;
        for _ in 0..count {
            t = terminal(&mut keys, t)?;
            let pred = terminal(&mut keys, 0)?;
            pairs.push((t, pred, spread(&mut c)?));
        }
        let count = keys.count()?;
        let mut firsts = Vec::with_capacity(count.min(keys.remaining()));
        let mut t = 0u32;
        for _ in 0..count {
            t = terminal(&mut keys, t)?;
            firsts.push((t, spread(&mut c)?));
        }
        for column in [keys, c.heads, c.named, c.means, c.ranges] {
            column.finish()?;
        }
        Ok(GapSummary { pairs, firsts })
    }

    /// Each rank's gaps as the summary gives them: every pair and first
    /// gap kept of the signatures it calls.
    pub fn rank_gaps(&self, ranks: &mut [RankPart]) {
        for part in ranks {
            let rank = part.meta.rank;
            let calls = |t: u32| part.stats_of(t).is_some();
            part.gaps = Gaps {
                pairs: self
                    .pairs
                    .iter()
                    .filter(|(t, _, _)| calls(*t))
                    .map(|(terminal, pred, gaps)| PairGap {
                        terminal: *terminal,
                        pred: *pred,
                        gap_ns: gaps.value(rank),
                    })
                    .collect(),
                firsts: self
                    .firsts
                    .iter()
                    .filter(|(t, _)| calls(*t))
                    .map(|(t, gaps)| (*t, gaps.value(rank)))
                    .collect(),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_of_one_value_is_the_general_summary_of_it() {
        let values = [
            0,
            1,
            2,
            511,
            512,
            513,
            1_000,
            123_456_789,
            u64::MAX / 3,
            u64::MAX,
        ];
        for wall_ns in [10, 1_000_000, 50_000_000_000] {
            let q = quantum(wall_ns);
            for v in values {
                assert_eq!(
                    Spread::of(&[(7, v)], wall_ns, q),
                    Spread::of_many(&[(7, v)], wall_ns, q),
                    "{v} ns in a run of {wall_ns} ns"
                );
            }
        }
    }

    /// The quantum of a run of `wall_ns` (as the whole-run file derives it).
    fn quantum(wall_ns: u64) -> Quantum {
        Quantum::of_unit(1 << (wall_ns / 64).max(1).ilog2())
    }

    #[test]
    fn outliers_are_named_and_the_rest_kept_as_their_mean() {
        // 16 ranks near 1 ms; rank 3 at 5 ms, rank 9 at 0.1 ms; run of 50 ms.
        let mut values: Vec<(u32, u64)> =
            (0..16).map(|r| (r, 1_000_000 + r as u64 * 1_000)).collect();
        values[3].1 = 5_000_000;
        values[9].1 = 100_000;
        let q = quantum(50_000_000);
        assert_eq!(q.shift, 9, "512 ns: 2^19 ns (below 50 ms / 64) / 1024");
        let s = Spread::of(&values, 50_000_000, q);
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
        // The lowest and highest (1,000,000 and 1,015,000 ns), widened to
        // steps of 8 bins around the mean: by less than 8 bins each.
        let widened = BASE.powi(RANGE_STEP as i32);
        assert!(rest.lo_ns <= 1_000_000 && rest.lo_ns as f64 * widened > 1_000_000.0 / BASE);
        assert!(rest.hi_ns >= q.quantised(1_015_000));
        assert!((rest.hi_ns as f64) < 1_015_000.0 * widened);
        assert_eq!(s.value(4), rest.mean_ns);
        let exact: u64 = values.iter().map(|&(_, v)| v).sum();
        let total = s.total(16);
        assert!(
            total <= exact && total as f64 > exact as f64 / BASE,
            "{total} {exact}"
        );
    }

    #[test]
    fn small_differences_noise_and_many_outliers_are_bounded() {
        // A 30 % difference worth less than 1 % of the run is not named.
        let q = Quantum::default();
        let s = Spread::of(&[(0, 1_000), (1, 1_300), (2, 1_000)], 1_000_000, q);
        assert!(s.named.is_empty());
        // Ranks spread evenly over 1-2 ms (a noisy machine): each of the
        // lowest and highest is 25 % from the median and worth more than 1 %
        // of the 10 ms run, but no further from it than the others vary.
        let noisy: Vec<(u32, u64)> = (0..16)
            .map(|r| (r, 1_000_000 + r as u64 * 66_000))
            .collect();
        let s = Spread::of(&noisy, 10_000_000, q);
        assert!(s.named.is_empty(), "{:?}", s.named);
        // A rank 1.5 times slower than identical others, at a signature
        // worth a tenth of the run, is named.
        let alike: Vec<(u32, u64)> = (0..16)
            .map(|r| (r, if r == 4 { 15_000_000 } else { 10_000_000 }))
            .collect();
        let s = Spread::of(&alike, 100_000_000, q);
        assert_eq!(s.named, [(4, q.quantised(15_000_000))]);
        // Of 4 ranks, one 1.7 times the others, which differ by 10 %, is
        // named (medians of an even count are the mean of the middle two).
        let four = [
            (0, 10_000_000),
            (1, 11_000_000),
            (2, 12_000_000),
            (3, 20_000_000),
        ];
        let s = Spread::of(&four, 100_000_000, q);
        assert_eq!(s.named, [(3, q.quantised(20_000_000))]);
        // One of the noisy ones 3 times their median is named.
        let mut one = noisy.clone();
        one[6].1 = 5_000_000;
        assert_eq!(
            Spread::of(&one, 10_000_000, q).named,
            [(6, q.quantised(5_000_000))]
        );
        // Eight outliers: only the NAMED furthest are named, and the rest
        // bound the others.
        let values: Vec<(u32, u64)> = (0..64)
            .map(|r| {
                (
                    r,
                    if r % 8 == 0 {
                        10_000 * u64::from(r + 1)
                    } else {
                        1_000
                    },
                )
            })
            .collect();
        let s = Spread::of(&values, 100_000, q);
        let named: Vec<u32> = s.named.iter().map(|&(r, _)| r).collect();
        assert_eq!(named, [32, 40, 48, 56]);
        let rest = s.rest.unwrap();
        for &(r, v) in &values {
            if !named.contains(&r) {
                assert!(rest.lo_ns <= v && v <= rest.hi_ns, "{r} {v} {rest:?}");
            }
        }
    }

    #[test]
    fn times_are_within_a_percent_or_the_quantum() {
        let q = Quantum { shift: 10 };
        for x in [1_024, 1_500, 5_000, 102_400, 1_000_000, 123_456_789_012] {
            let v = q.quantised(x);
            let error = x - v;
            assert!(
                v <= x && (error < 1_024 || (error as f64) < x as f64 * 0.01),
                "{x}: {v}"
            );
            assert_eq!(v % 1_024, 0, "a multiple of the unit");
        }
        // 0 stays 0; a time below the unit is the unit (one byte each).
        assert_eq!(q.quantised(0), 0);
        for x in [1, 500, 1_023] {
            assert_eq!((q.quantised(x), q.code(x)), (1_024, 1), "{x}");
        }
    }

    #[test]
    fn summaries_round_trip_and_bad_codes_are_refused() {
        let q = Quantum { shift: 4 };
        let values: Vec<(u32, u64)> = (0..10).map(|r| (r * 3, 7_000 + 70 * r as u64)).collect();
        let mut time = Spread::of(&values, 10_000, q);
        assert!(time.rest.is_some_and(|r| r.lo_ns < r.hi_ns));
        time.named.push((40, q.quantised(90_000)));
        let summary = TimingSummary {
            quantum: q,
            signatures: vec![
                SignatureTiming {
                    time,
                    gap: Spread::of(&[(5, 123_456_789)], 10, q),
                    max_ns: q.quantised(9_999),
                },
                SignatureTiming::default(),
            ],
        };
        let mut bytes = Vec::new();
        summary.encode(&mut bytes);
        let mut r = ByteReader::new(&bytes);
        assert_eq!(
            TimingSummary::decode(&mut r, 2, Coding::Compact, q).unwrap(),
            summary
        );
        r.finish().unwrap();
        // A code past the last bin; more named ranks than a summary names;
        // a head with bits beyond two spreads'.
        for (heads, named) in [
            (vec![1 << 2], vec![0, 0xff, 0xff, 0x0f]),
            (vec![20 << 2], vec![]),
            (vec![0x80, 0x08], vec![]),
        ] {
            let mut bad = Vec::new();
            for column in [heads, named, vec![], vec![], vec![]] {
                bad.put_blob(&column);
            }
            for coding in [Coding::Absolute, Coding::Relative, Coding::Compact] {
                let got = TimingSummary::decode(&mut ByteReader::new(&bad), 1, coding, q);
                assert!(got.is_err(), "{coding:?}");
            }
        }
        // A relative code below bin 0.
        let mut bad = Vec::new();
        for column in [vec![1 << 2], vec![0, 1], vec![], vec![], vec![0]] {
            bad.put_blob(&column);
        }
        for coding in [Coding::Relative, Coding::Compact] {
            assert!(TimingSummary::decode(&mut ByteReader::new(&bad), 1, coding, q).is_err());
        }
    }

    /// The codings of earlier files still read: format 1's (every time as
    /// its bin code) and 2.0's (relative codes, one head per spread). The
    /// compact coding of the same summary is shorter.
    #[test]
    fn the_codings_of_earlier_files_still_read() {
        let b = bins();
        let (named, mean, lo, hi, longest) = (1_500_000, 1_000_000, 900_000, 1_100_000, 1_400_000);
        let q = |x| Quantum::default().quantised(x);
        let summary = TimingSummary {
            quantum: Quantum::default(),
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
        // Heads, named (rank step, code), means, ranges, longest, as format
        // 1 (absolute) and 2.0 (relative) wrote them.
        let columns = |relative: bool| {
            let mut columns = [Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
            let code = |x| i64::from(b.code(x));
            columns[0].put_u64(1 << 2 | REST_RANGE);
            columns[0].put_u64(REST_NONE);
            columns[1].put_u32(3);
            columns[2].put_u32(b.code(mean));
            columns[3].put_u32(b.code(mean) - b.code(lo));
            columns[3].put_u32(b.code(hi) - b.code(mean));
            if relative {
                columns[1].put_i64(code(named) - code(mean));
                columns[4].put_i64(code(longest) - code(named));
            } else {
                columns[1].put_u32(b.code(named));
                columns[4].put_u32(b.code(longest));
            }
            let mut bytes = Vec::new();
            columns.iter().for_each(|c| bytes.put_blob(c));
            bytes
        };
        let mut lengths = Vec::new();
        for (coding, relative) in [(Coding::Absolute, false), (Coding::Relative, true)] {
            let old = columns(relative);
            let mut r = ByteReader::new(&old);
            let got = TimingSummary::decode(&mut r, 1, coding, Quantum::default());
            assert_eq!(got.unwrap(), summary, "{coding:?}");
            r.finish().unwrap();
            lengths.push(old.len());
        }
        let mut new = Vec::new();
        summary.encode(&mut new);
        // Format 2.0: the named value (1.5 times the mean) and the longest
        // call one byte each instead of two; compact: one head for both
        // spreads.
        assert_eq!(lengths, [new.len() + 3, new.len() + 1]);
    }
}
