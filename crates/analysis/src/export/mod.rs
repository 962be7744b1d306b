//! Timelines of a trace for Perfetto (`ui.perfetto.dev`) and Chrome's
//! trace viewer: one process per rank, named `rank N` and sorted by rank,
//! with every call a slice named by its MPI function and carrying its
//! arguments; an arrow from each send to the call that completed its
//! matching receive; and each non-blocking operation (and each message
//! taken by MPI_Mprobe) a slice from its post to its completion on the
//! rank's `requests` tracks. With the run's critical path, a `critical
//! path` process comes first, with one slice per segment of the path
//! (named by its rank and activity), and arrows follow the path's jumps
//! between ranks, from the call on the rank it leaves to the call on the
//! rank it reaches.
//!
//! Output is streamed, rank by rank: memory grows with the messages of the
//! run (for the arrows) and with one rank's calls (their times), never with
//! the file.

mod chrome;
mod lanes;
pub mod perfetto;
#[cfg(test)]
mod tests;
mod window;

pub use window::{Bound, Window, parse_ranks};

use crate::critical_path::{Activity, CallSites, CriticalPath};
use crate::decode::{DecodeError, DecodedCall, RankDecoder};
use crate::matching::{self, Direction, Matching, Operation, Peer};
pub use crate::timeline::Span;
use mpigram_trace::{RankPart, Trace};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json, json};
use std::io::{self, Write};

/// The times of the calls of one rank, in call order ([`timeline::rank_times`]),
/// or why the trace has none (aggregated timing). A rank killed after its
/// last checkpoint has times for its first calls only: the timeline shows
/// those.
///
/// [`timeline::rank_times`]: crate::timeline::rank_times
pub type RankTimes<'a> = dyn Fn(&RankPart) -> Result<Vec<Span>, String> + 'a;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Perfetto's protobuf trace (TracePacket, TrackDescriptor, TrackEvent).
    Perfetto,
    /// Chrome's JSON trace-event format.
    Chrome,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The trace has no per-call times (the message says which timing to use).
    #[error("{0}")]
    Times(String),
    #[error("rank {rank}: {calls} calls but {times} call times")]
    TimesMismatch { rank: u32, calls: u64, times: usize },
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("cannot write the timeline: {0}")]
    Write(#[from] io::Error),
}

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    pub ranks: usize,
    pub calls: u64,
    /// Arrows from sends to receives (matched messages whose calls have times).
    pub messages: usize,
    /// Slices of non-blocking operations.
    pub requests: usize,
    /// Point-to-point operations that matched nothing.
    pub unmatched: usize,
    /// Calls not shown: the last calls of killed ranks, which have no times.
    pub untimed: u64,
    /// Arrows into a call that ended before the send started, by the call
    /// times: clock offsets or lossy timing errors larger than the message's
    /// latency.
    pub backwards: usize,
    /// Slices of the critical path's track.
    pub path_segments: usize,
    /// Arrows along the critical path's jumps between ranks.
    pub path_jumps: usize,
}

/// The critical path to mark on the timeline, with the call sites its
/// segments name.
#[derive(Clone, Copy)]
pub struct PathMarks<'a> {
    pub path: &'a CriticalPath,
    pub sites: &'a CallSites,
}

