//! `mpigram lint` on traces of real MPI programs: a true positive of every
//! finding kind (`tests/mpi/lint_findings.c`), and no finding on test
//! programs that free what they create and use MPI as it should be.

mod common;

use common::{mpigram, text};
use serde_json::Value as Json;
use std::path::Path;
use std::process::Output;

/// Traces `program ARGS` on `ranks` ranks (aggregated timing: lint needs
/// no times) into `dir`.
fn trace(program: &str, ranks: u32, args: &[&str], dir: &Path) {
    common::trace(dir, program, ranks, args, "aggregated");
}

fn lint(dir: &Path, json: bool) -> Output {
    let mut args = vec!["lint", dir.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    mpigram(&args)
}

/// The findings as (kind, func, ranks, count), sorted.
fn summary(findings: &[Json]) -> Vec<(String, String, Vec<u64>, u64)> {
    let mut s: Vec<_> = findings
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_owned(),
                f["func"].as_str().unwrap().to_owned(),
                f["ranks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_u64().unwrap())
                    .collect(),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect();
    s.sort();
    s
}

#[test]
fn every_kind_of_finding_is_found_once_where_the_program_makes_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace("lint_findings", 2, &[], &t);
    let out = lint(&t, true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let json: Json = serde_json::from_slice(&out.stdout).unwrap();
    let findings = json["findings"].as_array().unwrap();
    let both = vec![0, 1];
    let f = |kind: &str, func: &str, ranks: &[u64], count| {
        (kind.to_owned(), func.to_owned(), ranks.to_vec(), count)
    };
    let mut expected = vec![
        f("leaked-object", "MPI_Comm_dup", &both, 2),
        f("leaked-object", "MPI_Comm_group", &both, 2),
        f("leaked-object", "MPI_Type_contiguous", &both, 2),
        f("leaked-object", "MPI_Info_create", &both, 2),
        f("leaked-object", "MPI_Comm_create_errhandler", &both, 2),
        f("leaked-object", "MPI_Send_init", &both, 2),
        f("request-never-completed", "MPI_Isend", &both, 2),
        // Five iterations on each rank, one of each per iteration.
        f("leaked-in-loop", "MPI_Type_contiguous", &both, 10),
        f("leaked-in-loop", "MPI_Type_vector", &both, 10),
        f("send-cycle", "MPI_Send", &both, 2),
        // Twenty iterations of Wait, Wait, Wait on each rank.
        f("one-at-a-time-completion", "MPI_Wait", &[0], 20),
        f("one-at-a-time-completion", "MPI_Wait", &[1], 20),
        f("small-message-storm", "MPI_Send", &[0], 100),
        f("any-source-one-sender", "MPI_Recv", &[1], 10),
    ];
    // The same Irecv, Isend and Iallreduce twenty times on each rank (the
    // ranks' calls differ: each names the other as its peer).
    for rank in [0, 1] {
        for func in ["MPI_Irecv", "MPI_Isend", "MPI_Iallreduce"] {
            expected.push(f("persistent-candidate", func, &[rank], 20));
        }
    }
    expected.sort();
    assert_eq!(summary(findings), expected, "{json:#}");

    for finding in findings {
        let site = finding["site"].as_str().unwrap();
        assert!(site.starts_with('R') && site.contains(':'), "{finding}");
        assert!(!finding["message"].as_str().unwrap().is_empty());
        match finding["kind"].as_str().unwrap() {
            "leaked-in-loop" => {
                let message = finding["message"].as_str().unwrap();
                assert!(message.contains("(1 per iteration)"), "{message}");
            }
            "send-cycle" => {
                let message = finding["message"].as_str().unwrap();
                assert!(message.contains("ranks 0 -> 1 -> 0"), "{message}");
            }
            "one-at-a-time-completion" => {
                let message = finding["message"].as_str().unwrap();
                assert!(message.starts_with("60 MPI_Wait calls"), "{message}");
            }
            _ => {}
        }
    }

    // The text form: one line per finding.
    let out = lint(&t, false);
    assert_eq!(out.status.code(), Some(1));
    let lines = text(&out.stdout);
    assert_eq!(lines.lines().count(), findings.len(), "{lines}");
    assert!(
        lines.contains("leaked-object: MPI_Comm_dup at R") && lines.contains("on ranks 0-1 (2×)"),
        "{lines}"
    );
}

/// Programs that free every object they create, complete every request,
/// and have no send cycle, no run of waits, no storm and no repeated
/// non-blocking call: `mpigram lint` finds nothing and exits with 0.
#[test]
fn programs_that_free_everything_have_no_findings() {
    let programs: &[(&str, u32)] = &[
        ("p2p_blocking", 2),
        ("completion", 2),
        ("wildcard", 3),
        ("probe", 2),
        ("free_cancel", 2),
        ("comm", 4),
        ("group", 4),
        ("intercomm", 4),
        ("topo", 4),
        ("datatype", 2),
        ("coll_blocking", 3),
        ("coll_nonblocking", 3),
        ("coll_persistent", 3),
        ("rma_windows", 2),
        ("rma_sync", 2),
        ("mpiio", 2),
        ("errhandler", 2),
        ("attributes", 2),
        ("threads", 2),
        ("halo2d", 4),
    ];
    for &(program, ranks) in programs {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let args: &[&str] = if program == "halo2d" { &["5"] } else { &[] };
        trace(program, ranks, args, &t);
        let out = lint(&t, true);
        let json: Json = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{program}: {e}: {}", text(&out.stderr)));
        assert_eq!(
            json["findings"],
            serde_json::json!([]),
            "{program}: {json:#}"
        );
        assert_eq!(out.status.code(), Some(0), "{program}");
        let out = lint(&t, false);
        assert_eq!(text(&out.stdout), "no findings\n", "{program}");
    }
}

/// Programs that wait for their requests one MPI_Wait after the other:
/// that is all lint finds in them.
#[test]
fn waits_one_after_the_other_are_the_only_finding_of_the_nonblocking_tests() {
    for program in ["p2p_nonblocking", "persistent"] {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        trace(program, 2, &[], &t);
        let out = lint(&t, true);
        assert_eq!(out.status.code(), Some(1), "{program}");
        let json: Json = serde_json::from_slice(&out.stdout).unwrap();
        let kinds: Vec<&str> = json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        assert!(!kinds.is_empty());
        assert!(
            kinds.iter().all(|&k| k == "one-at-a-time-completion"),
            "{program}: {json:#}"
        );
    }
}

#[test]
fn a_directory_without_a_trace_is_an_error_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = lint(dir.path(), false);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpigram: "), "{err}");
}
