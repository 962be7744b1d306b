//! `cargo run -p mpigram-wrapgen [-- --check] [--root DIR]`: regenerates the
//! wrappers, the function table, the ABI and the coverage report (or, with
//! `--check`, fails if regenerating would change any of them).

use anyhow::{Result, bail};
use mpigram_wrapgen::{Mode, default_root, run};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    match main_inner() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpigram-wrapgen: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn main_inner() -> Result<ExitCode> {
    let mut mode = Mode::Write;
    let mut root = default_root();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => mode = Mode::Check,
            "--root" => match args.next() {
                Some(dir) => root = PathBuf::from(dir),
                None => bail!("--root needs a directory"),
            },
            "-h" | "--help" => {
                println!("usage: mpigram-wrapgen [--check] [--root DIR]");
                return Ok(ExitCode::SUCCESS);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    let outcome = run(&root, mode)?;
    if !outcome.probed {
        eprintln!(
            "mpigram-wrapgen: mpicc not found: used data/mpich-probe.json, skipped the checks against MPICH"
        );
    }
    match (mode, outcome.changed.is_empty()) {
        (_, true) => println!("mpigram-wrapgen: generated files are up to date"),
        (Mode::Write, false) => println!("mpigram-wrapgen: wrote {}", outcome.changed.join(", ")),
        (Mode::Check, false) => {
            eprintln!(
                "mpigram-wrapgen: out of date (run `cargo run -p mpigram-wrapgen`): {}",
                outcome.changed.join(", ")
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
