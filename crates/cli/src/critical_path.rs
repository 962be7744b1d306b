//! `mpigram critical-path DIR [--json] [--heuristic]`.

use anyhow::Result;
use clap::ValueEnum;
use mpigram_analysis::critical_path;
use mpigram_analysis::timeline::Source;
use mpigram_trace::Trace;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also run the paper's interval-grouping heuristic and report how far
    /// it is from the exact path.
    #[arg(long)]
    heuristic: bool,
    /// Which recorded times to use (a trace recorded with
    /// MPIGRAM_TIMING=lossy,lossless has both).
    #[arg(long, value_enum, default_value_t = Times::Best)]
    times: Times,
}

#[derive(Clone, Copy, ValueEnum)]
enum Times {
    /// Exact times where recorded, else lossy ones.
    Best,
    Lossy,
    Lossless,
}

pub fn run(args: &Args) -> Result<()> {
    let trace = Trace::open(&args.trace)?;
    crate::warn_if_partial(&trace);
    let source = match args.times {
        Times::Best => Source::Best,
        Times::Lossy => Source::Lossy,
        Times::Lossless => Source::Lossless,
    };
    let analysis = critical_path::analyse(&trace, source, args.heuristic)?;
    if args.json {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        analysis.write_json(&mut out)?;
        out.flush()?;
    } else {
        print!("{}", analysis.to_text());
    }
    Ok(())
}
