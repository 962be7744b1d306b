//! Collective and one-sided matching on traces of real MPI programs.

mod common;

use common::{mpigram, text};
use mpigram_analysis::decode::RankDecoder;
use mpigram_analysis::matching::collectives::CollectiveKind;
use mpigram_analysis::matching::{match_trace, world_ranks};
use mpigram_analysis::members::CommId;
use mpigram_testkit::{compile, mpi_available};
use mpigram_trace::Trace;

fn traced(program: &str, ranks: u32) -> (tempfile::TempDir, Trace) {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = ranks.to_string();
    let out = mpigram(&[
        "run",
        "-o",
        dir.path().to_str().unwrap(),
        "-n",
        &n,
        "--",
        exe.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{program}: {}", text(&out.stderr));
    let trace = Trace::open(dir.path()).unwrap();
    (dir, trace)
}

/// Function of each call of `rank`.
fn funcs(trace: &Trace, rank: u32) -> Vec<&'static str> {
    let part = trace.ranks.iter().find(|p| p.meta.rank == rank).unwrap();
    RankDecoder::new(trace, part)
        .map(|c| c.unwrap().func)
        .collect()
}

#[test]
fn every_collective_call_of_the_collective_programs_is_in_one_instance() {
    let ranks = 3;
    for program in [
        "coll_blocking",
        "coll_nonblocking",
        "coll_persistent",
        "comm",
        "topo",
        "intercomm",
        "rma_sync",
        "rma_windows",
    ] {
        let (_dir, trace) = traced(program, ranks);
        let m = match_trace(&trace, &world_ranks(&trace)).unwrap();
        let c = &m.collectives;
        assert!(
            c.unmatched.is_empty(),
            "{program}: {:?}",
            &c.unmatched[..c.unmatched.len().min(5)]
        );
        assert!(!c.instances.is_empty(), "{program}");
        let calls: Vec<Vec<&str>> = (0..ranks).map(|r| funcs(&trace, r)).collect();
        for inst in &c.instances {
            let mut seen: Vec<u32> = inst.participants.iter().map(|p| p.rank).collect();
            seen.dedup();
            assert_eq!(seen.len(), inst.participants.len(), "{program}: {inst:?}");
            if inst.comm == CommId::World {
                assert_eq!(seen, (0..ranks).collect::<Vec<_>>(), "{program}: {inst:?}");
            }
            // Every participant called the same function (or started it).
            let first =
                calls[inst.participants[0].rank as usize][inst.participants[0].post as usize];
            for p in &inst.participants {
                let f = calls[p.rank as usize][p.post as usize];
                assert!(
                    f == first || f.starts_with("MPI_Start"),
                    "{program}: {f} vs {first} in {inst:?}"
                );
                if let Some(done) = p.completion {
                    assert!(done >= p.post, "{program}: {inst:?}");
                    if done != p.post {
                        let f = calls[p.rank as usize][done as usize];
                        assert!(
                            f.starts_with("MPI_Wait") || f.starts_with("MPI_Test"),
                            "{f}"
                        );
                    }
                }
            }
            if matches!(
                inst.kind,
                CollectiveKind::RootToAll | CollectiveKind::AllToRoot
            ) {
                assert!(inst.root.is_some(), "{program}: {inst:?}");
            }
        }
        // As many world instances of each blocking collective as rank 0 made calls.
        let world = |f: &str| {
            c.instances
                .iter()
                .filter(|i| i.func == f && i.comm == CommId::World)
                .count()
        };
        if program == "coll_blocking" {
            for f in ["MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Gather"] {
                let on_world = calls[0].iter().filter(|&&g| g == f).count();
                assert!(on_world > 0, "{f}");
                assert_eq!(world(f), on_world, "{f}");
            }
        }
        if program == "coll_persistent" {
            // Each MPI_*_init is an instance, and each start of it another.
            let setups = c
                .instances
                .iter()
                .filter(|i| i.kind == CollectiveKind::Setup)
                .count();
            let started = c
                .instances
                .iter()
                .filter(|i| i.func.starts_with("MPI_Start"))
                .count();
            assert!(setups >= 17, "{setups}");
            assert!(started >= 2 * setups, "{started} starts of {setups}");
            assert!(
                c.instances
                    .iter()
                    .all(|i| i.participants.iter().all(|p| p.completion.is_some())
                        || i.kind == CollectiveKind::Setup)
            );
        }
        if program == "rma_sync" {
            let o = &m.one_sided;
            assert!(o.unmatched.is_empty(), "{:?}", o.unmatched);
            // Each rank exposes to its left neighbour and accesses its right one, twice.
            assert_eq!(o.exposures.len(), 2 * ranks as usize, "{:?}", o.exposures);
            for e in &o.exposures {
                assert_eq!(e.target, (e.origin + 1) % ranks);
                assert!(e.complete.is_some() && e.wait.is_some(), "{e:?}");
            }
            // Two lock epochs on rank 0 per rank, one exclusive.
            assert_eq!(o.locks.len(), 2 * ranks as usize, "{:?}", o.locks);
            assert!(
                o.locks
                    .iter()
                    .all(|l| l.target == Some(0) && l.unlock > l.lock)
            );
            assert_eq!(
                o.locks.iter().filter(|l| l.exclusive).count(),
                ranks as usize
            );
            assert!(world("MPI_Win_fence") >= 2);
        }
    }
}