/// Writes the timeline of `trace` to `out`, of the ranks and calls in
/// `window`. `times` gives each rank's call times; `path`, if given, is
/// marked on it; `progress` is told the number of calls read so far.
pub fn export(
    trace: &Trace,
    times: &RankTimes,
    format: Format,
    path: Option<PathMarks>,
    window: &Window,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary, ExportError> {
    // An aggregated trace fails here, before the whole trace is decoded.
    if let Some(first) = trace.ranks.first() {
        times(first).map_err(ExportError::Times)?;
    }
    let matching = matching::match_trace(trace, &matching::world_ranks(trace))?;
    let send_starts = send_starts(&matching, window, |rank| {
        let part = trace
            .rank(rank)
            .ok_or_else(|| ExportError::Times(format!("rank {rank} is not in the trace")))?;
        times(part).map_err(ExportError::Times)
    })?;
    let max_rank = trace.ranks.iter().map(|r| r.meta.rank).max().unwrap_or(0);
    let shown = trace.ranks.iter().filter(|p| window.has_rank(p.meta.rank));
    let ranks = shown.map(|part| {
        let spans = times(part).map_err(ExportError::Times)?;
        let calls = RankDecoder::new(trace, part).map(|c| c.map_err(ExportError::from));
        Ok(RankInput {
            rank: part.meta.rank,
            calls: Box::new(calls),
            spans,
        })
    });
    let timeline = Timeline {
        matching: &matching,
        send_starts: &send_starts,
        max_rank,
        path,
        window,
    };
    timeline.write(ranks, format, out, progress)
}

/// One rank's calls and their times.
struct RankInput<'a> {
    rank: u32,
    calls: Box<dyn Iterator<Item = Result<DecodedCall, ExportError>> + 'a>,
    spans: Vec<Span>,
}

/// A track of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Track {
    /// The rank's calls.
    Calls { rank: u32 },
    /// One lane of the rank's operations in flight.
    Requests { rank: u32, lane: usize },
    /// The critical path, across ranks.
    CriticalPath,
}

/// A slice on a track, with the arrows that leave and end at it.
struct Slice<'a> {
    track: Track,
    name: &'a str,
    start_ns: u64,
    end_ns: u64,
    args: &'a Map<String, Json>,
    /// Arrows leaving the slice, by id.
    flows_out: &'a [u64],
    /// Arrows of the critical path leaving the slice, by id.
    path_out: &'a [u64],
    /// Arrows ending in the slice.
    flows_in: &'a [Arrival],
}

/// An arrow ending in a receiving call: where in the call it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Arrival {
    id: u64,
    /// Within the receiving call's slice, and after the send's start when
    /// the clocks allow, so that viewers (which read events in time order)
    /// meet the arrow's start first.
    at_ns: u64,
    /// The receiving call ended before the send started, by the call
    /// times (clock offset or lossy timing error): the arrow goes back in
    /// time, and Perfetto does not draw it.
    backwards: bool,
    from_rank: u32,
    bytes: Option<u64>,
    /// A jump of the critical path, not a message.
    path: bool,
}

/// The two formats, written rank by rank.
trait TimelineWriter {
    /// The critical path's process and track.
    fn critical_path(&mut self) -> io::Result<()>;
    /// A rank's process and its tracks (`lanes` request lanes).
    fn rank(&mut self, rank: u32, lanes: usize) -> io::Result<()>;
    fn slice(&mut self, slice: &Slice) -> io::Result<()>;
    fn finish(&mut self) -> io::Result<()>;
}

/// The start of each match's send call (by match), from the times of the
/// ranks, read one rank at a time; None when the send or the call that
/// completed the receive has no time (a killed rank's last calls) or is
/// outside `window`: no arrow is drawn for it.
fn send_starts(
    matching: &Matching,
    window: &Window,
    mut times_of: impl FnMut(u32) -> Result<Vec<Span>, ExportError>,
) -> Result<Vec<Option<u64>>, ExportError> {
    // The calls each arrow needs a time for: (match, is the send, call).
    let mut by_rank: FxHashMap<u32, Vec<(usize, bool, u64)>> = FxHashMap::default();
    for (k, m) in matching.matches.iter().enumerate() {
        let (send, recv) = (&matching.operations[m.send], &matching.operations[m.recv]);
        by_rank
            .entry(send.rank)
            .or_default()
            .push((k, true, send.post));
        let arrival = recv.completion.unwrap_or(recv.post);
        by_rank
            .entry(recv.rank)
            .or_default()
            .push((k, false, arrival));
    }
    let mut ranks: Vec<u32> = by_rank.keys().copied().collect();
    ranks.sort_unstable();
    let mut starts = vec![None; matching.matches.len()];
    let mut timed = vec![true; matching.matches.len()];
    for rank in ranks {
        if !window.has_rank(rank) {
            by_rank[&rank]
                .iter()
                .for_each(|&(k, _, _)| timed[k] = false);
            continue;
        }
        let spans = times_of(rank)?;
        for &(k, is_send, call) in &by_rank[&rank] {
            let span = spans.get(call as usize);
            timed[k] &= span.is_some_and(|span| {
                let (start, end) = clamp(span);
                window.shows(rank, call, start, end)
            });
            if is_send {
                starts[k] = span.map(|span| clamp(span).0);
            }
        }
    }
    Ok(starts
        .into_iter()
        .zip(timed)
        .map(|(start, timed)| start.filter(|_| timed))
        .collect())
}

