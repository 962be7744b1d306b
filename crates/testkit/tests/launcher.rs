//! The launcher's own promises: preloads and environment reach the ranks
//! and not mpiexec, the yield preload is on by default, a timeout kills
//! every process of the run, output and exit status are captured.

use std::path::Path;
use std::time::{Duration, Instant};

use mpigram_testkit::{Error, compile, mpi_available, mpiexec, yield_preload};

fn require_mpi() {
    if let Err(e) = mpi_available() {
        panic!("{e}");
    }
}

/// A shell as the "rank": hydra runs any executable.
fn sh(script: &str) -> mpigram_testkit::Mpiexec {
    mpiexec(1, "/bin/sh", ["-c", script])
}

#[test]
fn preloads_reach_the_ranks_only() {
    require_mpi();
    let extra = tempfile::tempdir().unwrap();
    // Any loadable library will do as the "tracer": a copy of the yield preload.
    let tracer = extra.path().join("libtracer.so");
    std::fs::copy(yield_preload().unwrap(), &tracer).unwrap();
    // The rank's parent is hydra's proxy, whose parent is mpiexec.
    let out = sh("echo \"rank=$LD_PRELOAD\"; \
                  proxy=$PPID; launcher=$(cut -d' ' -f4 /proc/$proxy/stat); \
                  for p in $proxy $launcher; do \
                    echo $(cat /proc/$p/comm)=$(tr '\\0' '\\n' < /proc/$p/environ | grep -c '^LD_PRELOAD='); \
                  done")
    .preload(&tracer)
    .run()
    .unwrap();
    out.assert_success();
    // The launcher by its own name (mpiexec.mpich), as /proc shows it.
    let launcher = std::path::Path::new(&mpigram_testkit::Mpi::selected().launcher[0])
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(15).collect::<String>())
        .unwrap_or_default();
    let expected = format!(
        "rank={}:{}\nhydra_pmi_proxy=0\n{launcher}=0\n",
        tracer.display(),
        yield_preload().unwrap().display()
    );
    assert_eq!(out.stdout, expected, "{out}");
}

#[test]
fn without_yield_leaves_ld_preload_unset_and_env_reaches_ranks() {
    require_mpi();
    let out = sh("echo \"[${LD_PRELOAD-unset}] [$MPIGRAM_TEST_VALUE]\"")
        .without_yield()
        .env("MPIGRAM_TEST_VALUE", "two words")
        .run()
        .unwrap();
    out.assert_success();
    assert_eq!(out.stdout, "[unset] [two words]\n", "{out}");
}

#[test]
fn ld_preload_given_as_env_is_merged_with_the_yield_preload() {
    require_mpi();
    let lib = yield_preload().unwrap();
    let out = sh("echo $LD_PRELOAD")
        .env("LD_PRELOAD", &lib)
        .run()
        .unwrap();
    assert_eq!(
        out.stdout.trim(),
        format!("{}:{}", lib.display(), lib.display()),
        "{out}"
    );
}

#[test]
fn current_dir_is_where_the_ranks_start() {
    require_mpi();
    let dir = tempfile::tempdir().unwrap();
    let out = sh("pwd").current_dir(dir.path()).run().unwrap();
    out.assert_success();
    let expected = dir.path().canonicalize().unwrap();
    assert_eq!(Path::new(out.stdout.trim()), expected, "{out}");
}

#[test]
fn exit_status_and_both_outputs_are_captured() {
    require_mpi();
    let out = sh("echo out; echo err >&2; exit 5").run().unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(out.stdout, "out\n");
    assert!(out.stderr.contains("err\n"), "{out}");
    assert!(!out.success());
}

/// Processes whose executable is `exe`.
fn running(exe: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe))
        .collect()
}

#[test]
fn a_timeout_kills_mpiexec_and_every_rank() {
    require_mpi();
    // A private copy, so no other test's processes are counted.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("halo2d-hang");
    std::fs::copy(compile("halo2d").unwrap(), &exe).unwrap();

    let start = Instant::now();
    let err = mpiexec(2, &exe, ["1000000000"])
        .timeout(Duration::from_secs(2))
        .run()
        .unwrap_err();
    let waited = start.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("timed out after 2.0 s"), "{err}");
    assert!(waited < Duration::from_secs(10), "took {waited:?}");

    // Ranks run in their own sessions; they must be gone too.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !running(&exe).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        running(&exe),
        Vec::<u32>::new(),
        "ranks survived the timeout"
    );
}
