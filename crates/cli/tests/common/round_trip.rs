//! Round trips of `mpigram gen-bench`: trace a program, generate its
//! benchmark, build it with mpicc, trace the benchmark, and compare the
//! calls of both, rank by rank (`assert_same_calls`).
//!
//! What may differ, and why:
//! - memory segment ids (`seg7+16` vs `seg3+16`: the benchmark allocates
//!   differently); offsets must agree;
//! - call numbers and times, and polling calls that found nothing (MPI_Test with
//!   flag 0, ...): how often a program polls depends on timing;
//! - a wildcard receive's source: the benchmark binds it to the recorded
//!   sender, so the original's MPI_ANY_SOURCE may be that rank (its
//!   status, compared, still says who sent);
//! - MPI-IO statuses other than their count, and the cancelled flag of a
//!   probe's status (MPI leaves them undefined: they hold what the
//!   program's status variable held before);
//! - error codes beyond their class (MPICH numbers each error instance),
//!   and MPI_Error_string's text (it names the failing call's addresses);
//! - which requests a Waitany, Testany, Waitsome or Testsome completed
//!   (timing; the benchmark waits for the recorded ones first, but others
//!   may have completed too): only the call and its request count.

use super::{mpigram, text};
use mpigram_testkit::{Mpi, mpiexec};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A traced run of `exe ARGS` under `mpi` on `ranks` ranks with `timing`
/// into `dir`; returns the run's wall time.
pub fn trace(
    mpi: &Mpi,
    exe: &Path,
    ranks: u32,
    args: &[&str],
    timing: &str,
    dir: &Path,
) -> Duration {
    let lib = text(&mpigram(&["lib"]).stdout).trim().to_owned();
    let run = mpiexec(ranks, exe, args)
        .mpi(mpi)
        .preload(&lib)
        .env("MPIGRAM_OUT", dir)
        .env("MPIGRAM_TIMING", timing)
        // Scratch files (mpiio's) in the run's own directory.
        .env("TMPDIR", io_dir(dir))
        .timeout(Duration::from_secs(120))
        .run()
        .unwrap();
    assert!(
        run.success(),
        "{}: {}\n{}",
        run.command,
        run.stdout,
        run.stderr
    );
    run.elapsed
}

/// Where a traced run in `dir`, and its benchmark, keep their files.
pub fn io_dir(dir: &Path) -> PathBuf {
    let io = dir.with_extension("io");
    std::fs::create_dir_all(&io).unwrap();
    io
}

/// The generated source of the trace in `dir`.
pub fn gen_bench(dir: &Path, extra: &[&str]) -> (PathBuf, String) {
    let (c, out) = run_gen_bench(dir, extra);
    assert!(out.status.success(), "gen-bench: {}", text(&out.stderr));
    let source = std::fs::read_to_string(&c).unwrap();
    (c, source)
}

/// Runs `mpigram gen-bench` on the trace in `dir`: the C file it is asked
/// to write, and what it did.
pub fn run_gen_bench(dir: &Path, extra: &[&str]) -> (PathBuf, std::process::Output) {
    let c = dir.with_extension("bench.c");
    let mut args = vec![
        "gen-bench",
        dir.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ];
    args.extend(extra);
    (c.clone(), mpigram(&args))
}

/// Builds a generated benchmark with `mpi`'s mpicc, as a user would:
/// without a warning.
pub fn build(mpi: &Mpi, c: &Path) -> PathBuf {
    let exe = c.with_extension("");
    let out = Command::new(&mpi.cc)
        .envs(mpi.env.iter().cloned())
        .args(["-O1", "-Wall", "-o"])
        .arg(&exe)
        .arg(c)
        .output()
        .unwrap();
    assert!(out.status.success(), "mpicc: {}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("warning"),
        "mpicc -Wall warns about {}:\n{}",
        c.display(),
        text(&out.stderr)
    );
    exe
}

