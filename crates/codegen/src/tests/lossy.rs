//! Computation from lossy per-call timing.

use super::{barrier, comm_rank, finalize, init, options, trace_of};
use crate::{Compute, generate};

/// The seconds the benchmark waits before MPI_Comm_rank in a loop whose
/// iterations are a barrier right after the previous call (no computation)
/// lasting 1.00-1.10 ms, then `gap_ns` of computation before an
/// MPI_Comm_rank of 5 ticks, recorded with lossy timing at base 1.1.
/// The barriers' lengths sweep one bin evenly (their exact mean is the
/// bin's middle).
fn computation_before_comm_rank(gap_ns: u64, iterations: u32) -> f64 {
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
    let code = bins.code(1_000_000);
    let (low, high) = (bins.value(code).unwrap(), bins.value(code + 1).unwrap());
    call(0, 5);
    for k in 0..iterations {
        let barrier_ns = low + (high - low) * (2 * u64::from(k) + 1) / (2 * u64::from(iterations));
        calls.push(barrier());
        call(0, barrier_ns);
        calls.push(comm_rank(0));
        call(gap_ns, 5);
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
    before_comm_rank
        .trim_end_matches(");")
        .rsplit(": ")
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn lossy_timing_does_not_give_the_calls_shortfall_to_the_computation() {
    // Lossy timing decodes each barrier at the lower edge of its bin, and
    // the gap after it, measured from that decoded end, holds the rest:
    // 4.5% of a barrier on average.
    let seconds = computation_before_comm_rank(1_000_000, 40);
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
    let seconds = computation_before_comm_rank(2_000, 200);
    assert!(
        (seconds - 2e-6).abs() < 0.2e-6,
        "{seconds} s before MPI_Comm_rank, not 2 µs"
    );
}
