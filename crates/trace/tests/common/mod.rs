//! Shared by the trace crate's tests.

#![allow(dead_code)]

use mpigram_grammar::Sequitur;
use mpigram_mpispec::encoding::{put_handle, put_rank};
use mpigram_mpispec::{HandleRef, Rank, func, put_signature_head};
use mpigram_trace::{CallStats, CommEntry, Ending, RankMeta, RankTrace, Timing};
use std::path::Path;

/// `e` is one line that names `file`.
pub fn one_line_naming(e: &impl std::fmt::Display, file: &Path) {
    let text = e.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(text.contains(name), "{text} does not name {name}");
}

/// A small but complete rank trace: two signatures, a loop.
pub fn sample(rank: u32) -> RankTrace {
    let mut s = Sequitur::new();
    for _ in 0..50 {
        s.push(0);
        s.push(1);
    }
    // MPI_Comm_rank(MPI_COMM_WORLD, rank) and MPI_Comm_rank(MPI_COMM_SELF, rank).
    let signature = |comm: u32| {
        let mut b = Vec::new();
        put_signature_head(&mut b, func::MPI_Comm_rank, 0);
        put_handle(&mut b, HandleRef::Predefined(comm));
        put_rank(&mut b, Rank::Relative(0));
        b
    };
    let signatures = vec![signature(0), signature(1)];
    RankTrace {
        meta: RankMeta {
            rank,
            world_size: 2,
            pid: 42,
            host: "node".into(),
            mpi_library: "MPICH".into(),
            timing: Timing::default(),
            calls: 100,
            start_ns: 1,
            end_ns: 2,
            ending: Ending::Finalized,
            recorder_allocations: 3,
            ns_per_tick: 1.0,
            // Measured on even ranks only: files hold ranks with and without.
            cpus: 2,
            cpu_share: (rank % 2 == 0).then_some(0.5),
            clock_sync: Vec::new(),
            run: 0,
            lost: mpigram_trace::Lost::None,
            ended_in: None,
        },
        signatures,
        grammar: s.grammar(rank),
        stats: vec![
            CallStats {
                count: 50,
                total_ns: 500,
                min_ns: 9,
                max_ns: 11,
                gap_ns: 70
            };
            2
        ],
        gaps: Default::default(),
        comms: vec![CommEntry {
            seq: 3,
            comm: 0,
            rank,
            size: 2,
            remote_size: 0,
            inter: false,
            leader: 0,
            instance: 0,
        }],
        times: Default::default(),
    }
}
