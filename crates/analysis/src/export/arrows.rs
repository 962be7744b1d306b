//! The timeline's arrows, found before any call is written: a first pass
//! matches the run's messages in time order ([`crate::matching::Matcher`],
//! holding what is in flight) and writes, for each arrow, a mark on the
//! call it leaves and one on the call it ends in to a temporary file; the
//! marks, sorted by rank and call, are then read alongside each rank's
//! calls. Memory holds what is in flight, never the run's messages.
//!
//! An arrow's id can be one an earlier arrow had ([`FlowIds`]): viewers
//! read events in time order, and an id is free again once they have read
//! the end of its arrow. Small ids are short varints in Perfetto's format.

use super::{Arrival, Window, clamp};
use crate::critical_path::{Activity, CriticalPath};
use crate::matching::Found;
use crate::matching::p2p::Decision;
use crate::spill::{Records, Spill, put_u32, put_u64, u32_at, u64_at};
use crate::timeline::Span;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::iter::Peekable;

/// What a mark says about its call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// An arrow of a message leaves the call.
    MessageOut,
    /// An arrow of the critical path leaves the call.
    PathOut,
    /// A message's arrow ends in the call.
    MessageIn,
    /// The critical path's arrow ends in the call.
    PathIn,
}

/// One end of an arrow, on one call of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Mark {
    rank: u32,
    seq: u64,
    kind: Kind,
    id: u64,
    /// For the arrow's end: where it comes from, the message's size, and
    /// where the arrow ends (the path: where it ends at the latest).
    from_rank: u32,
    bytes: Option<u64>,
    at_ns: u64,
    /// A message's arrow ends before it starts, by the call times.
    backwards: bool,
}

impl crate::spill::Record for Mark {
    const SIZE: usize = 4 + 8 + 1 + 8 + 4 + 8 + 8 + 1;
    fn put(&self, out: &mut Vec<u8>) {
        put_u32(out, self.rank);
        put_u64(out, self.seq);
        out.push(self.kind as u8);
        put_u64(out, self.id);
        put_u32(out, self.from_rank);
        put_u64(out, self.bytes.unwrap_or(u64::MAX));
        put_u64(out, self.at_ns);
        out.push(u8::from(self.backwards));
    }
    fn get(b: &[u8]) -> Mark {
        let kind = match b[12] {
            0 => Kind::MessageOut,
            1 => Kind::PathOut,
            2 => Kind::MessageIn,
            _ => Kind::PathIn,
        };
        let bytes = u64_at(b, 25);
        Mark {
            rank: u32_at(b, 0),
            seq: u64_at(b, 4),
            kind,
            id: u64_at(b, 13),
            from_rank: u32_at(b, 21),
            bytes: (bytes != u64::MAX).then_some(bytes),
            at_ns: u64_at(b, 33),
            backwards: b[41] != 0,
        }
    }
}

/// Where an arrow from a send that started at `send_ns` ends in the
/// receiving call `[start_ns, end_ns]`: inside the call, after the send's
/// start when the clocks allow, so that viewers (which read events in time
/// order) meet the arrow's start first; and whether it ends before the
/// send started (clock offsets or lossy timing errors larger than the
/// message's latency).
fn arrival_at(send_ns: u64, call: (u64, u64)) -> (u64, bool) {
    inside(send_ns + 1, call)
}

/// `at_ns` moved into the call `[start_ns, end_ns]`, short of its end so
/// that an arrow ends inside it; and whether it was after that.
fn inside(at_ns: u64, (start_ns, end_ns): (u64, u64)) -> (u64, bool) {
    let last = if end_ns > start_ns {
        end_ns - 1
    } else {
        end_ns
    };
    (at_ns.clamp(start_ns, last), at_ns > last)
}

/// Arrow ids: new ones from 1, or (`reuse`) the id of an arrow that ended
/// before the new one starts.
pub(super) struct FlowIds {
    reuse: bool,
    /// Ids free from a time on: (the end of their last arrow, id), the
    /// earliest end first.
    ending: BinaryHeap<Reverse<(u64, u64)>>,
    /// Ids used so far.
    used: u64,
}

impl FlowIds {
    /// Perfetto's trace processors end an arrow's id when they read its
    /// end (`terminating_flow_ids`), so its ids can be reused; Chrome's
    /// JSON flow ids stay bound, so they cannot.
    pub(super) fn new(reuse: bool) -> FlowIds {
        FlowIds {
            reuse,
            ending: BinaryHeap::new(),
            used: 0,
        }
    }

    /// An id for an arrow that starts at `start_ns` and ends at `end_ns`
    /// (if `ends`: an arrow that ends before it starts is never ended,
    /// and its id never free again).
    pub(super) fn take(&mut self, start_ns: u64, end_ns: u64, ends: bool) -> u64 {
        let id = match self.ending.peek() {
            // Strictly before: events of one time can be read in any order.
            Some(&Reverse((free_from, id))) if free_from < start_ns => {
                self.ending.pop();
                id
            }
            _ => self.fresh(),
        };
        if self.reuse && ends {
            self.ending.push(Reverse((end_ns, id)));
        }
        id
    }

