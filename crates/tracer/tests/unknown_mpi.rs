//! Never harm: preloaded into a process whose MPI it does not record (a
//! small fake MPI of the test's own, with an ABI no real MPI has, or an
//! Open MPI version it does not know), the tracer prints one line, records
//! nothing, and every call returns what the library returned.

mod common;

use std::path::Path;
use std::process::Command;

/// Builds the fake MPI (with `defines`) and the program that uses it in `dir`.
fn build(dir: &Path, defines: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_mpi");
    let cc = |args: &[&str]| {
        let out = Command::new("cc")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let lib = src.join("fakempi.c");
    let mut args = vec![
        "-shared",
        "-fPIC",
        "-o",
        "libfakempi.so",
        lib.to_str().unwrap(),
    ];
    args.extend(defines);
    cc(&args);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let app = src.join("fakeapp.c");
    cc(&[
        "-o",
        "fakeapp",
        app.to_str().unwrap(),
        "-L.",
        "-lfakempi",
        &rpath,
    ]);
}

/// Runs the program, with the tracer preloaded or not: (stdout, stderr).
fn run(dir: &Path, traced: bool) -> (String, String) {
    let mut cmd = Command::new(dir.join("fakeapp"));
    cmd.current_dir(dir).env("MPIGRAM_OUT", dir.join("trace"));
    if traced {
        cmd.env("LD_PRELOAD", common::tracer());
    } else {
        cmd.env_remove("LD_PRELOAD");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr))
}

fn passes_through(defines: &[&str], message: &str) {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), defines);
    let (plain, _) = run(dir.path(), false);
    assert_eq!(
        plain, "init 0 rank 0 7 size 0 9 isend 26 99 finalize 0 calls 5\n",
        "the fake MPI itself"
    );
    let (traced, stderr) = run(dir.path(), true);
    assert_eq!(
        traced, plain,
        "every call returns what the library returned"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with(message), "{stderr}");
    assert!(
        stderr.ends_with("not tracing; every MPI call passes through untouched\n"),
        "{stderr}"
    );
    assert!(!dir.path().join("trace").exists(), "nothing is recorded");
}

#[test]
fn an_unknown_mpi_gets_one_line_and_untouched_calls() {
    passes_through(&[], "mpigram: unknown MPI library \"FakeMPI 1.0\": ");
}

#[test]
fn an_open_mpi_version_it_does_not_record_gets_one_line_and_untouched_calls() {
    passes_through(
        &["-DFAKE_OPEN_MPI"],
        "mpigram: Open MPI v3.1.6, package: fake (Open MPI ABI): a version this mpigram does not record: ",
    );
}
