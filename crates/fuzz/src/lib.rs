//! Bounded-time fuzzing of every mpigram reader: the trace container
//! (`TraceFile::open`, `TraceFile::from_bytes`), rank files and trace
//! directories (`RankTrace::read`, `Trace::open`, and the call decoder the
//! tools run on what they accept), grammars (`Grammar::decode`), call
//! signatures (`decode_signature`) and, beneath them all, `ByteReader`.
//!
//! Inputs are random bytes and, mostly, *valid* inputs with a few edits. A
//! file edited byte by byte fails its checksum, so most file cases edit a
//! section's decoded payload (or the section table: drop, swap, re-encode,
//! re-kind a section) and write the file again, checksums and all: that is
//! what reaches the payload decoders behind the checksums.
//!
//! Every case runs under [`bounded`]: on its own thread with a time limit (a
//! hang fails the test instead of stalling CI) while this crate's global
//! allocator notes the largest single allocation, which must stay within
//! [`allocation_budget`] of the input's size (a forged count must not
//! allocate gigabytes).
//!
//! Case counts: each property has a default sized so that the whole suite
//! runs in well under a minute on two cores; `PROPTEST_CASES=N` sets every
//! property's count (`PROPTEST_CASES=20000 cargo test --release -p
//! mpigram-fuzz` for a long run).

mod alloc;
mod edit;
mod samples;

pub use alloc::largest_allocation_since_reset;
pub use edit::{
    At, Edit, FileEdit, Section, apply, apply_file_edit, edit, edits, file_edit, read_sections,
    write_sections,
};
pub use samples::{
    arb_signature, arb_value, sample_rank_file, sample_rank_trace, sample_run_file,
    sample_signatures, sample_summary_file,
};

use proptest::test_runner::{Config, FileFailurePersistence};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A case that has not finished after this long is taken for a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Expansions and call decoding stop after this many calls: a valid trace
/// may hold 2^60 calls, which is no reason to spend the test's time on it.
pub const CALL_LIMIT: usize = 2000;

/// The proptest configuration of a property: `default_cases` cases, or
/// `PROPTEST_CASES` when it is set.
pub fn config(default_cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    Config {
        cases,
        // Failing cases are kept next to the test source
        // (`tests/<name>.proptest-regressions`) and tried first next time.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

/// The largest single allocation a reader may make for an input of
/// `input_len` bytes: a small multiple of the input (decoded structures are
/// larger than their varints), plus room for fixed-size buffers.
pub fn allocation_budget(input_len: usize) -> usize {
    64 * input_len + (1 << 20)
}

/// What [`bounded`] saw of one run.
pub struct Bounded<T> {
    pub value: T,
    /// Largest single allocation (or reallocation) of the run, in bytes.
    pub largest_allocation: usize,
    /// The most bytes the run held at once.
    pub most_held: usize,
    pub elapsed: Duration,
}

/// Runs `f` on a thread of its own and waits at most [`TIME_LIMIT`] for it.
/// Panics if it takes longer (the thread is left behind: the test has
/// failed anyway) and passes on a panic of `f` as it was.
pub fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Bounded<T> {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        alloc::reset();
        let start = Instant::now();
        let value = f();
        let elapsed = start.elapsed();
        // The receiver is gone only if the caller already gave up.
        let _ = tx.send(Bounded {
            value,
            largest_allocation: alloc::largest_allocation_since_reset(),
            most_held: alloc::most_held_since_reset(),
            elapsed,
        });
    });
    match rx.recv_timeout(TIME_LIMIT) {
        Ok(b) => b,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("no answer within {TIME_LIMIT:?}: the reader hangs")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread ended without sending"),
        },
    }
}

/// Asserts that `error` reads as one line that names `file`.
pub fn assert_one_line_naming(error: &impl std::fmt::Display, file: &str) {
    let text = error.to_string();
    assert!(
        !text.contains('\n'),
        "error of more than one line: {text:?}"
    );
    assert!(text.contains(file), "error does not name {file}: {text}");
}
