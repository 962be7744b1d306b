//! `mpigram gen-bench --ranks N`: a program traced on 4 ranks, its
//! benchmark generated for fewer ranks, built, run and traced there, and
//! compared call by call with the program itself traced at that count
//! (`common/round_trip.rs` says what may differ).

mod common;

use common::round_trip::{assert_same_calls, build, decode, gen_bench, trace};
use common::{mpigram, one_at_a_time, text};
use mpigram_testkit::{Mpi, compile, mpi_available};

/// Traces `program ARGS` on `traced` ranks, generates its benchmark for
/// each count of `ranks`, and checks that the benchmark makes the calls
/// the program makes at that count. Returns the sources.
fn extrapolates(program: &str, args: &[&str], traced: u32, ranks: &[u32]) -> Vec<String> {
    mpi_available().unwrap();
    let mpi = Mpi::selected();
    let _one = one_at_a_time();
    let exe = compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("traced");
    trace(mpi, &exe, traced, args, "aggregated", &from);
    let mut sources = Vec::new();
    for &n in ranks {
        let c = dir.path().join(format!("for{n}"));
        let (c_file, source) = gen_bench(&from, &["--compute", "none", "--ranks", &n.to_string()]);
        let c_here = c.with_extension("c");
        std::fs::rename(&c_file, &c_here).unwrap();
        assert!(
            source.contains(&format!("static const int ranks = {n};")),
            "{program} for {n} ranks:\n{source}"
        );
        let bench = build(mpi, &c_here);
        let (orig, regen) = (c.with_extension("orig"), c.with_extension("regen"));
        trace(mpi, &exe, n, args, "aggregated", &orig);
        trace(mpi, &bench, n, &[], "aggregated", &regen);
        let compared = assert_same_calls(&decode(&orig), &decode(&regen));
        assert!(compared > 0, "{program} on {n} ranks: no calls compared");
        sources.push(source);
    }
    sources
}

#[test]
fn a_2d_halo_exchange_on_a_cartesian_grid_extrapolates() {
    // 2 x 2 grid traced; 2 x 1 and 3 x 1 generated, where the grid's
    // neighbours are other ranks or none.
    let sources = extrapolates("halo2d", &["20"], 4, &[2, 3]);
    let s = &sources[1];
    assert!(s.contains("dims_for((int *)scratch[2], 3, 2)"), "{s}");
    assert!(
        s.contains("cart_peer(comms[0], 2, (const int[]){-1, 0})"),
        "{s}"
    );
    assert!(
        s.contains("cart_peer(comms[0], 2, (const int[]){0, 1})"),
        "{s}"
    );
}

#[test]
fn a_1d_decomposition_with_a_ring_and_per_rank_arrays_extrapolates() {
    let sources = extrapolates("stencil1d", &["10"], 4, &[1, 3]);
    let s = &sources[1];
    assert!(s.contains("offset_peer(world_rank, -1, 3)"), "{s}");
    assert!(s.contains("periodic_peer(world_rank, 1, 3)"), "{s}");
    // MPI_Gatherv's counts and displacements for 3 ranks.
    assert!(
        s.contains("(const int []){64, 64, 64}, (const int []){0, 64, 128}"),
        "{s}"
    );
}

#[test]
fn a_ring_whose_first_rank_starts_it_extrapolates_by_classes() {
    let sources = extrapolates("critpath_ring", &["1", "0", "3"], 4, &[3]);
    let s = &sources[0];
    assert!(
        s.contains("first rank as traced rank 0; middle ranks as traced ranks 1-2; last rank as traced rank 3"),
        "{s}"
    );
}

#[test]
fn an_irregular_trace_is_refused_with_the_first_call_that_is_not_regular() {
    mpi_available().unwrap();
    let mpi = Mpi::selected();
    let _one = one_at_a_time();
    let exe = compile("p2p_blocking").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("traced");
    trace(mpi, &exe, 4, &[], "aggregated", &from);
    let c = dir.path().join("bench.c");
    let out = mpigram(&[
        "gen-bench",
        from.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
        "--ranks",
        "3",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert_eq!(
        err.trim(),
        "mpigram: cannot generate a benchmark for 3 ranks from this trace: call 6 of rank 0: rank 0 calls MPI_Send where rank 1 calls MPI_Recv; as classes of the first, middle and last ranks: call 6 of rank 1: rank 1 calls MPI_Recv where rank 2 calls MPI_Send"
    );
    assert!(!c.exists());
}
