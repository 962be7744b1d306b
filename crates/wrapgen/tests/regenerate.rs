//! The checked-in generated files are exactly what wrapgen produces now.
//! With MPICH installed (mpicc on PATH) this also re-probes MPICH and runs
//! the prototype and ABI checks; without it, it regenerates from the probe
//! snapshot, except under CI (`CI=true`), where a missing mpicc fails.

use mpigram_wrapgen::{Mode, default_root, run};

#[test]
fn generated_files_are_up_to_date() {
    let outcome = run(&default_root(), Mode::Check).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        outcome.changed.is_empty(),
        "out of date (run `cargo run -p mpigram-wrapgen`): {:?}",
        outcome.changed
    );
    if !outcome.probed {
        eprintln!(
            "note: mpicc not found: MPICH was not probed and the prototype check did not run"
        );
    }
}
