//! Timelines of a hand-built two-rank run with synthetic call times.

use super::perfetto::{FlowRow, SliceRow, Trace as PerfettoTrace};
use super::*;
use crate::matching::{CallAt, OperationLog, PredefinedComms};
use rustc_hash::FxHashMap;
use serde_json::Value as Json;

use crate::decode::test_call as call;

fn p2p(
    rank: u32,
    seq: u64,
    func: &'static str,
    peer: (&str, u32),
    tag: i64,
    more: Json,
) -> DecodedCall {
    let mut args = json!({"buf": "seg1+0", "count": 4, "datatype": "MPI_INT", peer.0: peer.1, "tag": tag, "comm": "MPI_COMM_WORLD"});
    for (k, v) in more.as_object().unwrap() {
        args[k] = v.clone();
    }
    call(rank, seq, func, args)
}

fn status(source: u32, tag: i64) -> Json {
    json!({"MPI_SOURCE": source, "MPI_TAG": tag, "count": 16})
}

/// Rank 0 and rank 1 exchange one message each way with Isend/Irecv, then
/// rank 0 sends one with MPI_Send that rank 1's MPI_Recv takes.
fn run() -> Vec<(Vec<DecodedCall>, Vec<Span>)> {
    let none = json!({});
    let rank0 = vec![
        call(
            0,
            0,
            "MPI_Init",
            json!({"argc": "seg1+0", "argv": "seg2+0"}),
        ),
        p2p(
            0,
            1,
            "MPI_Isend",
            ("dest", 1),
            0,
            json!({"request": "req0"}),
        ),
        p2p(
            0,
            2,
            "MPI_Irecv",
            ("source", 1),
            0,
            json!({"request": "req1"}),
        ),
        call(
            0,
            3,
            "MPI_Waitall",
            json!({"count": 2, "array_of_requests": ["req0", "req1"], "array_of_statuses": ["undefined", status(1, 0)]}),
        ),
        p2p(0, 4, "MPI_Send", ("dest", 1), 5, none.clone()),
        call(0, 5, "MPI_Finalize", json!({})),
    ];
    let times0 = [
        (0, 10),
        (20, 25),
        (26, 30),
        (40, 100),
        (110, 120),
        (200, 210),
    ];
    let rank1 = vec![
        call(
            1,
            0,
            "MPI_Init",
            json!({"argc": "seg1+0", "argv": "seg2+0"}),
        ),
        p2p(
            1,
            1,
            "MPI_Irecv",
            ("source", 0),
            0,
            json!({"request": "req0"}),
        ),
        p2p(
            1,
            2,
            "MPI_Isend",
            ("dest", 0),
            0,
            json!({"request": "req1"}),
        ),
        call(
            1,
            3,
            "MPI_Wait",
            json!({"request": "req0", "status": status(0, 0)}),
        ),
        call(
            1,
            4,
            "MPI_Wait",
            json!({"request": "req1", "status": "MPI_STATUS_IGNORE"}),
        ),
        p2p(
            1,
            5,
            "MPI_Recv",
            ("source", 0),
            5,
            json!({"status": status(0, 5)}),
        ),
        call(1, 6, "MPI_Finalize", json!({})),
    ];
    let times1 = [
        (0, 12),
        (15, 18),
        (19, 22),
        (23, 60),
        (61, 62),
        (70, 115),
        (190, 220),
    ];
    let spans = |t: &[(i64, i64)]| {
        t.iter()
            .map(|&(start_ns, end_ns)| Span { start_ns, end_ns })
            .collect()
    };
    vec![(rank0, spans(&times0)), (rank1, spans(&times1))]
}

/// Every call and arrow, and the details that are shown on request.
fn everything() -> Content {
    Content {
        window: Window::default(),
        requests: true,
        seq: true,
    }
}

fn export_run(format: Format, content: &Content) -> (Vec<u8>, ExportSummary) {
    let mut seen = Vec::new();
    let (out, summary) = write_content(run(), format, content, &mut |n| seen.push(n)).unwrap();
    if content.window.is_all() {
        assert_eq!(
            seen,
            (1..=13).collect::<Vec<u64>>(),
            "progress after each call"
        );
    }
    (out, summary)
}

