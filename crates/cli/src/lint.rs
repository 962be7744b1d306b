//! `mpigram lint TRACE [--json]`: MPI usage findings. Exit status 0 when
//! nothing was found, 1 when something was, 2 on error.

use anyhow::{Context, Result};
use mpigram_analysis::lint;
use mpigram_trace::Trace;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Print `{"findings":[...]}` instead of one line per finding.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let trace = Trace::open(&args.trace)?;
    crate::warn_if_partial(&trace);
    let report =
        lint::lint(&trace).with_context(|| format!("cannot lint {}", args.trace.display()))?;
    if args.json {
        println!("{}", report.to_json());
    } else if report.findings.is_empty() {
        println!("no findings");
    } else {
        for finding in &report.findings {
            println!("{finding}");
        }
    }
    Ok(if report.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
