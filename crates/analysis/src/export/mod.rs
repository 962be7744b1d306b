//! Timelines of a trace for Perfetto (`ui.perfetto.dev`) and Chrome's
//! trace viewer: one process per rank, named `rank N` and sorted by rank,
//! with every call a slice named by its MPI function and carrying its
//! arguments; an arrow from each send to the call that completed its
//! matching receive; and, if asked for ([`Content`]), each call's number
//! and each non-blocking operation (and each message taken by
//! MPI_Mprobe) as a slice from its post to its completion on the rank's
//! `requests` tracks. With the run's critical path, a `critical path`
//! process comes first, with one slice per segment of the path
//! (named by its rank and activity), and arrows follow the path's jumps
//! between ranks, from the call on the rank it leaves to the call on the
//! rank it reaches.
//!
//! Memory does not grow with the run's calls: a first pass matches the
//! messages in time order and keeps the arrows' ends in a temporary file
//! (`arrows`); a second writes the timeline rank by rank, reading each
//! rank's calls, times and arrows side by side, and its requests as they
//! complete (`requests`).

mod arrows;
mod chrome;
pub mod perfetto;
mod requests;
#[cfg(test)]
mod tests;
mod window;

pub use window::{Bound, Window, parse_ranks};

use crate::critical_path::{Activity, CallSites, CriticalPath};
use crate::decode::{Args, DecodeError, DecodedCall, RankDecoder};
use crate::matching::{self, Matcher};
use crate::replay::{Reading, ReplayError, match_in_time_order};
use crate::sites::Sites;
pub use crate::timeline::Span;
use crate::timeline::{Source, TimelineError, rank_spans};
use arrows::{Arrows, CallArrows, FlowIds, MarkReader};
use mpigram_trace::{RankPart, Trace};
use requests::{RankRequests, RequestSlice};
use serde_json::{Map, json};
use std::io::{self, Write};
use std::sync::Arc;

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
    #[error(transparent)]
    Timeline(#[from] TimelineError),
    #[error("cannot keep the timeline's arrows in a temporary file: {0}")]
    Spill(io::Error),
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

/// What a timeline shows: each call of the window's ranks and calls (its
/// name, times and arguments) and each message's arrow, and the details
/// asked for, which cost space (in Perfetto's format: 8 bytes a call for
/// the numbers, about 30 a request for the requests).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Content {
    pub window: Window,
    /// Each non-blocking operation as a slice from the start of the call
    /// that posted it to the end of the one that completed it, on the
    /// rank's `requests` tracks.
    pub requests: bool,
    /// Each call's number on its rank (`seq`), among its arguments.
    pub seq: bool,
}

/// The critical path to mark on the timeline, with the call sites its
/// segments name.
#[derive(Clone, Copy)]
pub struct PathMarks<'a> {
    pub path: &'a CriticalPath,
    pub sites: &'a CallSites,
}

/// Writes the timeline of `trace` to `out`, showing `content`, with the
/// call times of `source`; `path`, if given, is marked on it; `progress`
/// is told the number of calls read so far.
pub fn export(
    trace: &Trace,
    source: Source,
    format: Format,
    path: Option<PathMarks>,
    content: &Content,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary, ExportError> {
    let run_start = trace.run_start_ns();
    // An aggregated trace fails here, before any call is read.
    if let Some(first) = trace.ranks.first() {
        rank_spans(trace, first, source, run_start)
            .map_err(|e| ExportError::Times(e.to_string()))?;
    }
    let members = matching::world_ranks(trace);
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let sites = Sites::new(&trace.grammar);
    let mut matcher = Matcher::new(&members, world);
    let ids = FlowIds::new(format == Format::Perfetto);
    let mut arrows = Arrows::new(&content.window, ids);
    let matched = Reading::of(trace, &sites, source, run_start).and_then(|reading| {
        match_in_time_order(trace, reading, &mut matcher, |m| {
            arrows.found(m.found.drain(..))
        })
    });
    matched.map_err(|e| match e {
        ReplayError::Timeline(e) => ExportError::Timeline(e),
        ReplayError::Decode(e) => ExportError::Decode(e),
        ReplayError::Spill(e) => ExportError::Spill(e),
    })?;
    let max_rank = trace.ranks.iter().map(|r| r.meta.rank).max().unwrap_or(0);
    let mut parts: Vec<&RankPart> = trace.ranks.iter().collect();
    parts.sort_by_key(|p| p.meta.rank);
    let ranks = parts.into_iter().map(|part| {
        let spans = rank_spans(trace, part, source, run_start)?;
        Ok(RankInput {
            rank: part.meta.rank,
            calls: Box::new(RankDecoder::new(trace, part).map(|c| c.map_err(ExportError::from))),
            spans: Box::new(spans.map(|s| s.map_err(ExportError::from))),
        })
    });
    let timeline = Timeline {
        max_rank,
        path,
        content,
    };
    timeline.write(arrows, ranks, format, out, progress)
}

/// A rank's calls, or its times, as read.
type Stream<'a, T> = Box<dyn Iterator<Item = Result<T, ExportError>> + 'a>;

/// One rank's calls and their times, in call order.
struct RankInput<'a> {
    rank: u32,
    calls: Stream<'a, DecodedCall>,
    spans: Stream<'a, Span>,
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
    args: &'a Args,
    /// The call's number on its rank (a call's slice, if shown).
    seq: Option<u64>,
    /// Arrows leaving the slice, by id.
    flows_out: &'a [u64],
    /// Arrows of the critical path leaving the slice, by id.
    path_out: &'a [u64],
    /// Arrows ending in the slice, in time order.
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
    /// A rank's process and the track of its calls.
    fn rank(&mut self, rank: u32) -> io::Result<()>;
    /// A track for the rank's requests (lanes 0, 1, ... in turn), declared
    /// before its first slice.
    fn lane(&mut self, rank: u32, lane: usize) -> io::Result<()>;
    fn slice(&mut self, slice: &Slice) -> io::Result<()>;
    fn finish(&mut self) -> io::Result<()>;
}

