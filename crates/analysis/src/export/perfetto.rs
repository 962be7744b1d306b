//! Perfetto's protobuf trace: the subset of `perfetto_trace.proto` the
//! timeline uses (field numbers from the public proto), and its writer.
//!
//! A trace file is a `Trace` message, whose only field is the repeated
//! `packet`: so packets are written one at a time, each as one occurrence
//! of field 1, and the file is never held in memory.

use super::{Arrival, Slice, TimelineWriter, Track};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json};
use std::io::{self, Write};

/// `perfetto.protos.Trace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket` (the fields used here).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// Strings first used by this packet, by id (`*_iid` fields).
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`: the packet
/// uses interned strings.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `perfetto.protos.InternedData` (the tables used here): each string once,
/// with the id events then name it by.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedName>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `EventCategory`, `EventName` and `DebugAnnotationName`: one layout.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `perfetto.protos.InternedString`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
}

/// `perfetto.protos.ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Orders processes in the Chrome-derived UIs.
    #[prost(int32, optional, tag = "3")]
    pub legacy_sort_index: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `perfetto.protos.ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `perfetto.protos.TrackEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `TrackEvent.Type`: [`TYPE_SLICE_BEGIN`], [`TYPE_SLICE_END`].
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// The same ids as `flow_ids`, in the field viewers read before it
    /// existed (Perfetto v20, the UI build on npm); newer ones prefer
    /// `flow_ids`.
    #[prost(uint64, repeated, packed = "false", tag = "36")]
    pub flow_ids_old: Vec<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "42")]
    pub terminating_flow_ids_old: Vec<u64>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// Not packed: the proto2 field is a plain repeated fixed64.
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;

/// `perfetto.protos.DebugAnnotation`: a named value (one of them set).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
}

impl Trace {
    /// Reads a timeline this module wrote, with the interned strings put
    /// back in place: event names, annotation names and string values.
    pub fn read(bytes: &[u8]) -> Result<Trace, prost::DecodeError> {
        use prost::Message;
        let mut trace = Trace::decode(bytes)?;
        let mut strings: FxHashMap<u64, String> = FxHashMap::default();
        for p in &mut trace.packet {
            if let Some(d) = &p.interned_data {
                let names = d
                    .event_categories
                    .iter()
                    .chain(&d.event_names)
                    .chain(&d.debug_annotation_names);
                for n in names {
                    strings.insert(n.iid.unwrap_or(0), n.name.clone().unwrap_or_default());
                }
                for v in &d.debug_annotation_string_values {
                    let text = String::from_utf8_lossy(v.str.as_deref().unwrap_or_default());
                    strings.insert(v.iid.unwrap_or(0), text.into_owned());
                }
            }
            let Some(e) = &mut p.track_event else {
                continue;
            };
            let look_up = |iid: Option<u64>| iid.and_then(|i| strings.get(&i).cloned());
            e.name = e.name.take().or_else(|| look_up(e.name_iid));
            e.categories
                .extend(e.category_iids.iter().filter_map(|&i| look_up(Some(i))));
            for a in &mut e.debug_annotations {
                a.name = a.name.take().or_else(|| look_up(a.name_iid));
                a.string_value = a
                    .string_value
                    .take()
                    .or_else(|| look_up(a.string_value_iid));
            }
        }
        Ok(trace)
    }
}

/// Every packet is on this one writer sequence.
const SEQUENCE: u32 = 1;

pub(super) struct PerfettoWriter<'w> {
    out: &'w mut dyn Write,
    buf: Vec<u8>,
    first: bool,
    /// Interned strings' ids, by table ([`Table`] as index) and string.
    interned: [FxHashMap<String, u64>; 3],
    next_iid: u64,
    /// Strings interned since the last packet, which it carries.
    new: InternedData,
}

/// The tables of [`InternedData`] used here.
#[derive(Clone, Copy)]
enum Table {
    Category,
    EventName,
    AnnotationName,
}

impl<'w> PerfettoWriter<'w> {
    pub(super) fn new(out: &'w mut dyn Write) -> PerfettoWriter<'w> {
        PerfettoWriter {
            out,
            buf: Vec::new(),
            first: true,
            interned: Default::default(),
            next_iid: 1,
            new: InternedData::default(),
        }
    }

    /// The id of `s` in `table`, interned with the next packet if new.
    fn intern(&mut self, table: Table, s: &str) -> u64 {
        let ids = &mut self.interned[table as usize];
        if let Some(&iid) = ids.get(s) {
            return iid;
        }
        let iid = self.next_iid;
        self.next_iid += 1;
        ids.insert(s.to_owned(), iid);
        let name = || InternedName {
            iid: Some(iid),
            name: Some(s.to_owned()),
        };
        match table {
            Table::Category => self.new.event_categories.push(name()),
            Table::EventName => self.new.event_names.push(name()),
            Table::AnnotationName => self.new.debug_annotation_names.push(name()),
        }
        iid
    }

    /// Writes `packet` as one `Trace.packet` field.
    fn packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        packet.trusted_packet_sequence_id = Some(SEQUENCE);
        if packet.track_event.is_some() {
            packet.sequence_flags = Some(SEQ_NEEDS_INCREMENTAL_STATE);
        }
        if self.new != InternedData::default() {
            packet.interned_data = Some(std::mem::take(&mut self.new));
        }
        if self.first {
            let flags = packet.sequence_flags.unwrap_or(0);
            packet.sequence_flags = Some(flags | SEQ_INCREMENTAL_STATE_CLEARED);
            self.first = false;
        }
        self.buf.clear();
        prost::encoding::message::encode(1, &packet, &mut self.buf);
        self.out.write_all(&self.buf)
    }

