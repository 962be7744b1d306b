//! What the grammar engine does with the call stream of a regular MPI
//! program: a 2D 5-point halo exchange on a 4x4 grid of ranks, whose calls
//! are numbered the way the tracer numbers call signatures (equal calls,
//! relative ranks, one number). Run: `cargo run -p mpigram-grammar --example demo`.

use mpigram_grammar::{Grammar, Sequitur, merge};
use std::collections::BTreeMap;

/// Call signatures, as the tracer would intern them: text -> terminal.
#[derive(Default)]
struct Signatures(BTreeMap<String, u32>);

impl Signatures {
    fn id(&mut self, call: String) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(call).or_insert(next)
    }
}

/// The calls of one rank of a px x py non-periodic halo exchange.
fn halo_rank(sigs: &mut Signatures, rank: u32, px: u32, py: u32, iterations: u32) -> Vec<u32> {
    let (x, y) = (rank % px, rank / px);
    // Relative neighbours, or MPI_PROC_NULL at the boundary.
    let neighbours = [
        (x > 0).then(|| "me-1".to_string()),
        (x + 1 < px).then(|| "me+1".to_string()),
        (y > 0).then(|| format!("me-{px}")),
        (y + 1 < py).then(|| format!("me+{px}")),
    ]
    .map(|n| n.unwrap_or_else(|| "MPI_PROC_NULL".to_string()));
    let mut calls = vec![
        sigs.id("MPI_Init".into()),
        sigs.id("MPI_Comm_rank(MPI_COMM_WORLD, me)".into()),
        sigs.id("MPI_Comm_size(MPI_COMM_WORLD, 16)".into()),
    ];
    for i in 0..iterations {
        for (k, n) in neighbours.iter().enumerate() {
            calls.push(sigs.id(format!(
                "MPI_Irecv(seg1+{k}, 64, MPI_DOUBLE, {n}, 0, MPI_COMM_WORLD, req{k})"
            )));
        }
        for (k, n) in neighbours.iter().enumerate() {
            calls.push(sigs.id(format!(
                "MPI_Isend(seg2+{k}, 64, MPI_DOUBLE, {n}, 0, MPI_COMM_WORLD, req{})",
                k + 4
            )));
        }
        calls.push(sigs.id("MPI_Waitall(8, [req0..req7], statuses)".into()));
        if i % 10 == 9 {
            calls.push(
                sigs.id("MPI_Allreduce(seg3, seg4, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)".into()),
            );
        }
    }
    calls.push(sigs.id("MPI_Finalize".into()));
    calls
}

fn grammar_of(calls: &[u32], rank: u32) -> Grammar {
    let mut s = Sequitur::new();
    calls.iter().for_each(|&c| s.push(c));
    s.grammar(rank)
}

fn main() {
    let mut sigs = Signatures::default();
    println!("Rank 5 of a 4x4 halo exchange, 1,000 iterations:");
    let calls = halo_rank(&mut sigs, 5, 4, 4, 1000);
    let g = grammar_of(&calls, 5);
    println!(
        "  {} calls -> {} rules, {} symbols, {} bytes encoded\n",
        calls.len(),
        g.num_rules(),
        g.num_runs(),
        g.encode().len()
    );
    print!("{g}");
    assert!(
        g.expand(5).unwrap().eq(calls.iter().copied()),
        "expansion must give the calls back"
    );
    println!(
        "  (expanding the grammar gives the {} calls back, in order)\n",
        calls.len()
    );

    println!("Size against iterations (one rank):");
    for iterations in [100, 1_000, 10_000, 100_000] {
        let calls = halo_rank(&mut sigs, 5, 4, 4, iterations);
        let g = grammar_of(&calls, 5);
        println!(
            "  {iterations:>7} iterations: {:>8} calls -> {:>3} bytes",
            calls.len(),
            g.encode().len()
        );
    }

    println!("\nAll 16 ranks, 1,000 iterations, merged into one grammar:");
    let parts: Vec<Grammar> = (0..16)
        .map(|r| grammar_of(&halo_rank(&mut sigs, r, 4, 4, 1000), r))
        .collect();
    let separate: usize = parts.iter().map(|g| g.encode().len()).sum();
    let merged = merge(&parts).unwrap();
    let distinct: std::collections::BTreeSet<_> =
        merged.streams().iter().map(|&(_, start)| start).collect();
    println!(
        "  {} calls, {} distinct call signatures, {} distinct rank behaviours (the 9 boundary classes)",
        merged.total_len(),
        sigs.0.len(),
        distinct.len()
    );
    println!(
        "  16 separate grammars: {separate} bytes; merged: {} bytes",
        merged.encode().len()
    );
    for (r, part) in parts.iter().enumerate() {
        let r = r as u32;
        assert!(
            merged.expand(r).unwrap().eq(part.expand(r).unwrap()),
            "rank {r} must expand alone"
        );
    }
    println!("  every rank expands alone from the merged grammar to exactly its calls");
}