/// Exports `ranks` as `export` does: their operations matched first (rank
/// after rank, which the matcher takes as well as time order), then the
/// timeline written.
fn write_content(
    ranks: Vec<(Vec<DecodedCall>, Vec<Span>)>,
    format: Format,
    content: &Content,
    progress: &mut dyn FnMut(u64),
) -> Result<(Vec<u8>, ExportSummary), ExportError> {
    let world: Vec<u32> = (0..ranks.len() as u32).collect();
    let mut matcher = Matcher::new(&PredefinedComms, world);
    let ids = FlowIds::new(format == Format::Perfetto);
    let mut arrows = Arrows::new(&content.window, ids);
    for (rank, (calls, spans)) in ranks.iter().enumerate() {
        let rank = rank as u32;
        let mut log = OperationLog::new(rank);
        for (call, i) in calls.iter().zip(0..) {
            let span = spans.get(i).copied();
            log.record(call, CallAt { span, site: 0 });
            for e in log.take_events() {
                matcher.feed(rank, e);
            }
            arrows.found(matcher.found.drain(..));
        }
        log.end();
        for e in log.take_events() {
            matcher.feed(rank, e);
        }
        matcher.end_rank(rank);
        arrows.found(matcher.found.drain(..));
    }
    matcher.finish();
    arrows.found(matcher.found.drain(..));
    let timeline = Timeline {
        max_rank: 1,
        path: None,
        content,
    };
    let inputs = ranks.into_iter().enumerate().map(|(rank, (calls, spans))| {
        Ok(RankInput {
            rank: rank as u32,
            calls: Box::new(calls.into_iter().map(Ok)),
            spans: Box::new(spans.into_iter().map(Ok)),
        })
    });
    let mut out = Vec::new();
    let summary = timeline.write(arrows, inputs, format, &mut out, progress)?;
    Ok((out, summary))
}

#[test]
fn a_window_shows_its_ranks_calls_and_only_the_arrows_inside_it() {
    let content = Content {
        window: Window {
            ranks: Some(vec![0]),
            from: Some(Bound::Call(2)),
            to: Some(Bound::Call(5)),
        },
        ..everything()
    };
    let (out, summary) = export_run(Format::Chrome, &content);
    assert_eq!((summary.ranks, summary.calls), (1, 3));
    // No arrow leaves the window: rank 1 is not shown.
    assert_eq!(summary.messages, 0);
    let json: Json = serde_json::from_slice(&out).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let processes: Vec<&Json> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| &e["args"]["name"])
        .collect();
    assert_eq!(processes, ["rank 0"]);
    let mut seqs: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == e["tid"])
        .map(|e| e["args"]["seq"].as_u64().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, [2, 3, 4]);
    assert!(
        events.iter().all(|e| e["ph"] != "s" && e["ph"] != "f"),
        "no arrows"
    );
}

#[test]
fn the_summary_counts_what_was_written() {
    let (_, summary) = export_run(Format::Chrome, &everything());
    assert_eq!(
        summary,
        ExportSummary {
            ranks: 2,
            calls: 13,
            messages: 3,
            requests: 4,
            unmatched: 0,
            untimed: 0,
            backwards: 0,
            path_segments: 0,
            path_jumps: 0,
        }
    );
}