/// Arrows leaving and ending at one call: match indices, and the ids of
/// the critical path's arrows.
#[derive(Default)]
struct Flows {
    out: Vec<usize>,
    r#in: Vec<usize>,
    path_out: Vec<u64>,
    path_in: Vec<Arrival>,
}

/// What the timeline shows besides the calls.
struct Timeline<'m> {
    matching: &'m Matching,
    /// By match; None: the send has no time, and no arrow is drawn.
    send_starts: &'m [Option<u64>],
    max_rank: u32,
    path: Option<PathMarks<'m>>,
    window: &'m Window,
}

impl Timeline<'_> {
    fn write<'a>(
        &self,
        ranks: impl Iterator<Item = Result<RankInput<'a>, ExportError>>,
        format: Format,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportSummary, ExportError> {
        let matching = self.matching;
        let mut writer: Box<dyn TimelineWriter + '_> = match format {
            Format::Chrome => Box::new(chrome::ChromeWriter::new(out, self.max_rank)?),
            Format::Perfetto => Box::new(perfetto::PerfettoWriter::new(out)),
        };
        // Arrow k+1 goes from match k's send to the call that completed its receive.
        let mut flows: FxHashMap<(u32, u64), Flows> = FxHashMap::default();
        let mut messages = 0;
        for (k, m) in matching.matches.iter().enumerate() {
            if self.send_starts[k].is_none() {
                continue; // a call without a time
            }
            messages += 1;
            let (send, recv) = (&matching.operations[m.send], &matching.operations[m.recv]);
            flows.entry((send.rank, send.post)).or_default().out.push(k);
            let arrival = recv.completion.unwrap_or(recv.post);
            flows.entry((recv.rank, arrival)).or_default().r#in.push(k);
        }
        let mut summary = ExportSummary {
            messages,
            unmatched: matching.unmatched.len(),
            ..ExportSummary::default()
        };
        if let Some(path) = self.path {
            writer.critical_path()?;
            summary.path_segments = write_path(path, &mut *writer)?;
            summary.path_jumps = path_jumps(path.path, matching.matches.len() as u64, &mut flows);
        }
        let no_flows = Flows::default();
        let mut read = 0u64;
        for input in ranks {
            let RankInput { rank, calls, spans } = input?;
            if !self.window.has_rank(rank) {
                continue;
            }
            let requests = requests_of(rank, matching, &spans);
            writer.rank(rank, requests.lanes)?;
            let mut next_request = 0;
            let (mut written, mut shown, mut shown_requests) = (0u64, 0u64, 0usize);
            let mut calls = calls;
            for call in calls.by_ref() {
                let call = call?;
                let Some(span) = spans.get(call.seq as usize) else {
                    summary.untimed += 1; // a killed rank's last calls
                    break;
                };
                let (start_ns, end_ns) = clamp(span);
                written += 1;
                if !self.window.shows(rank, call.seq, start_ns, end_ns) {
                    // Operations posted by a call not shown are not shown.
                    while requests
                        .slices
                        .get(next_request)
                        .is_some_and(|r| r.operation.post == call.seq)
                    {
                        next_request += 1;
                    }
                    continue;
                }
                shown += 1;
                let flows = flows.get(&(rank, call.seq)).unwrap_or(&no_flows);
                let flows_out: Vec<u64> = flows.out.iter().map(|&k| k as u64 + 1).collect();
                let last_ns = if end_ns > start_ns {
                    end_ns - 1
                } else {
                    end_ns
                };
                let mut flows_in: Vec<Arrival> = flows
                    .r#in
                    .iter()
                    .map(|&k| self.arrival(k, start_ns, end_ns))
                    .collect();
                flows_in.extend(flows.path_in.iter().map(|a| Arrival {
                    at_ns: a.at_ns.clamp(start_ns, last_ns),
                    ..*a
                }));
                summary.backwards += flows_in.iter().filter(|a| a.backwards).count();
                let mut args = std::sync::Arc::unwrap_or_clone(call.args);
                args.insert("seq".into(), json!(call.seq));
                writer.slice(&Slice {
                    track: Track::Calls { rank },
                    name: call.func,
                    start_ns,
                    end_ns,
                    args: &args,
                    flows_out: &flows_out,
                    path_out: &flows.path_out,
                    flows_in: &flows_in,
                })?;
                // Operations posted by this call, from post to completion.
                while let Some(r) = requests.slices.get(next_request) {
                    if r.operation.post != call.seq {
                        break;
                    }
                    writer.slice(&Slice {
                        track: Track::Requests { rank, lane: r.lane },
                        name: r.operation.func,
                        start_ns: r.start_ns,
                        end_ns: r.end_ns,
                        args: &r.args,
                        flows_out: &[],
                        path_out: &[],
                        flows_in: &[],
                    })?;
                    next_request += 1;
                    shown_requests += 1;
                }
                progress(read + written);
            }
            for call in calls {
                call?;
                summary.untimed += 1;
            }
            if written as usize != spans.len() {
                return Err(ExportError::TimesMismatch {
                    rank,
                    calls: written,
                    times: spans.len(),
                });
            }
            summary.ranks += 1;
            summary.calls += shown;
            summary.requests += shown_requests;
            read += written;
        }
        writer.finish()?;
        Ok(summary)
    }

    /// Where match `k`'s arrow ends in its receiving call [start, end].
    fn arrival(&self, k: usize, start_ns: u64, end_ns: u64) -> Arrival {
        let m = &self.matching.matches[k];
        let after_send = self.send_starts[k].map_or(start_ns, |s| s + 1);
        // Short of the end, so that the arrow ends inside the call.
        let last = if end_ns > start_ns {
            end_ns - 1
        } else {
            end_ns
        };
        Arrival {
            id: k as u64 + 1,
            at_ns: after_send.clamp(start_ns, last),
            backwards: after_send > last,
            from_rank: self.matching.operations[m.send].rank,
            bytes: m.bytes,
            path: false,
        }
    }
}

