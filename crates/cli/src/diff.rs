//! `mpigram diff A B`: two traces compared call by call on every rank.
//! Exit status 0 when the calls are the same, 1 when they differ, 2 on
//! error, as for diff(1).

use anyhow::Result;
use mpigram_analysis::diff::{self, Ignore, Options, Side, TraceDiff};
use mpigram_trace::Trace;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    a: PathBuf,
    b: PathBuf,
    /// Argument classes whose differences do not count, comma-separated:
    /// buffers, requests, handles, statuses, returns, strings, callbacks.
    #[arg(long, value_delimiter = ',')]
    ignore: Vec<Ignore>,
    /// Calls shown before and after each rank's first difference.
    #[arg(long, default_value_t = 3)]
    context: u64,
    /// Ranks whose differences are shown in full (the others are listed).
    #[arg(long, default_value_t = 4)]
    show: usize,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let (a, b) = (Trace::open(&args.a)?, Trace::open(&args.b)?);
    let options = Options {
        ignore: args.ignore.clone(),
        context: args.context,
    };
    let d = diff::diff(&a, &b, &options).map_err(anyhow::Error::msg)?;
    print(&d, args);
    Ok(if d.same_calls() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print(d: &TraceDiff, args: &Args) {
    let (a, b) = (args.a.display(), args.b.display());
    if d.mpi.0 != d.mpi.1 {
        println!("A {a}: {}", d.mpi.0);
        println!("B {b}: {}", d.mpi.1);
    }
    for r in &d.only_a {
        println!("rank {r}: only in A");
    }
    for r in &d.only_b {
        println!("rank {r}: only in B");
    }
    for r in d.differences.iter().take(args.show) {
        println!(
            "rank {}: first difference at call {} ({} calls in A, {} in B)",
            r.rank, r.first, r.calls.0, r.calls.1
        );
        for c in &r.context {
            let mark = match c.side {
                Side::Both => ' ',
                Side::A => '-',
                Side::B => '+',
            };
            println!("  {mark} {}", c.call.to_text());
        }
        if !r.counts.is_empty() {
            println!("  calls per function (A -> B):");
            for f in &r.counts {
                println!("    {:<28} {} -> {}", f.func, f.a, f.b);
            }
        }
    }
    if d.differences.len() > args.show {
        let rest: Vec<String> = d.differences[args.show..]
            .iter()
            .map(|r| format!("{} (call {})", r.rank, r.first))
            .collect();
        println!("also differ: ranks {}", rest.join(", "));
    }
    let ignoring = if args.ignore.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = args.ignore.iter().map(|i| i.name()).collect();
        format!(" (ignoring {})", names.join(", "))
    };
    if d.same_calls() {
        let timing = if d.timing_differs {
            "; only timing differs"
        } else {
            ", timing too"
        };
        println!("same calls on all {} ranks{ignoring}{timing}", d.ranks);
    } else {
        println!(
            "calls differ on {} of {} ranks{ignoring}",
            d.differences.len() + d.only_a.len() + d.only_b.len(),
            d.ranks as usize + d.only_a.len() + d.only_b.len()
        );
    }
}
