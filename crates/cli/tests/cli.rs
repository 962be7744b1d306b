//! The `mpigram` command as a user runs it.

mod common;

use common::{mpigram, text};
use mpigram_testkit::{compile, mpi_available};
use std::path::{Path, PathBuf};
use std::process::Output;

/// `mpigram run -o OUT -n RANKS -- EXE`.
fn run(out: &Path, ranks: u32, exe: &Path) -> Output {
    mpigram(&[
        "run",
        "-o",
        out.to_str().unwrap(),
        "-n",
        &ranks.to_string(),
        "--",
        exe.to_str().unwrap(),
    ])
}

#[test]
fn lib_prints_the_tracer_library() {
    let out = mpigram(&["lib"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = PathBuf::from(text(&out.stdout).trim());
    assert!(
        path.ends_with("libmpigram.so") && path.is_file(),
        "{}",
        path.display()
    );
}

#[test]
fn run_traces_every_rank_and_decode_prints_every_call() {
    mpi_available().unwrap();
    let exe = compile("p2p_blocking").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    let out = run(&trace, 2, &exe);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let info = mpigram(&["info", trace.to_str().unwrap()]);
    let info = text(&info.stdout);
    assert!(
        info.contains("ranks:      2") && info.contains("complete:   yes"),
        "{info}"
    );
    let processors = mpigram_testkit::processors();
    assert!(
        info.contains(&format!(
            "processors: {processors} on 1 host(s) for 2 ranks"
        )),
        "{info}"
    );

    let lines = mpigram(&["decode", trace.to_str().unwrap(), "--format", "jsonl"]);
    assert!(lines.status.success(), "{}", text(&lines.stderr));
    let calls: Vec<serde_json::Value> = text(&lines.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for rank in 0..2 {
        let mine: Vec<&serde_json::Value> = calls.iter().filter(|c| c["rank"] == rank).collect();
        assert_eq!(mine.first().unwrap()["func"], "MPI_Init");
        assert_eq!(mine.last().unwrap()["func"], "MPI_Finalize");
        for (i, c) in mine.iter().enumerate() {
            assert_eq!(c["seq"], i as u64, "calls of rank {rank} in order");
        }
    }
    let send = calls
        .iter()
        .find(|c| c["func"] == "MPI_Send" && c["rank"] == 0)
        .expect("rank 0 sends");
    assert_eq!(send["args"]["dest"], 1);
    assert_eq!(send["args"]["comm"], "MPI_COMM_WORLD");
    assert!(send["args"]["buf"].as_str().unwrap().starts_with("seg"));

    let one = mpigram(&["decode", trace.to_str().unwrap(), "--rank", "1"]);
    let one = text(&one.stdout);
    assert!(one.lines().all(|l| l.starts_with("1 ")), "only rank 1");
    assert!(one.lines().count() > 2);
}

/// `--timing lossless` records every call's times; `decode -o FILE`
/// writes them with each call, in order, each call after the last ended.
#[test]
fn decode_writes_each_calls_times_to_a_file() {
    mpi_available().unwrap();
    let exe = compile("timing").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace");
    let traced = mpigram(&[
        "run",
        "-o",
        out.to_str().unwrap(),
        "-n",
        "2",
        "--timing",
        "lossless",
        "--",
        exe.to_str().unwrap(),
        "20",
    ]);
    assert!(traced.status.success(), "{}", text(&traced.stderr));
    let file = dir.path().join("calls.jsonl");
    let decoded = mpigram(&[
        "decode",
        out.to_str().unwrap(),
        "--format",
        "jsonl",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(decoded.status.success(), "{}", text(&decoded.stderr));
    assert!(decoded.stdout.is_empty() && decoded.stderr.is_empty());
    let calls: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut last_end = [i64::MIN; 2];
    for c in &calls {
        let rank = c["rank"].as_u64().unwrap() as usize;
        let (start, end) = (
            c["start_ns"].as_i64().unwrap(),
            c["end_ns"].as_i64().unwrap(),
        );
        assert!(last_end[rank] <= start && start <= end, "{c}");
        last_end[rank] = end;
    }
    // Rank 0 sends rank 1 twenty messages: a ring Sendrecv and an
    // Allreduce on both, around MPI_Init, the queries and MPI_Finalize.
    let sends = calls.iter().filter(|c| c["func"] == "MPI_Send").count();
    assert_eq!(sends, 20);
    assert!(calls.len() > 2 * 40, "{} calls", calls.len());
}

#[test]
fn run_passes_on_the_programs_failure() {
    mpi_available().unwrap();
    let exe = compile("crash_abort").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), 2, &exe);
    assert_eq!(out.status.code(), Some(42), "MPI_Abort's error code");
}

#[test]
fn a_crash_is_passed_on_and_info_and_decode_say_how_each_rank_ended() {
    mpi_available().unwrap();
    let exe = compile("crash_segv").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    // A journal of an earlier run in the directory is cleared, not read.
    std::fs::create_dir_all(&trace).unwrap();
    std::fs::write(trace.join("rank7.journal"), b"old").unwrap();
    let out = run(&trace, 2, &exe);
    assert_eq!(out.status.code(), Some(11), "hydra's status for a SIGSEGV");

    let info = mpigram(&["info", trace.to_str().unwrap()]);
    assert!(info.status.success(), "{}", text(&info.stderr));
    let info = text(&info.stdout);
    assert!(info.contains("ranks:      2"), "{info}");
    assert!(info.contains("complete:   no (partial trace)"), "{info}");
    assert!(info.contains("killed by signal 11 (SIGSEGV)"), "{info}");

    let decode = mpigram(&["decode", trace.to_str().unwrap()]);
    assert!(decode.status.success(), "{}", text(&decode.stderr));
    let warnings = text(&decode.stderr);
    assert!(
        warnings.contains("mpigram: partial trace: rank 0 ")
            && warnings.contains("mpigram: partial trace: rank 1 "),
        "{warnings}"
    );
    let lines = text(&decode.stdout);
    assert!(
        lines.lines().any(|l| l.starts_with("0 0 MPI_Init")),
        "{lines}"
    );
    assert!(
        lines.lines().any(|l| l.starts_with("1 4 MPI_Allreduce")),
        "{lines}"
    );
}

#[test]
fn bad_input_gives_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().to_str().unwrap();
    let out = mpigram(&["info", empty]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no mpigram trace here"), "{err}");

    std::fs::write(dir.path().join("rank0.mgr"), b"not a trace at all").unwrap();
    let out = mpigram(&["decode", empty]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("rank0.mgr") && err.contains("not an mpigram file"),
        "{err}"
    );

    let out = mpigram(&["decode", "/nonexistent/trace"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).lines().count(), 1);
}

/// `mpigram` refuses, in one line and before doing anything, what would
/// otherwise fail late, in every rank, or harm a trace.
#[test]
fn mistaken_options_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    std::fs::create_dir(&trace).unwrap();
    mpigram_trace::Trace::of_calls(vec![(Vec::new(), Vec::new())], 1000)
        .write(&trace)
        .unwrap();
    let t = trace.to_str().unwrap();
    let inside = trace.join("calls.txt");
    let inside = inside.to_str().unwrap();
    let file = trace.join("trace.mgr");
    let file = file.to_str().unwrap();
    for (args, says) in [
        (vec!["run", "-n", "0", "--", "/bin/true"], "-n"),
        (vec!["run", "--timing", "exact", "--", "/bin/true"], "exact"),
        (
            vec![
                "run",
                "--timing",
                "lossy",
                "--timing-base",
                "1",
                "--",
                "/bin/true",
            ],
            "base",
        ),
        (
            vec![
                "run",
                "--timing",
                "lossy",
                "--timing-base",
                "MPI_Wait=2,MPI_Wait=3",
                "--",
                "/bin/true",
            ],
            "two bases",
        ),
        (
            vec!["run", "--timing-base", "1.5", "--", "/bin/true"],
            "needs lossy",
        ),
        (vec!["run", "--", "-n", "/bin/true"], "starts with '-'"),
        (vec!["info", file], "is a file, not a trace directory"),
        (
            vec!["decode", t, "-o", inside],
            "inside the trace directory",
        ),
        (
            vec!["gen-bench", t, "-o", inside],
            "inside the trace directory",
        ),
        (
            vec![
                "critical-path",
                t,
                "--svg",
                "/tmp/x.svg",
                "--svg-width",
                "10000000",
            ],
            "10000000",
        ),
    ] {
        let out = mpigram(&args);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.trim_end().lines().count() <= 3, "{args:?}: {err}");
    }
    assert!(!Path::new(inside).exists());
}

/// `info` on a run that is still going says so (its ranks are read from
/// their crash journals, with no word of an end yet), not that they were
/// killed; once the run has ended, its trace is complete.
#[test]
fn info_on_a_live_run_says_it_is_running() {
    mpi_available().unwrap();
    let exe = compile("linger").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    let go = dir.path().join("go");
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(["run", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .arg(&go)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = trace.join("rank0.journal");
    for _ in 0..3000 {
        if journal.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let live = text(&mpigram(&["info", trace.to_str().unwrap()]).stdout);
    std::fs::write(&go, "").unwrap();
    assert!(run.wait().unwrap().success());
    assert!(
        live.contains("complete:   no (the run is still going)"),
        "{live}"
    );
    let line = live.lines().last().unwrap();
    assert!(line.contains("running (process"), "{live}");
    assert!(!line.contains("killed"), "{live}");
    let done = text(&mpigram(&["info", trace.to_str().unwrap()]).stdout);
    assert!(done.contains("complete:   yes"), "{done}");
}