/// The critical path's track: one slice per segment, in time order (a
/// segment that starts before the previous one ended, by clocks that
/// disagree, is shown from that end). Returns the number of slices.
fn write_path(marks: PathMarks, writer: &mut dyn TimelineWriter) -> io::Result<usize> {
    let mut shown_until = 0u64;
    for s in marks.path.segments.iter() {
        let s = &s;
        let (start_ns, end_ns) = clamp(&Span {
            start_ns: s.start_ns,
            end_ns: s.end_ns,
        });
        let start_ns = start_ns.max(shown_until);
        let end_ns = end_ns.max(start_ns);
        shown_until = end_ns;
        let mut args = Map::new();
        args.insert("rank".into(), json!(s.rank));
        let name = match s.activity {
            Activity::Computation { after } => {
                args.insert("activity".into(), json!("computation"));
                args.insert("after call".into(), json!(after));
                format!("rank {}: computation", s.rank)
            }
            Activity::Call { seq, site } => {
                let func = marks.sites.func(site);
                args.insert("activity".into(), json!(func));
                args.insert("call".into(), json!(seq));
                format!("rank {}: {func}", s.rank)
            }
        };
        args.insert("duration_ns".into(), json!(s.duration_ns()));
        writer.slice(&Slice {
            track: Track::CriticalPath,
            name: &name,
            start_ns,
            end_ns,
            args: &args,
            flows_out: &[],
            path_out: &[],
            flows_in: &[],
        })?;
    }
    Ok(marks.path.segments.len())
}