#[test]
fn the_paths_jumps_go_from_the_call_it_leaves_to_the_call_it_reaches() {
    use crate::critical_path::{Activity, CriticalPath, Segment};
    let segment = |rank, activity, start_ns, end_ns| Segment {
        rank,
        activity,
        start_ns,
        end_ns,
    };
    let path = CriticalPath {
        segments: vec![
            // Rank 0 computes after call 2, then sends (call 3) to rank 1,
            // whose receive (call 5) ends, then rank 1 computes and its
            // call 7 completes rank 0's call 9.
            segment(0, Activity::Computation { after: 2 }, 0, 10),
            segment(1, Activity::Call { seq: 5, site: 0 }, 12, 13),
            segment(1, Activity::Computation { after: 5 }, 13, 20),
            segment(1, Activity::Call { seq: 6, site: 0 }, 20, 21),
            segment(0, Activity::Computation { after: 9 }, 22, 30),
        ]
        .into(),
        ..CriticalPath::default()
    };
    let window = Window::default();
    let mut ids = FlowIds::new(true);
    for _ in 0..100 {
        ids.take(0, 0, false); // the messages' arrows
    }
    let mut arrows = Arrows::new(&window, ids);
    arrows.path_jumps(&path);
    assert_eq!(arrows.path_jumps, 2);
    let marks = arrows.sorted().unwrap();
    let mut reader = arrows::MarkReader::new(&marks);
    let mut at = |rank, seq, span| {
        let mut a = arrows::CallArrows::default();
        reader.at(rank, seq, span, &mut a).unwrap();
        a
    };
    assert_eq!(at(0, 3, (0, 10)).path_out, [101]);
    let into_9 = at(0, 9, (20, 40));
    assert_eq!((into_9.r#in[0].id, into_9.r#in[0].at_ns), (102, 22));
    assert!(into_9.out.is_empty() && into_9.path_out.is_empty());
    let into_5 = at(1, 5, (0, 40));
    assert_eq!((into_5.r#in[0].id, into_5.r#in[0].from_rank), (101, 0));
    assert!(into_5.r#in[0].path);
    assert_eq!(at(1, 6, (0, 40)).path_out, [102]);
}

fn phase<'a>(events: &'a [Json], ph: &str) -> Vec<&'a Json> {
    events.iter().filter(|e| e["ph"] == ph).collect()
}

/// The X event on (pid, tid) around `ts`.
fn slice_at<'a>(events: &'a [Json], pid: &Json, tid: &Json, ts: f64) -> Option<&'a Json> {
    phase(events, "X").into_iter().find(|e| {
        let start = e["ts"].as_f64().unwrap();
        &e["pid"] == pid
            && &e["tid"] == tid
            && start <= ts
            && ts <= start + e["dur"].as_f64().unwrap()
    })
}

#[test]
fn chrome_json_has_a_slice_per_call_a_track_per_rank_and_paired_flows() {
    let (bytes, _) = export_run(Format::Chrome, &everything());
    let trace: Json = serde_json::from_slice(&bytes).expect("valid JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");

    let calls: Vec<&Json> = phase(events, "X")
        .into_iter()
        .filter(|e| e["pid"] == e["tid"])
        .collect();
    assert_eq!(calls.len(), 13);
    for e in phase(events, "X") {
        for key in ["ts", "dur", "pid", "tid"] {
            assert!(e[key].is_number(), "{key} in {e}");
        }
    }
    let waitall = calls.iter().find(|e| e["name"] == "MPI_Waitall").unwrap();
    assert_eq!(
        (
            waitall["pid"].clone(),
            waitall["ts"].clone(),
            waitall["dur"].clone()
        ),
        (json!(1), json!(0.04), json!(0.06))
    );
    assert_eq!(
        waitall["args"]["array_of_requests"],
        json!(["req0", "req1"])
    );
    assert_eq!(waitall["args"]["seq"], 3);

    let names: Vec<(&Json, &Json)> = phase(events, "M")
        .into_iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| (&e["pid"], &e["args"]["name"]))
        .collect();
    assert_eq!(
        names,
        vec![(&json!(1), &json!("rank 0")), (&json!(2), &json!("rank 1"))]
    );

    // Each arrow starts in a send and ends inside the receiving call.
    let starts = phase(events, "s");
    let ends = phase(events, "f");
    assert_eq!(starts.len(), 3);
    let mut arrows = Vec::new();
    for s in &starts {
        let f: Vec<&&Json> = ends.iter().filter(|f| f["id"] == s["id"]).collect();
        assert_eq!(f.len(), 1, "one end for {s}");
        let f = f[0];
        assert_eq!(f["bp"], "e");
        let from = slice_at(events, &s["pid"], &s["tid"], s["ts"].as_f64().unwrap()).unwrap();
        let to = slice_at(events, &f["pid"], &f["tid"], f["ts"].as_f64().unwrap()).unwrap();
        arrows.push((from["name"].clone(), to["name"].clone(), f["ts"].clone()));
    }
    arrows.sort_by(|a, b| a.2.as_f64().partial_cmp(&b.2.as_f64()).unwrap());
    assert_eq!(
        arrows,
        vec![
            // rank 0's Isend (starts at 20) into rank 1's Wait [23, 60]: at its start.
            (json!("MPI_Isend"), json!("MPI_Wait"), json!(0.023)),
            // rank 1's Isend (19) into rank 0's Waitall [40, 100].
            (json!("MPI_Isend"), json!("MPI_Waitall"), json!(0.04)),
            // rank 0's Send (110) into rank 1's Recv [70, 115]: after the send's start.
            (json!("MPI_Send"), json!("MPI_Recv"), json!(0.111)),
        ]
    );
}

