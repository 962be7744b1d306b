//! Running the `mpigram` command as a user does.

#![allow(dead_code)]

use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// One MPI run at a time within a test binary: busy-polling ranks of
/// parallel runs (or an analysis computed meanwhile) on two cores would
/// delay each other and blur the delays the timing tests inject.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `mpigram ARGS`; `mpigram run` uses the test run's MPI's launcher.
pub mod round_trip;

pub fn mpigram(args: &[&str]) -> Output {
    mpigram_with(args, &[])
}

/// [`mpigram`] with the variables `env` set too.
pub fn mpigram_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mpi = mpigram_testkit::Mpi::selected();
    Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(args)
        .env("MPIGRAM_LAUNCHER", mpi.launcher.join(" "))
        .envs(mpi.env.iter().cloned())
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// `mpigram ARGS` in one process, then under `mpiexec -n K` for each of
/// `ks` (a build with the `mpi` feature spreads the analysis over the K
/// processes): each run succeeds and prints what the single process
/// printed, which is returned.
pub fn same_across_processes(args: &[&str], ks: &[u32]) -> String {
    let single = mpigram(args);
    assert!(single.status.success(), "{}", text(&single.stderr));
    let single = text(&single.stdout);
    for &k in ks {
        let out = mpigram_testkit::mpiexec(k, env!("CARGO_BIN_EXE_mpigram"), args)
            .run()
            .unwrap();
        assert!(out.status.success(), "{}: {}", out.command, out.stderr);
        assert_eq!(out.stdout, single, "{}", out.command);
    }
    single
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Traces `program ARGS` on 2 ranks under `mpi` (the tracer preloaded)
/// into `out`.
pub fn trace_under(
    mpi: &mpigram_testkit::Mpi,
    program: &str,
    args: &[&str],
    out: &std::path::Path,
) {
    let lib = text(&mpigram(&["lib"]).stdout).trim().to_owned();
    mpigram_testkit::mpiexec(
        2,
        mpigram_testkit::compile_with(mpi, program).unwrap(),
        args,
    )
    .mpi(mpi)
    .preload(&lib)
    .env("MPIGRAM_OUT", out)
    .run()
    .unwrap()
    .assert_success();
}

/// Traces `program ARGS` of tests/mpi on `ranks` ranks into `out` with
/// `mpigram run --timing timing`.
pub fn trace(out: &std::path::Path, program: &str, ranks: u32, args: &[&str], timing: &str) {
    mpigram_testkit::mpi_available().unwrap();
    let exe = mpigram_testkit::compile(program).unwrap();
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

/// Traces `program ARGS` on `ranks` ranks with `timing`.
pub fn traced(program: &str, ranks: u32, args: &[&str], timing: &str) -> tempfile::TempDir {
    mpigram_testkit::mpi_available().unwrap();
    let exe = mpigram_testkit::compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = ranks.to_string();
    let mut run = vec![
        "run",
        "-o",
        dir.path().to_str().unwrap(),
        "-n",
        &n,
        "--timing",
        timing,
        "--",
    ];
    run.push(exe.to_str().unwrap());
    run.extend(args);
    let out = mpigram(&run);
    assert!(out.status.success(), "{program}: {}", text(&out.stderr));
    dir
}
