//! `mpigram`: trace an MPI program, and read its trace. A thin layer:
//! arguments in, library calls, text out.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use mpigram_analysis::summary::TraceSummary;
use mpigram_trace::Trace;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[cfg(feature = "mpi")]
mod across;
mod critical_path;
mod decode;
mod diff;
mod export;
mod gen_bench;
mod launch;
mod lint;
mod profile;
mod progress;
mod stats;
mod times;

#[derive(Parser)]
#[command(
    name = "mpigram",
    version,
    about = "Record every MPI call of every rank, compressed; read the traces."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run `mpiexec -n N PROG ARGS...` with the tracer preloaded into PROG
    /// (only), with MPICH's, Intel MPI's or Open MPI's launcher, or srun.
    Run {
        /// Trace directory to write.
        #[arg(short, long, default_value = "mpigram-trace")]
        out: PathBuf,
        /// Number of ranks.
        #[arg(short, long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        n: u32,
        /// Per-call timing: aggregated (per signature only), lossy,
        /// lossless, or lossy,lossless (sets MPIGRAM_TIMING).
        #[arg(long)]
        timing: Option<String>,
        /// Lossy timing's base, with per-function overrides:
        /// `1.1,MPI_Wait=1.5` (sets MPIGRAM_TIMING_BASE).
        #[arg(long)]
        timing_base: Option<String>,
        /// The launcher, with options of its own: `mpirun.openmpi
        /// --oversubscribe`, `srun -p debug` (default: MPIGRAM_LAUNCHER,
        /// else mpiexec).
        #[arg(long)]
        launcher: Option<String>,
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<String>,
    },
    /// Print the path of libmpigram.so, for LD_PRELOAD with any launcher.
    Lib,
    /// Print every call of every rank with every argument (and its
    /// times, with per-call timing).
    Decode(decode::Args),
    /// Compare two traces call by call on every rank: the first
    /// difference of each rank, with context, and the calls per function
    /// that differ. Exit status 0 if the calls are the same, 1 if they
    /// differ, 2 on error.
    Diff(diff::Args),
    /// Summarise a trace: ranks, calls, signatures, grammar sizes, bytes.
    Info { trace: PathBuf },
    /// Per-function calls, time and bytes; message sizes; communication matrix.
    Stats(stats::Args),
    /// Write the timeline for ui.perfetto.dev: a track per rank, a slice per
    /// call, arrows from sends to receives (needs per-call timing).
    Export(export::Args),
    /// The critical path (the longest chain of computation and
    /// communication), waiting and imbalance at collectives (needs per-call timing).
    CriticalPath(critical_path::Args),
    /// The trace profile: findings first (who waits for whom, where), then
    /// behaviour classes of loop iterations and rank groups (needs
    /// per-call timing).
    Profile(profile::Args),
    /// Write a C/MPI benchmark that makes the trace's calls with the same
    /// arguments, with loops from the grammar and the recorded computation
    /// as busy-waits (docs/gen-bench.md).
    GenBench(gen_bench::Args),
    /// MPI usage findings: objects never freed, requests never completed,
    /// send cycles, one-at-a-time completions, persistent-request
    /// candidates, small-message storms, wildcards with one sender
    /// (exit status 1 when something was found; docs/lint.md).
    Lint(lint::Args),
}

fn main() -> ExitCode {
    // Output cut short by its reader (`mpigram info trace | head`) ends the
    // program quietly, as for other Unix tools, instead of a panic.
    // SAFETY: setting a signal's disposition to the default action.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run {
            out,
            n,
            timing,
            timing_base,
            launcher,
            program,
        } => check_run(timing.as_deref(), timing_base.as_deref(), &program).and_then(|()| {
            let settings = [
                ("MPIGRAM_TIMING", timing),
                ("MPIGRAM_TIMING_BASE", timing_base),
            ];
            run(&out, n, &settings, launcher.as_deref(), &program)
        }),
        Cmd::Lib => library().map(|lib| {
            println!("{}", lib.display());
            ExitCode::SUCCESS
        }),
        Cmd::Decode(args) => decode::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::Diff(args) => diff::run(&args),
        Cmd::Info { trace } => info(&trace).map(|()| ExitCode::SUCCESS),
        Cmd::Stats(args) => stats::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::Export(args) => export::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::CriticalPath(args) => critical_path::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::Profile(args) => profile::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::GenBench(args) => gen_bench::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::Lint(args) => lint::run(&args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("mpigram: {e:#}");
        ExitCode::from(2)
    })
}