#[test]
fn chrome_json_shows_each_request_from_post_to_completion_without_overlap() {
    let (bytes, _) = export_run(Format::Chrome, &everything());
    let trace: Json = serde_json::from_slice(&bytes).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let mut requests: Vec<(u64, String, f64, f64, u64)> = phase(events, "X")
        .into_iter()
        .filter(|e| e["pid"] != e["tid"])
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (
                e["pid"].as_u64().unwrap(),
                e["name"].as_str().unwrap().to_owned(),
                ts,
                ts + e["dur"].as_f64().unwrap(),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    requests.sort_by(|a, b| (a.0, a.2).partial_cmp(&(b.0, b.2)).unwrap());
    let shape: Vec<(u64, &str, i64, i64)> = requests
        .iter()
        .map(|r| {
            (
                r.0,
                r.1.as_str(),
                (r.2 * 1000.0).round() as i64,
                (r.3 * 1000.0).round() as i64,
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (1, "MPI_Isend", 20, 100),
            (1, "MPI_Irecv", 26, 100),
            (2, "MPI_Irecv", 15, 60),
            (2, "MPI_Isend", 19, 62),
        ]
    );
    // Overlapping requests of a rank are on different threads, named "requests".
    assert_ne!(requests[0].4, requests[1].4);
    assert_ne!(requests[2].4, requests[3].4);
    let tids: Vec<u64> = requests.iter().map(|r| r.4).collect();
    for e in phase(events, "M")
        .into_iter()
        .filter(|e| e["name"] == "thread_name")
    {
        if tids.contains(&e["tid"].as_u64().unwrap()) {
            assert_eq!(e["args"]["name"], "requests");
        }
    }
    // Thread ids are unique across ranks.
    let mut unique = tids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 4);
}

/// The timeline of `content` in Perfetto's format, as a trace processor
/// reads it: the packets, and the slices and arrows.
fn perfetto(content: &Content) -> (PerfettoTrace, perfetto::Tables) {
    let (bytes, _) = export_run(Format::Perfetto, content);
    let trace = PerfettoTrace::read(bytes.as_slice()).expect("a Trace message");
    let tables = trace.tables().expect("slices that nest");
    (trace, tables)
}

/// A slice's name, start and end.
type Shown<'a> = (&'a str, u64, u64);

/// Annotations: name and value.
type Annotations = Vec<(String, String)>;

/// (name, start, end) of a slice.
fn span_of(s: &SliceRow) -> Shown<'_> {
    (s.name.as_str(), s.ts, s.ts + s.dur)
}

