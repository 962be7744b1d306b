//! Perfetto's protobuf trace: the subset of `perfetto_trace.proto` the
//! timeline uses (field numbers from the public proto), and its writer.
//!
//! A trace file is a `Trace` message, whose only field is the repeated
//! `packet`: so packets are written one at a time, each as one occurrence
//! of field 1, and the file is never held in memory.

mod proto;
mod read;
#[cfg(test)]
mod tests;

use super::{Arrival, Slice, TimelineWriter, Track};
use crate::decode::Args;
pub use proto::*;
pub use read::{FlowRow, SliceRow, Tables};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json};
use std::io::{self, Write};
use std::sync::Arc;

/// Interned strings a sequence keeps before it starts afresh (clearing
/// its incremental state), so that the writer's memory stays bounded.
const MAX_INTERNED: usize = 1 << 16;

/// Arguments a sequence remembers by address before it forgets them all
/// (the decoder makes new ones whenever a call's arguments can change: a
/// request's name, say).
const MAX_SHARED_ARGS: usize = 1 << 12;

/// A writer sequence (`trusted_packet_sequence_id`): packets that share
/// interned strings and, for a rank's calls, a default track and an
/// incremental clock (each packet's time is the time since the previous
/// one's), so that a call's two packets carry no track and a short time.
struct Sequence {
    id: u32,
    /// Interned strings' ids, by table ([`Table`] as index) and string;
    /// each table numbers its own from 1, so that ids stay short (one
    /// byte up to 127).
    interned: [FxHashMap<String, u64>; 3],
    /// The id of the text of arguments the decoder shares between the
    /// calls of a signature, by their address: the text is made once per
    /// arguments, not per call. The arguments are kept, so that their
    /// address is not reused while it is a key here.
    shared_args: FxHashMap<*const Map<String, Json>, (Args, u64)>,
    /// Strings interned since the last packet, which it carries.
    new: InternedData,
    /// The sequence's state is to be sent (again) before its next packet.
    fresh: bool,
    /// The default track of its events, whose times are on the
    /// incremental clock.
    track: Option<u64>,
    /// The incremental clock's time.
    clock_ns: u64,
}

/// The tables of [`InternedData`] used here.
#[derive(Clone, Copy)]
enum Table {
    EventName,
    AnnotationName,
    AnnotationValue,
}

impl Sequence {
    fn new(id: u32, track: Option<u64>) -> Sequence {
        Sequence {
            id,
            interned: Default::default(),
            shared_args: FxHashMap::default(),
            new: InternedData::default(),
            fresh: true,
            track,
            clock_ns: 0,
        }
    }

    /// The id of `s` in `table`, interned with the next packet if new.
    fn intern(&mut self, table: Table, s: &str) -> u64 {
        let ids = &mut self.interned[table as usize];
        if let Some(&iid) = ids.get(s) {
            return iid;
        }
        let iid = ids.len() as u64 + 1;
        ids.insert(s.to_owned(), iid);
        let name = || InternedName {
            iid: Some(iid),
            name: Some(s.to_owned()),
        };
        match table {
            Table::EventName => self.new.event_names.push(name()),
            Table::AnnotationName => self.new.debug_annotation_names.push(name()),
            Table::AnnotationValue => {
                self.new
                    .debug_annotation_string_values
                    .push(InternedString {
                        iid: Some(iid),
                        str: Some(s.as_bytes().to_vec()),
                    })
            }
        }
        iid
    }

    /// The id of the text of `args` (as `mpigram decode` writes them),
    /// interned as an annotation value.
    fn intern_args(&mut self, args: &Args) -> u64 {
        let key = Arc::as_ptr(args);
        if let Some(&(_, iid)) = self.shared_args.get(&key) {
            return iid;
        }
        let iid = self.intern(Table::AnnotationValue, &crate::decode::args_text(args));
        // Arguments no one else holds are made for this slice alone.
        if Arc::strong_count(args) > 1 {
            if self.shared_args.len() >= MAX_SHARED_ARGS {
                self.shared_args.clear();
            }
            self.shared_args.insert(key, (Arc::clone(args), iid));
        }
        iid
    }

