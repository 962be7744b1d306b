//! `mpigram export TRACE --format perfetto|chrome -o FILE`.

use anyhow::{Context, Result};
use clap::ValueEnum;
use mpigram_analysis::export::{self, RankTimes, Span};
use mpigram_trace::{RankPart, Trace};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[arg(long, value_enum, default_value_t = TimelineFormat::Perfetto)]
    format: TimelineFormat,
    /// The file to write.
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TimelineFormat {
    /// Perfetto's protobuf trace, for ui.perfetto.dev.
    Perfetto,
    /// Chrome's JSON trace-event format (chrome://tracing, Perfetto).
    Chrome,
}

pub fn run(args: &Args) -> Result<()> {
    let (dir, out) = (&args.trace, &args.output);
    let trace = Trace::open(dir)?;
    crate::warn_if_partial(&trace);
    let times = |part: &RankPart| rank_times(&trace, part);
    let file = File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut writer = BufWriter::new(file);
    let bar = crate::progress::calls(trace.ranks.iter().map(|r| r.meta.calls).sum());
    let format = match args.format {
        TimelineFormat::Perfetto => export::Format::Perfetto,
        TimelineFormat::Chrome => export::Format::Chrome,
    };
    let summary = export::export(
        &trace,
        &times as &RankTimes,
        format,
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
    eprintln!(
        "mpigram: {}: {} ranks, {} calls, {} messages, {} requests",
        out.display(),
        summary.ranks,
        summary.calls,
        summary.messages,
        summary.requests
    );
    if summary.unmatched > 0 {
        eprintln!(
            "mpigram: {} point-to-point operations matched nothing (no arrow)",
            summary.unmatched
        );
    }
    Ok(())
}

/// Per-call times of one rank.
fn rank_times(_trace: &Trace, part: &RankPart) -> Result<Vec<Span>, String> {
    Err(format!(
        "rank {}: per-call times cannot be read by this build yet",
        part.meta.rank
    ))
}