/// libmpigram.so: next to this executable (as cargo builds them), or in
/// `../lib` (as installed).
fn library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the mpigram executable")?;
    let dir = exe
        .parent()
        .context("the mpigram executable has no directory")?;
    [dir.join("libmpigram.so"), dir.join("../lib/libmpigram.so")]
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| p.canonicalize().unwrap_or(p))
        .with_context(|| {
            format!(
                "libmpigram.so is not next to {} (build it with cargo build)",
                exe.display()
            )
        })
}

/// The options of `mpigram run` that the tracer would otherwise only
/// complain about in every rank: the timing mode and its bases, checked as
/// the tracer reads them; and a program name that is an option mistyped.
fn check_run(timing: Option<&str>, base: Option<&str>, program: &[String]) -> Result<()> {
    if let Some(first) = program.first().filter(|p| p.starts_with('-')) {
        anyhow::bail!(
            "the program to run, {first:?}, starts with '-': mpigram run's options go before the program (`mpigram run -n 4 -- ./app`)"
        );
    }
    if timing.is_some() || base.is_some() {
        let t = mpigram_trace::Timing::parse(timing.unwrap_or("aggregated"), base)
            .map_err(|e| anyhow::anyhow!("--timing/--timing-base: {e}"))?;
        if base.is_some() && t.lossy.is_none() {
            anyhow::bail!("--timing-base needs lossy timing (--timing lossy)");
        }
    }
    Ok(())
}

/// Refuses to write `out` inside the trace directory `trace`: the file
/// would become part of the trace (and a later run would remove it).
pub(crate) fn refuse_inside(trace: &Path, out: &Path) -> Result<()> {
    let dir = |p: &Path| {
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        parent.canonicalize().ok()
    };
    let (Ok(trace), Some(out_dir)) = (trace.canonicalize(), dir(out)) else {
        return Ok(());
    };
    if out_dir.starts_with(&trace) {
        anyhow::bail!(
            "{} is inside the trace directory {}: write it elsewhere",
            out.display(),
            trace.display()
        );
    }
    Ok(())
}

/// Runs `program` on `n` ranks under the tracer, writing to `out`, with
/// the tracer's `settings` (variable, value if set), through `launcher`.
fn run(
    out: &Path,
    n: u32,
    settings: &[(&str, Option<String>)],
    launcher: Option<&str>,
    program: &[String],
) -> Result<ExitCode> {
    let launcher = launch::Launcher::find(launcher)?;
    let lib = library()?;
    // Created as the tracer creates it: the user's alone.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(out)
        .with_context(|| format!("cannot create {}", out.display()))?;
    let out = out
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", out.display()))?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", lib.display()),
        _ => lib.display().to_string(),
    };
    let mut env = vec![
        ("LD_PRELOAD", preload),
        ("MPIGRAM_OUT", out.display().to_string()),
        // Every rank runs the tracer (a process manager without PMI-1 or
        // PMIx, Slurm's PMI-2, cannot tell the tracer so).
        ("MPIGRAM_ALL_RANKS", "1".to_owned()),
    ];
    env.extend(
        settings
            .iter()
            .filter_map(|(var, value)| Some((*var, value.clone()?))),
    );
    // Signals that stop `mpigram run` stop the launcher (which stops the
    // ranks): caught from before it starts, passed on once it runs.
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .context("cannot catch signals")?;
    // The variables go to the launched processes only, not the launcher.
    let mut child = launcher
        .command(n, &env, program)
        .env_remove("LD_PRELOAD")
        .spawn()
        .with_context(|| format!("cannot start {}", launcher.command[0]))?;
    let pid = child.id() as libc::pid_t;
    let caught = signals.handle();
    let forwarding = std::thread::spawn(move || {
        let mut first = None;
        for signal in signals.forever() {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, signal) };
            first = first.or(Some(signal));
        }
        first
    });
    let status = child
        .wait()
        .with_context(|| format!("waiting for {}", launcher.command[0]));
    caught.close();
    // Stopped by a signal: say so as a shell would (hydra itself may exit
    // with 0 after stopping the ranks).
    if let Ok(Some(signal)) = forwarding.join() {
        return Ok(ExitCode::from(128 + signal.clamp(1, 127) as u8));
    }
    let status = status?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(code.clamp(0, 255) as u8),
        None => ExitCode::from(128 + signal_of(&status)),
    })
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map_or(1, |s| s.clamp(1, 127) as u8)
}

