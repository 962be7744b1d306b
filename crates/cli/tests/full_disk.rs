//! A trace directory on a full disk: writes fail during the run (the
//! crash journal cannot grow, its checkpoint cannot be written) and at its
//! end (the trace itself). The program runs on; what survives says how
//! many calls were lost, and `info` says the trace is partial. The disk is
//! a small tmpfs, mounted for the test: that needs root (CI runs as root).

mod common;

use common::{mpigram, mpigram_with, text};
use mpigram_testkit::{compile, mpi_available};
use mpigram_trace::journal::open_blocks_bytes;
use mpigram_trace::{Lost, Timing, Trace};
use std::path::Path;
use std::process::Command;

/// A tmpfs of `kib` KiB mounted on a fresh directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(kib: u32) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k,mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "this test mounts a small tmpfs, which needs root (CI runs as root): {}",
            text(&out.stderr)
        );
        Tmpfs(dir)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Calls of `irregular N` on one rank: MPI_Init, Comm_rank, Comm_size,
/// Comm_get_attr, Barrier, N Sendrecv, MPI_Finalize.
fn irregular_calls(iterations: u64) -> u64 {
    iterations + 6
}

/// The journal stops at the first write that fails, and holds what it
/// held then: a part that cannot be written, and the checkpoint tried
/// after it, fail later, and the count of lost calls is from the first
/// (it was from the last, and said 3,398 of 191,578 calls lost).
#[test]
fn a_full_disk_leaves_a_partial_trace_that_counts_the_lost_calls() {
    mpi_available().unwrap();
    let exe = compile("irregular").unwrap();
    // Room for the journal's open blocks of lossless times and 160 KiB
    // more.
    let lossless = Timing::parse("lossless", None).unwrap();
    let disk = Tmpfs::mount((open_blocks_bytes(&lossless) / 1024) as u32 + 160);
    let trace = disk.path().join("t");
    // Per-call times, which do not compress away: the trace of 2 x 10^5
    // new signatures alone is 5 KB, and fits.
    let iterations = 200_000;
    let out = mpigram(&[
        "run",
        "-o",
        trace.to_str().unwrap(),
        "--timing",
        "lossless",
        "--",
        exe.to_str().unwrap(),
        &iterations.to_string(),
    ]);
    assert!(
        out.status.success(),
        "the program runs on: {}",
        text(&out.stderr)
    );

    let read = Trace::open(&trace).unwrap_or_else(|e| panic!("{e}\n{}", text(&out.stderr)));
    assert!(!read.is_complete());
    let [rank] = &read.ranks[..] else {
        panic!("one rank")
    };
    let Lost::Calls(lost) = rank.meta.lost else {
        panic!("{:?}: {}", rank.meta.lost, text(&out.stderr))
    };
    assert!(lost > 0);
    assert_eq!(rank.meta.calls + lost, irregular_calls(iterations));

    let info = mpigram(&["info", trace.to_str().unwrap()]);
    assert!(info.status.success(), "{}", text(&info.stderr));
    let info = text(&info.stdout);
    assert!(info.contains("complete:   no"), "{info}");
    let line = info.lines().last().unwrap();
    assert!(line.contains(&format!("{lost} calls lost")), "{info}");
    assert!(!line.trim_end().ends_with("finalized"), "{info}");
}

/// Parts that cannot be written on a full disk: a rank whose per-call
/// times outgrow a small budget tries to write them out as parts, fails,
/// keeps them in memory (the times taken out for the part put back in
/// front of the ones recorded since) and runs on; what is read back has
/// a lossless time for every call it has, in order.
#[test]
fn per_call_times_kept_when_their_part_cannot_be_written() {
    mpi_available().unwrap();
    let exe = compile("irregular").unwrap();
    let disk = Tmpfs::mount(1024);
    let trace = disk.path().join("t");
    let iterations = 1_500_000u64;
    let (n, k) = (iterations.to_string(), (2 * iterations).to_string());
    let run = [
        "run",
        "-o",
        trace.to_str().unwrap(),
        "--timing",
        "lossless",
        "--",
    ];
    let args: Vec<&str> = run
        .into_iter()
        .chain([exe.to_str().unwrap(), &n, &k])
        .collect();
    let out = mpigram_with(&args, &[("MPIGRAM_MEMORY", "1M")]);
    assert!(
        out.status.success(),
        "the program runs on: {}",
        text(&out.stderr)
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("keeps its whole signature table in memory"),
        "{stderr}"
    );
    let read = Trace::open(&trace).unwrap_or_else(|e| panic!("{e}\n{stderr}"));
    let [rank] = &read.ranks[..] else {
        panic!("one rank")
    };
    let calls = read.grammar.stream_len(rank.meta.rank).unwrap();
    assert!(calls > 0, "{stderr}");
    let timed = mpigram_trace::timing::calls_in(&rank.times.exact).unwrap();
    assert_eq!(timed, calls, "a time per call read back");
    let spans = mpigram_analysis::timeline::rank_spans(
        &read,
        rank,
        mpigram_analysis::timeline::Source::Lossless,
        read.run_start_ns(),
    )
    .unwrap();
    let mut last_end = i64::MIN;
    for span in spans {
        let span = span.unwrap();
        assert!(span.start_ns >= last_end && span.end_ns >= span.start_ns);
        last_end = span.end_ns;
    }
}
