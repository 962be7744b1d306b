//! Computation between calls, as seconds to busy-wait before each call
//! site of the generated program. A *call site* is one terminal run of one
//! grammar rule: the line of C that makes the call, however many times
//! loops run it.
//!
//! - [`Compute::Recorded`]: from per-call times (lossless where recorded,
//!   else lossy), the mean gap before the site's calls on each rank: the
//!   sum over the site is the recorded sum, so each loop, and the run,
//!   keeps its computation time; variation between iterations of one site
//!   is averaged.
//! - [`Compute::Mean`]: the mean gap before each call *signature* on each
//!   rank (wherever it is called). With aggregated timing, which has call
//!   durations only, the rank's time outside MPI (its recording time minus
//!   its time in calls) spread evenly over its calls.
//! - [`Compute::None`]: no computation.
//!
//! The gap after MPI_Init is left out: it holds the tracer's own start-up
//! (clock alignment between ranks), which a traced benchmark run repeats.

use mpigram_analysis::timeline::{Source, rank_times};
use mpigram_grammar::{Grammar, RuleId, Symbol};
use mpigram_trace::Trace;
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

/// Seconds of computation before each call site, per rank (`None` where
/// the rank never reaches the site).
#[derive(Default)]
pub struct Delays {
    pub by_site: FxHashMap<Site, Vec<Option<f64>>>,
    /// What was used, for the generated file's header.
    pub description: String,
    /// Set when the requested mode could not be honoured.
    pub note: Option<String>,
}

/// Calls `f(site, terminal)` for every call of the expansion of `start`, in order.
pub fn walk_sites(g: &Grammar, start: RuleId, mut f: impl FnMut(Site, u32)) {
    // (rule, run index, repetitions of that run done)
    let mut stack: Vec<(RuleId, usize, u64)> = vec![(start, 0, 0)];
    while let Some(top) = stack.last_mut() {
        let (rule, idx, done) = *top;
        let runs = g.rule(rule);
        let Some(run) = runs.get(idx) else {
            stack.pop();
            continue;
        };
        if done >= run.count {
            top.1 += 1;
            top.2 = 0;
            continue;
        }
        match run.symbol {
            Symbol::Terminal(t) => {
                top.2 += 1;
                f((rule, idx as u32), t)
            }
            Symbol::Rule(r) => {
                top.2 += 1;
                stack.push((r, 0, 0))
            }
        }
    }
}

/// Works out the delays for `trace`, multiplied by `scale`.
/// `inits` are the terminals of MPI_Init and MPI_Init_thread.
pub fn delays(trace: &Trace, compute: Compute, scale: f64, inits: &FxHashSet<u32>) -> Delays {
    let mut d = Delays::default();
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
    let run_start = trace.run_start_ns();
    for part in &trace.ranks {
        let rank = part.meta.rank;
        let i = rank as usize;
        let Some(start) = trace.grammar.start(rank) else {
            continue;
        };
        // Seconds before each site's calls on this rank: (sum, calls).
        let mut sums: FxHashMap<Site, (f64, u64)> = FxHashMap::default();
        if !per_call {
            let in_calls: u64 = part.stats.iter().map(|(_, s)| s.total_ns).sum();
            let wall = part.meta.end_ns.saturating_sub(part.meta.start_ns);
            let calls = part.meta.calls.max(1);
            let each = wall.saturating_sub(in_calls) as f64 * 1e-9 / calls as f64;
            walk_sites(&trace.grammar, start, |site, _| {
                let e = sums.entry(site).or_insert((0.0, 0));
                e.0 += each;
                e.1 += 1;
            });
        } else {
            let spans = match rank_times(trace, part, Source::Best, run_start) {
                Ok(s) => s,
                Err(e) => {
                    d.note = Some(format!("no computation for rank {rank}: {e}"));
                    continue;
                }
            };
            // One pass, nothing stored per call: sums per site and per
            // terminal (a site always calls the same terminal).
            let mut k = 0usize;
            let mut previous: Option<u32> = None;
            let mut by_terminal: FxHashMap<u32, (f64, u64)> = FxHashMap::default();
            let mut site_terminal: FxHashMap<Site, u32> = FxHashMap::default();
            walk_sites(&trace.grammar, start, |site, t| {
                let after_init = previous.is_some_and(|p| inits.contains(&p));
                let gap = match (k.checked_sub(1).and_then(|p| spans.get(p)), spans.get(k)) {
                    (Some(prev), Some(this)) if !after_init => {
                        (this.start_ns - prev.end_ns).max(0) as f64 * 1e-9
                    }
                    _ => 0.0,
                };
                let e = sums.entry(site).or_insert((0.0, 0));
                e.0 += gap;
                e.1 += 1;
                if mode == Compute::Mean {
                    let e = by_terminal.entry(t).or_insert((0.0, 0));
                    e.0 += gap;
                    e.1 += 1;
                    site_terminal.insert(site, t);
                }
                previous = Some(t);
                k += 1;
            });
            if mode == Compute::Mean {
                for (site, (sum, calls)) in sums.iter_mut() {
                    let (s, c) = by_terminal[&site_terminal[site]];
                    *sum = s / c.max(1) as f64 * *calls as f64;
                }
            }
        }
        // The shortest mean gap of the rank is what a call costs the tracer
        // between two calls (the application cannot do less than nothing):
        // a traced benchmark pays it again, so it is not reproduced.
        let floor = if per_call {
            sums.values()
                .map(|(sum, calls)| sum / (*calls).max(1) as f64)
                .fold(f64::INFINITY, f64::min)
        } else {
            0.0
        };
        for (site, (sum, calls)) in sums {
            let v = d.by_site.entry(site).or_insert_with(|| vec![None; n]);
            let mean = sum / calls.max(1) as f64;
            v[i] = Some(scale * (mean - floor).max(0.0));
        }
    }
    let source = if !per_call {
        "aggregated timing: each rank's time outside MPI spread evenly over its calls"
    } else if mode == Compute::Mean {
        "per-call timing: mean gap before each call signature, per rank"
    } else {
        "per-call timing: mean gap before each call site, per rank"
    };
    d.description = format!("{source}; scale {scale}");
    d
}
