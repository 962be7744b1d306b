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