    /// An id no arrow had.
    fn fresh(&mut self) -> u64 {
        self.used += 1;
        self.used
    }
}

/// The first pass: the marks of every arrow, as the matcher finds messages.
pub(super) struct Arrows<'w> {
    window: &'w Window,
    marks: Spill<Mark>,
    ids: FlowIds,
    /// Arrows of messages, and of the path's jumps.
    pub(super) messages: usize,
    pub(super) path_jumps: usize,
    /// Point-to-point operations that matched nothing.
    pub(super) unmatched: usize,
    failed: Option<io::Error>,
}

impl<'w> Arrows<'w> {
    pub(super) fn new(window: &'w Window, ids: FlowIds) -> Arrows<'w> {
        Arrows {
            window,
            marks: Spill::default(),
            ids,
            messages: 0,
            path_jumps: 0,
            unmatched: 0,
            failed: None,
        }
    }

    fn push(&mut self, mark: Mark) {
        if let Err(e) = self.marks.push(&mark) {
            self.failed.get_or_insert(e);
        }
    }

    /// Takes what the matcher found: an arrow for each message whose send
    /// and receiving call have times and are in the window.
    pub(super) fn found(&mut self, found: impl IntoIterator<Item = Found>) {
        for found in found {
            match found {
                Found::PointToPoint(Decision::Settled(m)) => {
                    let (send, recv) = (&m.send, &m.recv);
                    // The call that completed the receive, else the one that posted it.
                    let (arrival, arrival_span) = match recv.completion {
                        Some(seq) => (seq, recv.completion_at.and_then(|a| a.span)),
                        None => (recv.post, recv.post_at.span),
                    };
                    let shown = |rank: u32, seq: u64, span: Option<Span>| {
                        span.is_some_and(|span| {
                            let (start, end) = clamp(&span);
                            self.window.shows(rank, seq, start, end)
                        })
                    };
                    let (Some(send_span), Some(arrival_span)) = (send.post_at.span, arrival_span)
                    else {
                        continue;
                    };
                    if !(shown(send.rank, send.post, Some(send_span))
                        && shown(recv.rank, arrival, Some(arrival_span)))
                    {
                        continue;
                    }
                    self.messages += 1;
                    let send_ns = clamp(&send_span).0;
                    let (at_ns, backwards) = arrival_at(send_ns, clamp(&arrival_span));
                    let id = self.ids.take(send_ns, at_ns, !backwards);
                    let (rank, seq, from_rank) = (send.rank, send.post, send.rank);
                    let out = Mark {
                        rank,
                        seq,
                        kind: Kind::MessageOut,
                        id,
                        from_rank,
                        bytes: None,
                        at_ns: 0,
                        backwards: false,
                    };
                    self.push(out);
                    self.push(Mark {
                        rank: recv.rank,
                        seq: arrival,
                        kind: Kind::MessageIn,
                        bytes: m.bytes,
                        at_ns,
                        backwards,
                        ..out
                    });
                }
                Found::PointToPoint(Decision::Unmatched { .. }) => self.unmatched += 1,
                _ => {}
            }
        }
    }

    /// Arrows along the path's jumps between ranks, with ids no message's
    /// arrow has: from the call on the rank the path leaves (the
    /// call its segment is in, or the one that ends its computation) to
    /// the call on the rank it reaches (the call its segment is in, or the
    /// one its computation follows).
    pub(super) fn path_jumps(&mut self, path: &CriticalPath) {
        for (a, b) in path.segments.jumps() {
            let from = match a.activity {
                Activity::Computation { after } => u64::from(after) + 1,
                Activity::Call { seq, .. } => u64::from(seq),
            };
            let to = match b.activity {
                Activity::Computation { after } => u64::from(after),
                Activity::Call { seq, .. } => u64::from(seq),
            };
            self.path_jumps += 1;
            let out = Mark {
                rank: a.rank,
                seq: from,
                kind: Kind::PathOut,
                id: self.ids.fresh(),
                from_rank: a.rank,
                bytes: None,
                at_ns: 0,
                backwards: false,
            };
            self.push(out);
            self.push(Mark {
                rank: b.rank,
                seq: to,
                kind: Kind::PathIn,
                // After the start of the call it leaves (at `a`'s end
                // at the latest), so that viewers meet the arrow's start
                // first.
                at_ns: b.start_ns.max(a.end_ns + 1).max(0) as u64,
                ..out
            });
        }
    }

    /// The marks sorted by rank and call, to be read alongside the calls.
    pub(super) fn sorted(self) -> io::Result<Spill<Mark>> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.marks.sorted(|m| (m.rank, m.seq, m.kind, m.id))
    }
}

