//! `mpigram critical-path DIR [--json] [--heuristic] [--svg FILE]`.

use anyhow::{Context, Result};
use clap::ValueEnum;
use mpigram_analysis::critical_path;
use mpigram_analysis::timeline::Source;
use mpigram_trace::Trace;
use std::fs::File;
use std::io::{BufWriter, Write};
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
    /// Also draw the path over the timeline, as SVG, into this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Width of the picture's time axis in pixels (100 to 100,000).
    #[arg(long, value_name = "PX", default_value_t = 1200, requires = "svg",
          value_parser = clap::value_parser!(u32).range(100..=100_000))]
    svg_width: u32,
}

#[derive(Clone, Copy, ValueEnum)]
enum Times {
    /// Exact times where recorded, else lossy ones.
    Best,
    Lossy,
    Lossless,
}

pub fn run(args: &Args) -> Result<()> {
    if let Some(svg) = &args.svg {
        crate::refuse_inside(&args.trace, svg)?;
    }
    let trace = Trace::open(&args.trace)?;
    crate::warn_if_partial(&trace);
    let source = match args.times {
        Times::Best => Source::Best,
        Times::Lossy => Source::Lossy,
        Times::Lossless => Source::Lossless,
    };
    let Some(mut analysis) = analyse(&trace, source, args.heuristic)? else {
        // Another process of `mpiexec -n K` reports.
        return Ok(());
    };
    if let Some(file) = &args.svg {
        // The picture draws every call: their times are read again.
        analysis.timelines = critical_path::timelines(&trace, source)?;
        let options = critical_path::svg::SvgOptions {
            plot_width: args.svg_width,
        };
        let out =
            File::create(file).with_context(|| format!("cannot create {}", file.display()))?;
        let mut out = BufWriter::new(out);
        let drawn = critical_path::svg::write_svg(&analysis, &options, &mut out)
            .and_then(|drawn| out.flush().map(|()| drawn))
            .with_context(|| format!("cannot write {}", file.display()))?;
        eprintln!(
            "mpigram: {}: {} ranks, {} call boxes, {} path boxes, {} jumps between ranks",
            file.display(),
            analysis.ranks,
            drawn.call_boxes,
            drawn.path_boxes,
            drawn.jumps
        );
    }
    if args.json {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        analysis.write_json(&mut out)?;
        out.flush()?;
    } else {
        print!("{}", analysis.to_text());
    }
    Ok(())
}

/// The analysis; under `mpiexec -n K` (a build with the `mpi` feature)
/// spread over the K processes, and None on all but the first.
#[cfg(not(feature = "mpi"))]
fn analyse(
    trace: &Trace,
    source: Source,
    heuristic: bool,
) -> Result<Option<critical_path::Analysis>> {
    Ok(Some(critical_path::analyse(trace, source, heuristic)?))
}

#[cfg(feature = "mpi")]
fn analyse(
    trace: &Trace,
    source: Source,
    heuristic: bool,
) -> Result<Option<critical_path::Analysis>> {
    match crate::across::link()? {
        None => Ok(Some(critical_path::analyse(trace, source, heuristic)?)),
        Some(link) => Ok(critical_path::analyse_across(
            trace, source, heuristic, &link,
        )?),
    }
}
