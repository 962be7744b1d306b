//! `mpigram decode`: every call of every rank with every argument, and
//! its times when the trace has per-call timing.

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use mpigram_analysis::decode::RankDecoder;
use mpigram_analysis::timeline::{Source, Span, rank_spans};
use mpigram_trace::Trace;
use serde_json::json;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Only this rank.
    #[arg(long)]
    rank: Option<u32>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write to this file instead of standard output (with a progress
    /// bar on a terminal).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Jsonl,
}

pub fn run(args: &Args) -> Result<()> {
    let dir = &args.trace;
    if let Some(out) = &args.output {
        crate::refuse_inside(dir, out)?;
    }
    let trace = match args.rank {
        Some(r) => Trace::open_rank(dir, r)?,
        None => Trace::open(dir)?,
    };
    if let Some(r) = args.rank {
        if trace.rank(r).is_none() {
            bail!(
                "{}: no rank {r} (the trace has ranks {})",
                dir.display(),
                crate::rank_list(&trace)
            );
        }
    }
    crate::warn_if_partial(&trace);
    let out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(out);
    let parts: Vec<_> = trace
        .ranks
        .iter()
        .filter(|t| args.rank.is_none_or(|r| t.meta.rank == r))
        .collect();
    let bar = match args.output {
        Some(_) => crate::progress::calls(parts.iter().map(|p| p.meta.calls).sum()),
        None => indicatif::ProgressBar::hidden(),
    };
    let start = trace.run_start_ns();
    for part in parts {
        // Times are read as the calls are: memory does not grow with them.
        let mut times = match part.meta.timing.per_call() {
            true => Some(rank_spans(&trace, part, Source::Best, start)?),
            false => None,
        };
        for call in RankDecoder::new(&trace, part) {
            let call = call?;
            let time: Option<Span> = times.as_mut().and_then(Iterator::next).transpose()?;
            let time = time.as_ref();
            let line = match args.format {
                Format::Text => match time {
                    Some(t) => format!(
                        "{} @{:.9}s +{:.3}us",
                        call.to_text(),
                        t.start_ns as f64 * 1e-9,
                        (t.end_ns - t.start_ns) as f64 * 1e-3
                    ),
                    None => call.to_text(),
                },
                Format::Jsonl => {
                    let mut j = call.to_json();
                    if let (Some(t), Some(o)) = (time, j.as_object_mut()) {
                        o.insert("start_ns".into(), json!(t.start_ns));
                        o.insert("end_ns".into(), json!(t.end_ns));
                    }
                    j.to_string()
                }
            };
            if writeln!(out, "{line}").is_err() {
                // The reader went away (`| head`); a file that cannot be
                // written is an error.
                return match &args.output {
                    Some(path) => Err(anyhow::anyhow!("cannot write {}", path.display())),
                    None => Ok(()),
                };
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    out.flush()
        .or_else(|e| {
            if args.output.is_some() {
                Err(e)
            } else {
                Ok(())
            }
        })
        .context("cannot write the decoded calls")
}
