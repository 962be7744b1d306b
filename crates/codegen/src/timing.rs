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
//! the gap before its calls and where it was ([`mpigram_trace::Gaps`]: by
//! the signature of the call before, and before the first call): each site
//! then waits the mean gaps of its calls' predecessors, counted on the
//! grammar (`GapPlaces`). Traces without where the gaps were have each
//! site wait its signature's mean gap on the rank; traces written before
//! the gap was recorded spread the rank's time outside MPI evenly over its
//! calls.
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
use mpigram_trace::{RankPart, Trace, apart, first_apart};
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

    /// The gap before the site's first call and before each later one:
    /// the first apart where it differs from the rest ([`apart_s`]), else
    /// the mean for both.
    pub fn placed(&self) -> (f64, f64) {
        match self.first_and_rest().filter(|(f, r)| apart_s(*f, *r)) {
            Some(apart) => apart,
            None => (self.mean(), self.mean()),
        }
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

impl RankGaps {
    /// What share of its placed computation the rank had: 1 unless lossy
    /// estimates below zero were clamped. Each gap estimated from lossy
    /// times is off by up to half the bins of its call and the one before;
    /// the errors cancel in a rank's sum, but a site whose estimates sum
    /// below zero waits nothing, not less than nothing, and the clamps
    /// only ever add (MG.W on 8 ranks: 3-13 % more computation per rank
    /// than the exact times of the same run). The rank's sites give the
    /// excess back in proportion to their computation.
    fn clamped_share(&self) -> f64 {
        let (mut estimated, mut placed) = (0.0, 0.0);
        for gap in self.sites.values().filter(|g| g.measured > 0) {
            let (first, rest) = gap.placed();
            estimated += gap.sum;
            placed += first + rest * (gap.measured - 1) as f64;
        }
        match estimated < placed {
            true => estimated.max(0.0) / placed,
            false => 1.0,
        }
    }
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
        self.bins
            .get(terminal as usize)
            .map_or(0.0, |bins| edge_half_width(bins, self.ns_per_tick, ns))
    }
}

/// Half the width, in nanoseconds, of the bin of `bins` whose lower edge
/// is `ns` (ticks of `ns_per_tick`). A decoded value is a lower edge in
/// ticks made nanoseconds, through the clock's offsets and drift, and
/// rounded: it may fall a little under its edge, into the bin below, 1/b
/// as wide (MG.W's lossy gaps were estimated from such half widths, and
/// summed to 1-3 % more computation than the exact times of the same
/// run). Looked up an eighth of a bin and 2 ns higher, it is in its own
/// bin; a bin narrower than 2 ns has half a width under a nanosecond,
/// whichever is found.
fn edge_half_width(bins: &mpigram_trace::timing::Bins, ns_per_tick: f64, ns: f64) -> f64 {
    let ticks = ns.max(0.0) / ns_per_tick;
    let above = ticks * (bins.base() - 1.0) / 8.0 + 2.0 / ns_per_tick;
    let code = bins.code((ticks + above).round() as u64);
    match (bins.value(code), bins.value(code + 1)) {
        (Some(low), Some(high)) if high > low + 1 => (high - low) as f64 / 2.0 * ns_per_tick,
        _ => 0.0,
    }
}

