//! Every program of tests/mpi, untraced, at each rank count it supports
//! (up to 4): the normal ones exit 0, the crash programs fail the way their
//! `expect:` comment says. Plus checks of what some programs print.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use mpigram_testkit::{Expect, Program, compile, mpi_available, mpiexec, program, programs};

/// The most ranks any test run uses: this machine has 2 cores and MPICH polls.
const MAX_RANKS: u32 = 4;

fn require_mpi() {
    if let Err(e) = mpi_available() {
        panic!("{e}");
    }
}

/// Runs `jobs` on as many threads as there are cores; `Mpiexec::run` itself
/// keeps concurrent runs within the cores.
fn parallel<T: Send, R: Send>(jobs: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let queue = Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().pop();
                    let Some((i, job)) = next else { break };
                    let r = work(job);
                    results.lock().unwrap().push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn every_program_ends_as_declared_at_every_supported_rank_count() {
    require_mpi();
    let started = Instant::now();
    let all = programs().expect("reading tests/mpi");
    assert!(all.len() >= 30, "only {} programs in tests/mpi", all.len());
    // Those the test run's MPI can build (MPI 5.0 functions need MPICH 5, ...).
    let all: Vec<Program> = all
        .into_iter()
        .filter(|p| p.builds_with(mpigram_testkit::Mpi::selected()))
        .collect();

    let built: Vec<(Program, Result<std::path::PathBuf, String>)> = parallel(all, |p| {
        let exe = p.compile().map_err(|e| e.to_string());
        (p, exe)
    });
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    for (p, exe) in built {
        match exe {
            Err(e) => failures.push(e),
            Ok(exe) => {
                assert!(
                    *p.ranks.start() <= 2,
                    "{} does not run at 1 or 2 ranks ({:?})",
                    p.name,
                    p.ranks
                );
                for n in p.rank_counts(MAX_RANKS) {
                    runs.push((p.clone(), exe.clone(), n));
                }
            }
        }
    }
    let outcomes = parallel(runs, |(p, exe, n)| {
        let result = mpiexec(n, &exe, std::iter::empty::<&str>()).run();
        let verdict = match &result {
            Err(e) => Err(e.to_string()),
            Ok(out) => p.expect.check(out).map_err(|why| format!("{why}\n{out}")),
        };
        (p.name.clone(), n, verdict)
    });
    let total = outcomes.len();
    for (name, n, verdict) in outcomes {
        if let Err(why) = verdict {
            failures.push(format!("{name} at {n} ranks: {why}"));
        }
    }
    eprintln!(
        "{total} runs of MPI test programs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} runs failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn crash_programs_declare_how_they_fail() {
    let expected = [
        ("crash_abort", Expect::Abort(42)),
        ("crash_abort_loop", Expect::Abort(42)),
        ("crash_irregular", Expect::Abort(42)),
        ("crash_exit", Expect::Exit(3)),
        ("crash_in_call", Expect::Signal(libc::SIGKILL)),
        ("crash_segv", Expect::Signal(libc::SIGSEGV)),
        ("crash_sigbus", Expect::Signal(libc::SIGBUS)),
        ("crash_sigint", Expect::Signal(libc::SIGINT)),
        ("crash_sigterm", Expect::Signal(libc::SIGTERM)),
    ];
    for (name, expect) in expected {
        assert_eq!(program(name).unwrap().expect, expect, "{name}");
    }
    let crashing: Vec<String> = programs()
        .unwrap()
        .into_iter()
        .filter(|p| p.expect != Expect::Success)
        .map(|p| p.name)
        .collect();
    assert_eq!(crashing.len(), expected.len(), "{crashing:?}");
}

/// Parses "name value" lines.
fn measurements(stdout: &str) -> HashMap<String, f64> {
    stdout
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(' ')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn microbench_prints_one_number_per_measurement() {
    require_mpi();
    let exe = compile("microbench").unwrap();
    let two = mpiexec(2, &exe, ["2000"]).run().unwrap();
    two.assert_success();
    let m = measurements(&two.stdout);
    assert_eq!(m.len(), 8, "{}", two.stdout);
    for name in [
        "comm_rank_ns",
        "heap_temporary_ns",
        "heap_temporary_100k_live_ns",
        "pingpong_half_rtt_ns",
        "irecv_isend_waitall_ns",
        "window_1B_ns_per_message",
        "window_1KiB_ns_per_message",
        "halo_exchange_ns",
    ] {
        let value = m.get(name).copied();
        assert!(value.is_some_and(|v| v > 0.0), "{name}: {value:?}\n{two}");
    }
    let one = mpiexec(1, &exe, ["2000"]).run().unwrap();
    one.assert_success();
    let mut names: Vec<String> = measurements(&one.stdout).into_keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "comm_rank_ns",
            "heap_temporary_100k_live_ns",
            "heap_temporary_ns"
        ]
    );
}

#[test]
fn halo_programs_take_the_iteration_count_from_argv() {
    require_mpi();
    for (name, grid) in [("halo2d", "2x2 ranks"), ("halo3d", "2x2x1 ranks")] {
        let exe = compile(name).unwrap();
        let out = mpiexec(4, &exe, ["23"]).run().unwrap();
        out.assert_success();
        let line = out.stdout.trim();
        assert!(line.starts_with(&format!("{name}: {grid}")), "{line}");
        assert!(line.contains(" 23 iterations"), "{line}");
        assert_eq!(out.stdout.lines().count(), 1, "{out}");
    }
}

#[test]
fn builtin_request_shows_one_handle_for_completed_requests() {
    require_mpi();
    let exe = compile("builtin_request").unwrap();
    let out = mpiexec(2, &exe, std::iter::empty::<&str>()).run().unwrap();
    out.assert_success();
    // builtin_request: proc_null_isend=H H proc_null_issend=H proc_null_irecv=R R eager_isend=H H irecv=..
    let line = out.stdout.trim();
    let value = |key: &str| -> Vec<String> {
        let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
        rest.split_whitespace()
            .take_while(|w| !w.contains('='))
            .map(str::to_owned)
            .collect()
    };
    let sends = value("proc_null_isend=");
    let eager = value("eager_isend=");
    let recvs = value("proc_null_irecv=");
    assert_eq!(sends.len(), 2, "{line}");
    assert!(sends.iter().chain(&eager).all(|h| *h == sends[0]), "{line}");
    assert!(
        recvs.iter().all(|h| *h == recvs[0]) && recvs[0] != sends[0],
        "{line}"
    );
}

#[test]
fn mpiio_writes_into_the_given_directory_and_cleans_up() {
    require_mpi();
    let exe = compile("mpiio").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = mpiexec(2, &exe, [dir.path()]).run().unwrap();
    out.assert_success();
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
