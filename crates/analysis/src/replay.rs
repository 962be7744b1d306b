//! Reading a trace's ranks side by side, a chunk of calls at a time, for
//! the analyses that match operations across ranks (critical path,
//! profile): each rank's calls decoded, timed and placed (call sites) as
//! they are read, only the calls with operations kept, and the matcher
//! ([`Matcher`]) fed in time order, so that what is held is what was in
//! flight in the run, never the calls.
//!
//! A rank's reader also measures its program order for the critical
//! path's walk ([`crate::critical_path`]): the *monotone length* up to
//! each vertex (Σ max(0, t(v) − t(v−1)) over the call starts and ends
//! from the rank's first) and, between two calls with operations, the
//! farthest vertex.

use crate::critical_path::walk::{Farthest, Step};
use crate::decode::{DecodeError, DecodedCall, RankDecoder};
use crate::matching::{CallAt, Matcher, OperationLog, RankEvent, handles};
use crate::sites::{SiteWalk, Sites};
use crate::timeline::{Source, Span, SpanReader, TimelineError, rank_spans};
use mpigram_trace::{RankPart, Trace};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::iter::Peekable;

/// Calls read from a rank at a time.
pub(crate) const CHUNK: u64 = 1 << 12;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Timeline(#[from] TimelineError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("cannot keep the analysis's records in a temporary file: {0}")]
    Spill(#[from] std::io::Error),
}

/// A call with operations, as read.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReadCall {
    /// The call's number on its rank.
    pub(crate) seq: u64,
    pub(crate) at: CallAt,
    /// For the walk, if the call has times.
    pub(crate) step: Option<Step>,
    /// How many events the call has (the next ones of its chunk).
    pub(crate) events: usize,
}

/// What a rank's reader found at its end.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RankEnd {
    /// Operations never completed.
    pub(crate) events: Vec<RankEvent>,
    /// The farthest vertex after the last call with operations.
    pub(crate) tail: Option<Farthest>,
    /// Calls with times; calls read.
    pub(crate) timed: u64,
    pub(crate) calls: u64,
    /// The first call's start and the last timed call's end.
    pub(crate) first_ns: Option<i64>,
    pub(crate) last_ns: Option<i64>,
    /// Time between calls (computation): Σ max(0, start − previous end).
    pub(crate) compute_ns: i64,
}

/// One rank's calls, read a chunk at a time.
pub(crate) struct RankReader<'t> {
    /// The rank's index among the ranks read.
    index: u32,
    decoder: Peekable<RankDecoder<'t>>,
    spans: SpanReader<'t>,
    sites: Option<SiteWalk<'t, 't>>,
    log: OperationLog,
    seq: u64,
    /// The last vertex's time and monotone length.
    last: Option<(i64, i64)>,
    /// The farthest vertex since the last call with operations.
    stretch: Option<Farthest>,
    end: RankEnd,
    done: bool,
}

