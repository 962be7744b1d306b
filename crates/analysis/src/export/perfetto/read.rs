//! Reading a timeline back: its packets with each sequence's incremental
//! state applied ([`Trace::read`]), and its slices and arrows as Perfetto's
//! trace processor makes them ([`Trace::tables`]), for tests and for
//! downstream tools that check a timeline without Perfetto.

use super::proto::*;
use rustc_hash::FxHashMap;

impl Trace {
    /// Reads a timeline this module wrote, with each sequence's incremental
    /// state applied: interned strings put back in place (event names,
    /// annotation names and string values), timestamps made absolute and
    /// default tracks filled in.
    pub fn read(bytes: &[u8]) -> Result<Trace, prost::DecodeError> {
        use prost::Message;
        let mut trace = Trace::decode(bytes)?;
        let mut sequences: FxHashMap<u32, SequenceState> = FxHashMap::default();
        for p in &mut trace.packet {
            let state = sequences
                .entry(p.trusted_packet_sequence_id.unwrap_or(0))
                .or_default();
            if p.sequence_flags.unwrap_or(0) & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
                *state = SequenceState::default();
            }
            state.apply(p);
        }
        Ok(trace)
    }

    /// The slices and arrows of a timeline that [`Trace::read`] read, as
    /// Perfetto's trace processor makes them: events in time order (those
    /// of one time in file order); on each track, a BEGIN opens a slice
    /// inside those open and an END closes the innermost, an INSTANT is a
    /// slice of no duration inside them; an arrow goes from the slice an
    /// event starts (`flow_ids`) to the one an event ends it at (the slice
    /// the event begins, or the instant), and its id is free again after.
    /// Fails on an END with no slice open, or a slice left open.
    pub fn tables(&self) -> Result<Tables, String> {
        let mut events: Vec<(u64, &TrackEvent)> = self
            .packet
            .iter()
            .filter_map(|p| Some((p.timestamp?, p.track_event.as_ref()?)))
            .collect();
        events.sort_by_key(|&(ts, _)| ts); // stable: ties in file order
        let mut tables = Tables::default();
        let mut open: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        let mut flowing: FxHashMap<u64, usize> = FxHashMap::default();
        for (ts, e) in events {
            let track = e.track_uuid.ok_or("an event without a track")?;
            let stack = open.entry(track).or_default();
            let slice = match e.r#type {
                Some(TYPE_SLICE_END) => {
                    let i = stack
                        .pop()
                        .ok_or(format!("an END at {ts} with no slice open"))?;
                    tables.slices[i].dur = ts - tables.slices[i].ts;
                    continue;
                }
                Some(kind @ (TYPE_SLICE_BEGIN | TYPE_INSTANT)) => {
                    let i = tables.slices.len();
                    tables.slices.push(SliceRow {
                        track,
                        name: e.name.clone().unwrap_or_default(),
                        ts,
                        dur: 0,
                        depth: stack.len(),
                        args: e.debug_annotations.iter().map(arg).collect(),
                    });
                    if kind == TYPE_SLICE_BEGIN {
                        stack.push(i);
                    }
                    i
                }
                other => return Err(format!("an event of type {other:?} at {ts}")),
            };
            for &id in &e.flow_ids_old {
                if flowing.insert(id, slice).is_some() {
                    return Err(format!("arrow {id} starts again at {ts} before it ended"));
                }
            }
            for id in &e.terminating_flow_ids_old {
                match flowing.remove(id) {
                    Some(from) => tables.flows.push(FlowRow {
                        slice_out: from,
                        slice_in: slice,
                    }),
                    None => tables.ends_before_start += 1,
                }
            }
        }
        if let Some((track, _)) = open.iter().find(|(_, stack)| !stack.is_empty()) {
            return Err(format!("a slice on track {track} never ends"));
        }
        tables.never_ended = flowing.len();
        Ok(tables)
    }
}

/// What a trace processor makes of a timeline: its `slice` and `flow`
/// tables, and the arrows it cannot draw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    /// In the order they begin.
    pub slices: Vec<SliceRow>,
    pub flows: Vec<FlowRow>,
    /// Arrows whose end came before their start (not drawn).
    pub ends_before_start: usize,
    /// Arrows that started and never ended (not drawn).
    pub never_ended: usize,
}

