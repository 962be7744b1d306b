//! The tracer's settings (environment variables, the same in every rank):
//! what they accept, and that a mistake in them is said once for the job,
//! on whole lines, not once per rank.

mod common;

use common::*;

/// Lines of `stderr` that contain `text`; each must be a whole line of the
/// tracer's (it starts with `mpigram: `).
fn said(stderr: &str, text: &str) -> usize {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(text)).collect();
    for l in &lines {
        assert!(l.starts_with("mpigram: "), "split or mixed line: {l:?}");
    }
    lines.len()
}

#[test]
fn a_bad_setting_is_said_once_per_job_on_whole_lines() {
    let run = run_traced(
        "halo2d",
        3,
        &["5"],
        &[
            ("MPIGRAM_TIMING", "exact"),
            ("MPIGRAM_JOURNAL_BYTES", "lots"),
            ("MPIGRAM_MEMORY", "64X"),
        ],
    );
    run.output.assert_success();
    let err = &run.output.stderr;
    assert_eq!(said(err, "MPIGRAM_TIMING=exact"), 1, "{err}");
    assert_eq!(said(err, "MPIGRAM_JOURNAL_BYTES=lots"), 1, "{err}");
    assert_eq!(said(err, "MPIGRAM_MEMORY=64X"), 1, "{err}");
    // Traced all the same, with aggregated timing.
    let trace = assert_trace_is_exact(&run, 3);
    assert!(trace.ranks.iter().all(|r| !r.meta.timing.per_call()));
}

#[test]
fn mpigram_off_takes_yes_and_no_words_and_refuses_others() {
    for (value, traced) in [
        ("no", true),
        ("off", true),
        ("0", true),
        ("FALSE", true),
        ("yes", false),
        ("TRUE", false),
        ("on", false),
        ("1", false),
        ("maybe", false),
    ] {
        let run = run_traced("p2p_blocking", 2, &[], &[("MPIGRAM_OFF", value)]);
        run.output.assert_success();
        let files = std::fs::read_dir(run.dir.path()).unwrap().count();
        assert_eq!(files > 0, traced, "MPIGRAM_OFF={value}: {files} files");
        let complaints = said(&run.output.stderr, "MPIGRAM_OFF must be");
        assert_eq!(
            complaints,
            usize::from(value == "maybe"),
            "MPIGRAM_OFF={value}"
        );
    }
}
