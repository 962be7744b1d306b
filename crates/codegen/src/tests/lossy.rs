//! Computation from lossy per-call timing.

use super::{barrier, comm_rank, finalize, init, options, trace_of};
use crate::{Compute, generate};

#[test]
fn lossy_timing_does_not_give_the_calls_shortfall_to_the_computation() {
    // Each iteration: a barrier right after the previous call (no
    // computation) that lasts 1.00-1.10 ms, then 1 ms of computation before
    // an MPI_Comm_rank of 5 ticks. Lossy timing decodes each barrier at the
    // lower edge of its bin (base 1.1), and the gap after it, measured from
    // that decoded end, holds the rest: 4.7% of a barrier on average.
    let mut calls = vec![init()];
    let mut times = mpigram_trace::timing::ColumnWriter::default();
    let bins = mpigram_trace::timing::Bins::new(1.1).unwrap();
    let mut clock = mpigram_trace::timing::LossyClock::default();
    let mut now = 0u64;
    let mut call = |gap: u64, duration: u64| {
        now += gap;
        let (i, d) = clock.encode(&bins, now, now + duration);
        times.push(u64::from(i), u64::from(d));
        now += duration;
    };
    call(0, 5);
    for k in 0..40 {
        let barrier_ns = (1e6 * 1.1f64.powf(f64::from(k % 20) / 20.0)) as u64;
        calls.push(barrier());
        call(0, barrier_ns);
        calls.push(comm_rank(0));
        call(1_000_000, 5);
    }
    calls.push(finalize());
    call(0, 5);
    let mut t = trace_of(vec![calls], 1);
    let part = &mut t.ranks[0];
    part.meta.timing.lossy = Some(mpigram_trace::Bases::parse("1.1").unwrap());
    part.meta.end_ns = now;
    part.times.lossy = times.bytes();
    let bench = generate(&t, &options(Compute::Recorded)).unwrap();
    let src = &bench.source;
    let before_comm_rank = src
        .lines()
        .take_while(|l| !l.contains("MPI_Comm_rank("))
        .filter_map(|l| l.trim().strip_prefix("spin("))
        .last()
        .unwrap_or_else(|| panic!("no computation before MPI_Comm_rank:\n{src}"));
    let seconds: f64 = before_comm_rank
        .trim_end_matches(");")
        .rsplit(": ")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (seconds - 1e-3).abs() < 0.01e-3,
        "{seconds} s before MPI_Comm_rank, not 1 ms:\n{src}"
    );
}