impl<'t> RankReader<'t> {
    /// The reader of `part`, the `index`-th rank read.
    pub(crate) fn new(
        index: u32,
        trace: &'t Trace,
        part: &'t RankPart,
        sites: &'t Sites<'t>,
        source: Source,
        run_start_ns: f64,
    ) -> Result<RankReader<'t>, ReplayError> {
        let spans = rank_spans(trace, part, source, run_start_ns)?;
        Ok(RankReader::with_spans(index, trace, part, sites, spans))
    }

    /// The reader of `part` with its calls' times from `spans`.
    fn with_spans(
        index: u32,
        trace: &'t Trace,
        part: &'t RankPart,
        sites: &'t Sites<'t>,
        spans: SpanReader<'t>,
    ) -> RankReader<'t> {
        RankReader {
            index,
            decoder: RankDecoder::new(trace, part).only(handles).peekable(),
            spans,
            sites: sites.walk(part.meta.rank),
            log: OperationLog::new(part.meta.rank),
            seq: 0,
            last: None,
            stretch: None,
            end: RankEnd::default(),
            done: false,
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// The end of the last timed call read.
    pub(crate) fn frontier(&self) -> i64 {
        self.end.last_ns.unwrap_or(i64::MIN)
    }

    /// Reads up to `calls` calls; the calls with operations go to `out`.
    /// At the rank's end, what it found there.
    pub(crate) fn read(
        &mut self,
        calls: u64,
        out: &mut Buffers,
    ) -> Result<Option<RankEnd>, ReplayError> {
        if self.done {
            return Ok(None);
        }
        for _ in 0..calls {
            let Some((site, _)) = self.sites.as_mut().and_then(Iterator::next) else {
                return self.finish().map(Some);
            };
            let seq = self.seq;
            self.seq += 1;
            let span = self.spans.next().transpose()?;
            let at = CallAt { span, site };
            if let Some(span) = span {
                if let Some(last) = self.end.last_ns {
                    self.end.compute_ns += (span.start_ns - last).max(0);
                }
                self.end.first_ns.get_or_insert(span.start_ns);
                self.end.last_ns = Some(span.end_ns);
                self.end.timed += 1;
            }
            let call: Option<DecodedCall> = match self.decoder.peek() {
                Some(Ok(c)) if c.seq == seq => self.decoder.next().transpose()?,
                Some(Err(_)) => return Err(self.decode_error()),
                _ => None,
            };
            let before = out.events.len();
            if let Some(call) = call {
                self.log.record(&call, at);
                self.log.move_events(&mut out.events);
            }
            let events = out.events.len() - before;
            let step = span.map(|span| self.step(seq, span, events > 0));
            if events > 0 {
                out.calls.push(ReadCall {
                    seq,
                    at,
                    step: step.flatten(),
                    events,
                });
            }
        }
        Ok(None)
    }

    /// Measures the call's vertices; its step if it has operations.
    fn step(&mut self, seq: u64, span: Span, operations: bool) -> Option<Step> {
        let before = self.last.map(|l| l.0);
        let c_of = |last: Option<(i64, i64)>, t: i64| last.map_or(0, |(tl, c)| c + (t - tl).max(0));
        let c_start = c_of(self.last, span.start_ns);
        let c_end = c_start + (span.end_ns - span.start_ns).max(0);
        self.last = Some((span.end_ns, c_end));
        if operations {
            return Some(Step {
                seq,
                start: span.start_ns,
                end: span.end_ns,
                before,
                c_start,
                c_end,
                stretch: self.stretch.take(),
            });
        }
        for (vertex, t, c) in [
            (2 * seq, span.start_ns, c_start),
            (2 * seq + 1, span.end_ns, c_end),
        ] {
            let here = Farthest {
                length: c,
                t,
                vertex,
            };
            self.stretch = Some(Farthest::max(self.stretch, here));
        }
        None
    }

    /// The error the decoder's next item is.
    fn decode_error(&mut self) -> ReplayError {
        match self.decoder.next() {
            Some(Err(e)) => e.into(),
            _ => unreachable!("called when the next item is an error"),
        }
    }

    fn finish(&mut self) -> Result<RankEnd, ReplayError> {
        if let Some(Err(_)) = self.decoder.peek() {
            return Err(self.decode_error());
        }
        self.done = true;
        self.log.end();
        let mut end = std::mem::take(&mut self.end);
        end.events = self.log.take_events();
        end.tail = self.stretch.take();
        end.calls = self.seq;
        Ok(end)
    }
}

/// What was read of a rank: a call with operations and its events, or the
/// rank's end.
pub(crate) enum Read<'e> {
    Call(ReadCall, &'e mut dyn Iterator<Item = RankEvent>),
    End(RankEnd),
}

/// A chunk's calls with operations and their events, in order; kept from
/// chunk to chunk (cleared, not allocated anew).
#[derive(Default, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Buffers {
    calls: Vec<ReadCall>,
    events: Vec<RankEvent>,
}

/// The calls one rank's reader gave, and its end if it came.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Chunk {
    /// The rank's index among the ranks read.
    pub(crate) rank: u32,
    read: Buffers,
    end: Option<RankEnd>,
    /// The reader's frontier after the chunk.
    frontier: i64,
}

impl Chunk {
    /// The next chunk of `reader`, in `read` (emptied).
    pub(crate) fn read(reader: &mut RankReader, mut read: Buffers) -> Result<Chunk, ReplayError> {
        read.calls.clear();
        read.events.clear();
        let end = reader.read(CHUNK, &mut read)?;
        Ok(Chunk {
            rank: reader.index,
            read,
            end,
            frontier: reader.frontier(),
        })
    }

