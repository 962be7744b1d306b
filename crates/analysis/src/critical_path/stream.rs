//! [`super::analyse`] on a trace: the ranks are read side by side, a chunk
//! of calls at a time (ranks in parallel), their operations matched in
//! time order, the graph made as matches are found and the longest path
//! walked as the graph is made; then the path is rebuilt from the walk's
//! back-pointers, reading the ranks' times once more.

use super::graph::Builder;
use super::waits::Waits;
use super::walk::{Progress, Walk};
use super::{Analysis, CallSites, CriticalPathError, CycleError, heuristic, path};
use crate::matching::instances;
use crate::matching::one_sided;
use crate::matching::p2p::Decision;
use crate::matching::{Found, Matcher, world_ranks};
use crate::replay::{RankEnd, Read, Reading, ReplayError};
use crate::sites::Sites;
use crate::timeline::{Source, rank_spans};
use mpigram_trace::Trace;

/// What is summed while the matcher finds things.
struct Sums {
    waits: Waits,
    settled: usize,
    /// Unmatched point-to-point, collective, one-sided operations.
    unmatched: [usize; 3],
}

impl Sums {
    fn found(&mut self, found: &Found) {
        match found {
            Found::PointToPoint(Decision::Unmatched { .. }) => self.unmatched[0] += 1,
            Found::Collective(instances::Found::Unmatched { .. }) => self.unmatched[1] += 1,
            Found::OneSided(one_sided::Found::Unmatched(_) | one_sided::Found::Unpaired { .. }) => {
                self.unmatched[2] += 1
            }
            Found::Collective(instances::Found::Settled { instance, .. }) => {
                self.waits.instance(self.settled, instance, |p| {
                    let start = p.post_at.span?.start_ns;
                    let end = p.completion_at?.span?.end_ns;
                    Some((start, end, p.post_at.site))
                });
                self.settled += 1;
            }
            _ => {}
        }
    }
}

pub(super) fn analyse(
    trace: &Trace,
    grammar_sites: &Sites,
    sites: CallSites,
    source: Source,
    heuristic: bool,
) -> Result<Analysis, CriticalPathError> {
    let origin = trace.run_start_ns();
    let members = world_ranks(trace);
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let n = world.len();
    let mut reading = Reading::of(trace, grammar_sites, source, origin)?;
    let mut matcher = Matcher::new(&members, world.clone());
    let mut builder = Builder::new(&world);
    let mut walk = Walk::new(n);
    let mut sums = Sums {
        waits: Waits::new(&world),
        settled: 0,
        unmatched: [0; 3],
    };
    let mut ends: Vec<RankEnd> = (0..n).map(|_| RankEnd::default()).collect();
    let mut finished = false;
    loop {
        let wanted: Vec<u32> = match walk.run()? {
            Progress::Done => break,
            Progress::Hungry(ranks) => ranks,
            Progress::Stuck => {
                // Read ahead: what the waiting ranks wait for is further on.
                let open = reading.open();
                if !open.is_empty() {
                    open
                } else if !finished {
                    matcher.finish();
                    take_found(&mut matcher, &mut builder, &mut walk, &mut sums);
                    finished = true;
                    continue;
                } else {
                    let (r, seq) = walk.stuck_at().unwrap_or((0, 0));
                    return Err(CycleError {
                        rank: world[r as usize],
                        seq,
                    }
                    .into());
                }
            }
        };
        read(
            &mut reading,
            &wanted,
            &world,
            &mut matcher,
            &mut builder,
            &mut walk,
            &mut sums,
            &mut ends,
        )?;
    }
    if !finished {
        matcher.finish();
        take_found(&mut matcher, &mut builder, &mut walk, &mut sums);
    }
    let calls: u64 = ends.iter().map(|e| e.timed).sum();
    let wall = ends
        .iter()
        .filter_map(|e| Some((e.first_ns?, e.last_ns?)))
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    let compute: Vec<i64> = ends.iter().map(|e| e.compute_ns).collect();
    let rank_calls =
        |r: u32| -> Result<path::RankCallTimes<'_, CriticalPathError>, CriticalPathError> {
            let part = &trace.ranks[r as usize];
            let spans = rank_spans(trace, part, source, origin)?;
            let sites = grammar_sites.walk(part.meta.rank).into_iter().flatten();
            Ok(Box::new(spans.zip(sites).map(|(span, (site, _))| {
                span.map(|span| (span, site))
                    .map_err(CriticalPathError::from)
            })))
        };
    let path = super::finish(walk, &world, wall, calls, &rank_calls)?;
    let heuristic = if heuristic {
        Some(heuristic::grouping_of_streams(&world, &rank_calls, &path)?)
    } else {
        None
    };
    Ok(super::checked(Analysis {
        path,
        waits: sums.waits.finish(&compute),
        heuristic,
        sites,
        unmatched: sums.unmatched,
        ranks: n,
        calls,
        timelines: Vec::new(),
    }))
}

#[allow(clippy::too_many_arguments)]
/// Reads the next chunk of `ranks` and gives their calls to the graph,
/// the matcher and the walk, in time order.
fn read(
    reading: &mut Reading,
    ranks: &[u32],
    world: &[u32],
    matcher: &mut Matcher,
    builder: &mut Builder,
    walk: &mut Walk,
    sums: &mut Sums,
    ends: &mut [RankEnd],
) -> Result<(), ReplayError> {
    let mut scratch = Vec::new();
    reading.next(ranks, |r, read| {
        let rank = world[r as usize];
        match read {
            Read::Call(call, events) => {
                // Every event announced before any is matched.
                scratch.clear();
                scratch.extend(events);
                for e in &scratch {
                    builder.announce(walk, rank, e);
                }
                for e in scratch.drain(..) {
                    matcher.feed(rank, e);
                }
                take_found(matcher, builder, walk, sums);
                if let Some(step) = call.step {
                    walk.push_step(r, step);
                }
            }
            Read::End(mut end) => {
                for e in &end.events {
                    builder.announce(walk, rank, e);
                }
                for e in std::mem::take(&mut end.events) {
                    matcher.feed(rank, e);
                }
                matcher.end_rank(rank);
                take_found(matcher, builder, walk, sums);
                walk.end_rank(r, end.tail);
                ends[r as usize] = end;
            }
        }
    })
}

fn take_found(matcher: &mut Matcher, builder: &mut Builder, walk: &mut Walk, sums: &mut Sums) {
    for found in matcher.found.drain(..) {
        builder.found(walk, &found);
        sums.found(&found);
    }
}