/// From aggregated timing: each site's gaps are its calls' predecessors'
/// mean gaps where the rank kept them ([`GapPlaces`]), else its signature's
/// mean gap on the rank, counted on the grammar (no call is expanded). The
/// gap before a signature's calls includes the one after MPI_Init: the
/// application's computation there (the tracer counts it from the end of
/// its own start-up; in traces written before that, the start-up too).
fn aggregated_gaps(trace: &Trace, part: &RankPart, start: RuleId) -> RankGaps {
    let (mean_gap, measured) = signature_gaps(part);
    let places = GapPlaces::of(trace, part, start);
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
                let gap = match places.as_ref().and_then(|p| p.site(site, t, n)) {
                    Some(gap) => gap,
                    None => {
                        let each = mean_gap(t);
                        // A signature with no gap before its calls (MPI_Init's)
                        // had none measured: it does not set the rank's floor.
                        let gap = (each > 0.0 || !measured).then_some(each);
                        SiteGap {
                            calls: n,
                            measured: if gap.is_some() { n } else { 0 },
                            sum: each * n as f64,
                            first: gap,
                        }
                    }
                };
                sites.insert(site, gap);
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

/// Where a rank's gaps were, beyond each signature's mean
/// ([`mpigram_trace::Gaps`]): the mean gaps of the signatures that follow
/// more than one other, by predecessor, and the first calls whose gap is
/// apart from their later ones'. What each call site follows is counted on
/// the grammar: a site's mean gap is its predecessors' means weighted by
/// its calls after each, and the site of a signature's first call waits
/// that call's gap once.
struct GapPlaces {
    /// The predecessors of each terminal run (call site), with counts.
    runs: FxHashMap<Site, Vec<(u32, u64)>>,
    /// The predecessor of each site's first call.
    first_runs: FxHashMap<Site, Option<u32>>,
    /// Mean gap (ns) after each (terminal, predecessor) pair kept, its
    /// first call's left out where that is kept apart.
    means: FxHashMap<(u32, u32), f64>,
    /// Per terminal with pairs or a first call kept apart, the mean gap
    /// (ns) of its other calls (the rest of its gap per signature).
    rest: FxHashMap<u32, f64>,
    /// The first calls kept apart: their site, the terminal before them,
    /// and their gap (ns).
    firsts: FxHashMap<u32, (Site, Option<u32>, f64)>,
}

impl GapPlaces {
    /// `None` where the rank's trace says nothing of where its gaps were.
    fn of(trace: &Trace, part: &RankPart, start: RuleId) -> Option<GapPlaces> {
        let gaps = &part.gaps;
        if gaps.is_empty() {
            return None;
        }
        let g = &trace.grammar;
        let totals = |t: u32| {
            part.stats_of(t)
                .map_or((0.0, 0), |s| (s.gap_ns as f64, s.count))
        };
        let terminal_of = |(rule, idx): Site| match g.rule(rule).get(idx as usize)?.symbol {
            Symbol::Terminal(t) => Some(t),
            Symbol::Rule(_) => None,
        };
        // Each site's first call, in order: a signature's first call is its
        // first site's.
        let in_order = g.first_runs(start);
        let mut first_sites: FxHashMap<u32, (Site, Option<u32>)> = FxHashMap::default();
        for &(site, before) in &in_order {
            if let Some(t) = terminal_of(site) {
                first_sites.entry(t).or_insert((site, before));
            }
        }
        let first_runs: FxHashMap<Site, Option<u32>> = in_order.into_iter().collect();
        let mut firsts = FxHashMap::default();
        for &(t, first) in &gaps.firsts {
            let (gap, calls) = totals(t);
            if let (true, Some(&(site, before))) =
                (first_apart(first, calls, gap as u64), first_sites.get(&t))
            {
                firsts.insert(t, (site, before, first as f64));
            }
        }
        let runs = match gaps.pairs.is_empty() {
            true => FxHashMap::default(),
            false => g.run_predecessors(start),
        };
        let kept: FxHashSet<u32> = gaps.pairs.iter().map(|p| p.terminal).collect();
        let mut counts: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        for (&site, preds) in &runs {
            if let Some(t) = terminal_of(site).filter(|t| kept.contains(t)) {
                for &(p, k) in preds {
                    *counts.entry((t, p)).or_default() += k;
                }
            }
        }
        // A first call kept apart is its pair's no more.
        let first_of = |t: u32, pred: u32| {
            firsts
                .get(&t)
                .filter(|(_, before, _)| *before == Some(pred))
                .map_or((0.0, 0), |&(_, _, f)| (f, 1))
        };
        let mut means = FxHashMap::default();
        let mut taken: FxHashMap<u32, (f64, u64)> = FxHashMap::default();
        for p in &gaps.pairs {
            let (first, one) = first_of(p.terminal, p.pred);
            let calls = counts.get(&(p.terminal, p.pred)).copied().unwrap_or(0);
            let calls = calls.saturating_sub(one);
            // A pair the grammar does not make is a summary's for other ranks.
            if calls > 0 {
                let gap = (p.gap_ns as f64 - first).max(0.0);
                means.insert((p.terminal, p.pred), gap / calls as f64);
                let t = taken.entry(p.terminal).or_default();
                t.0 += gap;
                t.1 += calls;
            }
        }
        let rest = kept
            .iter()
            .chain(firsts.keys())
            .map(|&t| {
                let (mut gap, mut calls) = totals(t);
                if let Some(&(_, _, first)) = firsts.get(&t) {
                    gap -= first;
                    calls -= 1;
                }
                let (pairs_gap, pairs_calls) = taken.get(&t).copied().unwrap_or_default();
                let left = (gap - pairs_gap).max(0.0);
                (t, left / calls.saturating_sub(pairs_calls).max(1) as f64)
            })
            .collect();
        Some(GapPlaces {
            runs,
            first_runs,
            means,
            rest,
            firsts,
        })
    }

    /// The gaps (s) before the `calls` calls of `site` (of terminal `t`),
    /// if the rank kept where `t`'s were: each call at its predecessor's
    /// mean. The site's first call is its own where it is the signature's
    /// first kept apart, or where it is the site's only call after its
    /// predecessor (a loop entered from elsewhere than its last iteration)
    /// and that pair's mean is apart from the site's other calls'.
    fn site(&self, site: Site, t: u32, calls: u64) -> Option<SiteGap> {
        let rest = *self.rest.get(&t)?;
        let mean = |p: u32| self.means.get(&(t, p)).copied().unwrap_or(rest);
        let preds = self.runs.get(&site).map_or(&[][..], Vec::as_slice);
        let counted: u64 = preds.iter().map(|&(_, k)| k).sum();
        let mut sum: f64 = preds.iter().map(|&(p, k)| k as f64 * mean(p)).sum::<f64>()
            + calls.saturating_sub(counted) as f64 * rest;
        let mut first = sum / calls.max(1) as f64;
        if let Some(&(_, before, f)) = self.firsts.get(&t).filter(|f| f.0 == site) {
            // It was counted at its pair's mean, which leaves it out.
            let counted_as = before
                .filter(|p| preds.iter().any(|&(q, _)| q == *p))
                .map_or(rest, mean);
            sum += f - counted_as;
            first = f;
        } else if let Some(p) = self.first_runs.get(&site).copied().flatten() {
            let f = mean(p);
            let others = (sum - f) / calls.saturating_sub(1).max(1) as f64;
            if calls > 1 && preds.contains(&(p, 1)) && apart(f, others) {
                first = f;
            }
        }
        Some(SiteGap {
            calls,
            measured: if sum > 0.0 { calls } else { 0 },
            sum: sum * 1e-9,
            first: Some(first * 1e-9),
        })
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
    /// Per rank, where its host had more ranks than processors and the
    /// trace measured its share of a processor between calls: that share.
    /// Its waits then burn CPU time, the recorded wall time times the
    /// share ([`processor_shares`]).
    pub cpu_shares: Vec<Option<f64>>,
    /// What was used, for the generated file's header.
    pub description: String,
    /// Set when the requested mode could not be honoured.
    pub note: Option<String>,
}

/// Whether a site's first gap (s) is far enough from its later ones' mean
/// (s) to be waited on its own ([`mpigram_trace::apart`]).
pub fn apart_s(first: f64, rest: f64) -> bool {
    apart(first * 1e9, rest * 1e9)
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
    // Aggregated timing places computation per call site where the trace
    // kept where its gaps were (its GAPS; older traces do not).
    let placed = per_call || trace.ranks.iter().any(|r| !r.gaps.is_empty());
    let mut mode = compute;
    if !placed {
        if compute == Compute::Recorded {
            d.note = Some(
                "the trace keeps no gaps by call site (none stood out from its signature's \
                 mean, or an older trace): --compute recorded falls back to mean"
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
        let share = g.clamped_share();
        let less = |s: f64| scale * (s * share - floor).max(0.0);
        for (site, gap) in g.sites {
            let (first, rest) = gap.placed();
            let delay = Delay {
                first: less(first),
                rest: less(rest),
            };
            d.by_site.entry(site).or_insert_with(|| vec![None; n])[rank as usize] = Some(delay);
        }
    }
    let source = if spread {
        "aggregated timing: each rank's time outside MPI spread evenly over its calls"
    } else if !per_call && mode == Compute::Mean {
        "aggregated timing: mean gap before each call signature, per rank"
    } else if !per_call {
        "aggregated timing: mean gap before each call site, by the calls before it, per rank (a first call after longer computation on its own)"
    } else if mode == Compute::Mean {
        "per-call timing: mean gap before each call signature, per rank"
    } else {
        "per-call timing: mean gap before each call site, per rank (a first call after longer computation on its own)"
    };
    let shares = processor_shares(trace);
    let crowded = shares.iter().flatten().count();
    let note = match (options.cpu_time, crowded) {
        (true, 0) => Some(
            "--cpu-time: no rank's host had more ranks than processors, with its share of a \
             processor measured (a processor per rank, or an older trace): waits are wall time"
                .to_string(),
        ),
        (false, n) if n > 0 => Some(format!(
            "on {n} rank(s) the traced run had more ranks than processors: waits are the \
             recorded wall time, which holds time the ranks waited for a processor (--cpu-time \
             waits their CPU time instead, for a run with a processor per rank)"
        )),
        _ => None,
    };
    if let Some(note) = note {
        d.note = Some(match d.note.take() {
            Some(earlier) => format!("{earlier}; {note}"),
            None => note,
        });
    }
    let cpu = match (options.cpu_time, crowded) {
        (false, _) | (true, 0) => String::new(),
        (true, n) => format!(
            "; on {n} rank(s) whose host had more ranks than processors, as CPU time: the \
             recorded wall time times the rank's measured share of a processor"
        ),
    };
    d.description = format!("{source}; scale {scale}{cpu}");
    if options.cpu_time {
        d.cpu_shares = shares;
    }
    d
}

/// Per rank slot, the share of a processor its computation had, where
/// that share is what a recorded gap is made of: its host ran more ranks
/// of the trace than the rank had processors, and the tracer measured the
/// share (`RankMeta::cpu_share`). With fewer ranks than processors a gap
/// below a processor's worth of CPU time is the application's own waiting
/// (I/O, sleep), which wall time replays; with more, it is also time the
/// rank waited for a processor, which the benchmark, run the same way,
/// waits again if it burns the gap's CPU time only. A rank whose
/// computation is shorter than the scheduler's time slice runs it at once
/// or after a slice; spinning its wall time instead stretches it over
/// several slices.
pub fn processor_shares(trace: &Trace) -> Vec<Option<f64>> {
    let mut on_host: FxHashMap<&str, u32> = FxHashMap::default();
    for r in &trace.ranks {
        *on_host.entry(r.meta.host.as_str()).or_default() += 1;
    }
    let mut shares = vec![None; trace.rank_slots()];
    for r in &trace.ranks {
        let m = &r.meta;
        if m.cpus > 0 && on_host[m.host.as_str()] > m.cpus {
            shares[m.rank as usize] = m.cpu_share.filter(|&s| s > 0.0);
        }
    }
    shares
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

#[cfg(test)]
mod tests {
    use super::edge_half_width;
    use mpigram_trace::timing::Bins;

    #[test]
    fn a_decoded_edge_is_looked_up_in_its_own_bin() {
        let bins = Bins::new(1.1).unwrap();
        let ns_per_tick = 1.0 / 2.6;
        let code = bins.code(5_600_000);
        let (low, high) = (bins.value(code).unwrap(), bins.value(code + 1).unwrap());
        let half = (high - low) as f64 / 2.0 * ns_per_tick;
        let edge_ns = low as f64 * ns_per_tick;
        // The edge as decoded: exact, a nanosecond under (rounding), a
        // ten-thousandth under (drift between clocks), a nanosecond over.
        for ns in [
            edge_ns,
            edge_ns - 1.0,
            edge_ns * (1.0 - 1e-4),
            edge_ns + 1.0,
        ] {
            let found = edge_half_width(&bins, ns_per_tick, ns);
            assert!(
                (found - half).abs() < 1e-6 * half,
                "{ns} ns: half width {found}, not {half} (the bin from {edge_ns} ns)"
            );
        }
        // Bins a tick wide: values are exact.
        assert_eq!(edge_half_width(&bins, ns_per_tick, 3.0 * ns_per_tick), 0.0);
    }
}
