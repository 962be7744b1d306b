//! `mpigram run` stopped by a signal (SIGTERM from a batch system, Ctrl-C,
//! a closed terminal's SIGHUP) passes it on to the launcher and waits for
//! it, instead of dying alone and leaving mpiexec and every rank running.

mod common;

use mpigram_testkit::{compile, mpi_available};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Processes running `exe`.
fn running(exe: &Path) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe)
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "))
        })
        .collect()
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn stopped_by(signal: i32) {
    mpi_available().unwrap();
    let exe = compile("linger").unwrap().canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let never = dir.path().join("never");
    let mut run = Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(["run", "-o"])
        .arg(dir.path().join("t"))
        .args(["-n", "2", "--"])
        .arg(&exe)
        .arg(&never)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || running(&exe).len() == 2),
        "the ranks never started"
    );
    // The signal to `mpigram run` alone, not to its process group.
    unsafe { libc::kill(run.id() as i32, signal) };
    let exited = wait_until(Duration::from_secs(30), || {
        run.try_wait().unwrap().is_some()
    });
    let gone = wait_until(Duration::from_secs(10), || running(&exe).is_empty());
    let left = running(&exe);
    for pid in &left {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    let _ = run.kill();
    let status = run.wait().unwrap();
    assert!(exited, "mpigram run did not end after signal {signal}");
    assert!(gone, "ranks left running after signal {signal}: {left:?}");
    assert_eq!(status.code(), Some(128 + signal), "{status}");
}

/// One test, the signals one after another: the runs' ranks are told
/// apart from others' by their executable only.
#[test]
fn sigterm_sigint_and_sighup_reach_the_launcher_and_the_ranks() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        stopped_by(signal);
    }
}
