//! The analyses hold what is in flight, not the calls: the most memory
//! `critical-path`, `profile`, `decode` (calls and times read as
//! `mpigram decode` reads them), `stats`, `export` (to Perfetto: the
//! Chrome JSON writer keeps no more than it) and `lint` allocate while reading a trace (beyond
//! the trace as opened) does not grow as the calls double (200,000,
//! 400,000, 800,000), and stays under a bound. Counted by this test
//! binary's allocator; one test, so that nothing else allocates meanwhile.

mod common;
#[path = "common/processes.rs"]
mod processes;

use mpigram_analysis::critical_path;
use mpigram_analysis::decode::RankDecoder;
use mpigram_analysis::export::{self, Format, Window};
use mpigram_analysis::lint::{self, Kind};
use mpigram_analysis::profile::{self, Options};
use mpigram_analysis::stats::Stats;
use mpigram_analysis::timeline::{Source, rank_spans};
use mpigram_testkit::alloc::{Counting, assert_bounded, peak_of};
use mpigram_trace::Trace;

#[global_allocator]
static COUNTING: Counting = Counting;

/// Decodes every call of `trace` with its time, as `mpigram decode` does;
/// the calls decoded.
fn decode(trace: &Trace) -> u64 {
    let mut calls = 0;
    for part in &trace.ranks {
        let mut spans = rank_spans(trace, part, Source::Best, trace.run_start_ns()).unwrap();
        for call in RankDecoder::new(trace, part) {
            let line = call.unwrap().to_text();
            let span = spans.next().unwrap().unwrap();
            assert!(span.end_ns >= span.start_ns, "{line}");
            calls += 1;
        }
    }
    calls
}

/// Exports `trace` to Perfetto into a sink, with everything it can show
/// (requests and call numbers too); the bytes written and the summary.
fn export_to_sink(trace: &Trace) -> (u64, export::ExportSummary) {
    let mut sink = Counted(0);
    let content = export::Content {
        window: Window::default(),
        requests: true,
        seq: true,
    };
    let summary = export::export(
        trace,
        Source::Best,
        Format::Perfetto,
        None,
        &content,
        &mut sink,
        &mut |_| {},
    )
    .unwrap();
    (sink.0, summary)
}

/// A writer that keeps nothing, counting bytes.
struct Counted(u64);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_analyses_hold_what_is_in_flight_not_the_calls() {
    let (mut path, mut prof, mut dec, mut stats) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut export, mut across, mut lint) = (Vec::new(), Vec::new(), Vec::new());
    let mut lint_untimed = Vec::new();
    for iterations in [25_000u64, 50_000, 100_000] {
        let trace = common::two_ranks(iterations);
        let calls = 2 * (2 + 4 * iterations);
        path.push((
            calls,
            peak_of(|| {
                let a = critical_path::analyse(&trace, Source::Best, false).unwrap();
                assert_eq!(a.calls, calls);
                assert!(a.path.segments.len() as u64 > iterations);
            }),
        ));
        across.push((
            calls,
            peak_of(|| {
                // Both processes' memory: rank 1 is read by process 1.
                let a = processes::critical_path_across(&trace, 2, None, false);
                assert_eq!(a.calls, calls);
            }),
        ));
        prof.push((
            calls,
            peak_of(|| {
                let p = profile::profile(&trace, &Options::default()).unwrap();
                assert_eq!(p.calls, calls);
                assert!(p.wait_states.len() as u64 >= iterations / 3);
            }),
        ));
        dec.push((calls, peak_of(|| assert_eq!(decode(&trace), calls))));
        export.push((
            calls,
            peak_of(|| {
                let (bytes, summary) = export_to_sink(&trace);
                assert_eq!(summary.calls, calls);
                // A message each way per iteration, two requests a rank.
                assert_eq!(summary.messages as u64, 2 * iterations);
                assert_eq!(summary.requests as u64, 4 * iterations);
                assert!(bytes > 10 * calls, "{bytes} bytes");
            }),
        ));
        lint.push((
            calls,
            peak_of(|| {
                let report = lint::lint(&trace).unwrap();
                // Every message matched and its waits replayed: the same
                // Irecv and Isend on every iteration is all there is to say.
                let kinds: Vec<_> = report.findings.iter().map(|f| (f.kind, f.count)).collect();
                let repeated = (Kind::PersistentCandidate, iterations);
                assert_eq!(kinds, [repeated; 4]);
            }),
        ));
        // Without times the ranks are read side by side by calls: rank 0
        // makes eleven calls a message, rank 1 one.
        let lopsided = common::lopsided(iterations);
        lint_untimed.push((
            12 * iterations + 4,
            peak_of(|| {
                let report = lint::lint(&lopsided).unwrap();
                let storm = (Kind::SmallMessageStorm, iterations);
                let kinds: Vec<_> = report.findings.iter().map(|f| (f.kind, f.count)).collect();
                assert_eq!(kinds, [storm]);
            }),
        ));
        stats.push((
            calls,
            peak_of(|| {
                let s = Stats::of(&trace).unwrap();
                assert_eq!(s.function("MPI_Allreduce").unwrap().calls, 2 * iterations);
            }),
        ));
    }
    // Within 2 MiB (the 256 KiB write buffers of the temporary files fill
    // up). Reading chunks of 4,096 calls, critical-path and profile peak
    // at about 20 and 16 MiB (48 and 54 MiB with chunks of 16,384).
    assert_bounded("critical-path", &path, 2 << 20, 32 << 20);
    assert_bounded("profile", &prof, 2 << 20, 32 << 20);
    assert_bounded("critical-path over 2 processes", &across, 2 << 20, 32 << 20);
    assert_bounded("decode", &dec, 1 << 20, 16 << 20);
    assert_bounded("stats", &stats, 1 << 20, 16 << 20);
    assert_bounded("export", &export, 2 << 20, 64 << 20);
    assert_bounded("lint", &lint, 2 << 20, 32 << 20);
    assert_bounded("lint without times", &lint_untimed, 2 << 20, 32 << 20);
}
