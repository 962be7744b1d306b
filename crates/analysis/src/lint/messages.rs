//! The checks that follow the run's messages — storms of small messages
//! ([`super::storms`]), wildcard receives with one sender
//! ([`WildcardSenders`]) and send cycles ([`super::deadlock`]) — fed
//! while the run is read and matched, each folding what it needs into a
//! small aggregate of its own.
//!
//! The ranks are read side by side, a chunk of calls at a time, in time
//! order where they have per-call times and in call order beside each
//! other where they do not, and their operations matched as they are
//! read ([`crate::replay`]): what is held is what was in flight in the
//! run, not the messages. Without times, a rank that gets ahead of the
//! others (more of its operations in flight than a chunk has calls) waits
//! for them.

use super::deadlock::SendCycles;
use super::patterns::WildcardSenders;
use super::storms::Storms;
use super::{Finding, LintError};
use crate::matching::p2p::Decision;
use crate::matching::{Found, Matcher, RankEvent, WorldRanks, instances, world_ranks};
use crate::replay::{CHUNK, Read, Reading, ReplayError};
use crate::sites::Sites;
use crate::timeline::Source;
use mpigram_trace::Trace;
use rustc_hash::FxHashMap;

/// The findings of the checks that follow messages; `funcs` names each
/// signature's function, `threaded` are the ranks that call MPI from
/// several threads at once.
pub(super) fn findings(
    trace: &Trace,
    sites: &Sites,
    funcs: &[&'static str],
    threaded: &[u32],
) -> Result<Vec<Finding>, LintError> {
    let found = match read_and_check(trace, sites, funcs, threaded, Some(Source::Best)) {
        // Times only order the reading: times that do not decode are none.
        Err(ReplayError::Timeline(_)) => read_and_check(trace, sites, funcs, threaded, None),
        found => found,
    };
    Ok(found?)
}

/// Reads `trace` with the times of `source` where recorded (None: none)
/// and runs the checks.
fn read_and_check(
    trace: &Trace,
    sites: &Sites,
    funcs: &[&'static str],
    threaded: &[u32],
    source: Option<Source>,
) -> Result<Vec<Finding>, ReplayError> {
    let members = world_ranks(trace);
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let mut reading = Reading::of_any_timing(trace, sites, source, trace.run_start_ns())?;
    let mut checks = MessageChecks::new(&members, &world, threaded, sites, funcs);
    loop {
        // A rank with more in flight than a chunk has calls waits for the
        // others (its sends for their receives, its receives for their sends).
        let ahead: Vec<bool> = world
            .iter()
            .map(|&r| checks.in_flight(r) > CHUNK as usize)
            .collect();
        let read = reading.step_unless(
            |r| ahead[r as usize],
            |r, read| {
                let rank = world[r as usize];
                match read {
                    Read::Call(call, events) => checks.call(rank, call.seq, events),
                    Read::End(end) => checks.end(rank, end.events),
                }
            },
        )?;
        if !read {
            return Ok(checks.finish());
        }
    }
}

/// The checks that follow messages and the matcher they follow, fed
/// each rank's events in the rank's order (the ranks in any interleaving).
pub(super) struct MessageChecks<'a> {
    matcher: Matcher<'a>,
    sites: &'a Sites<'a>,
    /// Per rank: the operations posted so far (the next one's number).
    posted: FxHashMap<u32, usize>,
    storms: Storms<'a>,
    wildcards: WildcardSenders,
    cycles: SendCycles<'a>,
}

impl<'a> MessageChecks<'a> {
    /// The checks of the ranks of `world`, whose communicators `members`
    /// knows; `threaded` call MPI from several threads at once; `funcs`
    /// names each signature's function.
    pub(super) fn new(
        members: &'a dyn WorldRanks,
        world: &[u32],
        threaded: &[u32],
        sites: &'a Sites<'a>,
        funcs: &'a [&'static str],
    ) -> MessageChecks<'a> {
        MessageChecks {
            matcher: Matcher::new(members, world.to_vec()),
            sites,
            posted: FxHashMap::default(),
            storms: Storms::new(sites),
            wildcards: WildcardSenders::default(),
            cycles: SendCycles::new(world, threaded, sites, funcs),
        }
    }

    /// The events of call `seq` of `rank`, the rank's calls before it read.
    pub(super) fn call(
        &mut self,
        rank: u32,
        seq: u64,
        events: impl IntoIterator<Item = RankEvent>,
    ) {
        for e in events {
            self.event(rank, &e);
            self.matcher.feed(rank, e);
        }
        self.cycles.read(rank, seq);
        self.found();
    }

    /// Every call of `rank` is read; `events`: what its end tells.
    pub(super) fn end(&mut self, rank: u32, events: Vec<RankEvent>) {
        for e in events {
            self.event(rank, &e);
            self.matcher.feed(rank, e);
        }
        self.matcher.end_rank(rank);
        self.cycles.read(rank, u64::MAX);
        self.found();
    }

    /// How many operations of `rank` the checks are waiting to learn the
    /// fate of.
    pub(super) fn in_flight(&self, rank: u32) -> usize {
        self.cycles.in_flight(rank) + self.storms.in_flight(rank)
    }

    /// How many blocking calls and operations the checks hold.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.cycles.held() + self.storms.held()
    }

    /// Every rank has ended: the findings.
    pub(super) fn finish(mut self) -> Vec<Finding> {
        self.matcher.finish();
        self.found();
        let mut findings = self.storms.finish();
        findings.extend(self.wildcards.finish());
        findings.extend(self.cycles.finish());
        findings
    }

    fn event(&mut self, rank: u32, event: &RankEvent) {
        match event {
            RankEvent::Post(op) => {
                let n = self.posted.entry(rank).or_default();
                let key = (rank, *n);
                *n += 1;
                self.storms.post(rank, op);
                self.wildcards.post(key, op, self.sites);
                self.cycles.post(key, op);
            }
            RankEvent::Complete { op, seq, .. } => self.cycles.complete((rank, *op), *seq),
            RankEvent::Collective(call) => self.storms.collective(rank, call.post),
            _ => {}
        }
    }

    /// Takes in what the matcher found.
    fn found(&mut self) {
        for found in self.matcher.found.drain(..) {
            match found {
                Found::PointToPoint(Decision::Matched { send, recv }) => {
                    self.wildcards.decided(recv, Some(send.0));
                    self.cycles.matched(send, recv);
                }
                Found::PointToPoint(Decision::Unmatched { op, .. } | Decision::Void { op }) => {
                    self.wildcards.decided(op, None);
                    self.cycles.unmatched(op);
                }
                Found::PointToPoint(Decision::Settled(message)) => self.cycles.settled(&message),
                Found::Collective(instances::Found::Formed { calls, .. }) => {
                    for call in calls {
                        self.storms.known(call, true);
                    }
                }
                Found::Collective(instances::Found::Unmatched { call, .. }) => {
                    self.storms.known(call, false)
                }
                _ => {}
            }
        }
        self.cycles.replay();
    }
}