    /// The rank's end is in it.
    pub(crate) fn ends(&self) -> bool {
        self.end.is_some()
    }
}

/// Where the ranks' chunks come from: their readers here
/// ([`Readers`]), or other processes ([`crate::parallel`]).
pub(crate) trait Chunks: Send {
    /// The number of ranks.
    fn ranks(&self) -> usize;
    /// The next chunk of each of `ranks` (by index) not at its end;
    /// `spare`: emptied buffers to fill.
    fn read(&mut self, ranks: &[u32], spare: &mut Vec<Buffers>) -> Result<Vec<Chunk>, ReplayError>;
}

/// Readers of ranks of a trace, here; None for ranks read elsewhere.
pub(crate) struct Readers<'t>(pub(crate) Vec<Option<RankReader<'t>>>);

impl<'t> Readers<'t> {
    /// The readers of the ranks of `trace` (by index) that `here` picks.
    pub(crate) fn of(
        trace: &'t Trace,
        sites: &'t Sites<'t>,
        source: Source,
        run_start_ns: f64,
        here: impl Fn(u32) -> bool,
    ) -> Result<Readers<'t>, ReplayError> {
        let readers = trace
            .ranks
            .iter()
            .enumerate()
            .map(|(r, part)| {
                here(r as u32)
                    .then(|| RankReader::new(r as u32, trace, part, sites, source, run_start_ns))
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        Ok(Readers(readers))
    }
}

impl Chunks for Readers<'_> {
    fn ranks(&self) -> usize {
        self.0.len()
    }

    fn read(&mut self, ranks: &[u32], spare: &mut Vec<Buffers>) -> Result<Vec<Chunk>, ReplayError> {
        read_chunks(&mut self.0, ranks, spare)
    }
}

/// Every rank's reader.
///
/// While the calls of one chunk of ranks are handed out (matched, walked),
/// the next chunk of the same ranks is read on another thread: each rank's
/// chunks are the same whenever they are read, so the calls handed out are
/// those of reading on demand, and at most one chunk per rank is read
/// ahead.
pub(crate) struct Reading<'t> {
    chunks: Box<dyn Chunks + 't>,
    /// Chunks read ahead and not handed out yet (at most one per rank).
    ahead: Vec<Chunk>,
    /// Each rank's frontier and whether its end was handed out, as of the
    /// chunks handed out.
    frontiers: Vec<i64>,
    ended: Vec<bool>,
    /// Why reading ahead failed: reported when the next chunks are asked for.
    failed: Option<ReplayError>,
    /// Emptied chunk buffers, to be filled again (not allocated anew).
    spare: Vec<Buffers>,
}

