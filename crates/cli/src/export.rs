//! `mpigram export TRACE --format perfetto|chrome -o FILE [--critical-path]`,
//! `mpigram export TRACE --format otf2 -o DIR`.

use anyhow::{Context, Result};
use clap::ValueEnum;
use mpigram_analysis::critical_path;
use mpigram_analysis::export::{self, PathMarks, RankTimes};
use mpigram_analysis::timeline::{self, Source};
use mpigram_trace::{RankPart, Trace};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[arg(long, value_enum, default_value_t = TimelineFormat::Perfetto)]
    format: TimelineFormat,
    /// The file to write (for OTF2: the directory of the archive).
    #[arg(short, long)]
    output: PathBuf,
    /// Mark the critical path: a `critical path` track with one slice per
    /// segment, and arrows along its jumps between ranks.
    #[arg(long)]
    critical_path: bool,
    /// Only these ranks: `0-3,8`.
    #[arg(long)]
    ranks: Option<String>,
    /// Only calls that end at or after this: a time from the run's start
    /// (`2.5s`, `300ms`, `40us`) or a call number (on each rank).
    #[arg(long)]
    from: Option<export::Bound>,
    /// Only calls that start at or before this time, or before this call
    /// number.
    #[arg(long)]
    to: Option<export::Bound>,
    /// Show each non-blocking operation on the rank's `requests` tracks,
    /// from its post to its completion (in Perfetto's format, about 30
    /// bytes a request).
    #[arg(long)]
    requests: bool,
    /// Show each call's number (`seq`, as `mpigram decode` numbers calls)
    /// among its arguments (in Perfetto's format, about 8 bytes a call).
    #[arg(long)]
    seq: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TimelineFormat {
    /// Perfetto's protobuf trace, for ui.perfetto.dev.
    Perfetto,
    /// Chrome's JSON trace-event format (chrome://tracing, Perfetto).
    Chrome,
    /// An OTF2 archive (Vampir, Scalasca): OUT/traces.otf2 and its files.
    Otf2,
}

pub fn run(args: &Args) -> Result<()> {
    let (dir, out) = (&args.trace, &args.output);
    crate::refuse_inside(dir, out)?;
    let ranks = args.ranks.as_deref().map(export::parse_ranks).transpose();
    let content = export::Content {
        window: export::Window {
            ranks: ranks.map_err(|e| anyhow::anyhow!("--ranks: {e}"))?,
            from: args.from,
            to: args.to,
        },
        requests: args.requests,
        seq: args.seq,
    };
    let trace = Trace::open(dir)?;
    crate::warn_if_partial(&trace);
    let run_start = trace.run_start_ns();
    let times = |part: &RankPart| {
        timeline::rank_times(&trace, part, Source::Best, run_start).map_err(|e| e.to_string())
    };
    let format = match args.format {
        TimelineFormat::Perfetto => export::Format::Perfetto,
        TimelineFormat::Chrome => export::Format::Chrome,
        TimelineFormat::Otf2 => {
            anyhow::ensure!(
                !args.critical_path,
                "--critical-path marks Perfetto and Chrome timelines, not OTF2 archives"
            );
            return otf2(&trace, &times, dir, out);
        }
    };
    let analysis = if args.critical_path {
        Some(critical_path::analyse(&trace, Source::Best, false)?)
    } else {
        None
    };
    let marks = analysis.as_ref().map(|a| PathMarks {
        path: &a.path,
        sites: &a.sites,
    });
    let file = File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut writer = BufWriter::new(file);
    let bar = crate::progress::calls(trace.ranks.iter().map(|r| r.meta.calls).sum());
    let summary = export::export(
        &trace,
        Source::Best,
        format,
        marks,
        &content,
        &mut writer,
        &mut |done| {
            if done % 4096 == 0 {
                bar.set_position(done);
            }
        },
    );
    bar.finish_and_clear();
    drop(writer);
    let summary = match summary {
        Ok(summary) => summary,
        Err(e) => {
            std::fs::remove_file(out).ok(); // no half-written timeline
            return Err(e).with_context(|| format!("cannot export {}", dir.display()));
        }
    };
    let requests = if args.requests {
        format!(", {} requests", summary.requests)
    } else {
        String::new()
    };
    eprintln!(
        "mpigram: {}: {} ranks, {} calls, {} messages{requests}",
        out.display(),
        summary.ranks,
        summary.calls,
        summary.messages,
    );
    if args.critical_path {
        eprintln!(
            "mpigram: the critical path: {} segments, {} jumps between ranks",
            summary.path_segments, summary.path_jumps
        );
    }
    if summary.untimed > 0 {
        eprintln!(
            "mpigram: {} calls of killed ranks have no times and are not shown",
            summary.untimed
        );
    }
    if summary.backwards > 0 {
        eprintln!(
            "mpigram: {} arrows go back in time (the receive ended before the send began, by the clocks); Perfetto does not draw them",
            summary.backwards
        );
    }
    if summary.unmatched > 0 {
        eprintln!(
            "mpigram: {} point-to-point operations matched nothing (no arrow)",
            summary.unmatched
        );
    }
    Ok(())
}

/// Writes the OTF2 archive of `trace` into directory `out` (replacing an
/// archive of the same name there; nothing of it is left on an error).
fn otf2(trace: &Trace, times: &RankTimes, dir: &Path, out: &Path) -> Result<()> {
    let name = mpigram_otf2::ARCHIVE_NAME;
    remove_archive(out)?;
    let summary = match mpigram_otf2::export(trace, times, out) {
        Ok(summary) => summary,
        Err(e) => {
            remove_archive(out).ok(); // no half-written archive
            return Err(e).with_context(|| format!("cannot export {}", dir.display()));
        }
    };
    eprintln!(
        "mpigram: {}: {} ranks, {} calls, {} messages, {} blocking collective calls, {} non-blocking collective operations",
        out.join(format!("{name}.otf2")).display(),
        summary.ranks,
        summary.calls,
        summary.messages,
        summary.collective_calls,
        summary.collective_requests
    );
    if summary.untimed > 0 {
        eprintln!(
            "mpigram: {} calls of killed ranks have no times and are not written",
            summary.untimed
        );
    }
    if summary.unmatched > 0 {
        eprintln!(
            "mpigram: {} point-to-point operations matched nothing (no message records)",
            summary.unmatched
        );
    }
    Ok(())
}

/// Removes the OTF2 archive `out/traces.*` if there is one.
fn remove_archive(out: &Path) -> Result<()> {
    let name = mpigram_otf2::ARCHIVE_NAME;
    for file in [format!("{name}.otf2"), format!("{name}.def")] {
        let path = out.join(file);
        if path.exists() {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    let files = out.join(name);
    if files.exists() {
        std::fs::remove_dir_all(&files)
            .with_context(|| format!("cannot remove {}", files.display()))?;
    }
    Ok(())
}
