//! Never trust the trace directory: whoever can write it may plant
//! symbolic links where the tracer will create files. Every file the
//! tracer creates is created exclusively (a planted link is never followed,
//! a name taken is not reused), and a directory it creates is the user's
//! alone (0700).

mod common;

use common::*;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

const PRECIOUS: &str = "precious, not the tracer's\n";

/// The pid the system will hand out next (pids grow until they wrap).
fn next_pid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse::<u32>()
        .unwrap()
        + 1
}

/// Plants, in `dir`, a link to `victim` under every name the tracer's
/// rank 0 and 1 could create (temporary names for the next `pids` pids).
fn plant(dir: &Path, victim: &Path, pids: u32) {
    let first = next_pid();
    let mut names: Vec<String> = Vec::new();
    for rank in 0..2 {
        names.push(format!("rank{rank}.verify"));
        names.push(format!("rank{rank}.journal"));
        names.push(format!("rank{rank}.checkpoint"));
        names.push(format!("rank{rank}.mgr"));
    }
    names.push("trace.mgr".into());
    names.push(".lock".into());
    for pid in first..first + pids {
        for rank in 0..2 {
            names.push(format!(".rank{rank}.journal.tmp-{pid}"));
            names.push(format!(".rank{rank}.verify.tmp-{pid}-0"));
            names.push(format!(".rank{rank}.checkpoint.tmp-{pid}-0"));
        }
        names.push(format!(".trace.mgr.tmp-{pid}-0"));
    }
    for name in names {
        symlink(victim, dir.join(name)).unwrap();
    }
}

#[test]
fn planted_links_are_never_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, PRECIOUS).unwrap();
    let dir = tempfile::tempdir().unwrap();
    plant(dir.path(), &victim, 3000);
    let exe = mpigram_testkit::compile("halo2d").unwrap();
    let mut job = mpigram_testkit::mpiexec(2, &exe, ["20"]);
    job.preload(tracer())
        .env("MPIGRAM_OUT", dir.path())
        .env("MPIGRAM_VERIFY", "1")
        // Small journal tails: checkpoints are written too.
        .env("MPIGRAM_JOURNAL_BYTES", "256");
    let out = job.run().unwrap();
    out.assert_success();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), PRECIOUS, "{out}");
    // The trace is there, as regular files (the links were replaced).
    for name in ["trace.mgr", "rank0.verify", "rank1.verify"] {
        let meta = std::fs::symlink_metadata(dir.path().join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name}");
    }
    let run = TracedRun {
        dir,
        output: out.clone(),
    };
    assert_trace_is_exact(&run, 2);
}

#[test]
fn a_trace_directory_the_tracer_creates_is_the_users_alone() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("new").join("trace");
    let exe = mpigram_testkit::compile("p2p_blocking").unwrap();
    let mut job = mpigram_testkit::mpiexec(2, &exe, [] as [&str; 0]);
    job.preload(tracer()).env("MPIGRAM_OUT", &dir);
    job.run().unwrap().assert_success();
    for d in [parent.path().join("new"), dir.clone()] {
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
    }
    assert!(dir.join("trace.mgr").is_file());
}
