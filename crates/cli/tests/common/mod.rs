//! Running the `mpigram` command as a user does.

#![allow(dead_code)]

use std::process::{Command, Output};

pub fn mpigram(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(args)
        .output()
        .unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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
