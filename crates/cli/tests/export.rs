//! `mpigram export` on traces of real MPI programs.

mod common;

use common::{mpigram, text, trace};
use mpigram_analysis::export::perfetto::{SliceRow, Trace as Timeline};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

fn export(trace: &Path, format: &str, file: &Path) -> Output {
    mpigram(&[
        "export",
        trace.to_str().unwrap(),
        "--format",
        format,
        "-o",
        file.to_str().unwrap(),
    ])
}

/// The calls `mpigram decode` prints, per rank: (rank, func) in order.
fn decoded_calls(trace: &Path) -> Vec<(u64, String)> {
    let out = mpigram(&["decode", trace.to_str().unwrap(), "--format", "jsonl"]);
    text(&out.stdout)
        .lines()
        .map(|l| {
            let call: Json = serde_json::from_str(l).unwrap();
            (
                call["rank"].as_u64().unwrap(),
                call["func"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_halo_exchange_exports_to_chrome_json_with_every_call_and_paired_arrows() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t, "halo2d", 4, &["5"], "lossless");
    let file = dir.path().join("t.json");
    let out = export(&t, "chrome", &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let json: Json = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();

    // Every call, in order, on its rank's main thread (tid = pid = rank + 1).
    let mut calls: Vec<(u64, String, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == e["tid"])
        .map(|e| {
            for key in ["ts", "dur", "pid", "tid"] {
                assert!(e[key].is_number(), "{e}");
            }
            assert!(e["dur"].as_f64().unwrap() >= 0.0);
            let rank = e["pid"].as_u64().unwrap() - 1;
            (
                rank,
                e["name"].as_str().unwrap().to_owned(),
                e["ts"].as_f64().unwrap(),
            )
        })
        .collect();
    calls.sort_by(|a, b| (a.0, a.2).partial_cmp(&(b.0, b.2)).unwrap());
    let names: Vec<(u64, String)> = calls.into_iter().map(|(r, f, _)| (r, f)).collect();
    assert_eq!(names, decoded_calls(&t));

    // 2x2 grid: 8 halo messages per iteration, one arrow each, paired.
    let starts: Vec<&Json> = events.iter().filter(|e| e["ph"] == "s").collect();
    let ends: HashMap<u64, &Json> = events
        .iter()
        .filter(|e| e["ph"] == "f")
        .map(|e| (e["id"].as_u64().unwrap(), e))
        .collect();
    assert_eq!(starts.len(), 8 * 5);
    assert_eq!(ends.len(), starts.len());
    for s in &starts {
        let f = ends[&s["id"].as_u64().unwrap()];
        assert_eq!(f["bp"], "e");
        assert_ne!(s["pid"], f["pid"], "halo messages go to another rank");
    }
    let names: Vec<&Json> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| &e["args"]["name"])
        .collect();
    assert_eq!(names, ["rank 0", "rank 1", "rank 2", "rank 3"]);
}

/// The calls `mpigram decode` prints, per rank in call order: (rank,
/// func, start_ns, end_ns, arguments as text).
fn decoded_with_times(trace: &Path) -> Vec<(u64, String, u64, u64, String)> {
    let t = trace.to_str().unwrap();
    let jsonl = mpigram(&["decode", t, "--format", "jsonl"]);
    let lines = mpigram(&["decode", t]);
    text(&jsonl.stdout)
        .lines()
        .zip(text(&lines.stdout).lines())
        .map(|(j, line)| {
            let call: Json = serde_json::from_str(j).unwrap();
            // `RANK SEQ FUNC(ARGS) @START +DURATION`
            let (head, _) = line.rsplit_once(" @").unwrap();
            let (_, args) = head.split_once('(').unwrap();
            (
                call["rank"].as_u64().unwrap(),
                call["func"].as_str().unwrap().to_owned(),
                call["start_ns"].as_u64().unwrap(),
                call["end_ns"].as_u64().unwrap(),
                args.strip_suffix(')').unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_perfetto_export_shows_each_call_as_decoded_and_each_message_as_an_arrow() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let iterations = 100;
    trace(&t, "halo2d", 4, &[&iterations.to_string()], "lossless");
    let file = dir.path().join("t.pftrace");
    let out = export(&t, "perfetto", &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bytes = std::fs::read(&file).unwrap();
    let timeline = Timeline::read(bytes.as_slice()).unwrap();
    let tables = timeline.tables().expect("slices that nest");

    // Each rank's calls track, by uuid: its rank.
    let mut calls_track = HashMap::new();
    for d in timeline
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
    {
        if let Some(thread) = &d.thread {
            calls_track.insert(d.uuid.unwrap(), thread.pid.unwrap() as u64 - 1);
        }
    }
    assert_eq!(calls_track.len(), 4);
    // Every call as decoded: its name, times to the nanosecond, arguments.
    let mut calls: Vec<(u64, String, u64, u64, String)> = tables
        .slices
        .iter()
        .filter(|s| s.depth == 0)
        .map(|s| {
            let args: Vec<&str> = s.args.iter().map(|(_, v)| v.as_str()).collect();
            assert!(s.args.iter().all(|(k, _)| k == "args"), "{:?}", s.args);
            let rank = calls_track[&s.track];
            (rank, s.name.clone(), s.ts, s.ts + s.dur, args.join(""))
        })
        .collect();
    calls.sort_by_key(|c| (c.0, c.2));
    let decoded = decoded_with_times(&t);
    assert_eq!(calls.len(), decoded.len());
    assert_eq!(calls, decoded);
    // At most 40 bytes a call, all told (about 36 here).
    let per_call = bytes.len() as f64 / calls.len() as f64;
    assert!(per_call <= 40.0, "{per_call:.1} bytes a call");

    // 2x2 grid: 8 halo messages per iteration, each an arrow from an Isend
    // to the Waitall that completed its receive on the rank it was sent to
    // (at the call, or at a `message` inside it).
    assert_eq!(tables.flows.len(), 8 * iterations);
    assert_eq!((tables.ends_before_start, tables.never_ended), (0, 0));
    for f in &tables.flows {
        let (from, into) = (&tables.slices[f.slice_out], &tables.slices[f.slice_in]);
        assert_eq!(from.name, "MPI_Isend");
        let dest = from.args[0]
            .1
            .split(", ")
            .find_map(|a| a.strip_prefix("dest="));
        let into_rank = calls_track[&into.track];
        assert_eq!(dest, Some(into_rank.to_string().as_str()));
        let receiving = match into.depth {
            0 => into,
            _ => {
                assert_eq!(into.name, "message");
                // The call it is in.
                tables.slices[..f.slice_in]
                    .iter()
                    .rev()
                    .find(|s| s.track == into.track && s.depth == 0)
                    .unwrap()
            }
        };
        assert_eq!(receiving.name, "MPI_Waitall");
        assert!(receiving.ts <= into.ts && into.ts < receiving.ts + receiving.dur.max(1));
    }
    // Arrow ids are reused once their arrow ended: short ones.
    let mut ids: Vec<u64> = timeline
        .packet
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .flat_map(|e| e.flow_ids_old.iter().copied())
        .collect();
    assert_eq!(ids.len(), tables.flows.len());
    ids.sort_unstable();
    ids.dedup();
    assert!(ids.len() < tables.flows.len() / 4, "{} ids", ids.len());
}

#[test]
fn a_trace_without_per_call_times_fails_in_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t, "p2p_blocking", 2, &[], "aggregated");
    let file = dir.path().join("t.pftrace");
    let out = export(&t, "perfetto", &file);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("MPIGRAM_TIMING=lossy"), "{err}");
    assert!(!file.exists());

    let missing = export(&dir.path().join("nothing"), "chrome", &file);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(text(&missing.stderr).lines().count(), 1);
    assert!(!file.exists());
}

/// The critical path as `mpigram critical-path --json` reports it: the
/// number of segments and their total duration in seconds.
fn reported_path(trace: &Path) -> (usize, f64) {
    let out = mpigram(&["critical-path", trace.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    let segments = j["segments"].as_array().unwrap();
    let total: f64 = segments
        .iter()
        .map(|s| s["end_s"].as_f64().unwrap() - s["start_s"].as_f64().unwrap())
        .sum();
    let length = j["length_s"].as_f64().unwrap();
    assert!(
        (total - length).abs() < 1e-6,
        "{total} s in segments, {length} s long"
    );
    (segments.len(), total)
}

fn export_path(trace: &Path, format: &str, file: &Path) {
    let out = mpigram(&[
        "export",
        trace.to_str().unwrap(),
        "--format",
        format,
        "--critical-path",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn the_critical_path_is_a_track_of_its_segments_with_arrows_along_its_jumps() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t, "critpath_ring", 3, &["1", "40", "3"], "lossless");
    let (segments, total_s) = reported_path(&t);
    assert!(segments > 3, "{segments}");

    // Chrome: a `critical path` process with one slice per segment.
    let file = dir.path().join("t.json");
    export_path(&t, "chrome", &file);
    let json: Json = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let pid = events
        .iter()
        .find(|e| e["ph"] == "M" && e["args"]["name"] == "critical path")
        .map(|e| e["pid"].clone())
        .unwrap();
    let slices: Vec<&Json> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == pid)
        .collect();
    assert_eq!(slices.len(), segments);
    let drawn: f64 = slices.iter().map(|e| e["dur"].as_f64().unwrap()).sum();
    assert!(
        (drawn * 1e-6 - total_s).abs() < 1e-6 * segments as f64,
        "{drawn} µs, {total_s} s"
    );
    let delayed = slices
        .iter()
        .filter(|e| e["name"] == "rank 1: computation" && e["dur"].as_f64().unwrap() >= 36e3)
        .count();
    assert!(delayed >= 3, "the delayed rank's computation of each round");
    // Each jump's arrow starts on one rank and ends on another.
    let starts: HashMap<u64, &Json> = events
        .iter()
        .filter(|e| e["ph"] == "s" && e["cat"] == "critical_path")
        .map(|e| (e["id"].as_u64().unwrap(), e))
        .collect();
    let ends: HashMap<u64, &Json> = events
        .iter()
        .filter(|e| e["ph"] == "f" && e["cat"] == "critical_path")
        .map(|e| (e["id"].as_u64().unwrap(), e))
        .collect();
    assert!(!starts.is_empty());
    let mut ids: Vec<_> = starts.keys().collect();
    let mut end_ids: Vec<_> = ends.keys().collect();
    ids.sort();
    end_ids.sort();
    assert_eq!(ids, end_ids);
    for (id, s) in &starts {
        assert_ne!(s["pid"], ends[id]["pid"], "a jump goes to another rank");
        assert!(s["ts"].as_f64().unwrap() <= ends[id]["ts"].as_f64().unwrap());
    }

    // Perfetto: the same slices on the `critical path` track, and as many
    // arrows as Chrome's (the messages' and the jumps').
    let file = dir.path().join("t.pftrace");
    export_path(&t, "perfetto", &file);
    let timeline = Timeline::read(std::fs::read(&file).unwrap().as_slice()).unwrap();
    let track = timeline
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .find(|d| {
            d.thread
                .as_ref()
                .is_some_and(|t| t.thread_name.as_deref() == Some("critical path"))
        })
        .and_then(|d| d.uuid)
        .unwrap();
    let tables = timeline.tables().unwrap();
    let path: Vec<&SliceRow> = tables.slices.iter().filter(|s| s.track == track).collect();
    assert_eq!(path.len(), segments);
    assert!(path.iter().all(|s| s.depth == 0), "path slices do not nest");
    let total_ns: u64 = path.iter().map(|s| s.dur).sum();
    assert!(
        (total_ns as f64 * 1e-9 - total_s).abs() < 1e-6,
        "{total_ns} ns, {total_s} s"
    );
    let arrows = events.iter().filter(|e| e["ph"] == "s").count();
    assert_eq!(tables.flows.len(), arrows);
    assert_eq!((tables.ends_before_start, tables.never_ended), (0, 0));
    for f in &tables.flows {
        let (from, into) = (&tables.slices[f.slice_out], &tables.slices[f.slice_in]);
        assert_ne!(from.track, into.track, "to another rank");
        assert!(from.ts < into.ts, "read in time order");
    }
}
