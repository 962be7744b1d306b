//! The timeline's arrows, found before any call is written: a first pass
//! matches the run's messages in time order ([`crate::matching::Matcher`],
//! holding what is in flight) and writes, for each arrow, a mark on the
//! call it leaves and one on the call it ends in to a temporary file; the
//! marks, sorted by rank and call, are then read alongside each rank's
//! calls. Memory holds what is in flight, never the run's messages.

use super::{Arrival, Window, clamp};
use crate::critical_path::{Activity, CriticalPath};
use crate::matching::Found;
use crate::matching::p2p::Decision;
use crate::spill::{Records, Spill, put_u32, put_u64, u32_at, u64_at};
use crate::timeline::Span;
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
    /// the send's start (a message) or where the arrow ends (the path).
    from_rank: u32,
    bytes: Option<u64>,
    at_ns: u64,
}

impl crate::spill::Record for Mark {
    const SIZE: usize = 4 + 8 + 1 + 8 + 4 + 8 + 8;
    fn put(&self, out: &mut Vec<u8>) {
        put_u32(out, self.rank);
        put_u64(out, self.seq);
        out.push(self.kind as u8);
        put_u64(out, self.id);
        put_u32(out, self.from_rank);
        put_u64(out, self.bytes.unwrap_or(u64::MAX));
        put_u64(out, self.at_ns);
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
        }
    }
}

/// The first pass: the marks of every arrow, as the matcher finds messages.
pub(super) struct Arrows<'w> {
    window: &'w Window,
    marks: Spill<Mark>,
    /// Arrows of messages (numbered from 1), and of the path's jumps after them.
    pub(super) messages: usize,
    pub(super) path_jumps: usize,
    /// Point-to-point operations that matched nothing.
    pub(super) unmatched: usize,
    failed: Option<io::Error>,
}

impl<'w> Arrows<'w> {
    pub(super) fn new(window: &'w Window) -> Arrows<'w> {
        Arrows {
            window,
            marks: Spill::default(),
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
                    let Some(send_span) = send.post_at.span else {
                        continue;
                    };
                    if !(shown(send.rank, send.post, Some(send_span))
                        && shown(recv.rank, arrival, arrival_span))
                    {
                        continue;
                    }
                    self.messages += 1;
                    let id = self.messages as u64;
                    let (rank, seq, from_rank) = (send.rank, send.post, send.rank);
                    let out = Mark {
                        rank,
                        seq,
                        kind: Kind::MessageOut,
                        id,
                        from_rank,
                        bytes: None,
                        at_ns: 0,
                    };
                    self.push(out);
                    self.push(Mark {
                        rank: recv.rank,
                        seq: arrival,
                        kind: Kind::MessageIn,
                        bytes: m.bytes,
                        at_ns: clamp(&send_span).0,
                        ..out
                    });
                }
                Found::PointToPoint(Decision::Unmatched { .. }) => self.unmatched += 1,
                _ => {}
            }
        }
    }

    /// Arrows along the path's jumps between ranks, numbered after the
    /// messages' arrows: from the call on the rank the path leaves (the
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
                id: (self.messages + self.path_jumps) as u64,
                from_rank: a.rank,
                bytes: None,
                at_ns: 0,
            };
            self.push(out);
            self.push(Mark {
                rank: b.rank,
                seq: to,
                kind: Kind::PathIn,
                at_ns: b.start_ns.max(a.end_ns).max(0) as u64,
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
        // Short of the end, so that an arrow ends inside the call.
        let last = if end_ns > start_ns {
            end_ns - 1
        } else {
            end_ns
        };
        loop {
            let mark = match self.marks.peek() {
                None => return Ok(()),
                Some(Err(_)) => {
                    return Err(self.marks.next().and_then(Result::err).expect("error"));
                }
                Some(Ok(m)) if (m.rank, m.seq) > (rank, seq) => return Ok(()),
                Some(Ok(m)) => *m,
            };
            self.marks.next();
            if (mark.rank, mark.seq) < (rank, seq) {
                continue; // a call not shown
            }
            let arrival = |at_ns: u64, backwards| Arrival {
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
                // After the send's start when the clocks allow, so that
                // viewers (which read events in time order) meet the
                // arrow's start first.
                Kind::MessageIn => {
                    let after_send = mark.at_ns + 1;
                    into.r#in
                        .push(arrival(after_send.clamp(start_ns, last), after_send > last))
                }
                Kind::PathIn => into
                    .r#in
                    .push(arrival(mark.at_ns.clamp(start_ns, last), false)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::Record;

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
