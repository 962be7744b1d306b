//! Running MPI programs under the tracer and reading back what it wrote.

#![allow(dead_code)]

use mpigram_analysis::critical_path;
use mpigram_analysis::decode::{DecodedCall, RankDecoder};
use mpigram_analysis::timeline::{RankClock, Source, Span, rank_times};
use mpigram_testkit::{RunOutput, compile, mpi_available, mpiexec};
use mpigram_trace::{Trace, verify_file_name};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// libmpigram.so, built by cargo next to this test's directory.
pub fn tracer() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let lib = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join("libmpigram.so");
    assert!(
        lib.is_file(),
        "{} is missing: `cargo build -p mpigram-tracer` builds it",
        lib.display()
    );
    // `cargo test` does not build a cdylib: after a change to the tracer,
    // these tests would preload the library as it was.
    let built = modified(&lib);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if let Some(newer) = newest_file(&src).filter(|(at, _)| *at > built) {
        panic!(
            "{} is older than {}: run `cargo build -p mpigram-tracer` first",
            lib.display(),
            newer.1.display()
        );
    }
    lib
}

fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The most recently modified file under `dir`, and when.
fn newest_file(dir: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    entries
        .map(|e| e.expect("a directory entry").path())
        .filter_map(|path| match path.is_dir() {
            true => newest_file(&path),
            false => Some((modified(&path), path)),
        })
        .max_by_key(|(at, _)| *at)
}

/// A traced run of `program` on `ranks` ranks, in verification mode unless
/// `env` sets MPIGRAM_VERIFY.
pub struct TracedRun {
    pub dir: tempfile::TempDir,
    pub output: RunOutput,
}

impl TracedRun {
    pub fn trace(&self) -> Trace {
        Trace::open(self.dir.path()).unwrap_or_else(|e| panic!("{e}\n{}", self.output.stderr))
    }
}

