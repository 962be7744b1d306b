//! The tracer's memory is bounded (`MPIGRAM_MEMORY`): a rank whose calls
//! never repeat writes its signature table and grammar out as parts when
//! they outgrow the budget, and the readers put the parts back in front of
//! its calls — exactly, also when the rank is killed after writing parts.

mod common;

use common::*;
use mpigram_trace::{Ending, RankTrace, Trace, part_file_name};
use std::path::Path;

/// Budget of these tests: small, so that a few thousand new signatures
/// fill it (the grammar's history alone is 256 KiB of it).
const BUDGET: usize = 1 << 20;

/// Part files of `rank` in `dir`, counted from part 0 on.
fn parts(dir: &Path, rank: u32) -> u32 {
    (0..)
        .take_while(|&k| dir.join(part_file_name(rank, k)).exists())
        .count() as u32
}

/// The tag of each MPI_Sendrecv among `rank`'s decoded calls, in order.
fn sendrecv_tags(trace: &Trace, rank: u32) -> Vec<i64> {
    decoded(trace, rank)
        .iter()
        .filter(|c| c.func == "MPI_Sendrecv")
        .map(|c| c.to_json()["args"]["sendtag"].as_i64().expect("a tag"))
        .collect()
}

/// 20,000 calls that are all new signatures, on 2 ranks, with a budget of
/// 1 MiB: each rank writes several parts; the trace read back (parts, then
/// `trace.mgr`) is its verification stream call for call, and the tracer's
/// own accounting of its table and grammar stayed near the budget.
#[test]
fn a_rank_over_its_memory_budget_writes_parts_and_loses_no_call() {
    let calls = 20_000;
    let run = run_traced(
        "irregular",
        2,
        &[&calls.to_string(), "1"],
        &[("MPIGRAM_MEMORY", "1M"), ("MPIGRAM_VERBOSE", "1")],
    );
    run.output.assert_success();
    let dir = run.dir.path();
    for rank in 0..2 {
        let n = parts(dir, rank);
        assert!(n >= 3, "rank {rank}: {n} parts\n{}", run.output);
        // The budget bounds what the rank held: it says so at finalize.
        let said = format!("rank {rank}: finalize took ");
        let line = run
            .output
            .stderr
            .lines()
            .find(|l| l.contains(&said))
            .unwrap_or_else(|| panic!("no finalize line for rank {rank}\n{}", run.output));
        assert!(line.contains(&format!("; {n} parts written out")), "{line}");
        let peak: usize = line
            .rsplit("at most ")
            .next()
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        // Half the budget (the other half is for writing a part out), over
        // it by at most the last signature's growth (a hash table's
        // doubling, in the first part).
        let limit = BUDGET / 2;
        assert!(
            peak > limit / 2 && peak < limit + limit / 4,
            "rank {rank}: {peak} bytes"
        );
    }
    let trace = assert_trace_is_exact(&run, 2);
    for rank in 0..2 {
        let tags = sendrecv_tags(&trace, rank);
        assert_eq!(tags, (1..=calls).collect::<Vec<i64>>(), "rank {rank}");
        let counted: u64 = trace
            .rank(rank)
            .unwrap()
            .stats
            .iter()
            .map(|s| s.1.count)
            .sum();
        assert_eq!(counted, trace.rank(rank).unwrap().meta.calls, "rank {rank}");
    }
    // One rank read alone (`decode --rank`) has its parts too.
    let alone = Trace::open_rank(dir, 1).unwrap();
    assert!(alone.calls(1).eq(trace.calls(1)), "rank 1 read alone");
    // A part that is missing is said, naming it.
    let missing = part_file_name(1, 1);
    std::fs::remove_file(dir.join(&missing)).unwrap();
    let e = Trace::open(dir).err().expect("a rank without its part 1");
    let e = e.to_string();
    assert!(e.contains("trace.mgr: rank 1's first "), "{e}");
    assert!(e.contains(&format!("but {missing} is missing")), "{e}");
}

