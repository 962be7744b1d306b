//! A process forked without exec (a helper that compresses a file, say)
//! is not the rank: the tracer does nothing in it — no trace written at
//! its exit, no signal noted in the rank's crash journal, no allocation
//! tracked — and the rank's recording goes on untouched.

mod common;

use common::*;
use mpigram_trace::Ending;

/// Calls of `fork_child` per rank: MPI_Init, 500 MPI_Comm_rank before the
/// fork and 500 after, MPI_Barrier (and MPI_Finalize, if it gets there).
const BEFORE_FINALIZE: usize = 1 + 1000 + 1;

#[test]
fn a_forked_child_that_exits_leaves_the_ranks_trace_alone() {
    let run = run_traced("fork_child", 2, &["exit"], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    assert!(trace.is_complete(), "{}", run.output);
    let mut files: Vec<String> = std::fs::read_dir(run.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [".lock", "rank0.verify", "rank1.verify", "trace.mgr"]
    );
    for rank in &trace.ranks {
        assert_eq!(rank.meta.ending, Ending::Finalized);
        assert_eq!(rank.meta.calls as usize, BEFORE_FINALIZE + 1);
    }
}

#[test]
fn a_forked_child_killed_by_a_signal_is_not_the_ranks_death() {
    // The child dies of SIGTERM; the rank then dies of SIGKILL, without a
    // word: its journal must say so, not that the rank died of SIGTERM.
    let run = run_traced("fork_child", 1, &["signal-then-kill"], &[]);
    assert!(!run.output.success(), "{}", run.output);
    let trace = run.trace();
    let [rank] = &trace.ranks[..] else {
        panic!("one rank: {}", run.output)
    };
    assert_eq!(rank.meta.ending, Ending::Killed, "{}", run.output);
    assert_eq!(rank.meta.calls as usize, BEFORE_FINALIZE);
}