pub fn run_traced(program: &str, ranks: u32, args: &[&str], env: &[(&str, &str)]) -> TracedRun {
    mpi_available().expect("MPICH is needed for the tracer's tests");
    let exe = compile(program).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = mpiexec(ranks, &exe, args.iter().copied());
    cmd.preload(tracer())
        .env("MPIGRAM_OUT", dir.path())
        .timeout(Duration::from_secs(120));
    if !env.iter().any(|(k, _)| *k == "MPIGRAM_VERIFY") {
        cmd.env("MPIGRAM_VERIFY", "1");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd
        .run()
        .unwrap_or_else(|e| panic!("{program} on {ranks} ranks: {e}"));
    TracedRun { dir, output }
}

/// The uncompressed signatures a rank wrote in verification mode.
pub fn verify_stream(dir: &Path, rank: u32) -> Vec<Vec<u8>> {
    let path = dir.join(verify_file_name(rank));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push(bytes[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    out
}

/// Asserts that every rank's trace expands to exactly its verification
/// stream, call for call, and that every call decodes.
pub fn assert_trace_is_exact(run: &TracedRun, ranks: u32) -> Trace {
    let trace = run.trace();
    let found: Vec<u32> = trace.ranks.iter().map(|r| r.meta.rank).collect();
    assert_eq!(found, (0..ranks).collect::<Vec<_>>(), "one file per rank");
    for rank in &trace.ranks {
        let expected = verify_stream(run.dir.path(), rank.meta.rank);
        let recorded: Vec<Vec<u8>> = trace.calls(rank.meta.rank).map(<[u8]>::to_vec).collect();
        assert_eq!(
            recorded.len(),
            expected.len(),
            "rank {}: number of calls",
            rank.meta.rank
        );
        if let Some(i) = (0..expected.len()).find(|&i| recorded[i] != expected[i]) {
            panic!(
                "rank {}: call {i} differs from the verification stream: recorded {:?} expected {:?}; before {:?}",
                rank.meta.rank,
                recorded[i],
                expected[i],
                &expected[i.saturating_sub(3)..i]
            );
        }
        for call in RankDecoder::new(&trace, rank) {
            call.unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert_reports_hold(&trace);
    trace
}

/// A trace with per-call times gives a critical-path report that holds
/// its properties (no negative durations, waits within their calls,
/// imbalances as defined: `Analysis::check`).
pub fn assert_reports_hold(trace: &Trace) {
    if !trace.ranks.iter().all(|r| r.meta.timing.per_call()) {
        return;
    }
    let analysis = critical_path::analyse(trace, Source::Best, false)
        .unwrap_or_else(|e| panic!("critical path: {e}"));
    analysis
        .check()
        .unwrap_or_else(|e| panic!("the critical-path report: {e}"));
}

/// Every call of `rank`, decoded.
pub fn decoded(trace: &Trace, rank: u32) -> Vec<DecodedCall> {
    let part = trace.rank(rank).expect("the rank is in the trace");
    RankDecoder::new(trace, part).map(|c| c.unwrap()).collect()
}

/// Exact and lossy per-call times of every rank (lossy if recorded), with
/// each call's function.
pub fn times(trace: &Trace) -> Vec<(Vec<&'static str>, Vec<Span>, Vec<Span>)> {
    let start = trace.run_start_ns();
    trace
        .ranks
        .iter()
        .map(|part| {
            let funcs = RankDecoder::new(trace, part)
                .map(|c| c.unwrap().func)
                .collect();
            let exact = rank_times(trace, part, Source::Lossless, start).unwrap();
            let lossy = match part.meta.timing.lossy {
                Some(_) => rank_times(trace, part, Source::Lossy, start).unwrap(),
                None => Vec::new(),
            };
            (funcs, exact, lossy)
        })
        .collect()
}

/// A trace recorded with MPIGRAM_TIMING=lossy,lossless has a lossy and an
/// exact time for every call of every rank, and every lossy start and end
/// is early by at most (b - 1) times the longest time from one call's end
/// to the next's so far (the bound `mpigram_trace::timing` proves), so
/// also by at most b - 1 relative to the time since the run began, and
/// never late (b: the largest base); every duration is within b - 1 of
/// the exact one, with the base of the call's function (`default`, or its
/// own in `overrides`). Returns how many calls of a function with a base
/// above `default` erred more than `default` would allow.
pub fn assert_lossy_times_within_bound(
    trace: &Trace,
    default: f64,
    overrides: &[(&str, f64)],
) -> usize {
    let base_of = |f: &str| {
        overrides
            .iter()
            .find(|(g, _)| *g == f)
            .map_or(default, |&(_, b)| b)
    };
    let largest = overrides.iter().map(|o| o.1).fold(default, f64::max);
    let mut coarse = 0;
    for (rank, (funcs, exact, lossy)) in times(trace).into_iter().enumerate() {
        assert_eq!(exact.len(), funcs.len(), "rank {rank}: a time per call");
        assert_eq!(lossy.len(), funcs.len(), "rank {rank}: a time per call");
        let origin = RankClock::of(&trace.ranks[rank].meta).global_ns(0) - trace.run_start_ns();
        let (mut longest, mut last_end) = (0i64, origin as i64);
        for (k, ((f, e), l)) in funcs.iter().zip(&exact).zip(&lossy).enumerate() {
            let b = base_of(f);
            assert!(
                e.start_ns >= last_end && e.end_ns >= e.start_ns,
                "rank {rank}, call {k} ({f}): exact times out of order"
            );
            longest = longest.max(e.end_ns - last_end);
            last_end = e.end_ns;
            // Rounding to whole nanoseconds, twice.
            let slack = (largest - 1.0) * longest as f64 + 2.0;
            for (what, t, t_lossy) in [
                ("start", e.start_ns, l.start_ns),
                ("end", e.end_ns, l.end_ns),
            ] {
                let early = (t - t_lossy) as f64;
                assert!(
                    (-2.0..=slack).contains(&early),
                    "rank {rank}, call {k} ({f}): {what} {t} ns exact, {t_lossy} ns lossy"
                );
                assert!(
                    early <= (largest - 1.0) * (t as f64 - origin) + 2.0,
                    "rank {rank}, call {k} ({f}): {what} {t} ns exact, {t_lossy} ns lossy, origin {origin}"
                );
            }
            let (d, d_lossy) = (e.end_ns - e.start_ns, l.end_ns - l.start_ns);
            let short = (d - d_lossy) as f64;
            assert!(
                (-2.0..=(1.0 - 1.0 / b) * d as f64 + 2.0).contains(&short),
                "rank {rank}, call {k} ({f}): duration {d} ns exact, {d_lossy} ns lossy"
            );
            if b > default && short > (1.0 - 1.0 / default) * d as f64 + 2.0 {
                coarse += 1;
            }
        }
    }
    coarse
}

/// Builds the C `source` with `compiler` (and `mpi`'s environment, for its
/// mpicc) and `flags` into `out`, writing the source next to it.
pub fn compile_source(
    compiler: &str,
    mpi: &mpigram_testkit::Mpi,
    source: &str,
    out: &Path,
    flags: &[&str],
) {
    let src = out.with_extension("c");
    std::fs::write(&src, source).unwrap();
    let result = std::process::Command::new(compiler)
        .envs(mpi.env.iter().cloned())
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
}