/// The arrows leaving and ending at one call.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct CallArrows {
    pub(super) out: Vec<u64>,
    pub(super) path_out: Vec<u64>,
    pub(super) r#in: Vec<Arrival>,
}

/// Reads sorted marks call by call.
pub(super) struct MarkReader<'s> {
    marks: Peekable<Records<'s, Mark>>,
}

impl<'s> MarkReader<'s> {
    pub(super) fn new(sorted: &'s Spill<Mark>) -> MarkReader<'s> {
        MarkReader {
            marks: sorted.iter().peekable(),
        }
    }

    /// The arrows of call `seq` of `rank` ([start, end] its span), and no
    /// earlier call's: calls must be asked for in order of rank and call.
    pub(super) fn at(
        &mut self,
        rank: u32,
        seq: u64,
        (start_ns, end_ns): (u64, u64),
        into: &mut CallArrows,
    ) -> io::Result<()> {
        into.out.clear();
        into.path_out.clear();
        into.r#in.clear();
        loop {
            let mark = match self.marks.peek() {
                None => break,
                Some(Err(_)) => {
                    return Err(self.marks.next().and_then(Result::err).expect("error"));
                }
                Some(Ok(m)) if (m.rank, m.seq) > (rank, seq) => break,
                Some(Ok(m)) => *m,
            };
            self.marks.next();
            if (mark.rank, mark.seq) < (rank, seq) {
                continue; // a call not shown
            }
            let arrival = |(at_ns, backwards)| Arrival {
                id: mark.id,
                at_ns,
                backwards,
                from_rank: mark.from_rank,
                bytes: mark.bytes,
                path: mark.kind == Kind::PathIn,
            };
            match mark.kind {
                Kind::MessageOut => into.out.push(mark.id),
                Kind::PathOut => into.path_out.push(mark.id),
                Kind::MessageIn => into.r#in.push(arrival((mark.at_ns, mark.backwards))),
                Kind::PathIn => {
                    let (at_ns, _) = inside(mark.at_ns, (start_ns, end_ns));
                    into.r#in.push(arrival((at_ns, false)))
                }
            }
        }
        // In time order, as viewers read them.
        into.r#in.sort_by_key(|a| a.at_ns);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::Record;

    #[test]
    fn an_arrows_id_is_reused_only_after_that_arrow_ended() {
        let mut ids = FlowIds::new(true);
        assert_eq!(ids.take(0, 10, true), 1);
        assert_eq!(ids.take(5, 20, true), 2);
        // Arrow 1 ended at 10: free from 11 on, not at 10.
        assert_eq!(ids.take(10, 12, true), 3);
        assert_eq!(ids.take(11, 30, true), 1);
        // Of 2 (ended at 20) and 3 (at 12), the one that ended first.
        assert_eq!(ids.take(20, 25, true), 3);
        assert_eq!(ids.take(21, 22, true), 2);
        // An arrow that never ends keeps its id.
        assert_eq!(ids.take(40, 0, false), 2);
        assert_eq!(ids.take(50, 60, true), 3);
        assert_eq!(ids.take(51, 60, true), 1);
        // All taken until 60.
        assert_eq!(ids.take(52, 60, true), 4);
        assert_eq!(ids.take(53, 60, true), 5);
        assert_eq!(ids.fresh(), 6);
        // Chrome's ids are never reused.
        let mut unique = FlowIds::new(false);
        let taken: Vec<u64> = (0..4)
            .map(|i| unique.take(10 * i, 10 * i + 1, true))
            .collect();
        assert_eq!(taken, [1, 2, 3, 4]);
    }

    #[test]
    fn an_arrow_ends_inside_its_call_after_the_sends_start() {
        // The send started before the call: at the call's start.
        assert_eq!(arrival_at(5, (10, 20)), (10, false));
        // During the call: just after the send's start.
        assert_eq!(arrival_at(12, (10, 20)), (13, false));
        // After the call's last nanosecond: there, and backwards.
        assert_eq!(arrival_at(19, (10, 20)), (19, true));
        assert_eq!(arrival_at(30, (10, 20)), (19, true));
        // A call of no duration.
        assert_eq!(arrival_at(3, (10, 10)), (10, false));
    }

    #[test]
    fn a_mark_reads_back_as_written() {
        let mark = Mark {
            rank: 7,
            seq: 1 << 40,
            kind: Kind::MessageIn,
            id: 12345,
            from_rank: 3,
            bytes: Some(4096),
            at_ns: 99,
            backwards: true,
        };
        let mut bytes = Vec::new();
        mark.put(&mut bytes);
        assert_eq!(bytes.len(), Mark::SIZE);
        assert_eq!(Mark::get(&bytes), mark);
        let none = Mark {
            bytes: None,
            kind: Kind::PathOut,
            ..mark
        };
        bytes.clear();
        none.put(&mut bytes);
        assert_eq!(Mark::get(&bytes), none);
    }
}
