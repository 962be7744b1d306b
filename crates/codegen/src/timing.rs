//! Computation between calls, as seconds to busy-wait before each call
//! site of the generated program. A *call site* is one terminal run of one
//! grammar rule: the line of C that makes the call, however many times
//! loops run it.
//!
//! What the trace says about time reaches the benchmark through one
//! interface, [`RankGaps`]: per call site of one rank, the gaps before its
//! calls (their sum, their number, the first one). [`gaps`] builds it from
//! whatever timing the trace has: per-call times (lossless, or lossy), or
//! the aggregated timing of the default, which keeps per signature and rank
//! the gap before its calls: each site then waits its signature's mean gap
//! on that rank (a site called with different computation before it than
//! other sites of the same signature gets their mean; traces written before
//! the gap was recorded spread the rank's time outside MPI evenly over its
//! calls).
//!
//! - [`Compute::Recorded`]: each site waits the mean gap before its calls on
//!   each rank: the sum over the site is the recorded sum, so each loop, and
//!   the run, keeps its computation time. A site whose first call followed
//!   much longer (or shorter) computation than the others (start-up before
//!   a loop's first iteration, which the grammar folds into the loop) waits
//!   that first gap once and the mean of the others after: averaging it
//!   over the iterations would make every iteration's collective wait for
//!   the slowest rank's share of it.
//! - [`Compute::Mean`]: the mean gap before each call *signature* on each
//!   rank (wherever it is called).
//! - [`Compute::None`]: no computation.
//!
//! The gap after MPI_Init is left out: it holds the tracer's own start-up
//! (clock alignment between ranks), which a traced benchmark run repeats.

use mpigram_analysis::timeline::{Source, Span, rank_spans};
use mpigram_grammar::{Grammar, RuleId, Symbol};
use mpigram_trace::{RankPart, Trace};
use rustc_hash::{FxHashMap, FxHashSet};

/// How computation between calls is reproduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compute {
    None,
    Mean,
    Recorded,
}

/// A call site: rule and index of the terminal run in its body.
pub type Site = (RuleId, u32);

/// The gaps before one site's calls on one rank, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SiteGap {
    /// Calls the site made.
    pub calls: u64,
    /// Gaps measured (not before the rank's first call, nor right after
    /// MPI_Init, where the tracer's own start-up is), and their sum.
    pub measured: u64,
    pub sum: f64,
    /// The gap before the site's first call, if measured.
    pub first: Option<f64>,
}

impl SiteGap {
    /// The mean measured gap (0 if none was, or if lossy estimates summed
    /// to less than nothing).
    pub fn mean(&self) -> f64 {
        (self.sum / self.measured.max(1) as f64).max(0.0)
    }

    /// The first gap and the mean of the later ones, if the first was
    /// measured and later ones were too.
    pub fn first_and_rest(&self) -> Option<(f64, f64)> {
        let first = self.first?;
        (self.measured > 1).then(|| {
            let rest = (self.sum - first) / (self.measured - 1) as f64;
            (first.max(0.0), rest.max(0.0))
        })
    }

    fn add(&mut self, gap: Option<f64>) {
        if self.calls == 0 {
            self.first = gap;
        }
        self.calls += 1;
        if let Some(g) = gap {
            self.measured += 1;
            self.sum += g;
        }
    }
}

/// What codegen needs of a trace's timing: per call site of one rank, the
/// gaps before its calls.
pub struct RankGaps {
    pub sites: FxHashMap<Site, SiteGap>,
    /// Whether the gaps were measured (per-call timing, or the aggregated
    /// gap per signature), not an even spread of the rank's time outside MPI.
    pub measured: bool,
    /// The terminal each site calls.
    pub terminals: FxHashMap<Site, u32>,
}

/// The gaps of rank `part` (whose calls expand `start`), from the trace's
/// per-call times where it has them, else from its aggregated timing.
/// `inits` are the terminals of MPI_Init and MPI_Init_thread.
pub fn gaps(
    trace: &Trace,
    part: &RankPart,
    start: RuleId,
    times: Source,
    inits: &FxHashSet<u32>,
) -> Result<RankGaps, String> {
    if part.meta.timing.per_call() {
        per_call_gaps(trace, part, start, times, inits)
    } else {
        Ok(aggregated_gaps(trace, part, start))
    }
}