/// A slice of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceRow {
    pub track: u64,
    pub name: String,
    pub ts: u64,
    pub dur: u64,
    /// The slices it is inside of.
    pub depth: usize,
    /// Its annotations: name and value, as text.
    pub args: Vec<(String, String)>,
}

/// An arrow from one slice to another, by their index in
/// [`Tables::slices`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRow {
    pub slice_out: usize,
    pub slice_in: usize,
}

/// An annotation's name and value as text.
fn arg(a: &DebugAnnotation) -> (String, String) {
    let value = a.string_value.clone().or_else(|| {
        let number = a.int_value.map(|v| v.to_string());
        let number = number.or(a.uint_value.map(|v| v.to_string()));
        let number = number.or(a.double_value.map(|v| v.to_string()));
        number.or(a.bool_value.map(|v| v.to_string()))
    });
    (
        a.name.clone().unwrap_or_default(),
        value.unwrap_or_default(),
    )
}

/// What a sequence's earlier packets set, as a reader keeps it.
#[derive(Default)]
struct SequenceState {
    /// Interned strings by table (each numbers its own from 1) and id.
    categories: FxHashMap<u64, String>,
    event_names: FxHashMap<u64, String>,
    annotation_names: FxHashMap<u64, String>,
    annotation_values: FxHashMap<u64, String>,
    defaults: Option<TracePacketDefaults>,
    /// The incremental clock's time, once a snapshot set it.
    incremental_ns: Option<u64>,
}

impl SequenceState {
    fn apply(&mut self, p: &mut TracePacket) {
        if let Some(d) = p.trace_packet_defaults.take() {
            self.defaults = Some(d);
        }
        for c in p.clock_snapshot.iter().flat_map(|s| &s.clocks) {
            if c.is_incremental == Some(true) {
                self.incremental_ns = c.timestamp;
            }
        }
        if let Some(d) = &p.interned_data {
            let names = |table: &mut FxHashMap<u64, String>, names: &[InternedName]| {
                for n in names {
                    table.insert(n.iid.unwrap_or(0), n.name.clone().unwrap_or_default());
                }
            };
            names(&mut self.categories, &d.event_categories);
            names(&mut self.event_names, &d.event_names);
            names(&mut self.annotation_names, &d.debug_annotation_names);
            for v in &d.debug_annotation_string_values {
                let text = String::from_utf8_lossy(v.str.as_deref().unwrap_or_default());
                self.annotation_values
                    .insert(v.iid.unwrap_or(0), text.into_owned());
            }
        }
        let clock = p.timestamp_clock_id.or_else(|| {
            let d = self.defaults.as_ref()?;
            d.timestamp_clock_id
        });
        if let (Some(CLOCK_INCREMENTAL), Some(t)) = (clock, p.timestamp) {
            let now = self.incremental_ns.unwrap_or(0).saturating_add(t);
            self.incremental_ns = Some(now);
            p.timestamp = Some(now);
        }
        p.timestamp_clock_id = None;
        let Some(e) = &mut p.track_event else {
            return;
        };
        if e.track_uuid.is_none() {
            let defaults = self
                .defaults
                .as_ref()
                .and_then(|d| d.track_event_defaults.as_ref());
            e.track_uuid = defaults.and_then(|d| d.track_uuid);
        }
        let look_up = |table: &FxHashMap<u64, String>, iid: Option<u64>| {
            iid.and_then(|i| table.get(&i).cloned())
        };
        e.name = e
            .name
            .take()
            .or_else(|| look_up(&self.event_names, e.name_iid));
        e.categories.extend(
            e.category_iids
                .iter()
                .filter_map(|&i| look_up(&self.categories, Some(i))),
        );
        for a in &mut e.debug_annotations {
            a.name = a
                .name
                .take()
                .or_else(|| look_up(&self.annotation_names, a.name_iid));
            a.string_value = a
                .string_value
                .take()
                .or_else(|| look_up(&self.annotation_values, a.string_value_iid));
        }
    }
}
