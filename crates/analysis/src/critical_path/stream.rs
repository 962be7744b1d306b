//! [`super::analyse`] on a trace: the ranks are read side by side, a chunk
//! of calls at a time (ranks in parallel), their operations matched in
//! time order, the graph made as matches are found and the longest path
//! walked as the graph is made; then the path is rebuilt from the walk's
//! back-pointers, reading the ranks' times once more.

use super::graph::Builder;
use super::learn::{Batches, Learn, Lesson};
use super::waits::Waits;
use super::walk::{Progress, Walk, Walked};
use super::{Analysis, CallSites, CriticalPathError, CycleError, heuristic, path};
use crate::matching::instances;
use crate::matching::one_sided;
use crate::matching::p2p::Decision;
use crate::matching::{Found, Matcher, world_ranks};
use crate::members::Members;
use crate::replay::{RankEnd, Read, Reading, ReplayError, read_in_time_order};
use crate::sites::Sites;
use crate::timeline::{Source, rank_spans};
use mpigram_trace::Trace;
use std::sync::mpsc::{self, Receiver, Sender};

/// What is summed while the matcher finds things.
pub(super) struct Sums {
    pub(super) waits: Waits,
    pub(super) settled: usize,
    /// Unmatched point-to-point, collective, one-sided operations.
    pub(super) unmatched: [usize; 3],
}

impl Sums {
    pub(super) fn new(world: &[u32]) -> Sums {
        Sums {
            waits: Waits::new(world),
            settled: 0,
            unmatched: [0; 3],
        }
    }

    pub(super) fn found(&mut self, found: &Found) {
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
    reading: Reading,
    sites: CallSites,
    source: Source,
    heuristic: bool,
) -> Result<Analysis, CriticalPathError> {
    let members = world_ranks(trace);
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let n = world.len();
    let mut sums = Sums::new(&world);
    let mut ends: Vec<RankEnd> = (0..n).map(|_| RankEnd::default()).collect();
    let (read, walk) = walking(&world, |batches| {
        match_and_make(reading, &members, &world, batches, &mut sums, &mut ends)
    });
    // A walk cut short by a reading error is not the news.
    read?;
    let walk = walk?;
    let walked = walk.into_walked();
    conclude(
        trace,
        grammar_sites,
        sites,
        source,
        heuristic,
        walked,
        &ends,
        sums,
    )
}

/// The report of a finished walk: the path rebuilt (reading the ranks'
/// times once more), the heuristic's path if asked, and the sums; `ends`:
/// what each rank's reader found at its end.
#[allow(clippy::too_many_arguments)]
pub(super) fn conclude(
    trace: &Trace,
    grammar_sites: &Sites,
    sites: CallSites,
    source: Source,
    heuristic: bool,
    walked: Walked,
    ends: &[RankEnd],
    sums: Sums,
) -> Result<Analysis, CriticalPathError> {
    let origin = trace.run_start_ns();
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let n = world.len();
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
    let path = super::finish(walked, &world, wall, calls, &rank_calls)?;
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

/// Runs `make`, which tells the graph of `world`'s ranks to the batches
/// it is given, here, and the walk of that graph on a thread of its own,
/// side by side; the walk once `make` is done and the walk has walked
/// everything.
pub(super) fn walking<T>(
    world: &[u32],
    make: impl FnOnce(&mut Batches) -> T,
) -> (T, Result<Walk, CriticalPathError>) {
    std::thread::scope(|scope| {
        let (to_walk, lessons) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (emptied, batches_back) = mpsc::channel();
        let walker = scope.spawn(|| walk_lessons(world, lessons, emptied));
        let mut batches = Batches::new(to_walk, batches_back);
        let made = make(&mut batches);
        batches.flush();
        drop(batches);
        let walk = walker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (made, walk)
    })
}

/// Batches of lessons on their way to the walk at most (each of
/// [`super::learn::BATCH`]): the matcher waits when the walk is this far behind.
const BATCHES_IN_FLIGHT: usize = 4;

/// The walk, on its own thread, of what `lessons` teach: walked after each
/// batch, as far as it can be; each batch sent back emptied.
fn walk_lessons(
    world: &[u32],
    lessons: Receiver<Vec<Lesson>>,
    emptied: Sender<Vec<Lesson>>,
) -> Result<Walk, CriticalPathError> {
    let mut walk = Walk::new(world.len());
    for mut batch in lessons {
        for lesson in batch.drain(..) {
            walk.learn(lesson);
        }
        // The matcher may have stopped keeping batches.
        let _ = emptied.send(batch);
        walk.run()?;
    }
    match walk.run()? {
        Progress::Done => Ok(walk),
        Progress::Hungry(_) | Progress::Stuck => {
            let (r, seq) = walk.stuck_at().unwrap_or((0, 0));
            Err(CycleError {
                rank: world[r as usize],
                seq,
            }
            .into())
        }
    }
}

#[allow(clippy::too_many_arguments)]
/// Reads every rank in time order, matches the operations, makes the
/// graph and tells it to `walk`, and sums what the matcher finds.
fn match_and_make(
    reading: Reading,
    members: &Members,
    world: &[u32],
    walk: &mut Batches,
    sums: &mut Sums,
    ends: &mut [RankEnd],
) -> Result<(), ReplayError> {
    let mut matcher = Matcher::new(members, world.to_vec());
    let mut builder = Builder::new(world);
    let mut scratch = Vec::new();
    let go_on = std::cell::Cell::new(true);
    read_in_time_order(
        reading,
        || go_on.get(),
        |r, read| {
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
                    take_found(&mut matcher, &mut builder, walk, sums);
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
                    take_found(&mut matcher, &mut builder, walk, sums);
                    walk.end_rank(r, end.tail);
                    ends[r as usize] = end;
                }
            }
            // A walk that stopped has its error to tell.
            go_on.set(!walk.gone());
        },
    )?;
    matcher.finish();
    take_found(&mut matcher, &mut builder, walk, sums);
    Ok(())
}

fn take_found(matcher: &mut Matcher, builder: &mut Builder, walk: &mut Batches, sums: &mut Sums) {
    for found in matcher.found.drain(..) {
        builder.found(walk, &found);
        sums.found(&found);
    }
}