/// What the timeline shows besides the calls.
struct Timeline<'m> {
    max_rank: u32,
    path: Option<PathMarks<'m>>,
    content: &'m Content,
}

impl Timeline<'_> {
    /// Writes the ranks (in rank order) with the arrows found in the first
    /// pass.
    fn write<'a>(
        &self,
        mut arrows: Arrows,
        ranks: impl Iterator<Item = Result<RankInput<'a>, ExportError>>,
        format: Format,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportSummary, ExportError> {
        let mut writer: Box<dyn TimelineWriter + '_> = match format {
            Format::Chrome => Box::new(chrome::ChromeWriter::new(out, self.max_rank)?),
            Format::Perfetto => Box::new(perfetto::PerfettoWriter::new(out)),
        };
        let mut summary = ExportSummary::default();
        if let Some(path) = self.path {
            writer.critical_path()?;
            summary.path_segments = write_path(path, &mut *writer)?;
            arrows.path_jumps(path.path);
        }
        (summary.messages, summary.path_jumps) = (arrows.messages, arrows.path_jumps);
        summary.unmatched = arrows.unmatched;
        let marks = arrows.sorted().map_err(ExportError::Spill)?;
        let mut marks = MarkReader::new(&marks);
        let mut read = 0u64;
        for input in ranks {
            let input = input?;
            if !self.content.window.has_rank(input.rank) {
                continue;
            }
            let (written, untimed, shown) =
                self.write_rank(input, &mut marks, &mut *writer, &mut summary, &mut |n| {
                    progress(read + n)
                })?;
            summary.ranks += 1;
            summary.calls += shown;
            summary.untimed += untimed;
            read += written;
        }
        writer.finish()?;
        Ok(summary)
    }

    /// Writes one rank's calls and requests; returns the calls with times,
    /// the calls without and the calls shown.
    fn write_rank(
        &self,
        input: RankInput,
        marks: &mut MarkReader,
        writer: &mut dyn TimelineWriter,
        summary: &mut ExportSummary,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(u64, u64, u64), ExportError> {
        let RankInput {
            rank,
            mut calls,
            mut spans,
        } = input;
        writer.rank(rank)?;
        let mut requests = self.content.requests.then(|| RankRequests::new(rank));
        let mut completed: Vec<RequestSlice> = Vec::new();
        let mut arrows = CallArrows::default();
        let (mut written, mut shown) = (0u64, 0u64);
        for call in calls.by_ref() {
            let call = call?;
            let Some(span) = spans.next().transpose()? else {
                // A killed rank's last calls have no times.
                let untimed = 1 + calls.try_fold(0, |n, c| c.map(|_| n + 1))?;
                return Ok((written, untimed, shown));
            };
            let (start_ns, end_ns) = clamp(&span);
            written += 1;
            let visible = self.content.window.shows(rank, call.seq, start_ns, end_ns);
            if let Some(requests) = &mut requests {
                requests.call(&call, (start_ns, end_ns), visible, &mut completed);
            }
            if visible {
                shown += 1;
                marks
                    .at(rank, call.seq, (start_ns, end_ns), &mut arrows)
                    .map_err(ExportError::Spill)?;
                summary.backwards += arrows.r#in.iter().filter(|a| a.backwards).count();
                writer.slice(&Slice {
                    track: Track::Calls { rank },
                    name: call.func,
                    start_ns,
                    end_ns,
                    args: &call.args,
                    seq: self.content.seq.then_some(call.seq),
                    flows_out: &arrows.out,
                    path_out: &arrows.path_out,
                    flows_in: &arrows.r#in,
                })?;
            }
            // Operations this call completed, from post to completion.
            for r in completed.drain(..) {
                let track = Track::Requests { rank, lane: r.lane };
                if r.new_lane {
                    writer.lane(rank, r.lane)?;
                }
                writer.slice(&Slice {
                    track,
                    name: r.func,
                    start_ns: r.start_ns,
                    end_ns: r.end_ns,
                    args: &r.args,
                    seq: None,
                    flows_out: &[],
                    path_out: &[],
                    flows_in: &[],
                })?;
                summary.requests += 1;
            }
            progress(written);
        }
        let more = spans.try_fold(0usize, |n, s| s.map(|_| n + 1))?;
        if more > 0 {
            return Err(ExportError::TimesMismatch {
                rank,
                calls: written,
                times: written as usize + more,
            });
        }
        Ok((written, 0, shown))
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
        let args = Arc::new(args);
        writer.slice(&Slice {
            track: Track::CriticalPath,
            name: &name,
            start_ns,
            end_ns,
            args: &args,
            seq: None,
            flows_out: &[],
            path_out: &[],
            flows_in: &[],
        })?;
    }
    Ok(marks.path.segments.len())
}

/// Nanoseconds from the run's start; a time before it (a clock offset's
/// error) is shown at the start.
fn clamp(span: &Span) -> (u64, u64) {
    let start = span.start_ns.max(0) as u64;
    (start, (span.end_ns.max(0) as u64).max(start))
}
