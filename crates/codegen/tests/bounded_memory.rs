//! `gen-bench` works on the grammar and reads each rank's call times as it
//! walks its calls: the most memory it allocates (beyond the trace as
//! opened) does not grow as the calls double. Counted by this test
//! binary's allocator; one test, so that nothing else allocates meanwhile.

#[path = "../../analysis/tests/common/mod.rs"]
mod common;

use mpigram_codegen::{Compute, Options, generate};
use mpigram_testkit::alloc::{Counting, assert_bounded, peak_of};

#[global_allocator]
static COUNTING: Counting = Counting;

#[test]
fn gen_bench_holds_the_grammar_not_the_calls() {
    let options = Options {
        compute: Compute::Recorded,
        scale: 1.0,
        trace_name: "two ranks".into(),
        io_dir: None,
        ranks: None,
        times: mpigram_codegen::Source::Best,
        cpu_time: false,
        serial_threads: false,
    };
    // The MPI model is built once, at the first generation.
    generate(&common::two_ranks(10), &options).unwrap();
    let mut peaks = Vec::new();
    for iterations in [25_000u64, 50_000, 100_000] {
        let trace = common::two_ranks(iterations);
        let calls = 2 * (2 + 4 * iterations);
        peaks.push((
            calls,
            peak_of(|| {
                let bench = generate(&trace, &options).unwrap();
                assert_eq!(bench.calls, calls);
                assert!(bench.source.contains("MPI_Allreduce("));
            }),
        ));
    }
    assert_bounded("gen-bench", &peaks, 1 << 20, 16 << 20);
}