fn info(dir: &Path) -> Result<()> {
    let trace = Trace::open(dir)?;
    let s = TraceSummary::of(&trace);
    println!("trace:      {}", dir.display());
    println!("ranks:      {}", s.ranks.len());
    println!("calls:      {}", s.calls());
    println!(
        "grammar:    {} signatures, {} rules, {} symbols; {} distinct rank streams",
        s.signatures, s.rules, s.symbols, s.distinct_streams
    );
    println!("bytes:      {}", s.bytes);
    let sections = trace.section_sizes()?;
    if !sections.is_empty() {
        let parts: Vec<String> = sections
            .iter()
            .map(|(name, bytes)| format!("{name} {bytes}"))
            .collect();
        println!("trace.mgr:  {}", parts.join(", "));
    }
    println!("timing:     {}", s.timing);
    println!("MPI:        {}", s.mpi_library);
    if let Some(line) = processors(&trace) {
        println!("processors: {line}");
    }
    // A rank read from its crash journal whose process still runs here is
    // not dead: the run is going on.
    let running: Vec<u32> = trace
        .ranks
        .iter()
        .filter(|r| still_running(&r.meta))
        .map(|r| r.meta.rank)
        .collect();
    println!(
        "complete:   {}",
        if !running.is_empty() {
            "no (the run is still going)"
        } else if s.is_complete() {
            "yes"
        } else {
            "no (partial trace)"
        }
    );
    for e in &trace.skipped {
        println!("left out:   {e}");
    }
    for note in &trace.notes {
        println!("note:       {note}");
    }
    if !s.missing.is_empty() {
        let ranks: Vec<String> = s
            .missing
            .iter()
            .map(|&(first, last)| match last - first {
                0 => first.to_string(),
                1 => format!("{first}, {last}"),
                _ => format!("{first}-{last}"),
            })
            .collect();
        println!(
            "missing:    rank {} (not traced, or its files were lost)",
            ranks.join(", ")
        );
    }
    println!();
    println!("{:>6} {:>12} {:>10}  ending", "rank", "calls", "signatures");
    for r in &s.ranks {
        let ending = match trace.rank(r.rank) {
            Some(part) if running.contains(&r.rank) => {
                format!("running (process {} on this host)", part.meta.pid)
            }
            _ => r.ending.clone(),
        };
        println!(
            "{:>6} {:>12} {:>10}  {ending}",
            r.rank, r.calls, r.signatures
        );
    }
    Ok(())
}

/// The processors the ranks could run on against the ranks on their
/// hosts, and their share of a processor between calls, where recorded.
fn processors(trace: &Trace) -> Option<String> {
    let mut hosts: std::collections::BTreeMap<&str, (u32, u32)> = Default::default();
    for r in &trace.ranks {
        let (ranks, cpus) = hosts.entry(r.meta.host.as_str()).or_default();
        *ranks += 1;
        *cpus = (*cpus).max(r.meta.cpus);
    }
    let most = hosts.values().map(|&(_, cpus)| cpus).max()?;
    let fewest = hosts.values().map(|&(_, cpus)| cpus).min()?;
    if fewest == 0 {
        return None;
    }
    let up_to = if fewest < most { "up to " } else { "" };
    let mut line = format!(
        "{up_to}{most} on {} host(s) for {} ranks",
        hosts.len(),
        trace.ranks.len()
    );
    let crowded = hosts
        .values()
        .filter(|&&(ranks, cpus)| ranks > cpus)
        .count();
    if crowded > 0 {
        line += &format!(", more ranks than processors on {crowded}");
    }
    let shares: Vec<f64> = trace
        .ranks
        .iter()
        .filter_map(|r| r.meta.cpu_share)
        .collect();
    if let (Some(low), Some(high)) = (
        shares.iter().copied().reduce(f64::min),
        shares.iter().copied().reduce(f64::max),
    ) {
        line += &format!("; share of a processor between calls {low:.2}-{high:.2}");
    }
    Some(line)
}

/// Whether a rank with no word of its end (read from its crash journal)
/// is a process still running on this host with the tracer loaded.
fn still_running(meta: &mpigram_trace::RankMeta) -> bool {
    if meta.ending != mpigram_trace::Ending::Killed || meta.host != mpigram_trace::host_name() {
        return false;
    }
    std::fs::read_to_string(format!("/proc/{}/maps", meta.pid))
        .is_ok_and(|maps| maps.contains("libmpigram"))
}

pub(crate) fn warn_if_partial(trace: &Trace) {
    for e in &trace.skipped {
        eprintln!("mpigram: rank left out: {e}");
    }
    for note in &trace.notes {
        eprintln!("mpigram: note: {note}");
    }
    for r in trace.ranks.iter().filter(|r| !r.meta.is_complete()) {
        eprintln!(
            "mpigram: partial trace: rank {} {}",
            r.meta.rank,
            r.meta.describe_end()
        );
    }
}

pub(crate) fn rank_list(trace: &Trace) -> String {
    trace
        .ranks
        .iter()
        .map(|r| r.meta.rank.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