/// From per-call times: one pass over the rank's calls, their times read
/// as the calls are (one block of times in memory), nothing stored per call.
fn per_call_gaps(
    trace: &Trace,
    part: &RankPart,
    start: RuleId,
    times: Source,
    inits: &FxHashSet<u32>,
) -> Result<RankGaps, String> {
    let mut spans =
        rank_spans(trace, part, times, trace.run_start_ns()).map_err(|e| e.to_string())?;
    let mut failed: Option<String> = None;
    let mut sites: FxHashMap<Site, SiteGap> = FxHashMap::default();
    let mut terminals: FxHashMap<Site, u32> = FxHashMap::default();
    let mut before: Option<Span> = None;
    let mut previous: Option<u32> = None;
    let lossy = LossyBins::of(trace, part, times);
    // What the previous call's decoded end is expected to lack (lossy).
    let mut carried = 0.0;
    for (site, t) in Sites::new(&trace.grammar, start) {
        let this = match spans.next() {
            Some(Ok(span)) => Some(span),
            Some(Err(e)) => {
                failed.get_or_insert(e.to_string());
                None
            }
            None => None,
        };
        let after_init = previous.is_some_and(|p| inits.contains(&p));
        let decoded = match (before, this) {
            (Some(prev), Some(this)) => (this.start_ns - prev.end_ns) as f64,
            _ => 0.0,
        };
        let gap = match (before, this) {
            // A lossy gap's estimate may be below zero: it is kept so, since
            // only the site's sum is unbiased. Clamping each call's estimate
            // made the sum grow where gaps are short after long calls (LU.W
            // on 4 ranks: a 1.6 µs gap after receives of milliseconds came out
            // 33 µs, the duration's half bin clamped at zero once in two).
            (Some(_), Some(_)) if !after_init => {
                let own = lossy.as_ref().map_or(0.0, |l| l.half_width_ns(t, decoded));
                Some((decoded + own - carried) * 1e-9)
            }
            _ => None,
        };
        carried = match (&lossy, this) {
            (Some(l), Some(this)) => {
                l.half_width_ns(t, decoded)
                    + l.half_width_ns(t, (this.end_ns - this.start_ns) as f64)
            }
            _ => 0.0,
        };
        let e = sites.entry(site).or_default();
        if e.calls == 0 {
            terminals.insert(site, t);
        }
        e.add(gap);
        before = this;
        previous = Some(t);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(RankGaps {
        sites,
        measured: true,
        terminals,
    })
}

/// Lossy timing decodes every interval and duration to the lower edge of
/// its bin (`x / b < v <= x`), and measures the next interval from that
/// decoded end: each gap holds what the previous call's interval and
/// duration lacked, and lacks what its own interval does. Where calls are
/// most of the time (LU.W on 4 ranks: 3.3 s of 4.3 s per rank in MPI),
/// the decoded gaps summed to 16% more computation than the application's
/// (1.12 s per rank for 0.96 s). Each value is taken at the middle of its
/// bin instead: a gap gains half its own interval's bin width and loses
/// half the widths of the previous call's interval and duration.
struct LossyBins {
    ns_per_tick: f64,
    /// Bins of each terminal's function (its base).
    bins: Vec<std::rc::Rc<mpigram_trace::timing::Bins>>,
}

impl LossyBins {
    /// `None` where the rank's spans read from `times` are not lossy ones.
    fn of(trace: &Trace, part: &RankPart, times: Source) -> Option<LossyBins> {
        use mpigram_trace::timing::Bins;
        let timing = &part.meta.timing;
        let lossy = match times {
            Source::Lossy => true,
            Source::Best => !timing.lossless,
            Source::Lossless => false,
        };
        let bases = timing.lossy.as_ref().filter(|_| lossy)?;
        let mut by_base: Vec<(f64, std::rc::Rc<Bins>)> = Vec::new();
        let mut bins = Vec::with_capacity(trace.signatures.len());
        for bytes in &trace.signatures {
            let func = mpigram_mpispec::decode_signature(bytes)
                .map(|s| mpigram_mpispec::FUNCS[s.func as usize].name)
                .unwrap_or("");
            let base = bases.of(func);
            let b = match by_base.iter().find(|(b, _)| *b == base) {
                Some((_, b)) => b.clone(),
                None => {
                    let b = std::rc::Rc::new(Bins::new(base).ok()?);
                    by_base.push((base, b.clone()));
                    b
                }
            };
            bins.push(b);
        }
        Some(LossyBins {
            ns_per_tick: part.meta.ns_per_tick,
            bins,
        })
    }

    /// Half the width of the bin a decoded value `ns` of a call of
    /// `terminal` is the lower edge of (0 where values are exact).
    fn half_width_ns(&self, terminal: u32, ns: f64) -> f64 {
        let Some(bins) = self.bins.get(terminal as usize) else {
            return 0.0;
        };
        let code = bins.code((ns.max(0.0) / self.ns_per_tick).round() as u64);
        match (bins.value(code), bins.value(code + 1)) {
            (Some(low), Some(high)) if high > low + 1 => {
                (high - low) as f64 / 2.0 * self.ns_per_tick
            }
            _ => 0.0,
        }
    }
}

/// From aggregated timing: each site's gaps are its signature's mean gap on
/// the rank, counted on the grammar (no call is expanded). The gap before
/// a signature's calls includes the one after MPI_Init, spread over all of
/// them: the application's computation there (the tracer counts it from
/// the end of its own start-up; in traces written before that, the
/// start-up too).
fn aggregated_gaps(trace: &Trace, part: &RankPart, start: RuleId) -> RankGaps {
    let (mean_gap, measured) = signature_gaps(part);
    let g = &trace.grammar;
    let mut sites: FxHashMap<Site, SiteGap> = FxHashMap::default();
    let mut terminals: FxHashMap<Site, u32> = FxHashMap::default();
    for (rule, uses) in g.rule_uses(start).into_iter().enumerate() {
        if uses == 0 {
            continue;
        }
        for (idx, run) in g.rule(rule as RuleId).iter().enumerate() {
            if let Symbol::Terminal(t) = run.symbol {
                let site = (rule as RuleId, idx as u32);
                let n = uses.saturating_mul(run.count);
                let each = mean_gap(t);
                // A signature with no gap before its calls (MPI_Init's) had
                // none measured: it does not set the rank's floor.
                let gap = (each > 0.0 || !measured).then_some(each);
                sites.insert(
                    site,
                    SiteGap {
                        calls: n,
                        measured: if gap.is_some() { n } else { 0 },
                        sum: each * n as f64,
                        first: gap,
                    },
                );
                terminals.insert(site, t);
            }
        }
    }
    RankGaps {
        sites,
        measured,
        terminals,
    }
}

/// The mean gap before each terminal's calls on the rank, in seconds: its
/// recorded gap, or for traces without one, the rank's time outside MPI
/// spread evenly over its calls; and whether the gaps were recorded.
fn signature_gaps(part: &RankPart) -> (impl Fn(u32) -> f64, bool) {
    let by_terminal: FxHashMap<u32, f64> = part
        .stats
        .iter()
        .map(|(t, s)| (*t, s.mean_gap_ns() * 1e-9))
        .collect();
    let recorded = part.stats.iter().any(|(_, s)| s.gap_ns > 0);
    let in_calls: u64 = part.stats.iter().map(|(_, s)| s.total_ns).sum();
    let wall = part.meta.end_ns.saturating_sub(part.meta.start_ns);
    let even = wall.saturating_sub(in_calls) as f64 * 1e-9 / part.meta.calls.max(1) as f64;
    let gap = move |t| {
        if recorded {
            by_terminal.get(&t).copied().unwrap_or(0.0)
        } else {
            even
        }
    };
    (gap, recorded)
}

/// Seconds to wait before a site's calls on one rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delay {
    /// Before the first call.
    pub first: f64,
    /// Before each later call.
    pub rest: f64,
}

