//! Every MPI test program, traced: each rank's trace must expand to exactly
//! the calls it made (its verification stream), and every call must decode.

mod common;

use common::*;
use mpigram_testkit::{Expect, Mpi, programs};

/// Under the test run's MPI (`MPIGRAM_TEST_MPI`): every program it can
/// build (an MPI 3.1 has no persistent collectives, ...).
#[test]
fn every_program_is_traced_exactly_on_every_rank() {
    let mut failures = Vec::new();
    let mpi = Mpi::selected();
    for p in programs().unwrap() {
        if p.expect != Expect::Success {
            continue; // the crash programs have tests of their own
        }
        if !p.builds_with(mpi) {
            eprintln!("{}: needs {:?}, which {} lacks", p.name, p.needs, mpi.name);
            continue;
        }
        let (low, high) = (*p.rank_counts(4).start(), *p.rank_counts(4).end());
        for ranks in if low == high {
            vec![low]
        } else {
            vec![low, high]
        } {
            let run = run_traced(&p.name, ranks, &[], &[]);
            if let (Err(e), false) = (p.expect.check(&run.output), mpi.name == "mpich") {
                if let Some(why) = fails_untraced(&p, ranks) {
                    // Another MPI than the one the programs were written
                    // against may fail them by itself: not the tracer's doing.
                    eprintln!(
                        "{} on {ranks} ranks fails under {} without the tracer too ({why}); traced: {e}",
                        p.name, mpi.name
                    );
                    continue;
                }
            }
            if let Err(e) = p.expect.check(&run.output) {
                failures.push(format!(
                    "{} on {ranks} ranks: {e}\n{}",
                    p.name, run.output.stderr
                ));
                continue;
            }
            let result = std::panic::catch_unwind(|| assert_trace_is_exact(&run, ranks));
            if let Err(e) = result {
                let message = e.downcast_ref::<String>().cloned().unwrap_or_default();
                failures.push(format!("{} on {ranks} ranks: {message}", p.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Why `p` fails on `ranks` ranks without the tracer, if it does.
fn fails_untraced(p: &mpigram_testkit::Program, ranks: u32) -> Option<String> {
    let exe = p.compile().ok()?;
    let out = mpigram_testkit::mpiexec(ranks, exe, [] as [&str; 0])
        .run()
        .ok()?;
    p.expect.check(&out).err().map(|e| e.to_string())
}
