//! `mpigram profile TRACE [--json]`: behaviour classes, rank groups and
//! wait states, findings first; `mpiexec -n K mpigram profile TRACE` (a
//! build with the `mpi` feature) spreads it over K processes.

use crate::times::Times;
use anyhow::{Context, Result};
use mpigram_analysis::profile::{self, Options, similarity::Method};
use mpigram_trace::Trace;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Print JSON instead of the report.
    #[arg(long)]
    json: bool,
    /// Similarity method: avg-wave, haar-wave, euclidean, manhattan,
    /// chebyshev, rel-diff, abs-diff (threshold in seconds).
    #[arg(long, default_value = "avg-wave")]
    method: String,
    /// Threshold within a rank.
    #[arg(long, default_value_t = 0.2)]
    within: f64,
    /// Threshold across ranks.
    #[arg(long, default_value_t = 0.4)]
    across: f64,
    /// Which recorded times to use (a trace recorded with
    /// MPIGRAM_TIMING=lossy,lossless has both).
    #[arg(long, value_enum, default_value_t = Times::Best)]
    times: Times,
    /// Findings cost at least this share of the run (0-1).
    #[arg(long, default_value_t = 0.01)]
    min_share: f64,
}

pub fn run(args: &Args) -> Result<()> {
    let method: Method = args.method.parse().map_err(anyhow::Error::msg)?;
    for (name, t) in [("--within", args.within), ("--across", args.across)] {
        anyhow::ensure!(
            t.is_finite() && t >= 0.0,
            "{name} must be a threshold of 0 or more, not {t}"
        );
    }
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.min_share),
        "--min-share must be between 0 and 1"
    );
    let trace = Trace::open(&args.trace)?;
    crate::warn_if_partial(&trace);
    let options = Options {
        method,
        within: args.within,
        across: args.across,
        source: args.times.into(),
        min_share: args.min_share,
    };
    let p = analyse(&trace, &options)
        .with_context(|| format!("cannot profile {}", args.trace.display()))?;
    let Some(p) = p else {
        // Another process of `mpiexec -n K` reports.
        return Ok(());
    };
    if args.json {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        p.write_json(&mut out)?;
        std::io::Write::flush(&mut out)?;
    } else {
        print!("{}", p.to_text());
    }
    Ok(())
}

/// The profile; under `mpiexec -n K` (a build with the `mpi` feature)
/// spread over the K processes, and None on all but the first.
#[cfg(not(feature = "mpi"))]
fn analyse(trace: &Trace, options: &Options) -> Result<Option<profile::Profile>> {
    Ok(Some(profile::profile(trace, options)?))
}

#[cfg(feature = "mpi")]
fn analyse(trace: &Trace, options: &Options) -> Result<Option<profile::Profile>> {
    match crate::across::link()? {
        None => Ok(Some(profile::profile(trace, options)?)),
        Some(link) => Ok(profile::profile_across(trace, options, &link)?),
    }
}