/// Seconds of computation before each call site, per rank (`None` where
/// the rank never reaches the site).
#[derive(Default)]
pub struct Delays {
    pub by_site: FxHashMap<Site, Vec<Option<Delay>>>,
    /// What was used, for the generated file's header.
    pub description: String,
    /// Set when the requested mode could not be honoured.
    pub note: Option<String>,
}

/// A first gap differs enough from the later ones to be waited on its own
/// when it differs by this many seconds and this fraction of the larger.
const FIRST_APART_S: f64 = 50e-6;
const FIRST_APART_FRACTION: f64 = 0.25;

/// Whether a site's first gap is far enough from its later ones to be
/// waited on its own.
pub fn apart(first: f64, rest: f64) -> bool {
    let d = (first - rest).abs();
    d >= FIRST_APART_S && d >= FIRST_APART_FRACTION * first.max(rest)
}

/// Every call of the expansion of a rule, in order, as (site, terminal).
pub struct Sites<'g> {
    grammar: &'g Grammar,
    /// (rule, run index, repetitions of that run done)
    stack: Vec<(RuleId, usize, u64)>,
}

impl<'g> Sites<'g> {
    pub fn new(grammar: &'g Grammar, start: RuleId) -> Sites<'g> {
        Sites {
            grammar,
            stack: vec![(start, 0, 0)],
        }
    }
}

impl Iterator for Sites<'_> {
    type Item = (Site, u32);

