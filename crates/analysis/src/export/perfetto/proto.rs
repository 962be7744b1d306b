//! The subset of Perfetto's `perfetto_trace.proto` the timeline uses
//! (field numbers from the public protos).

/// `perfetto.protos.Trace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket` (the fields used here).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
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
    /// The clock of `timestamp`, if not the sequence's default.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// Defaults of the sequence's later packets (incremental state).
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `perfetto.protos.ClockSnapshot`: clocks read at one moment.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
}

/// `perfetto.protos.ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// A packet's timestamp on this clock is the time since the sequence's
    /// previous packet on it.
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
}

/// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME`: the trace's clock.
pub const CLOCK_BOOTTIME: u32 = 6;
/// A clock of one sequence (ids 64 to 127), incremental.
pub const CLOCK_INCREMENTAL: u32 = 64;

/// `perfetto.protos.TracePacketDefaults`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

/// `perfetto.protos.TrackEventDefaults`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
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
    /// `TrackEvent.Type`: [`TYPE_SLICE_BEGIN`], [`TYPE_SLICE_END`], [`TYPE_INSTANT`].
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// Arrows leaving the event's slice, by id: the varint field
    /// (`flow_ids_old` in the proto), which every trace processor reads
    /// (the newer ones when the fixed64 `flow_ids`, 9 bytes an id, is
    /// absent).
    #[prost(uint64, repeated, packed = "false", tag = "36")]
    pub flow_ids_old: Vec<u64>,
    /// Arrows ending at the event's slice, by id (`terminating_flow_ids_old`).
    #[prost(uint64, repeated, packed = "false", tag = "42")]
    pub terminating_flow_ids_old: Vec<u64>,
}

pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;
/// A slice of no duration, nested in the slice open on its track.
pub const TYPE_INSTANT: i32 = 3;

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