/// Every call of every rank, as `mpigram decode --format jsonl` prints them.
pub fn decode(dir: &Path) -> Vec<Json> {
    let out = mpigram(&["decode", dir.to_str().unwrap(), "--format", "jsonl"]);
    assert!(out.status.success(), "decode: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub const POLLS: &[&str] = &[
    "MPI_Test",
    "MPI_Testall",
    "MPI_Testany",
    "MPI_Iprobe",
    "MPI_Improbe",
    "MPI_Request_get_status",
    "MPI_Win_test",
    "MPI_Parrived",
];

/// Completion calls whose outcome (which of the requests completed) is
/// timing: the benchmark waits for the recorded ones, but more may have
/// completed by then.
pub const ANY_OR_SOME: &[&str] = &["MPI_Waitany", "MPI_Testany", "MPI_Waitsome", "MPI_Testsome"];

/// A call as compared: see the module's comment for what is left out.
pub fn comparable(call: &Json) -> Option<Json> {
    let func = call["func"].as_str().unwrap();
    let args = &call["args"];
    let found_nothing = (POLLS.contains(&func) && args["flag"] == 0)
        || (func == "MPI_Testsome" && args["outcount"] == 0);
    if found_nothing {
        return None;
    }
    let mut c = call.clone();
    let o = c.as_object_mut().unwrap();
    o.remove("seq");
    o.remove("start_ns");
    o.remove("end_ns");
    if ANY_OR_SOME.contains(&func) {
        let count = args.get("incount").or(args.get("count")).cloned();
        o.insert("args".into(), serde_json::json!({ "count": count }));
        return Some(c);
    }
    if let Some(ret) = o.get("ret").and_then(Json::as_i64) {
        o.insert("ret".into(), Json::from(ret & 0x7f));
    }
    let args = o.get_mut("args").unwrap().as_object_mut().unwrap();
    if let Some(code) = args.get("errorcode").and_then(Json::as_i64) {
        args.insert("errorcode".into(), Json::from(code & 0x7f));
    }
    if func == "MPI_Error_string" {
        // The text names the failing call's arguments, buffer addresses included.
        args.remove("string");
        args.remove("resultlen");
    }
    for v in args.values_mut() {
        mask_segments(v);
        if func.starts_with("MPI_File_") && v.get("count").is_some() {
            *v = serde_json::json!({ "count": v["count"] });
        }
        if func.to_ascii_lowercase().contains("probe") {
            if let Some(status) = v.as_object_mut() {
                status.remove("cancelled");
            }
        }
    }
    Some(c)
}

pub fn mask_segments(v: &mut Json) {
    match v {
        Json::String(s) if s.starts_with("seg") && s.contains('+') => {
            let offset = s.split('+').nth(1).unwrap_or("").to_owned();
            *s = format!("seg+{offset}");
        }
        Json::Array(items) => items.iter_mut().for_each(mask_segments),
        Json::Object(o) => o.values_mut().for_each(mask_segments),
        _ => {}
    }
}

/// Whether `regen` is `orig` with its wildcard source bound to a rank.
pub fn bound_wildcard(orig: &Json, regen: &Json) -> bool {
    let (o, r) = (&orig["args"], &regen["args"]);
    if o["source"] != "MPI_ANY_SOURCE" || !r["source"].is_i64() {
        return false;
    }
    if r["status"]["MPI_SOURCE"].is_i64() && r["status"]["MPI_SOURCE"] != r["source"] {
        return false;
    }
    let mut r = regen.clone();
    r["args"]["source"] = "MPI_ANY_SOURCE".into();
    &r == orig
}

/// Asserts that both runs made the same calls, rank by rank.
pub fn assert_same_calls(orig: &[Json], regen: &[Json]) -> usize {
    let ranks = orig
        .iter()
        .map(|c| c["rank"].as_u64().unwrap())
        .max()
        .unwrap();
    let mut compared = 0;
    for rank in 0..=ranks {
        let of = |calls: &[Json]| -> Vec<Json> {
            calls
                .iter()
                .filter(|c| c["rank"] == rank)
                .filter_map(comparable)
                .collect()
        };
        let (a, b) = (of(orig), of(regen));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                x == y || bound_wildcard(x, y),
                "rank {rank}, call {i}:\n original:  {x}\n benchmark: {y}"
            );
        }
        assert_eq!(
            a.len(),
            b.len(),
            "rank {rank}: {} calls in the original, {} in the benchmark; first extra: {:?}",
            a.len(),
            b.len(),
            a.get(b.len()).or(b.get(a.len()))
        );
        compared += a.len();
    }
    compared
}