    fn next(&mut self) -> Option<(Site, u32)> {
        while let Some(top) = self.stack.last_mut() {
            let (rule, idx, done) = *top;
            let Some(run) = self.grammar.rule(rule).get(idx) else {
                self.stack.pop();
                continue;
            };
            if done >= run.count {
                top.1 += 1;
                top.2 = 0;
                continue;
            }
            top.2 += 1;
            match run.symbol {
                Symbol::Terminal(t) => return Some(((rule, idx as u32), t)),
                Symbol::Rule(r) => self.stack.push((r, 0, 0)),
            }
        }
        None
    }
}

/// Works out the delays for `trace` as `options` ask (their computation,
/// its scale and which per-call times).
/// `inits` are the terminals of MPI_Init and MPI_Init_thread.
pub fn delays(trace: &Trace, options: &crate::Options, inits: &FxHashSet<u32>) -> Delays {
    let (compute, scale) = (options.compute, options.scale);
    let mut d = Delays::default();
    let mut spread = false;
    if compute == Compute::None {
        d.description = "none (calls back to back)".into();
        return d;
    }
    let per_call = trace.ranks.iter().all(|r| r.meta.timing.per_call());
    let mut mode = compute;
    if !per_call {
        if compute == Compute::Recorded {
            d.note = Some(
                "the trace has aggregated timing only: --compute recorded falls back to mean \
                 (record with --timing lossless or lossy for per-call-site computation)"
                    .into(),
            );
        }
        mode = Compute::Mean;
    }
    let n = trace.rank_slots();
    for part in &trace.ranks {
        let rank = part.meta.rank;
        let Some(start) = trace.grammar.start(rank) else {
            continue;
        };
        let mut g = match gaps(trace, part, start, options.times, inits) {
            Ok(g) => g,
            Err(e) => {
                d.note = Some(format!("no computation for rank {rank}: {e}"));
                continue;
            }
        };
        if mode == Compute::Mean {
            by_signature(&mut g);
        }
        spread |= !g.measured;
        // The shortest mean gap of the rank is what a call costs the tracer
        // between two calls (the application cannot do less than nothing):
        // a traced benchmark pays it again, so it is not reproduced.
        // Per signature (aggregated timing) the shortest mean is real
        // computation, not the tracer's cost: no floor there.
        let floor = if per_call && g.measured {
            g.sites
                .values()
                .filter(|s| s.measured > 0)
                .map(SiteGap::mean)
                .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.min(g))))
                .unwrap_or(0.0)
        } else {
            0.0
        };
        let less = |s: f64| scale * (s - floor).max(0.0);
        for (site, gap) in g.sites {
            let delay = match gap.first_and_rest().filter(|(f, r)| apart(*f, *r)) {
                Some((first, rest)) => Delay {
                    first: less(first),
                    rest: less(rest),
                },
                None => Delay {
                    first: less(gap.mean()),
                    rest: less(gap.mean()),
                },
            };
            d.by_site.entry(site).or_insert_with(|| vec![None; n])[rank as usize] = Some(delay);
        }
    }
    let source = if spread {
        "aggregated timing: each rank's time outside MPI spread evenly over its calls"
    } else if !per_call {
        "aggregated timing: mean gap before each call signature, per rank"
    } else if mode == Compute::Mean {
        "per-call timing: mean gap before each call signature, per rank"
    } else {
        "per-call timing: mean gap before each call site, per rank (a first call after longer computation on its own)"
    };
    d.description = format!("{source}; scale {scale}");
    d
}

/// Each site's gaps replaced by the mean gap of its signature over the
/// rank's calls.
fn by_signature(g: &mut RankGaps) {
    let mut by_terminal: FxHashMap<u32, (f64, u64)> = FxHashMap::default();
    for (site, gap) in &g.sites {
        let e = by_terminal.entry(g.terminals[site]).or_insert((0.0, 0));
        e.0 += gap.sum;
        e.1 += gap.measured;
    }
    for (site, gap) in g.sites.iter_mut() {
        let (sum, measured) = by_terminal[&g.terminals[site]];
        let mean = (sum / measured.max(1) as f64).max(0.0);
        *gap = SiteGap {
            calls: gap.calls,
            // A signature with no gap measured (MPI_Init's) stays unmeasured:
            // it must not set the rank's floor.
            measured: if measured > 0 { gap.calls } else { 0 },
            sum: mean * gap.calls as f64,
            first: None,
        };
    }
}