impl<'t> Reading<'t> {
    /// The readers of every rank of `trace`, in the order of its ranks.
    pub(crate) fn of(
        trace: &'t Trace,
        sites: &'t Sites<'t>,
        source: Source,
        run_start_ns: f64,
    ) -> Result<Reading<'t>, ReplayError> {
        let readers = Readers::of(trace, sites, source, run_start_ns, |_| true)?;
        Ok(Reading::from(Box::new(readers)))
    }

    /// The readers of every rank of `trace`, for analyses that need no
    /// times: the times of `source` where a rank has per-call times, no
    /// times for a rank with aggregated timing only or when `source` is
    /// None. Ranks without times come in call order, a chunk at a time
    /// beside the others, never held back for being ahead in time.
    pub(crate) fn of_any_timing(
        trace: &'t Trace,
        sites: &'t Sites<'t>,
        source: Option<Source>,
        run_start_ns: f64,
    ) -> Result<Reading<'t>, ReplayError> {
        let readers = trace
            .ranks
            .iter()
            .enumerate()
            .map(|(r, part)| {
                let spans = match source.map(|s| rank_spans(trace, part, s, run_start_ns)) {
                    Some(Err(TimelineError::Aggregated { .. })) | None => {
                        SpanReader::untimed(trace, part)
                    }
                    Some(spans) => spans?,
                };
                Ok(Some(RankReader::with_spans(
                    r as u32, trace, part, sites, spans,
                )))
            })
            .collect::<Result<_, ReplayError>>()?;
        Ok(Reading::from(Box::new(Readers(readers))))
    }

    /// The readers of the ranks of `trace` (by index) that `here` picks;
    /// the others count as read.
    pub(crate) fn of_some(
        trace: &'t Trace,
        sites: &'t Sites<'t>,
        source: Source,
        run_start_ns: f64,
        here: impl Fn(u32) -> bool,
    ) -> Result<Reading<'t>, ReplayError> {
        let readers = Readers::of(trace, sites, source, run_start_ns, &here)?;
        let mut reading = Reading::from(Box::new(readers));
        for (r, ended) in reading.ended.iter_mut().enumerate() {
            *ended = !here(r as u32);
        }
        Ok(reading)
    }

    /// The ranks of `chunks`.
    pub(crate) fn from(chunks: Box<dyn Chunks + 't>) -> Reading<'t> {
        let n = chunks.ranks();
        Reading {
            chunks,
            ahead: Vec::new(),
            frontiers: vec![i64::MIN; n],
            ended: vec![false; n],
            failed: None,
            spare: Vec::new(),
        }
    }

    /// The ranks (by index) with calls still to hand out.
    pub(crate) fn open(&self) -> Vec<u32> {
        (0..self.ended.len() as u32)
            .filter(|&r| !self.ended[r as usize])
            .collect()
    }

    /// Where rank `r`'s calls handed out have got to in time.
    pub(crate) fn frontier(&self, r: u32) -> i64 {
        self.frontiers[r as usize]
    }

    /// Hands the next chunk of each of `ranks` (by index) to `each`, in
    /// time order across the ranks (each rank's in its order), reading
    /// the chunks after them meanwhile.
    pub(crate) fn next(
        &mut self,
        ranks: &[u32],
        each: impl FnMut(u32, Read<'_>),
    ) -> Result<(), ReplayError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let (mut chunks, ahead): (Vec<Chunk>, Vec<Chunk>) = std::mem::take(&mut self.ahead)
            .into_iter()
            .partition(|c| ranks.contains(&c.rank));
        self.ahead = ahead;
        let unread: Vec<u32> = ranks
            .iter()
            .copied()
            .filter(|r| !chunks.iter().any(|c| c.rank == *r))
            .collect();
        chunks.extend(self.chunks.read(&unread, &mut self.spare)?);
        // Handed out in rank order, as read.
        chunks.sort_unstable_by_key(|c| c.rank);
        for c in &chunks {
            self.frontiers[c.rank as usize] = c.frontier;
            self.ended[c.rank as usize] |= c.end.is_some();
        }
        let source = &mut self.chunks;
        let mut buffers: Vec<Buffers> = ranks
            .iter()
            .map(|_| self.spare.pop().unwrap_or_default())
            .collect();
        let mut read_ahead = Ok(Vec::new());
        rayon::in_place_scope(|scope| {
            scope.spawn(|_| read_ahead = source.read(ranks, &mut buffers));
            in_time_order(&mut chunks, each);
        });
        self.spare.extend(buffers);
        self.spare.extend(chunks.into_iter().map(|c| c.read));
        match read_ahead {
            Ok(read) => self.ahead.extend(read),
            Err(e) => self.failed = Some(e),
        }
        Ok(())
    }
}

