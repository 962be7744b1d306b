//! Traces built in memory, compared with known answers.

use super::*;
use crate::stats::tests::{buf, int, rank, recv, repeat, request, send, sig, world};
use mpigram_mpispec::{Rank, Status};

/// A trace whose rank i made the calls `ranks[i]`.
fn trace(ranks: Vec<Vec<Signature>>) -> Trace {
    crate::stats::tests::trace(ranks.into_iter().map(rank).collect())
}

fn isend(pool: u64) -> Signature {
    sig(
        "MPI_Isend",
        vec![
            buf(),
            Value::Int(8),
            int(),
            Value::Rank(Rank::Relative(1)),
            Value::Tag(0),
            world(),
            request(pool, 0),
        ],
    )
}

fn wait(pool: u64, count: u64) -> Signature {
    let status = Status {
        source: Rank::Relative(1),
        tag: 0,
        count,
        cancelled: false,
        error: 0,
    };
    sig(
        "MPI_Wait",
        vec![request(pool, 0), Value::Status(Some(status))],
    )
}

fn options(ignore: &[Ignore]) -> Options {
    Options {
        ignore: ignore.to_vec(),
        context: 2,
    }
}

#[test]
fn equal_traces_have_no_difference_on_any_rank() {
    let calls = repeat(1000, &[send(8, int(), 1), recv(8, -1)]);
    let (a, b) = (
        trace(vec![calls.clone(), calls.clone()]),
        trace(vec![calls.clone(), calls]),
    );
    let d = diff(&a, &b, &options(&[])).unwrap();
    assert!(d.same_calls());
    assert_eq!(d.ranks, 2);
    assert!(!d.timing_differs, "of_calls times every call alike");
}

#[test]
fn the_first_difference_is_found_with_context_and_counts() {
    let body = [send(8, int(), 1), recv(8, -1)];
    let a = repeat(500, &body);
    let mut b = a.clone();
    b[701] = recv(16, -1); // the 351st receive
    b.push(send(8, int(), 1));
    let (ta, tb) = (trace(vec![a.clone(), a.clone()]), trace(vec![a, b]));
    let d = diff(&ta, &tb, &options(&[])).unwrap();
    assert!(!d.same_calls());
    assert_eq!(d.differences.len(), 1, "rank 0 is the same");
    let r = &d.differences[0];
    assert_eq!((r.rank, r.first, r.calls), (1, 701, (1000, 1001)));
    let sides: Vec<(Side, u64, &str)> = r
        .context
        .iter()
        .map(|c| (c.side, c.call.seq, c.call.func))
        .collect();
    assert_eq!(
        sides,
        [
            (Side::Both, 699, "MPI_Recv"),
            (Side::Both, 700, "MPI_Send"),
            (Side::A, 701, "MPI_Recv"),
            (Side::A, 702, "MPI_Send"),
            (Side::B, 701, "MPI_Recv"),
            (Side::B, 702, "MPI_Send"),
        ]
    );
    assert_eq!(r.context[2].call.args["count"], 8);
    assert_eq!(r.context[4].call.args["count"], 16);
    assert_eq!(
        r.counts,
        [FunctionCounts {
            func: "MPI_Send",
            a: 500,
            b: 501
        }]
    );
}

#[test]
fn ignored_classes_do_not_count_and_others_still_do() {
    let a = repeat(10, &[isend(0), wait(0, 8)]);
    let b = repeat(10, &[isend(3), wait(3, 8)]);
    let (ta, tb) = (trace(vec![a.clone()]), trace(vec![b]));
    assert_eq!(
        diff(&ta, &tb, &options(&[])).unwrap().differences[0].first,
        0
    );
    assert!(
        diff(&ta, &tb, &options(&[Ignore::Requests]))
            .unwrap()
            .same_calls()
    );
    // A status that differs is still a difference, unless statuses are ignored too.
    let c = repeat(10, &[isend(3), wait(3, 9)]);
    let tc = trace(vec![c]);
    let d = diff(&ta, &tc, &options(&[Ignore::Requests])).unwrap();
    assert_eq!(d.differences[0].first, 1);
    assert!(
        d.differences[0].counts.is_empty(),
        "the same functions, as often"
    );
    assert!(
        diff(&ta, &tc, &options(&[Ignore::Requests, Ignore::Statuses]))
            .unwrap()
            .same_calls()
    );
}

#[test]
fn ranks_only_one_trace_has_are_differences() {
    let calls = vec![send(8, int(), 1)];
    let (a, b) = (
        trace(vec![calls.clone(), calls.clone()]),
        trace(vec![calls]),
    );
    let d = diff(&a, &b, &options(&[])).unwrap();
    assert_eq!(
        (d.only_a.as_slice(), d.only_b.as_slice(), d.ranks),
        (&[1][..], &[][..], 1)
    );
    assert!(!d.same_calls());
}

#[test]
fn only_timing_differing_is_told() {
    let calls = repeat(3, &[send(8, int(), 1)]);
    let a = trace(vec![calls.clone()]);
    let mut b = trace(vec![calls]);
    b.ranks[0].stats[0].1.total_ns += 5;
    let d = diff(&a, &b, &options(&[])).unwrap();
    assert!(d.same_calls() && d.timing_differs);
}

#[test]
fn argument_class_names_parse_and_unknown_ones_are_refused() {
    assert_eq!("buffers".parse::<Ignore>(), Ok(Ignore::Buffers));
    let e = "addresses".parse::<Ignore>().unwrap_err();
    assert!(e.contains("buffers, requests, handles"), "{e}");
}
