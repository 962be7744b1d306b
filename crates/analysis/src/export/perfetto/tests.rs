//! The writer's sequences: times that go back, and interned strings past
//! their budget, read back as written.

use super::*;
use serde_json::json;

/// Writes one rank's call slices `(start, end, args)`.
fn write(calls: &[(u64, u64, Map<String, Json>)]) -> Trace {
    let mut bytes = Vec::new();
    let mut w = PerfettoWriter::new(&mut bytes);
    w.rank(0).unwrap();
    for (seq, (start_ns, end_ns, args)) in calls.iter().enumerate() {
        let args = &Arc::new(args.clone());
        w.slice(&Slice {
            track: Track::Calls { rank: 0 },
            name: "MPI_Send",
            start_ns: *start_ns,
            end_ns: *end_ns,
            args,
            seq: Some(seq as u64),
            flows_out: &[],
            path_out: &[],
            flows_in: &[],
        })
        .unwrap();
    }
    w.finish().unwrap();
    drop(w);
    Trace::read(&bytes).unwrap()
}

/// (type, time, args text) of each event.
fn events(trace: &Trace) -> Vec<(i32, u64, Option<String>)> {
    trace
        .packet
        .iter()
        .filter_map(|p| {
            let e = p.track_event.as_ref()?;
            let text = e
                .debug_annotations
                .first()
                .and_then(|a| a.string_value.clone());
            Some((e.r#type.unwrap(), p.timestamp.unwrap(), text))
        })
        .collect()
}

#[test]
fn a_time_that_goes_back_is_written_absolute_and_the_next_ones_still_read_right() {
    let args = |n: u64| json!({"count": n}).as_object().unwrap().clone();
    let calls = [
        (1000, 1500, args(1)),
        (900, 950, args(2)),
        (2000, 2100, args(1)),
    ];
    let trace = write(&calls);
    let text = |n| Some(format!("count={n}"));
    assert_eq!(
        events(&trace),
        [
            (TYPE_SLICE_BEGIN, 1000, text(1)),
            (TYPE_SLICE_END, 1500, None),
            (TYPE_SLICE_BEGIN, 900, text(2)),
            (TYPE_SLICE_END, 950, None),
            (TYPE_SLICE_BEGIN, 2000, text(1)),
            (TYPE_SLICE_END, 2100, None),
        ]
    );
    let absolute = trace.packet.iter().filter(|p| p.track_event.is_some());
    let uuids: Vec<Option<u64>> = absolute
        .map(|p| p.track_event.as_ref().unwrap().track_uuid)
        .collect();
    assert!(
        uuids
            .iter()
            .all(|&u| u == Some(uuid(Track::Calls { rank: 0 })))
    );
}

#[test]
fn a_sequence_past_its_interned_strings_budget_starts_afresh() {
    // Every call's arguments differ: the strings outgrow the budget.
    let n = MAX_INTERNED as u64 + 1000;
    let calls: Vec<(u64, u64, Map<String, Json>)> = (0..n)
        .map(|i| {
            let args = json!({"buf": format!("seg{i}+0")});
            (10 * i, 10 * i + 5, args.as_object().unwrap().clone())
        })
        .collect();
    let trace = write(&calls);
    let cleared = trace
        .packet
        .iter()
        .filter(|p| p.sequence_flags.unwrap_or(0) & SEQ_INCREMENTAL_STATE_CLEARED != 0)
        .count();
    assert_eq!(
        cleared,
        1 + 1 + 1,
        "the shared sequence, the calls', once more"
    );
    let begins: Vec<(u64, Option<String>)> = events(&trace)
        .into_iter()
        .filter(|e| e.0 == TYPE_SLICE_BEGIN)
        .map(|e| (e.1, e.2))
        .collect();
    assert_eq!(begins.len() as u64, n);
    for (i, (t, text)) in begins.into_iter().enumerate() {
        assert_eq!((t, text), (10 * i as u64, Some(format!("buf=seg{i}+0"))));
    }
}

/// A trace of track events on track 1: (type, time, flow ids, ending ids).
fn events_on_one_track(events: &[(i32, u64, &[u64], &[u64])]) -> Trace {
    let packet = |&(kind, ts, out, end): &(i32, u64, &[u64], &[u64])| TracePacket {
        timestamp: Some(ts),
        track_event: Some(TrackEvent {
            r#type: Some(kind),
            track_uuid: Some(1),
            flow_ids_old: out.to_vec(),
            terminating_flow_ids_old: end.to_vec(),
            ..TrackEvent::default()
        }),
        ..TracePacket::default()
    };
    Trace {
        packet: events.iter().map(packet).collect(),
    }
}

#[test]
fn a_timeline_read_as_a_trace_processor_reads_it() {
    let none: &[u64] = &[];
    // Written out of time order: read in time order, ties in file order.
    let trace = events_on_one_track(&[
        (TYPE_SLICE_BEGIN, 10, &[7], none),
        (TYPE_SLICE_END, 20, none, none),
        (TYPE_SLICE_BEGIN, 30, none, none),
        (TYPE_INSTANT, 35, none, &[7]),
        (TYPE_SLICE_END, 40, none, none),
        // Arrow 7 again, after it ended: a new arrow.
        (TYPE_SLICE_BEGIN, 41, &[7], none),
        (TYPE_SLICE_END, 42, none, none),
        (TYPE_SLICE_BEGIN, 5, none, &[7]),
        (TYPE_SLICE_END, 6, none, none),
        (TYPE_SLICE_BEGIN, 50, none, &[7]),
        (TYPE_SLICE_END, 50, none, none),
    ]);
    let tables = trace.tables().unwrap();
    let slices: Vec<(u64, u64, usize)> = tables
        .slices
        .iter()
        .map(|s| (s.ts, s.dur, s.depth))
        .collect();
    assert_eq!(
        slices,
        [
            (5, 1, 0),
            (10, 10, 0),
            (30, 10, 0),
            (35, 0, 1),
            (41, 1, 0),
            (50, 0, 0)
        ]
    );
    let flows: Vec<(usize, usize)> = tables
        .flows
        .iter()
        .map(|f| (f.slice_out, f.slice_in))
        .collect();
    assert_eq!(flows, [(1, 3), (4, 5)]);
    // The end at 5 came before any start of 7.
    assert_eq!((tables.ends_before_start, tables.never_ended), (1, 0));
}

#[test]
fn a_timeline_that_no_trace_processor_would_read_alike_is_an_error() {
    let none: &[u64] = &[];
    let unopened = events_on_one_track(&[(TYPE_SLICE_END, 5, none, none)]);
    assert_eq!(
        unopened.tables().unwrap_err(),
        "an END at 5 with no slice open"
    );
    let unended = events_on_one_track(&[(TYPE_SLICE_BEGIN, 5, none, none)]);
    assert_eq!(
        unended.tables().unwrap_err(),
        "a slice on track 1 never ends"
    );
    let twice = events_on_one_track(&[
        (TYPE_SLICE_BEGIN, 5, &[3], none),
        (TYPE_SLICE_BEGIN, 6, &[3], none),
        (TYPE_SLICE_END, 7, none, none),
        (TYPE_SLICE_END, 8, none, none),
    ]);
    assert_eq!(
        twice.tables().unwrap_err(),
        "arrow 3 starts again at 6 before it ended"
    );
}
