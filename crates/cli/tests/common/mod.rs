//! Running the `mpigram` command as a user does.

#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs `mpigram ARGS`; `mpigram run` uses the test run's MPI's launcher.
pub fn mpigram(args: &[&str]) -> Output {
    let mpi = mpigram_testkit::Mpi::selected();
    Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(args)
        .env("MPIGRAM_LAUNCHER", mpi.launcher.join(" "))
        .envs(mpi.env.iter().cloned())
        .output()
        .unwrap()
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
