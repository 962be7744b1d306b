//! `mpigram gen-bench DIR -o bench.c [--compute none|mean|recorded] [--scale S] [--ranks N]
//! [--times best|lossy|lossless] [--cpu-time] [--serial-threads]`.

use crate::times::Times;
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use mpigram_codegen::{Compute, Options, generate};
use mpigram_trace::Trace;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// The C file to write.
    #[arg(short, long)]
    out: PathBuf,
    /// Computation between calls: none, the mean gap before each call
    /// signature, or the recorded gaps per call site (from per-call times,
    /// or from the default's aggregated timing by the calls before each
    /// site; traces older than that fall back to mean).
    #[arg(long, value_enum, default_value_t = ComputeArg::Recorded)]
    compute: ComputeArg,
    /// Multiplies every computation time.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Open and delete the trace's files in this directory (each by its file
    /// name): without it, a trace of files named by absolute paths is
    /// refused, so the benchmark never writes over them.
    #[arg(long, value_name = "DIR")]
    io_dir: Option<PathBuf>,
    /// A benchmark for this many ranks instead of the traced number, for
    /// SPMD traces whose ranks differ only in rank-parametric arguments
    /// (peers, per-rank counts, the grid); others are refused with the
    /// first call that is not.
    #[arg(long, value_name = "N")]
    ranks: Option<u32>,
    /// Which recorded per-call times the computation is taken from (a
    /// trace recorded with both lossy and lossless timing has two).
    #[arg(long, value_enum, default_value_t = Times::Best)]
    times: Times,
    /// On ranks whose host had more ranks than processors, wait the CPU
    /// time of the computation (the recorded gap times the rank's measured
    /// share of a processor) instead of its wall time: for a benchmark run
    /// with a processor per rank, where the traced run shared them.
    #[arg(long)]
    cpu_time: bool,
    /// Generate the benchmark of a trace whose threads called MPI at once
    /// all the same: it makes each rank's calls one after another on one
    /// thread, in the order they returned, and can deadlock.
    #[arg(long)]
    serial_threads: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ComputeArg {
    None,
    Mean,
    Recorded,
}

pub fn run(args: &Args) -> Result<()> {
    if !(args.scale.is_finite() && args.scale >= 0.0) {
        bail!("--scale must be a number >= 0, not {}", args.scale);
    }
    crate::refuse_inside(&args.trace, &args.out)?;
    let trace = Trace::open(&args.trace)?;
    crate::warn_if_partial(&trace);
    let options = Options {
        compute: match args.compute {
            ComputeArg::None => Compute::None,
            ComputeArg::Mean => Compute::Mean,
            ComputeArg::Recorded => Compute::Recorded,
        },
        scale: args.scale,
        trace_name: args.trace.display().to_string(),
        io_dir: args.io_dir.clone(),
        ranks: args.ranks,
        times: args.times.into(),
        cpu_time: args.cpu_time,
        serial_threads: args.serial_threads,
    };
    let bench = generate(&trace, &options)?;
    std::fs::write(&args.out, &bench.source)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    eprintln!(
        "{}: {} bytes of C, {} functions, for {} ranks and {} calls",
        args.out.display(),
        bench.source.len(),
        bench.functions,
        bench.ranks,
        bench.calls
    );
    for note in &bench.notes {
        eprintln!("note: {note}");
    }
    for (why, calls) in &bench.skipped {
        eprintln!("not reproduced ({calls} calls): {why}");
    }
    Ok(())
}
