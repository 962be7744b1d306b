//! `mpigram diff` on real traces: exit status, first difference, counts.

mod common;

use common::{mpigram, text, trace_under};
use mpigram_testkit::{Mpi, mpi_available};
use std::path::{Path, PathBuf};

/// Traces `halo2d ITERATIONS` on 2 ranks into `dir/name`.
fn halo(dir: &Path, name: &str, iterations: u32) -> PathBuf {
    let out = dir.join(name);
    trace_under(Mpi::selected(), "halo2d", &[&iterations.to_string()], &out);
    out
}

fn diff(args: &[&Path], extra: &[&str]) -> (Option<i32>, String, String) {
    let mut all: Vec<&str> = vec!["diff"];
    all.extend(args.iter().map(|p| p.to_str().unwrap()));
    all.extend(extra);
    let out = mpigram(&all);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn diff_tells_same_calls_from_different_ones_by_exit_status() {
    mpi_available().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        halo(dir.path(), "a", 30),
        halo(dir.path(), "b", 30),
        halo(dir.path(), "c", 31),
    );

    let (code, out, err) = diff(&[&a, &b], &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("same calls on all 2 ranks; only timing differs"),
        "{out}"
    );

    let (code, out, err) = diff(&[&a, &c], &["--context", "1"]);
    assert_eq!(code, Some(1), "{out}{err}");
    // 30 iterations of Irecv/Isend to 4 neighbours + Waitall, an Allreduce
    // every 10th: the 31st iteration's first call is where c goes on.
    assert!(
        out.contains("rank 0: first difference at call 283 (286 calls in A, 295 in B)"),
        "{out}"
    );
    assert!(out.contains("  - 0 ") && out.contains("  + 0 "), "{out}");
    assert!(out.contains("MPI_Waitall "), "calls per function: {out}");
    assert!(out.contains("calls differ on 2 of 2 ranks"), "{out}");

    let (code, out, err) = diff(&[&a, &dir.path().join("none")], &[]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpigram: "), "{err}");

    let (code, _, err) = diff(&[&a, &b], &["--ignore", "addresses"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("buffers, requests"), "{err}");
}
