//! The same programs traced under MPICH 4.0.2, Open MPI 4.1.4 and MPICH
//! 5.0.2's MPI 5.0 standard ABI make the same calls, as `mpigram diff`
//! sees them (scripts/setup installs all three). The documented exception:
//! buffer addresses, whose memory segments are numbered in the order heap
//! blocks appear, and each MPI library allocates its own blocks among the
//! application's (`--ignore buffers`).

mod common;

use common::{mpigram, text, trace_under};
use mpigram_testkit::Mpi;
use std::path::{Path, PathBuf};

/// Traces `program` on 2 ranks under `mpi` into `dir/<mpi>-<program>`.
fn trace(dir: &Path, mpi: &Mpi, program: &str, args: &[&str]) -> PathBuf {
    assert!(
        mpi.installed(),
        "{} is not installed: scripts/setup-mpis installs it",
        mpi.name
    );
    let out = dir.join(format!("{}-{program}", mpi.name));
    trace_under(mpi, program, args, &out);
    out
}

#[test]
fn the_same_programs_make_the_same_calls_under_every_mpi() {
    let dir = tempfile::tempdir().unwrap();
    let mpich = Mpi::named("mpich").unwrap();
    for (program, args) in [("halo2d", &["20"][..]), ("coll_blocking", &[][..])] {
        let reference = trace(dir.path(), &mpich, program, args);
        for name in ["openmpi", "mpich-abi"] {
            let mpi = Mpi::named(name).unwrap();
            let other = trace(dir.path(), &mpi, program, args);
            let out = mpigram(&[
                "diff",
                reference.to_str().unwrap(),
                other.to_str().unwrap(),
                "--ignore",
                "buffers",
            ]);
            let report = text(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{program} under {name}:\n{report}{}",
                text(&out.stderr)
            );
            assert!(report.contains("same calls on all 2 ranks"), "{report}");
            // Without the exception, the buffers do differ: the test compares something.
            let strict = mpigram(&["diff", reference.to_str().unwrap(), other.to_str().unwrap()]);
            assert_eq!(strict.status.code(), Some(1), "{}", text(&strict.stdout));
        }
    }
}