/// A rank killed (SIGKILL, by the launcher after rank 1's MPI_Abort)
/// after writing parts is rebuilt from its parts, its journal's checkpoint
/// and the journal's tail: every call, in order, with its per-call times
/// (the parts' and then the journal's). The aborting rank wrote its own
/// file after its parts, which reads back as its verification stream.
#[test]
fn a_rank_killed_after_writing_parts_recovers_every_call() {
    let calls = 12_000;
    let run = run_traced(
        "crash_irregular",
        2,
        &[&calls.to_string()],
        &[
            ("MPIGRAM_MEMORY", "1M"),
            ("MPIGRAM_TIMING", "lossy,lossless"),
        ],
    );
    assert_eq!(run.output.status.code(), Some(42), "{}", run.output);
    let dir = run.dir.path();
    assert!(!dir.join("rank0.mgr").exists(), "rank 0 was killed");
    for rank in 0..2 {
        assert!(parts(dir, rank) >= 2, "rank {rank}\n{}", run.output);
    }
    let trace = run.trace();
    assert!(trace.skipped.is_empty(), "{:?}", trace.skipped);
    let killed = trace.rank(0).unwrap();
    assert_eq!(killed.meta.ending, Ending::Killed);
    assert_eq!(
        sendrecv_tags(&trace, 0),
        (1..=calls).collect::<Vec<i64>>(),
        "rank 0's calls, across its parts"
    );
    let funcs: Vec<&str> = decoded(&trace, 0).iter().map(|c| c.func).collect();
    assert_eq!(funcs.len() as u64, killed.meta.calls);
    assert_eq!(
        funcs.last(),
        Some(&"MPI_Barrier"),
        "the last call journaled"
    );
    assert_eq!(trace.rank(1).unwrap().meta.ending, Ending::Abort);
    let expected = verify_stream(dir, 1);
    let recorded: Vec<Vec<u8>> = trace.calls(1).map(<[u8]>::to_vec).collect();
    assert!(recorded == expected, "rank 1: its calls are not its own");
    assert_lossy_times_within_bound(&trace, 1.1, &[]);
}

/// Parts are written while the call memos are warm: the repeated request
/// window (MPI_Irecv, MPI_Isend, MPI_Waitall, recalled from the memos)
/// between new signatures must be encoded against each new part's table,
/// not with a terminal of the table written out.
#[test]
fn calls_recalled_from_the_memos_stay_exact_across_parts() {
    let iterations = 6_000;
    let run = run_traced(
        "spill_requests",
        2,
        &[&iterations.to_string()],
        &[("MPIGRAM_MEMORY", "1M")],
    );
    run.output.assert_success();
    let dir = run.dir.path();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in 0..2 {
        assert!(parts(dir, rank) >= 2, "rank {rank}\n{}", run.output);
        let funcs: Vec<&str> = decoded(&trace, rank).iter().map(|c| c.func).collect();
        let window = ["MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Sendrecv"];
        let body = &funcs[3..funcs.len() - 1];
        assert_eq!(body.len(), 4 * iterations, "rank {rank}");
        assert!(body.chunks(4).all(|c| c == window), "rank {rank}");
        let tags = sendrecv_tags(&trace, rank);
        assert_eq!(tags, (100..100 + iterations as i64).collect::<Vec<i64>>());
    }
}

/// Per-call times are held to the budget too: a loop that repeats one
/// signature, timed lossy and lossless, writes its times out with parts
/// (no signature is new after the first calls: the budget is checked every
/// 16,384 calls). Read back, every call of every rank has both times, the
/// lossy ones within their bound of the exact ones — so the parts' times
/// are joined in order, without a call lost or doubled at a part's edge.
#[test]
fn per_call_times_go_out_with_the_parts() {
    let iterations = 400_000;
    let run = run_traced(
        "irregular",
        2,
        &[&iterations.to_string(), &(2 * iterations).to_string()],
        &[
            ("MPIGRAM_MEMORY", "1M"),
            ("MPIGRAM_TIMING", "lossy,lossless"),
        ],
    );
    run.output.assert_success();
    let dir = run.dir.path();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in 0..2 {
        let n = parts(dir, rank);
        assert!(n >= 2, "rank {rank}: {n} parts\n{}", run.output);
        for k in 0..n {
            let part = RankTrace::read(&dir.join(part_file_name(rank, k))).unwrap();
            let timed = mpigram_trace::timing::calls_in(&part.times.exact).unwrap();
            let calls = part.grammar.stream_len(rank).unwrap();
            assert_eq!(timed, calls, "rank {rank} part {k}: a time per call");
        }
        let tags = sendrecv_tags(&trace, rank);
        assert_eq!(tags.len(), iterations, "rank {rank}");
    }
    assert_lossy_times_within_bound(&trace, 1.1, &[]);
}

