//! Computation from lossy per-call timing.

use super::{barrier, comm_rank, finalize, init, options, trace_of};
use crate::{Compute, generate};
use mpigram_mpispec::Signature;
use mpigram_trace::timing::{Bins, ColumnWriter, LossyClock};

/// A one-rank trace of `calls`, each with its (gap, duration) in ticks
/// before and of it, recorded with lossy timing at base 1.1 and clock
/// ticks of `ns_per_tick`.
fn lossy_trace(calls: Vec<(Signature, u64, u64)>, ns_per_tick: f64) -> mpigram_trace::Trace {
    let bins = Bins::new(1.1).unwrap();
    let (mut clock, mut times) = (LossyClock::default(), ColumnWriter::default());
    let mut now = 0u64;
    let mut signatures = Vec::with_capacity(calls.len());
    for (s, gap, duration) in calls {
        now += gap;
        let (i, d) = clock.encode(&bins, now, now + duration);
        times.push(u64::from(i), u64::from(d));
        now += duration;
        signatures.push(s);
    }
    let mut t = trace_of(vec![signatures], 1);
    let part = &mut t.ranks[0];
    part.meta.timing.lossy = Some(mpigram_trace::Bases::parse("1.1").unwrap());
    part.meta.ns_per_tick = ns_per_tick;
    part.meta.end_ns = (now as f64 * ns_per_tick) as u64;
    part.times.lossy = times.bytes();
    t
}

/// The seconds of every busy-wait of a generated benchmark's source, in
/// the order they are written.
fn spins(src: &str) -> Vec<f64> {
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("spin("))
        .map(|s| {
            let s = s.trim_end_matches(");");
            s.rsplit(": ").next().unwrap().parse().unwrap()
        })
        .collect()
}

/// The seconds the benchmark waits before MPI_Comm_rank in a loop whose
/// iterations are a barrier right after the previous call (no computation)
/// lasting 1.00-1.10 ms, then `gap_ns` of computation before an
/// MPI_Comm_rank of 5 ns, recorded with lossy timing at base 1.1 by a clock
/// of `ns_per_tick`. The barriers' lengths sweep one bin evenly (their exact
/// mean is the bin's middle).
fn computation_before_comm_rank(gap_ns: u64, iterations: u32, ns_per_tick: f64) -> f64 {
    let ticks = |ns: u64| (ns as f64 / ns_per_tick).round() as u64;
    let bins = Bins::new(1.1).unwrap();
    let code = bins.code(ticks(1_000_000));
    let (low, high) = (bins.value(code).unwrap(), bins.value(code + 1).unwrap());
    let mut calls = vec![(init(), 0, 5)];
    for k in 0..iterations {
        let barrier_ticks =
            low + (high - low) * (2 * u64::from(k) + 1) / (2 * u64::from(iterations));
        calls.push((barrier(), 0, barrier_ticks));
        calls.push((comm_rank(0), ticks(gap_ns), 5));
    }
    calls.push((finalize(), 0, 5));
    let bench = generate(
        &lossy_trace(calls, ns_per_tick),
        &options(Compute::Recorded),
    )
    .unwrap();
    let src = &bench.source;
    let before_comm_rank: String = src
        .lines()
        .take_while(|l| !l.contains("MPI_Comm_rank("))
        .collect::<Vec<_>>()
        .join("\n");
    *spins(&before_comm_rank)
        .last()
        .unwrap_or_else(|| panic!("no computation before MPI_Comm_rank:\n{src}"))
}

#[test]
fn lossy_timing_does_not_give_the_calls_shortfall_to_the_computation() {
    // Lossy timing decodes each barrier at the lower edge of its bin, and
    // the gap after it, measured from that decoded end, holds the rest:
    // 4.5% of a barrier on average.
    let seconds = computation_before_comm_rank(1_000_000, 40, 1.0);
    assert!(
        (seconds - 1e-3).abs() < 0.01e-3,
        "{seconds} s before MPI_Comm_rank, not 1 ms"
    );
}

#[test]
fn a_short_gap_after_long_calls_is_not_inflated_by_their_bins() {
    // 2 µs after each barrier of about 1 ms: a single call's estimate of the
    // gap is off by up to half the barrier's bin (±45 µs), below zero about
    // as often as above. Estimates clamped at zero call by call gave the site
    // 12 µs; their sum, clamped once, is the 2 µs recorded.
    let seconds = computation_before_comm_rank(2_000, 200, 1.0);
    assert!(
        (seconds - 2e-6).abs() < 0.2e-6,
        "{seconds} s before MPI_Comm_rank, not 2 µs"
    );
}

#[test]
fn what_clamping_adds_to_a_rank_is_given_back() {
    // 100 ms of computation, then a barrier of 10 ms and a call right after
    // it, each length a bin's lower edge: the computation's estimate is
    // half its bin (about 5 ms) over, and the call after the barrier's is
    // as far under zero, where it is clamped. The rank's estimates sum to
    // about the 100 ms; the clamp alone made its benchmark wait 105.
    let bins = Bins::new(1.1).unwrap();
    let edge = |ns: u64| bins.value(bins.code(ns)).unwrap();
    let (computation, barrier_ns) = (edge(100_000_000), edge(10_000_000));
    let calls = vec![
        (init(), 0, 5),
        (comm_rank(0), 0, 5),
        (barrier(), computation, barrier_ns),
        (comm_rank(0), 0, 5),
        (finalize(), 0, 5),
    ];
    let bench = generate(&lossy_trace(calls, 1.0), &options(Compute::Recorded)).unwrap();
    let waited: f64 = spins(&bench.source).iter().sum();
    let recorded = computation as f64 * 1e-9;
    assert!(
        (waited / recorded - 1.0).abs() < 0.01,
        "the benchmark waits {waited} s for {recorded} s recorded:\n{}",
        bench.source
    );
}