#[test]
fn perfetto_shows_every_call_with_its_times_and_arguments_and_every_arrow() {
    let (trace, tables) = perfetto(&Content::default());
    // Shared, then per rank its calls: no request lanes by default.
    let raw = <PerfettoTrace as prost::Message>::decode(
        export_run(Format::Perfetto, &Content::default())
            .0
            .as_slice(),
    )
    .unwrap();
    let mut sequences = FxHashMap::default();
    for p in &raw.packet {
        let id = p.trusted_packet_sequence_id.expect("on a sequence");
        let first = sequences.insert(id, ()).is_none();
        let cleared = p.sequence_flags.unwrap_or(0) & perfetto::SEQ_INCREMENTAL_STATE_CLEARED;
        assert_eq!(cleared != 0, first, "{p:?}");
    }
    assert_eq!(sequences.len(), 1 + 2);
    // A rank's calls carry neither their track nor an absolute time.
    let events: Vec<&perfetto::TracePacket> = raw
        .packet
        .iter()
        .filter(|p| p.track_event.is_some())
        .collect();
    assert!(
        events
            .iter()
            .all(|p| p.track_event.as_ref().unwrap().track_uuid.is_none())
    );
    assert!(events.iter().all(|p| p.timestamp_clock_id.is_none()));

    let processes: Vec<(i32, String)> = trace
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref()?.process.as_ref())
        .map(|p| (p.pid.unwrap(), p.process_name.clone().unwrap()))
        .collect();
    assert_eq!(processes, vec![(1, "rank 0".into()), (2, "rank 1".into())]);

    // Every call: a slice on its rank's track, with its times and its
    // arguments as `mpigram decode` writes them, and nothing else.
    let calls: Vec<&SliceRow> = tables.slices.iter().filter(|s| s.depth == 0).collect();
    let mut expected = Vec::new();
    for (calls, spans) in run() {
        for (call, span) in calls.iter().zip(spans) {
            let args = crate::decode::args_text(&call.args);
            let args = (!args.is_empty()).then(|| ("args".to_owned(), args));
            expected.push((
                uuid_of_calls(call.rank),
                call.func.to_owned(),
                span.start_ns as u64,
                (span.end_ns - span.start_ns) as u64,
                args.into_iter().collect::<Vec<_>>(),
            ));
        }
    }
    let shown: Vec<_> = calls
        .iter()
        .map(|s| (s.track, s.name.clone(), s.ts, s.dur, s.args.clone()))
        .collect();
    let mut sorted = expected.clone();
    sorted.sort_by_key(|c| c.2);
    assert_eq!(shown, sorted);

    // Each arrow from the send into the call that completed its receive:
    // at the call itself when the send started first, else at an instant
    // `message` inside it, just after the send's start.
    let mut arrows: Vec<(Shown, Shown, usize)> = tables
        .flows
        .iter()
        .map(
            |&FlowRow {
                 slice_out,
                 slice_in,
             }| {
                let (from, to) = (&tables.slices[slice_out], &tables.slices[slice_in]);
                (span_of(from), span_of(to), to.depth)
            },
        )
        .collect();
    arrows.sort_by_key(|a| a.1.1);
    assert_eq!(
        arrows,
        vec![
            // rank 0's Isend (20) into rank 1's Wait [23, 60].
            (("MPI_Isend", 20, 25), ("MPI_Wait", 23, 60), 0),
            // rank 1's Isend (19) into rank 0's Waitall [40, 100].
            (("MPI_Isend", 19, 22), ("MPI_Waitall", 40, 100), 0),
            // rank 0's Send (110) into rank 1's Recv [70, 115].
            (("MPI_Send", 110, 120), ("message", 111, 111), 1),
        ]
    );
    assert_eq!((tables.ends_before_start, tables.never_ended), (0, 0));
    let recv = tables.slices.iter().find(|s| s.name == "MPI_Recv").unwrap();
    let message = tables.slices.iter().find(|s| s.name == "message").unwrap();
    assert_eq!(message.track, recv.track, "inside the receiving call");
}

/// The track of rank `rank`'s calls.
fn uuid_of_calls(rank: u32) -> u64 {
    (u64::from(rank) + 1) << 32 | 1
}

#[test]
fn perfetto_shows_requests_and_call_numbers_when_asked() {
    let (trace, tables) = perfetto(&everything());
    // Request lanes: children of their rank's process track.
    let lanes: Vec<(u64, Option<u64>)> = trace
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .filter(|d| d.name.as_deref() == Some("requests"))
        .map(|d| (d.uuid.unwrap(), d.parent_uuid))
        .collect();
    assert_eq!(lanes.len(), 4);
    for &(uuid, parent) in &lanes {
        assert_eq!(parent, Some(uuid & !0xffff_ffff));
    }
    let mut requests: Vec<(u64, Shown, Annotations)> = tables
        .slices
        .iter()
        .filter(|s| lanes.iter().any(|l| l.0 == s.track))
        .map(|s| (s.track >> 32, span_of(s), s.args.clone()))
        .collect();
    requests.sort_by_key(|r| (r.0, r.1.1));
    let args = |peer: &str, rank: u32| {
        let text = format!("{peer}={rank}, tag=0, comm=MPI_COMM_WORLD");
        vec![("args".to_owned(), text)]
    };
    assert_eq!(
        requests,
        vec![
            (1, ("MPI_Isend", 20, 100), args("dest", 1)),
            (1, ("MPI_Irecv", 26, 100), args("source", 1)),
            (2, ("MPI_Irecv", 15, 60), args("source", 0)),
            (2, ("MPI_Isend", 19, 62), args("dest", 0)),
        ]
    );
    // Each call's number after its arguments.
    let isend = tables
        .slices
        .iter()
        .find(|s| s.name == "MPI_Isend" && s.track == uuid_of_calls(0))
        .unwrap();
    let text =
        "buf=seg1+0, count=4, datatype=MPI_INT, dest=1, tag=0, comm=MPI_COMM_WORLD, request=req0";
    assert_eq!(
        isend.args,
        [("args".into(), text.into()), ("seq".into(), "1".into())]
    );
    assert_eq!(tables.flows.len(), 3);
}

