//! Every MPI test program, traced: each rank's trace must expand to exactly
//! the calls it made (its verification stream), and every call must decode.

mod common;

use common::*;
use mpigram_testkit::{Expect, programs};

#[test]
fn every_program_is_traced_exactly_on_every_rank() {
    let mut failures = Vec::new();
    for p in programs().unwrap() {
        if p.expect != Expect::Success {
            continue; // the crash programs have tests of their own
        }
        let (low, high) = (*p.rank_counts(4).start(), *p.rank_counts(4).end());
        for ranks in if low == high {
            vec![low]
        } else {
            vec![low, high]
        } {
            let run = run_traced(&p.name, ranks, &[], &[]);
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
