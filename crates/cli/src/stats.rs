//! `mpigram stats DIR [--json] [--heatmap FILE.svg|FILE.png]`: per-function
//! calls, time and bytes, message sizes and the communication matrix, as a
//! table for people or JSON for scripts (docs/stats.md).

mod font;
mod heatmap;

use anyhow::Result;
use mpigram_analysis::stats::{FunctionStats, Stats, bucket_range};
use mpigram_trace::Trace;
use std::io::Write;
use std::path::PathBuf;

/// Largest world size whose matrix is printed as a table.
const MATRIX_TABLE_RANKS: u32 = 16;
/// Pairs listed for larger worlds.
const TOP_PAIRS: usize = 10;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Print JSON (shape in docs/stats.md) instead of tables.
    #[arg(long)]
    json: bool,
    /// Also draw the communication matrix as a heat map (.svg or .png).
    #[arg(long, value_name = "FILE")]
    heatmap: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<()> {
    if let Some(path) = &args.heatmap {
        crate::refuse_inside(&args.trace, path)?;
    }
    let trace = Trace::open(&args.trace)?;
    crate::warn_if_partial(&trace);
    let stats = with_progress_bar(|progress| Stats::with_progress(&trace, progress))?;
    if let Some(path) = &args.heatmap {
        heatmap::write(&stats.matrix, path)?;
    }
    let text = if args.json {
        format!("{:#}\n", stats.to_json())
    } else {
        report(
            &stats,
            &args.trace.display().to_string(),
            args.heatmap.is_some(),
        )
    };
    let mut out = std::io::stdout().lock();
    // A reader that went away (`| head`) is not an error.
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return Ok(());
    }
    Ok(())
}

