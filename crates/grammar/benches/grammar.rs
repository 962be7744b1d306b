//! Throughput of the grammar engine on the shapes mpigram sees: loop nests
//! (regular MPI programs), random streams (irregular ones), expansion, and
//! the merge of many ranks' grammars.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mpigram_grammar::{Grammar, Sequitur, merge};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::hint::black_box;

/// A time-step loop around a halo exchange: 8 calls per neighbour phase, an
/// inner loop of 10 sweeps, an all-reduce every outer step; `steps` steps.
fn loop_nest(steps: u32) -> Vec<u32> {
    let mut out = vec![100, 101, 102];
    for _ in 0..steps {
        for _ in 0..10 {
            out.extend([1, 2, 3, 4, 5, 6, 7, 8]);
            for _ in 0..4 {
                out.extend([9, 10]);
            }
        }
        out.extend([11, 12]);
    }
    out.push(103);
    out
}

fn random_stream(len: usize, alphabet: u32, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen_range(0..alphabet)).collect()
}

fn pushed(input: &[u32]) -> Sequitur {
    let mut s = Sequitur::new();
    for &t in input {
        s.push(t);
    }
    s
}

fn build(input: &[u32]) -> Grammar {
    pushed(input).grammar(0)
}

fn push(c: &mut Criterion) {
    let mut group = c.benchmark_group("push");
    group.sample_size(10);
    let nest = loop_nest(25_000);
    group.throughput(Throughput::Elements(nest.len() as u64));
    group.bench_function("loop_nest", |b| b.iter(|| pushed(black_box(&nest))));
    // A stream that never repeats (every MPI call with a new tag): each push
    // is a new terminal and a new digram, the grammar's worst case.
    let distinct: Vec<u32> = (0..1_000_000).collect();
    group.throughput(Throughput::Elements(distinct.len() as u64));
    group.bench_function("distinct/1000000", |b| {
        b.iter(|| pushed(black_box(&distinct)))
    });
    for len in [100_000, 1_000_000] {
        let random = random_stream(len, 1000, 1);
        group.throughput(Throughput::Elements(random.len() as u64));
        group.bench_function(format!("random_1000/{len}"), |b| {
            b.iter(|| pushed(black_box(&random)))
        });
    }
    group.finish();
    // Taking the compact grammar out of the builder, per terminal pushed.
    let mut group = c.benchmark_group("take_grammar");
    group.sample_size(10);
    let random = random_stream(1_000_000, 1000, 1);
    group.throughput(Throughput::Elements(random.len() as u64));
    group.bench_function("random_1000/1000000", |b| {
        b.iter_batched(
            || pushed(&random),
            |mut s| s.grammar(0),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn expand(c: &mut Criterion) {
    let mut group = c.benchmark_group("expand");
    group.sample_size(10);
    let nest = loop_nest(25_000);
    let g = build(&nest);
    group.throughput(Throughput::Elements(nest.len() as u64));
    group.bench_function("loop_nest", |b| {
        b.iter(|| g.expand(0).unwrap().fold(0u64, |s, t| s + u64::from(t)))
    });
    let random = random_stream(1_000_000, 1000, 2);
    let g = build(&random);
    group.throughput(Throughput::Elements(random.len() as u64));
    group.bench_function("random_1000", |b| {
        b.iter(|| g.expand(0).unwrap().fold(0u64, |s, t| s + u64::from(t)))
    });
    group.finish();
}

/// 1,024 ranks whose grammars take 8 distinct shapes (like the boundary
/// classes of a stencil), merged into one.
fn merge_ranks(c: &mut Criterion) {
    let kinds: Vec<Grammar> = (0..8u32)
        .map(|kind| {
            let mut input = loop_nest(1000 + kind);
            input.extend(random_stream(200, 50, u64::from(kind)));
            build(&input)
        })
        .collect();
    let parts: Vec<Grammar> = (0..1024u32)
        .map(|rank| {
            kinds[(rank % 8) as usize]
                .clone()
                .with_streams(|_| rank)
                .unwrap()
        })
        .collect();
    let mut group = c.benchmark_group("merge");
    group.sample_size(10);
    group.bench_function("1024_ranks_8_distinct", |b| {
        b.iter_batched(
            || parts.clone(),
            |parts| merge(&parts).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, push, expand, merge_ranks);
criterion_main!(benches);