    /// Starts afresh if the interned strings fill their budget: called
    /// before an event interns its strings.
    fn make_room(&mut self) {
        let strings: usize = self.interned.iter().map(FxHashMap::len).sum();
        if strings >= MAX_INTERNED {
            *self = Sequence {
                clock_ns: self.clock_ns,
                ..Sequence::new(self.id, self.track)
            };
        }
    }

    /// The packet that (re)starts the sequence's incremental state.
    fn start(&mut self) -> TracePacket {
        self.fresh = false;
        let mut packet = TracePacket {
            trusted_packet_sequence_id: Some(self.id),
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            ..TracePacket::default()
        };
        if let Some(track) = self.track {
            let clock = |clock_id, is_incremental| Clock {
                clock_id: Some(clock_id),
                timestamp: Some(self.clock_ns),
                is_incremental,
            };
            packet.clock_snapshot = Some(ClockSnapshot {
                clocks: vec![
                    clock(CLOCK_BOOTTIME, None),
                    clock(CLOCK_INCREMENTAL, Some(true)),
                ],
            });
            packet.trace_packet_defaults = Some(TracePacketDefaults {
                timestamp_clock_id: Some(CLOCK_INCREMENTAL),
                track_event_defaults: Some(TrackEventDefaults {
                    track_uuid: Some(track),
                }),
            });
        }
        packet
    }

    /// Sets `packet`'s time, `at` nanoseconds: on the incremental clock if
    /// the sequence has one and time did not go back, else absolute.
    fn time(&mut self, packet: &mut TracePacket, at: u64) {
        if self.track.is_none() {
            packet.timestamp = Some(at);
        } else if at >= self.clock_ns {
            packet.timestamp = Some(at - self.clock_ns);
            self.clock_ns = at;
        } else {
            packet.timestamp = Some(at);
            packet.timestamp_clock_id = Some(CLOCK_BOOTTIME);
        }
    }
}

pub(super) struct PerfettoWriter<'w> {
    out: &'w mut dyn Write,
    buf: Vec<u8>,
    /// Track descriptors and the critical path: absolute times.
    shared: Sequence,
    /// The current rank's calls (and the arrows' ends in them).
    calls: Sequence,
    /// The current rank's request lanes, one sequence each: a lane's
    /// slices never overlap, so it gets them in time order.
    lanes: Vec<Sequence>,
    next_id: u32,
}