/// Runs `work` with a progress bar of the calls it walks in order (on a
/// terminal, once it reports any).
fn with_progress_bar<T>(work: impl FnOnce(&mut dyn FnMut(u64, u64)) -> T) -> T {
    let mut bar: Option<indicatif::ProgressBar> = None;
    let result = work(&mut |done, total| {
        bar.get_or_insert_with(|| crate::progress::calls(total))
            .set_position(done);
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result
}

/// The tables of `mpigram stats`.
fn report(stats: &Stats, name: &str, has_heatmap: bool) -> String {
    let mut s = String::new();
    let mut line = |text: String| {
        s.push_str(&text);
        s.push('\n');
    };
    line(format!(
        "trace {name}: {} ranks, {} calls",
        stats.ranks, stats.calls
    ));
    if !stats.expanded_ranks.is_empty() {
        line(format!(
            "(ranks {} walked in order: datatype or communicator ids reused with different meanings)",
            list(&stats.expanded_ranks)
        ));
    }
    line(String::new());
    line(format!(
        "{:<28} {:>12} {:>11} {:>10} {:>10} {:>12} {:>12}",
        "function", "calls", "total s", "mean", "max", "sent", "received"
    ));
    for f in &stats.functions {
        line(function_row(f));
    }
    if stats.functions.iter().any(|f| f.calls_unknown_bytes > 0) {
        line("(+? : some calls moved data of unknown size, not counted)".into());
    }

    line(String::new());
    let rows = stats.histogram.rows();
    let h = &stats.histogram;
    if rows.is_empty() && h.p2p_unknown + h.collective_unknown == 0 {
        line("message sizes: no point-to-point messages or collective operations".into());
    } else {
        line(format!(
            "{:<24} {:>14} {:>14}",
            "message size", "p2p messages", "collectives"
        ));
        let widest = rows.iter().map(|r| r.1 + r.2).max().unwrap_or(0).max(1);
        for (i, p2p, coll) in rows {
            let bar = "#".repeat(((p2p + coll) * 30).div_ceil(widest) as usize);
            line(format!(
                "{:<24} {p2p:>14} {coll:>14}  {bar}",
                bucket_label(i)
            ));
        }
        if h.p2p_unknown + h.collective_unknown > 0 {
            line(format!(
                "{:<24} {:>14} {:>14}",
                "unknown size", h.p2p_unknown, h.collective_unknown
            ));
        }
    }

    line(String::new());
    line(matrix_report(stats, has_heatmap));
    s
}

fn function_row(f: &FunctionStats) -> String {
    let unknown = if f.calls_unknown_bytes > 0 { "+?" } else { "" };
    let bytes = |b: u64| {
        if b == 0 && unknown.is_empty() {
            "-".to_owned()
        } else {
            format!("{}{unknown}", human_bytes(b))
        }
    };
    format!(
        "{:<28} {:>12} {:>11.6} {:>10} {:>10} {:>12} {:>12}",
        f.name,
        f.calls,
        f.total_ns as f64 * 1e-9,
        human_time(f.mean_ns()),
        human_time(f.max_ns as f64),
        bytes(f.bytes_sent),
        bytes(f.bytes_received)
    )
}

fn matrix_report(stats: &Stats, has_heatmap: bool) -> String {
    let m = &stats.matrix;
    let mut s = String::new();
    let total: u64 = m.pairs.values().map(|t| t.bytes).sum();
    let messages: u64 = m.pairs.values().map(|t| t.messages).sum();
    s.push_str(&format!(
        "point-to-point matrix (bytes sent, row = sender, column = receiver, world ranks): {} in {messages} messages\n",
        human_bytes(total)
    ));
    if m.pairs.is_empty() {
    } else if m.ranks <= MATRIX_TABLE_RANKS {
        s.push_str(&format!("{:>6}", ""));
        for to in 0..m.ranks {
            s.push_str(&format!(" {to:>10}"));
        }
        s.push('\n');
        for from in 0..m.ranks {
            s.push_str(&format!("{from:>6}"));
            for to in 0..m.ranks {
                let t = m.get(from, to);
                let cell = if t.messages == 0 {
                    ".".to_owned()
                } else {
                    human_bytes(t.bytes)
                };
                s.push_str(&format!(" {cell:>10}"));
            }
            s.push('\n');
        }
    } else {
        let mut pairs: Vec<_> = m.pairs.iter().collect();
        pairs.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(b.0)));
        s.push_str(&format!(
            "{} pairs of {} ranks exchanged messages; the {} largest:\n",
            pairs.len(),
            m.ranks,
            TOP_PAIRS.min(pairs.len())
        ));
        for &(&(from, to), t) in pairs.iter().take(TOP_PAIRS) {
            s.push_str(&format!(
                "  {from:>6} -> {to:<6} {:>12} in {} messages\n",
                human_bytes(t.bytes),
                t.messages
            ));
        }
        if !has_heatmap {
            s.push_str("(the whole matrix: --heatmap matrix.svg or matrix.png)\n");
        }
    }
    if m.unattributed.messages > 0 {
        s.push_str(&format!(
            "unattributed: {} in {} messages whose receiver the trace cannot place\n",
            human_bytes(m.unattributed.bytes),
            m.unattributed.messages
        ));
    }
    if m.unknown_size_messages > 0 {
        s.push_str(&format!(
            "{} messages of unknown size (counted as messages, not bytes)\n",
            m.unknown_size_messages
        ));
    }
    s.truncate(s.trim_end().len());
    s
}

/// `0 B`, `[1 KiB, 2 KiB)`.
fn bucket_label(i: usize) -> String {
    let (low, high) = bucket_range(i);
    match i {
        0 => "0 B".into(),
        1 => "1 B".into(),
        _ if high == u64::MAX => format!("[{}, 2^64)", human_bytes(low)),
        _ => format!("[{}, {})", human_bytes(low), human_bytes(high + 1)),
    }
}

/// Bytes with a binary unit: `512 B`, `1.5 KiB`, `24 MiB`.
pub(crate) fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 && v.fract() != 0.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.0} {}", UNITS[unit])
    }
}

fn human_time(ns: f64) -> String {
    match ns {
        n if n < 1e3 => format!("{n:.0}ns"),
        n if n < 1e6 => format!("{:.1}us", n / 1e3),
        n if n < 1e9 => format!("{:.1}ms", n / 1e6),
        n => format!("{:.2}s", n / 1e9),
    }
}

fn list(ranks: &[u32]) -> String {
    let shown: Vec<String> = ranks.iter().take(20).map(u32::to_string).collect();
    let more = if ranks.len() > 20 {
        format!(" and {} more", ranks.len() - 20)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_buckets_read_at_a_glance() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(24 << 20), "24 MiB");
        assert_eq!(bucket_label(0), "0 B");
        assert_eq!(bucket_label(2), "[2 B, 4 B)");
        assert_eq!(bucket_label(11), "[1 KiB, 2 KiB)");
        assert_eq!(bucket_label(64), "[8 EiB, 2^64)");
    }
}