/// A fixed set of signatures in an order that never repeats: the grammar
/// grows with every call while no signature is new, and is written out
/// in parts all the same.
#[test]
fn a_grammar_that_grows_without_new_signatures_goes_out_in_parts() {
    let iterations = 300_000;
    let run = run_traced(
        "irregular",
        2,
        &[&iterations.to_string(), "1", "64"],
        &[("MPIGRAM_MEMORY", "1M")],
    );
    run.output.assert_success();
    let dir = run.dir.path();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in 0..2 {
        let n = parts(dir, rank);
        assert!(n >= 2, "rank {rank}: {n} parts\n{}", run.output);
        let tags = sendrecv_tags(&trace, rank);
        assert_eq!(tags.len(), iterations, "rank {rank}");
        let distinct: std::collections::BTreeSet<i64> = tags.iter().copied().collect();
        assert_eq!(distinct, (1..=64).collect(), "rank {rank}");
    }
}

/// A new table starts with room for as many signatures as the last part
/// had: with a budget of 8 MiB, that room alone is more than a crash
/// journal's checkpoint may copy, and the part written instead must not
/// count it (a tracer that did wrote parts of nothing, recursing until the
/// stack overflowed).
#[test]
fn parts_written_at_checkpoints_hold_calls() {
    let calls = 150_000;
    let run = run_traced(
        "irregular",
        1,
        &[&calls.to_string(), "1"],
        &[("MPIGRAM_MEMORY", "8M")],
    );
    run.output.assert_success();
    let dir = run.dir.path();
    let n = parts(dir, 0);
    assert!(n >= 2, "{n} parts\n{}", run.output);
    let mut last = 0;
    for k in 0..n {
        let part = RankTrace::read(&dir.join(part_file_name(0, k))).unwrap();
        assert!(
            part.meta.calls > last + 1000,
            "part {k} ends at call {}",
            part.meta.calls
        );
        last = part.meta.calls;
    }
    let trace = assert_trace_is_exact(&run, 1);
    assert_eq!(
        sendrecv_tags(&trace, 0),
        (1..=calls as i64).collect::<Vec<_>>()
    );
}

/// The recorder's first signatures find their memory faulted in already
/// (`Recorder::prepare`, in MPI_Init): a thousand calls that are all new
/// take a few page faults at most, where they took 46 before (about 80 ns
/// a new signature on the VMs measured; the untraced loop takes 1).
#[test]
fn the_first_thousand_new_signatures_take_hardly_a_page_fault() {
    let (faults, _) = loop_faults_and_parts(1000);
    assert!(faults <= 8, "{faults} page faults in the loop");
}

/// Page faults in the loop of `irregular CALLS 1` on 1 rank, traced with
/// the default budget and no verification stream, and the parts the rank
/// wrote.
fn loop_faults_and_parts(calls: u32) -> (u64, u32) {
    let run = run_traced(
        "irregular",
        1,
        &[&calls.to_string(), "1"],
        &[("MPIGRAM_VERIFY", "0")],
    );
    run.output.assert_success();
    let faults = run
        .output
        .stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("loop_faults="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no loop_faults\n{}", run.output));
    (faults, parts(run.dir.path(), 0))
}

/// Writing a part reuses the large buffers the part before it freed
/// (writer_heap.rs): two more parts of 125,000 new signatures take
/// hardly a page fault more, where each took about 1,900 (7 MiB of
/// buffers faulted in again) when glibc unmapped them as they were freed.
#[test]
fn parts_after_the_first_reuse_the_writers_buffers() {
    let (fewer, fewer_parts) = loop_faults_and_parts(300_000);
    let (more, more_parts) = loop_faults_and_parts(500_000);
    assert!(
        more_parts >= fewer_parts + 2,
        "{fewer_parts} and {more_parts} parts"
    );
    assert!(
        more < fewer + 1000,
        "{fewer} page faults with {fewer_parts} parts, {more} with {more_parts}"
    );
}