/// Hands every call with operations of every rank of `trace` to `each`
/// (by the rank's index), and each rank's end: the ranks are read side by
/// side, a chunk of calls at a time, the ranks furthest behind in time
/// first; the calls of the ranks read together in time order, each
/// rank's in its order. Stops early when `go_on` (asked before each
/// chunk) says so.
pub(crate) fn read_in_time_order(
    mut reading: Reading,
    mut go_on: impl FnMut() -> bool,
    mut each: impl FnMut(u32, Read<'_>),
) -> Result<(), ReplayError> {
    while go_on() && reading.step(&mut each)? {}
    Ok(())
}

impl Reading<'_> {
    /// Where the ranks with calls still to hand out have got to in time,
    /// the one furthest behind's (None once every rank was handed out).
    pub(crate) fn behind(&self) -> Option<i64> {
        self.open().iter().map(|&r| self.frontier(r)).min()
    }

    /// Hands out the next chunk of the ranks furthest behind in time (as
    /// [`read_in_time_order`]); false if every rank was handed out.
    pub(crate) fn step(&mut self, each: impl FnMut(u32, Read<'_>)) -> Result<bool, ReplayError> {
        self.step_unless(|_| false, each)
    }

    /// [`Reading::step`], leaving out the ranks (by index) that `ahead`
    /// says are ahead of the others, unless that leaves none: ranks
    /// without times are all furthest behind, and only what the reader of
    /// their calls knows can tell which of them to wait for.
    pub(crate) fn step_unless(
        &mut self,
        ahead: impl Fn(u32) -> bool,
        each: impl FnMut(u32, Read<'_>),
    ) -> Result<bool, ReplayError> {
        let open = self.open();
        let Some(behind) = self.behind() else {
            return Ok(false);
        };
        let mut ranks: Vec<u32> = open
            .into_iter()
            .filter(|&r| self.frontier(r) <= behind)
            .collect();
        if ranks.iter().any(|&r| !ahead(r)) {
            ranks.retain(|&r| !ahead(r));
        }
        self.next(&ranks, each)?;
        Ok(true)
    }
}

/// Matches the operations of every rank of `trace` in time order
/// ([`read_in_time_order`]), feeding them to `matcher`; `found` is called
/// after each call and each rank's end with what the matcher found (in
/// `matcher.found`), and once more after the end.
pub(crate) fn match_in_time_order(
    trace: &Trace,
    reading: Reading,
    matcher: &mut Matcher,
    mut found: impl FnMut(&mut Matcher),
) -> Result<(), ReplayError> {
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    read_in_time_order(
        reading,
        || true,
        |r, read| {
            let rank = world[r as usize];
            match read {
                Read::Call(_, events) => {
                    for e in events {
                        matcher.feed(rank, e);
                    }
                }
                Read::End(end) => {
                    for e in end.events {
                        matcher.feed(rank, e);
                    }
                    matcher.end_rank(rank);
                }
            }
            found(matcher);
        },
    )?;
    matcher.finish();
    found(matcher);
    Ok(())
}

/// Reads the next chunk of each of `ranks` (by index) not at its end, in
/// parallel.
fn read_chunks(
    readers: &mut [Option<RankReader>],
    ranks: &[u32],
    spare: &mut Vec<Buffers>,
) -> Result<Vec<Chunk>, ReplayError> {
    let wanted: Vec<(&mut RankReader, Buffers)> = readers
        .iter_mut()
        .enumerate()
        .filter(|(r, _)| ranks.contains(&(*r as u32)))
        .filter_map(|(_, reader)| reader.as_mut().filter(|reader| !reader.done()))
        .map(|reader| (reader, spare.pop().unwrap_or_default()))
        .collect();
    wanted
        .into_par_iter()
        .map(|(reader, read)| Chunk::read(reader, read))
        .collect()
}

/// Hands the chunks' calls to `each` in time order across ranks (each
/// rank's in its order), emptying them.
fn in_time_order(chunks: &mut [Chunk], mut each: impl FnMut(u32, Read<'_>)) {
    type Queue<'c> = (
        u32,
        std::vec::Drain<'c, ReadCall>,
        std::vec::Drain<'c, RankEvent>,
        Option<RankEnd>,
    );
    let mut queues: Vec<Queue> = chunks
        .iter_mut()
        .map(|c| {
            let Buffers { calls, events } = &mut c.read;
            (c.rank, calls.drain(..), events.drain(..), c.end.take())
        })
        .collect();
    // An untimed call (a killed rank's last) comes after the timed ones.
    let time = |c: &ReadCall| c.at.span.map_or(i64::MAX, |s| s.start_ns);
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = queues
        .iter()
        .enumerate()
        .map(|(q, (_, calls, _, _))| Reverse((calls.as_slice().first().map_or(i64::MAX, time), q)))
        .collect();
    while let Some(Reverse((_, q))) = heap.pop() {
        let (r, calls, events, end) = &mut queues[q];
        match calls.next() {
            Some(call) => {
                let n = call.events;
                each(*r, Read::Call(call, &mut events.by_ref().take(n)));
                let next = calls.as_slice().first().map_or(i64::MAX, time);
                heap.push(Reverse((next, q)));
            }
            None => {
                if let Some(end) = end.take() {
                    each(*r, Read::End(end));
                }
            }
        }
    }
}