impl<'w> PerfettoWriter<'w> {
    pub(super) fn new(out: &'w mut dyn Write) -> PerfettoWriter<'w> {
        PerfettoWriter {
            out,
            buf: Vec::new(),
            shared: Sequence::new(1, None),
            calls: Sequence::new(2, None),
            lanes: Vec::new(),
            next_id: 2,
        }
    }

    /// A new sequence whose events are on `track`.
    fn sequence_of(&mut self, track: Track) -> Sequence {
        self.next_id += 1;
        Sequence::new(self.next_id, Some(uuid(track)))
    }

    /// The sequence of `track`'s events.
    fn on(&mut self, track: Track) -> &mut Sequence {
        match track {
            Track::CriticalPath => &mut self.shared,
            Track::Calls { .. } => &mut self.calls,
            Track::Requests { lane, .. } => &mut self.lanes[lane],
        }
    }

    /// Writes `packet` on `track`'s sequence as one `Trace.packet` field,
    /// after the sequence's state if it is to be sent.
    fn packet(&mut self, track: Option<Track>, mut packet: TracePacket) -> io::Result<()> {
        let seq = match track {
            Some(track) => self.on(track),
            None => &mut self.shared,
        };
        let start = seq.fresh.then(|| seq.start());
        packet.trusted_packet_sequence_id = Some(seq.id);
        if seq.new != InternedData::default() {
            packet.interned_data = Some(std::mem::take(&mut seq.new));
        }
        if let Some(start) = start {
            self.write(&start)?;
        }
        self.write(&packet)
    }

    fn write(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        prost::encoding::message::encode(1, packet, &mut self.buf);
        self.out.write_all(&self.buf)
    }

    /// A track's descriptor, at time 0: trace processors read packets in
    /// time order (one without a time takes the last one seen), and create
    /// processes in the order they read their descriptors, which viewers
    /// keep: so ranks come in rank order, not in the order they first ran.
    fn descriptor(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        self.packet(
            None,
            TracePacket {
                timestamp: Some(0),
                track_descriptor: Some(descriptor),
                ..TracePacket::default()
            },
        )
    }

    fn event(&mut self, track: Track, at: u64, mut event: TrackEvent) -> io::Result<()> {
        let uuid = uuid(track);
        let seq = self.on(track);
        if seq.track != Some(uuid) {
            event.track_uuid = Some(uuid);
        }
        let mut packet = TracePacket {
            track_event: Some(event),
            ..TracePacket::default()
        };
        if seq.fresh {
            // The clock snapshot that starts the sequence is taken at its
            // first event, whose time is then 0 after it (the Perfetto v20
            // trace processor counts a first nonzero time twice).
            seq.clock_ns = at;
        }
        seq.time(&mut packet, at);
        self.packet(Some(track), packet)
    }

    /// The sequence of `track`, made room on for an event's strings: once
    /// per event, before it interns any (a new start forgets them).
    fn strings(&mut self, track: Track) -> &mut Sequence {
        let seq = self.on(track);
        seq.make_room();
        seq
    }

    /// An event of `kind` named `name` on `track`, at `at`.
    fn named(
        &mut self,
        kind: i32,
        track: Track,
        at: u64,
        name: &str,
        event: TrackEvent,
    ) -> io::Result<()> {
        let event = TrackEvent {
            r#type: Some(kind),
            name_iid: Some(self.on(track).intern(Table::EventName, name)),
            ..event
        };
        self.event(track, at, event)
    }

    fn end(&mut self, track: Track, at: u64) -> io::Result<()> {
        let event = TrackEvent {
            r#type: Some(TYPE_SLICE_END),
            ..TrackEvent::default()
        };
        self.event(track, at, event)
    }

    /// The end of an arrow inside its receiving call, later than the
    /// call's start: an instant `message` (or `critical path`) at the time
    /// the arrow ends. (An arrow that ends at the call's start ends at the
    /// call's slice itself.)
    fn arrival(&mut self, track: Track, a: &Arrival) -> io::Result<()> {
        let name = if a.path { "critical path" } else { "message" };
        self.strings(track);
        let event = TrackEvent {
            terminating_flow_ids_old: vec![a.id],
            ..TrackEvent::default()
        };
        self.named(TYPE_INSTANT, track, a.at_ns, name, event)
    }
}

/// Process of a rank: pid 0 is the idle process to Perfetto.
fn pid(rank: u32) -> i32 {
    i32::try_from(rank).map_or(i32::MAX, |r| r.saturating_add(1))
}

/// Track uuids: per rank, its process, its calls thread, its request
/// lanes; the critical path's process and track below every rank's.
fn process_uuid(rank: u32) -> u64 {
    (u64::from(rank) + 1) << 32
}

const PATH_PROCESS_UUID: u64 = 1;

/// The critical path's process: a pid no rank has below 2^31 - 1 ranks.
const PATH_PID: i32 = i32::MAX;

fn uuid(track: Track) -> u64 {
    match track {
        Track::CriticalPath => PATH_PROCESS_UUID + 1,
        Track::Calls { rank } => process_uuid(rank) + 1,
        Track::Requests { rank, lane } => process_uuid(rank) + 2 + lane as u64,
    }
}

impl TimelineWriter for PerfettoWriter<'_> {
    fn critical_path(&mut self) -> io::Result<()> {
        self.descriptor(TrackDescriptor {
            uuid: Some(PATH_PROCESS_UUID),
            process: Some(ProcessDescriptor {
                pid: Some(PATH_PID),
                legacy_sort_index: Some(-1),
                process_name: Some("critical path".into()),
            }),
            ..TrackDescriptor::default()
        })?;
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid(Track::CriticalPath)),
            thread: Some(ThreadDescriptor {
                pid: Some(PATH_PID),
                tid: Some(PATH_PID),
                thread_name: Some("critical path".into()),
            }),
            ..TrackDescriptor::default()
        })
    }

    fn rank(&mut self, rank: u32) -> io::Result<()> {
        let pid = pid(rank);
        self.calls = self.sequence_of(Track::Calls { rank });
        self.lanes.clear();
        self.descriptor(TrackDescriptor {
            uuid: Some(process_uuid(rank)),
            process: Some(ProcessDescriptor {
                pid: Some(pid),
                legacy_sort_index: Some(i32::try_from(rank).unwrap_or(i32::MAX)),
                process_name: Some(format!("rank {rank}")),
            }),
            ..TrackDescriptor::default()
        })?;
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid(Track::Calls { rank })),
            thread: Some(ThreadDescriptor {
                pid: Some(pid),
                tid: Some(pid),
                thread_name: Some("MPI calls".into()),
            }),
            ..TrackDescriptor::default()
        })
    }

    fn lane(&mut self, rank: u32, lane: usize) -> io::Result<()> {
        let sequence = self.sequence_of(Track::Requests { rank, lane });
        self.lanes.push(sequence);
        debug_assert_eq!(self.lanes.len(), lane + 1, "lanes in turn");
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid(Track::Requests { rank, lane })),
            name: Some("requests".into()),
            parent_uuid: Some(process_uuid(rank)),
            ..TrackDescriptor::default()
        })
    }

    fn slice(&mut self, s: &Slice) -> io::Result<()> {
        let seq = self.strings(s.track);
        let debug_annotations = match s.track {
            // Few, and unlike each other.
            Track::CriticalPath => annotations(seq, s.args),
            Track::Calls { .. } | Track::Requests { .. } => compact_annotations(seq, s),
        };
        // Arrows that end at the call's start end at its slice; the others
        // at an instant inside it (`flows_in` is in time order).
        let at_start = s.flows_in.partition_point(|a| a.at_ns <= s.start_ns);
        let (direct, inside) = s.flows_in.split_at(at_start);
        let event = TrackEvent {
            debug_annotations,
            flow_ids_old: s.flows_out.iter().chain(s.path_out).copied().collect(),
            terminating_flow_ids_old: direct.iter().map(|a| a.id).collect(),
            ..TrackEvent::default()
        };
        self.named(TYPE_SLICE_BEGIN, s.track, s.start_ns, s.name, event)?;
        for arrival in inside {
            self.arrival(s.track, arrival)?;
        }
        self.end(s.track, s.end_ns)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A call's arguments as debug annotations: an object's fields as
/// `status.MPI_SOURCE`, an array as its text (`[req0, req1]`), so that
/// every viewer version shows them.
fn annotations(seq: &mut Sequence, args: &Map<String, Json>) -> Vec<DebugAnnotation> {
    let mut out = Vec::with_capacity(args.len());
    for (name, value) in args {
        match value {
            Json::Object(fields) => {
                for (field, v) in fields {
                    out.push(annotation(seq, &format!("{name}.{field}"), v));
                }
            }
            _ => out.push(annotation(seq, name, value)),
        }
    }
    out
}

/// A call's or request's arguments as one text (`count=4, datatype=MPI_INT`,
/// as `mpigram decode` writes them), interned: the calls of one signature
/// share it; and the call's number if it is shown.
fn compact_annotations(seq: &mut Sequence, s: &Slice) -> Vec<DebugAnnotation> {
    let mut out = Vec::with_capacity(2);
    if !s.args.is_empty() {
        out.push(DebugAnnotation {
            name_iid: Some(seq.intern(Table::AnnotationName, "args")),
            string_value_iid: Some(seq.intern_args(s.args)),
            ..DebugAnnotation::default()
        });
    }
    if let Some(call) = s.seq {
        out.push(annotation(seq, "seq", &Json::from(call)));
    }
    out
}

/// One argument: its name and a string value interned, a number in place.
fn annotation(seq: &mut Sequence, name: &str, value: &Json) -> DebugAnnotation {
    let mut a = DebugAnnotation {
        name_iid: Some(seq.intern(Table::AnnotationName, name)),
        ..DebugAnnotation::default()
    };
    match value {
        Json::Bool(b) => a.bool_value = Some(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                a.int_value = Some(i);
            } else if let Some(u) = n.as_u64() {
                a.uint_value = Some(u);
            } else {
                a.double_value = n.as_f64();
            }
        }
        Json::String(s) => a.string_value_iid = Some(seq.intern(Table::AnnotationValue, s)),
        other => {
            a.string_value_iid =
                Some(seq.intern(Table::AnnotationValue, &crate::decode::text(other)))
        }
    }
    a
}
