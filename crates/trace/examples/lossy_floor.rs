//! How small lossy timing can get on a real run, under its error bound.
//!
//! Usage: `lossy_floor TRACE [BASE]` on a trace recorded with
//! `MPIGRAM_TIMING=lossless`. Codes every call's times as lossy timing
//! with base BASE (default 1.1) would, and prints, in bytes per call:
//! - `stored`: the codes as LOSSY_TIMES stores them (zstd blocks);
//! - `floor`: what an adaptive coder needs that knows each call's
//!   signature (the empirical entropy of the codes given the signature,
//!   each code counted against the codes of that signature before it: a
//!   Krichevsky–Trofimov estimate per signature and column).
//!
//! A code is the only value its bin allows: the bound (every decoded
//! duration, and interval from the previous decoded end, `x / b < v <= x`)
//! leaves no choice of code. So `floor` bounds what any coder of these
//! codes that sees one call's signature at a time can reach: jitter of the
//! call times sets it, not the coder.

use mpigram_trace::Trace;
use mpigram_trace::timing::{Bins, ColumnWriter, DEFAULT_BASE, LossyClock, decode_exact};
use std::collections::HashMap;
use std::path::PathBuf;

/// Adaptive per-context code lengths: counts of each code in each context.
#[derive(Default)]
struct Entropy {
    seen: HashMap<(u64, u32), u32>,
    total: HashMap<u64, u32>,
    bits: f64,
}

impl Entropy {
    fn code(&mut self, context: u64, code: u32, alphabet: usize) {
        let seen = self.seen.entry((context, code)).or_default();
        let total = self.total.entry(context).or_default();
        let p = (f64::from(*seen) + 0.5) / (f64::from(*total) + 0.5 * alphabet as f64);
        self.bits -= p.log2();
        *seen += 1;
        *total += 1;
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("lossy_floor: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: lossy_floor TRACE [BASE]")?);
    let base = match args.next() {
        Some(b) => b.parse()?,
        None => DEFAULT_BASE,
    };
    let bins = Bins::new(base)?;
    let trace = Trace::open(&dir)?;
    let (mut calls, mut stored, mut floor) = (0usize, 0usize, Entropy::default());
    for part in &trace.ranks {
        if !part.meta.timing.lossless {
            return Err(format!("rank {} has no lossless timing", part.meta.rank).into());
        }
        let times = decode_exact(&part.times.exact)?;
        let terminals = trace
            .grammar
            .expand(part.meta.rank)
            .ok_or("a rank without calls")?;
        let (mut clock, mut columns) = (LossyClock::default(), ColumnWriter::default());
        for (terminal, (start, end)) in terminals.zip(times) {
            let (interval, duration) = clock.encode(&bins, start, end);
            columns.push(interval.into(), duration.into());
            let context = u64::from(terminal) << 1;
            floor.code(context, interval, bins.len());
            floor.code(context | 1, duration, bins.len());
            calls += 1;
        }
        stored += columns.bytes().len();
    }
    let per_call = |bytes: f64| bytes / calls.max(1) as f64;
    println!(
        "calls {calls} base {base} stored {:.3} floor {:.3} bytes/call",
        per_call(stored as f64),
        per_call(floor.bits / 8.0)
    );
    Ok(())
}
