//! `mpigram export` on traces of real MPI programs.

mod common;

use common::{mpigram, text};
use mpigram_analysis::export::perfetto::{TYPE_SLICE_BEGIN, TYPE_SLICE_END, Trace as Timeline};
use mpigram_testkit::{compile, mpi_available};
use prost::Message;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

/// Traces `program ARGS` on `ranks` ranks into `out`, with `--timing timing`.
fn trace(out: &Path, program: &str, ranks: u32, args: &[&str], timing: &str) {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let n = ranks.to_string();
    let mut run = vec![
        "run",
        "-o",
        out.to_str().unwrap(),
        "-n",
        &n,
        "--timing",
        timing,
    ];
    run.extend(["--", exe.to_str().unwrap()]);
    run.extend(args);
    let done = mpigram(&run);
    assert!(done.status.success(), "{}", text(&done.stderr));
}

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

#[test]
fn a_perfetto_export_decodes_into_one_slice_per_call_on_its_rank() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t, "p2p_nonblocking", 2, &[], "lossy");
    let file = dir.path().join("t.pftrace");
    let out = export(&t, "perfetto", &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let timeline = Timeline::decode(std::fs::read(&file).unwrap().as_slice()).unwrap();

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
    assert_eq!(calls_track.len(), 2);
    let mut begins = Vec::new();
    let mut depth: HashMap<u64, i32> = HashMap::new();
    let (mut flows, mut terminating): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    for p in &timeline.packet {
        let Some(e) = &p.track_event else { continue };
        let track = e.track_uuid.unwrap();
        match e.r#type {
            Some(TYPE_SLICE_BEGIN) => {
                *depth.entry(track).or_default() += 1;
                if let (Some(&rank), Some(name)) = (calls_track.get(&track), &e.name) {
                    if name != "message" {
                        begins.push((rank, name.clone(), p.timestamp.unwrap()));
                    }
                }
                flows.extend(&e.flow_ids);
                terminating.extend(&e.terminating_flow_ids);
            }
            Some(TYPE_SLICE_END) => *depth.get_mut(&track).unwrap() -= 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(depth.values().all(|&d| d == 0), "every slice ends");
    begins.sort_by_key(|b| (b.0, b.2));
    let names: Vec<(u64, String)> = begins.into_iter().map(|(r, f, _)| (r, f)).collect();
    assert_eq!(names, decoded_calls(&t));
    // Four messages each way; each arrow starts once and ends once.
    flows.sort_unstable();
    terminating.sort_unstable();
    assert_eq!(flows.len(), 8);
    assert_eq!(flows, terminating);
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