/// Arrows along the path's jumps between ranks, numbered after the
/// `messages` arrows: from the call on the rank the path leaves (the call
/// its segment is in, or the one that ends its computation) to the call on
/// the rank it reaches (the call its segment is in, or the one its
/// computation follows). Returns the number of arrows.
fn path_jumps(
    path: &CriticalPath,
    messages: u64,
    flows: &mut FxHashMap<(u32, u64), Flows>,
) -> usize {
    let mut jumps = 0;
    for (a, b) in path.segments.jumps() {
        let from = match a.activity {
            Activity::Computation { after } => u64::from(after) + 1,
            Activity::Call { seq, .. } => u64::from(seq),
        };
        let to = match b.activity {
            Activity::Computation { after } => u64::from(after),
            Activity::Call { seq, .. } => u64::from(seq),
        };
        jumps += 1;
        let id = messages + jumps as u64;
        flows.entry((a.rank, from)).or_default().path_out.push(id);
        flows
            .entry((b.rank, to))
            .or_default()
            .path_in
            .push(Arrival {
                id,
                at_ns: b.start_ns.max(a.end_ns).max(0) as u64,
                backwards: false,
                from_rank: a.rank,
                bytes: None,
                path: true,
            });
    }
    jumps
}

/// Nanoseconds from the run's start; a time before it (a clock offset's
/// error) is shown at the start.
fn clamp(span: &Span) -> (u64, u64) {
    let start = span.start_ns.max(0) as u64;
    (start, (span.end_ns.max(0) as u64).max(start))
}

/// A non-blocking operation of one rank, placed on a lane.
struct RequestSlice<'m> {
    operation: &'m Operation,
    lane: usize,
    start_ns: u64,
    end_ns: u64,
    args: Map<String, Json>,
}

struct RankRequests<'m> {
    /// In posting order.
    slices: Vec<RequestSlice<'m>>,
    lanes: usize,
}

/// The rank's operations that a later call completed, from the start of
/// the posting call to the end of the completing one.
fn requests_of<'m>(rank: u32, matching: &'m Matching, spans: &[Span]) -> RankRequests<'m> {
    // Operations are grouped by rank.
    let ops = &matching.operations;
    let first = ops.partition_point(|op| op.rank < rank);
    let end = ops.partition_point(|op| op.rank <= rank);
    let mut slices: Vec<RequestSlice> = ops[first..end.max(first)]
        .iter()
        .filter_map(|op| {
            let completion = op.completion.filter(|&c| c != op.post)?;
            let post = spans.get(op.post as usize)?;
            let done = spans.get(completion as usize)?;
            let (start_ns, _) = clamp(post);
            let (_, end_ns) = clamp(done);
            Some(RequestSlice {
                operation: op,
                lane: 0,
                start_ns,
                end_ns: end_ns.max(start_ns),
                args: request_args(op, completion),
            })
        })
        .collect();
    slices.sort_by_key(|r| r.operation.post);
    let intervals: Vec<(u64, u64)> = slices.iter().map(|r| (r.start_ns, r.end_ns)).collect();
    let (lanes, count) = lanes::assign_lanes(&intervals);
    for (slice, lane) in slices.iter_mut().zip(lanes) {
        slice.lane = lane;
    }
    RankRequests {
        slices,
        lanes: count,
    }
}

fn request_args(op: &Operation, completion: u64) -> Map<String, Json> {
    let mut args = Map::new();
    let (peer, tag) = match op.direction {
        Direction::Send => ("dest", "tag"),
        Direction::Recv => ("source", "tag"),
    };
    args.insert(
        peer.into(),
        match &op.peer {
            Peer::Rank(r) => json!(r),
            Peer::Any => json!("MPI_ANY_SOURCE"),
            Peer::ProcNull => json!("MPI_PROC_NULL"),
            Peer::Unknown(text) => json!(text),
        },
    );
    args.insert(
        tag.into(),
        op.tag.map_or(json!("MPI_ANY_TAG"), |t| json!(t)),
    );
    if let Some(comm) = &op.comm {
        args.insert("comm".into(), json!(comm.to_string()));
    }
    args.insert("posted at".into(), json!(op.post));
    args.insert("completed at".into(), json!(completion));
    args
}
