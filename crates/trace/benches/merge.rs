//! The merge at MPI_Finalize, alone: 4,096 synthetic rank traces of which
//! 8 behaviours are distinct (like the corner, edge and interior ranks of
//! a halo exchange), merged in the pairwise rounds the tracer runs.
//!
//! - `absorb rounds + final pass`: every absorb of every rank, run one
//!   after another on one core (the total work of all ranks; at finalize
//!   the ranks run theirs in parallel and rank 0's share is the critical
//!   path), then rank 0's final cross-rank pass.
//! - `... with the wire encoding`: the same, with each part encoded to
//!   the bytes a rank sends and decoded (validated) by the receiver, as at
//!   finalize.
//! - Opening the written `trace.mgr`: every rank, or one rank alone.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use mpigram_format::Codec;
use mpigram_grammar::Sequitur;
use mpigram_mpispec::encoding::{put_handle, put_int, put_rank};
use mpigram_mpispec::{HandleRef, Rank, func, put_signature_head};
use mpigram_trace::{CallStats, CommEntry, Ending, RankMeta, RankTrace, Timing, Trace};

const RANKS: u32 = 4096;
const CLASSES: u32 = 8;
const ITERATIONS: u32 = 1000;

/// One call: function, a rank argument, an integer.
fn signature(f: mpigram_mpispec::FuncId, peer: Rank, value: i64) -> Vec<u8> {
    let mut b = Vec::new();
    put_signature_head(&mut b, f, 0);
    put_rank(&mut b, peer);
    put_int(&mut b, value);
    put_handle(&mut b, HandleRef::Predefined(0));
    b
}

/// Rank `rank` of behaviour class `class`: a setup phase, then a time-step
/// loop of four receives, four sends (to MPI_PROC_NULL on the sides the
/// class lacks neighbours) and a Waitall, with an all-reduce every tenth
/// step; per-rank timing and a communicator log.
fn rank_trace(rank: u32, class: u32) -> RankTrace {
    let mut signatures = vec![
        signature(func::MPI_Init, Rank::ProcNull, 0),
        signature(func::MPI_Cart_coords, Rank::Relative(0), i64::from(class)),
        signature(func::MPI_Waitall, Rank::ProcNull, 8),
        signature(func::MPI_Allreduce, Rank::ProcNull, 1),
        signature(func::MPI_Finalize, Rank::ProcNull, 0),
    ];
    for side in 0..4 {
        let peer = if class & (1 << (side % 3)) != 0 {
            Rank::ProcNull
        } else {
            Rank::Relative(if side % 2 == 0 { 1 } else { -1 } * (1 + side / 2))
        };
        signatures.push(signature(func::MPI_Irecv, peer, side));
        signatures.push(signature(func::MPI_Isend, peer, side));
    }
    let mut s = Sequitur::new();
    s.push(0);
    s.push(1);
    for step in 0..ITERATIONS {
        for t in 5..13 {
            s.push(t);
        }
        s.push(2);
        if step % 10 == 9 {
            s.push(3);
        }
    }
    s.push(4);
    let stats = (0..signatures.len() as u64)
        .map(|t| {
            let spread = u64::from(rank) * 7 + t * 13;
            CallStats {
                count: 1,
                total_ns: 1_000 + spread,
                min_ns: 100 + spread % 50,
                max_ns: 5_000 + spread,
                gap_ns: 2_000 + spread,
            }
        })
        .collect();
    RankTrace {
        meta: RankMeta {
            rank,
            world_size: RANKS,
            pid: 10_000 + rank,
            host: format!("node{}", rank / 64),
            mpi_library: "MPICH Version: 4.0.2".into(),
            timing: Timing::default(),
            calls: s.len(),
            start_ns: 1_000_000,
            end_ns: 2_000_000 + u64::from(rank),
            ending: Ending::Finalized,
            recorder_allocations: 100,
            ns_per_tick: 1.0,
            cpus: 0,
            cpu_share: None,
            clock_sync: Vec::new(),
            run: 0,
            lost: mpigram_trace::Lost::None,
            ended_in: None,
        },
        signatures,
        grammar: s.grammar(rank),
        stats,
        gaps: Default::default(),
        comms: vec![CommEntry {
            seq: 1,
            comm: 0,
            rank,
            size: RANKS,
            remote_size: 0,
            inter: false,
            leader: 0,
            instance: 0,
        }],
        times: Default::default(),
    }
}

fn parts() -> Vec<Trace> {
    (0..RANKS)
        .map(|r| Trace::from_rank(rank_trace(r, r % CLASSES)))
        .collect()
}

/// The tracer's rounds: in round k, rank r + 2^k's part goes to rank r.
fn merge(mut parts: Vec<Option<Trace>>, wire: bool) -> Trace {
    let mut step = 1;
    while step < parts.len() {
        for r in (0..parts.len()).step_by(2 * step) {
            let Some(sent) = parts.get_mut(r + step).and_then(Option::take) else {
                continue;
            };
            let sent = if wire {
                let bytes = sent.to_bytes(Codec::Raw).unwrap();
                Trace::from_bytes(bytes, "part").unwrap()
            } else {
                sent
            };
            parts[r].as_mut().unwrap().absorb(sent).unwrap();
        }
        step *= 2;
    }
    let mut whole = parts[0].take().unwrap();
    whole.share().unwrap();
    whole
}

fn bench(c: &mut Criterion) {
    let parts = parts();
    let whole = merge(parts.iter().cloned().map(Some).collect(), true);
    assert_eq!(whole.ranks.len(), RANKS as usize);
    let mut starts: Vec<u32> = whole.grammar.streams().iter().map(|&(_, s)| s).collect();
    starts.sort_unstable();
    starts.dedup();
    assert_eq!(starts.len(), CLASSES as usize, "one stream per behaviour");
    let bytes = whole.to_bytes(Codec::Zstd).unwrap().len();
    eprintln!(
        "merged: {} ranks, {} signatures, {} rules, {} distinct streams, {bytes} bytes",
        whole.ranks.len(),
        whole.signatures.len(),
        whole.grammar.num_rules(),
        starts.len()
    );
    let mut g = c.benchmark_group("merge 4096 ranks, 8 distinct");
    g.sample_size(10);
    for (name, wire) in [
        ("absorb rounds + final pass", false),
        ("absorb rounds + final pass, with the wire encoding", true),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || parts.iter().cloned().map(Some).collect(),
                |p| merge(p, wire),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();

    // Reading it back: every rank, or one rank alone (its chunk of
    // per-rank data, the signatures and the grammar).
    let dir = tempfile::tempdir().unwrap();
    whole.write(dir.path()).unwrap();
    let mut g = c.benchmark_group("open trace.mgr of 4096 ranks");
    g.bench_function("every rank", |b| {
        b.iter(|| Trace::open(dir.path()).unwrap())
    });
    g.bench_function("one rank", |b| {
        b.iter(|| Trace::open_rank(dir.path(), 2049).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