fn write(
    ranks: Vec<(Vec<DecodedCall>, Vec<Span>)>,
    format: Format,
) -> Result<(Vec<u8>, ExportSummary), ExportError> {
    write_content(ranks, format, &everything(), &mut |_| {})
}

#[test]
fn a_killed_ranks_calls_without_times_are_left_out_with_their_arrows() {
    let mut ranks = run();
    ranks[1].1.truncate(3); // rank 1 killed: no times from its first Wait on
    let (bytes, summary) = write(ranks, Format::Chrome).unwrap();
    assert_eq!((summary.calls, summary.untimed), (9, 4));
    let trace: Json = serde_json::from_slice(&bytes).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    // Rank 0's Isend into rank 1's Wait has no arrow; rank 1's Isend into
    // rank 0's Waitall keeps its own; rank 0's Send into rank 1's Recv none.
    let starts: Vec<&Json> = phase(events, "s");
    let ends: Vec<&Json> = phase(events, "f");
    assert_eq!((starts.len(), ends.len()), (1, 1));
    assert_eq!(starts[0]["id"], ends[0]["id"]);
    assert_eq!(starts[0]["pid"], 2);
    assert_eq!(ends[0]["pid"], 1);
}

#[test]
fn an_arrow_into_a_call_that_ended_before_the_send_started_is_counted() {
    let mut ranks = run();
    // Rank 1's clock ahead: its Wait [23, 60] now ends before rank 0's
    // Isend at 20 + 50 starts.
    ranks[0].1[1] = Span {
        start_ns: 70,
        end_ns: 75,
    };
    let (bytes, summary) = write(ranks, Format::Chrome).unwrap();
    assert_eq!(summary.backwards, 1);
    let trace: Json = serde_json::from_slice(&bytes).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let end = phase(events, "f")
        .into_iter()
        .find(|f| f["pid"] == 2 && f["ts"].as_f64().unwrap() < 0.061)
        .expect("the arrow still ends in rank 1's Wait");
    assert_eq!(end["ts"], json!(0.059), "at the Wait's last nanosecond");
}

#[test]
fn more_call_times_than_calls_are_an_error() {
    let mut ranks = run();
    ranks[1].1.push(Span {
        start_ns: 300,
        end_ns: 301,
    });
    let err = write(ranks, Format::Perfetto).unwrap_err();
    assert_eq!(err.to_string(), "rank 1: 7 calls but 8 call times");
}

#[test]
fn a_perfetto_window_has_only_the_arrows_between_its_calls() {
    let content = Content {
        window: Window {
            ranks: None,
            from: Some(Bound::Call(3)),
            to: Some(Bound::Call(6)),
        },
        ..Content::default()
    };
    let (_, tables) = perfetto(&content);
    let calls: Vec<Shown> = tables
        .slices
        .iter()
        .filter(|s| s.depth == 0)
        .map(span_of)
        .collect();
    assert_eq!(
        calls,
        [
            ("MPI_Wait", 23, 60),
            ("MPI_Waitall", 40, 100),
            ("MPI_Wait", 61, 62),
            ("MPI_Recv", 70, 115),
            ("MPI_Send", 110, 120),
            ("MPI_Finalize", 200, 210),
        ]
    );
    // The Isends (calls 1 and 2) are not shown: only the Send's arrow.
    let arrows: Vec<(Shown, Shown)> = tables
        .flows
        .iter()
        .map(|f| {
            (
                span_of(&tables.slices[f.slice_out]),
                span_of(&tables.slices[f.slice_in]),
            )
        })
        .collect();
    assert_eq!(arrows, [(("MPI_Send", 110, 120), ("message", 111, 111))]);
    assert_eq!((tables.ends_before_start, tables.never_ended), (0, 0));
}