    /// A track's descriptor, at time 0: trace processors read packets in
    /// time order (one without a time takes the last one seen), and create
    /// processes in the order they read their descriptors, which viewers
    /// keep: so ranks come in rank order, not in the order they first ran.
    fn descriptor(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        self.packet(TracePacket {
            timestamp: Some(0),
            track_descriptor: Some(descriptor),
            ..TracePacket::default()
        })
    }

    fn event(&mut self, timestamp: u64, event: TrackEvent) -> io::Result<()> {
        self.packet(TracePacket {
            timestamp: Some(timestamp),
            track_event: Some(event),
            ..TracePacket::default()
        })
    }

    fn begin(&mut self, at: u64, track: u64, name: &str, event: TrackEvent) -> io::Result<()> {
        let event = TrackEvent {
            r#type: Some(TYPE_SLICE_BEGIN),
            track_uuid: Some(track),
            category_iids: vec![self.intern(Table::Category, "mpi")],
            name_iid: Some(self.intern(Table::EventName, name)),
            ..event
        };
        self.event(at, event)
    }

    fn end(&mut self, at: u64, track: u64) -> io::Result<()> {
        self.event(
            at,
            TrackEvent {
                r#type: Some(TYPE_SLICE_END),
                track_uuid: Some(track),
                ..TrackEvent::default()
            },
        )
    }

    /// The end of an arrow: a zero-length slice `message` (or `critical
    /// path`) inside the receiving call, at the time the arrow ends.
    fn arrival(&mut self, track: u64, a: &Arrival) -> io::Result<()> {
        let name = if a.path { "critical path" } else { "message" };
        let mut args = vec![self.annotation("from rank", &Json::from(a.from_rank))];
        if let Some(bytes) = a.bytes {
            args.push(self.annotation("bytes", &Json::from(bytes)));
        }
        let event = TrackEvent {
            debug_annotations: args,
            terminating_flow_ids: vec![a.id],
            terminating_flow_ids_old: vec![a.id],
            ..TrackEvent::default()
        };
        self.begin(a.at_ns, track, name, event)?;
        self.end(a.at_ns, track)
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
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid(Track::Requests { rank, lane })),
            name: Some("requests".into()),
            parent_uuid: Some(process_uuid(rank)),
            ..TrackDescriptor::default()
        })
    }

    fn slice(&mut self, s: &Slice) -> io::Result<()> {
        let track = uuid(s.track);
        let flows: Vec<u64> = s.flows_out.iter().chain(s.path_out).copied().collect();
        let event = TrackEvent {
            debug_annotations: self.annotations(s.args),
            flow_ids: flows.clone(),
            flow_ids_old: flows,
            ..TrackEvent::default()
        };
        self.begin(s.start_ns, track, s.name, event)?;
        for arrival in s.flows_in {
            self.arrival(track, arrival)?;
        }
        self.end(s.end_ns, track)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl PerfettoWriter<'_> {
    /// A call's arguments as debug annotations: an object's fields as
    /// `status.MPI_SOURCE`, an array as its text (`[req0, req1]`), so that
    /// every viewer version shows them.
    fn annotations(&mut self, args: &Map<String, Json>) -> Vec<DebugAnnotation> {
        let mut out = Vec::with_capacity(args.len());
        for (name, value) in args {
            match value {
                Json::Object(fields) => {
                    for (field, v) in fields {
                        out.push(self.annotation(&format!("{name}.{field}"), v));
                    }
                }
                _ => out.push(self.annotation(name, value)),
            }
        }
        out
    }

    /// One argument: its name interned, its value in place.
    fn annotation(&mut self, name: &str, value: &Json) -> DebugAnnotation {
        let mut a = DebugAnnotation {
            name_iid: Some(self.intern(Table::AnnotationName, name)),
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
            // String values stay in place: viewers before Perfetto v25 or
            // so (the UI build on npm, v20) drop interned ones.
            Json::String(s) => a.string_value = Some(s.clone()),
            other => a.string_value = Some(crate::decode::text(other)),
        }
        a
    }
}
