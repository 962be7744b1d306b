//! Rank files and trace directories, damaged: `RankTrace::read` and
//! `Trace::open` give a one-line error naming the file, or a trace that the
//! tools can use (expand, decode every signature, decode calls) without a
//! panic, a hang or an allocation out of proportion to the file.
//!
//! `crates/trace/tests/bad_input.rs` has the hand-made cases and flips and
//! truncations of whole files; here most edits are made to the sections'
//! decoded payloads and the file is written again with valid checksums, so
//! that they reach the section decoders.

use mpigram_analysis::decode::RankDecoder;
use mpigram_analysis::summary::TraceSummary;
use mpigram_fuzz::*;
use mpigram_mpispec::decode_signature;
use mpigram_trace::{RUN_FILE_NAME, RankTrace, Trace, rank_file_name, section};
use proptest::prelude::*;

/// What the tools do with a trace they could open, bounded: expand every
/// rank, decode the signatures and each rank's first calls.
fn use_as_the_tools_do(trace: &Trace) {
    for bytes in &trace.signatures {
        // Accepted signatures are exactly what a writer makes of them.
        if let Ok(sig) = decode_signature(bytes) {
            assert_eq!(&sig.encode(), bytes, "{sig:?}");
        }
    }
    for part in &trace.ranks {
        let rank = part.meta.rank;
        let n = trace.calls(rank).take(CALL_LIMIT).count() as u64;
        let len = trace.grammar.stream_len(rank).unwrap_or(0);
        assert_eq!(n, len.min(CALL_LIMIT as u64));
        for call in RankDecoder::new(trace, part).take(CALL_LIMIT) {
            let line = match call {
                Ok(call) => call.to_text(),
                Err(e) => e.to_string(),
            };
            assert!(!line.contains('\n'), "{line:?}");
        }
    }
}

/// Writes `files` (rank, bytes) into a fresh directory and opens it the
/// ways the tools do, under [`bounded`]. Returns whether it was accepted.
fn check_directory(files: Vec<(u32, Vec<u8>)>, damaged: u32) -> bool {
    let input_len: usize = files.iter().map(|(_, b)| b.len()).sum();
    let run = bounded(move || {
        let dir = tempfile::tempdir().unwrap();
        for (rank, bytes) in &files {
            std::fs::write(dir.path().join(rank_file_name(*rank)), bytes).unwrap();
        }
        let damaged_path = dir.path().join(rank_file_name(damaged));
        let one = RankTrace::read(&damaged_path);
        let all = Trace::open(dir.path());
        match (&one, &all) {
            (Ok(t), Ok(trace)) => {
                use_as_the_tools_do(trace);
                let summary = TraceSummary::of(trace);
                assert_eq!(summary.ranks.len(), files.len());
                let part = trace.rank(t.meta.rank).expect("the rank is in the trace");
                assert_eq!(part.meta, t.meta);
                assert!(
                    trace
                        .calls(t.meta.rank)
                        .take(CALL_LIMIT)
                        .eq(t.calls().take(CALL_LIMIT))
                );
            }
            (Err(e), Err(all)) => {
                let name = rank_file_name(damaged);
                assert_one_line_naming(e, &name);
                assert_one_line_naming(all, &name);
            }
            // A file RankTrace::read accepts may still clash with another
            // (two files for one rank, or a world size or run id of another
            // run) or count calls in part files the directory lacks (a
            // rank file alone cannot tell): the other way round is a bug.
            (Ok(_), Err(all)) => {
                let all = all.to_string();
                assert!(
                    all.contains("is in the trace twice")
                        || all.contains("files of different runs")
                        || all.contains("calls are in its part files"),
                    "{all}"
                );
            }
            (Err(e), Ok(_)) => panic!("read refuses ({e}) what open accepts"),
        }
        one.is_ok()
    });
    assert!(
        run.largest_allocation <= allocation_budget(input_len),
        "{} bytes allocated at once for {input_len} bytes of files",
        run.largest_allocation
    );
    run.value
}

proptest! {
    #![proptest_config(config(2000))]

    /// Payload and section-table edits behind valid checksums.
    #[test]
    fn edited_sections_with_valid_checksums(edit in file_edit()) {
        let bytes = apply_file_edit(sample_rank_file(0), &edit);
        check_directory(vec![(0, bytes)], 0);
    }
}

proptest! {
    #![proptest_config(config(500))]

    /// Edits of the file's bytes, checksums left as they were: the
    /// checksums catch them, wherever they are.
    #[test]
    fn edited_bytes_under_stale_checksums(edits in edits()) {
        let mut bytes = sample_rank_file(0).to_vec();
        apply(&mut bytes, &edits);
        let accepted = check_directory(vec![(0, bytes.clone())], 0);
        prop_assert!(!accepted || bytes == sample_rank_file(0) || padding_only(&bytes));
    }

    /// A damaged file among good ones: the error names that file.
    #[test]
    fn a_damaged_rank_among_good_ones_is_named(edit in file_edit()) {
        let damaged = apply_file_edit(sample_rank_file(1), &edit);
        check_directory(vec![(0, sample_rank_file(0).to_vec()), (1, damaged)], 1);
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// The whole-run file, edited behind valid checksums: a one-line error
    /// naming it, or a trace the tools can use.
    #[test]
    fn edited_whole_run_files(edit in file_edit(), summarised in any::<bool>()) {
        // Every rank's own timing, or the default summary with its gaps.
        let sample = if summarised { sample_summary_file() } else { sample_run_file() };
        let bytes = apply_file_edit(sample, &edit);
        let input_len = bytes.len();
        let run = bounded(move || {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(RUN_FILE_NAME), &bytes).unwrap();
            match Trace::open(dir.path()) {
                Ok(trace) => use_as_the_tools_do(&trace),
                Err(e) => assert_one_line_naming(&e, RUN_FILE_NAME),
            }
        });
        prop_assert!(run.largest_allocation <= allocation_budget(input_len));
    }
}

/// Whether a file that differs from the sample reads as the same trace
/// (edits that only touched the padding between sections).
fn padding_only(bytes: &[u8]) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(rank_file_name(0));
    std::fs::write(&path, bytes).unwrap();
    RankTrace::read(&path).ok() == Some(sample_rank_trace(0))
}

/// The sample rank file with section `kind`'s payload replaced.
fn sample_with(kind: u32, payload: Vec<u8>) -> Vec<u8> {
    let (file_kind, flags, mut sections) = read_sections(sample_rank_file(0));
    // Rows of CALL_STATS, as older files hold them, in place of the
    // sample's STATS_COLUMNS.
    let held = match kind {
        section::CALL_STATS => section::STATS_COLUMNS,
        kind => kind,
    };
    let replaced = sections.iter_mut().find(|s| s.kind == held).unwrap();
    replaced.kind = kind;
    replaced.payload = payload;
    write_sections(file_kind, flags, &sections)
}

/// `RankTrace::read` of `bytes` as `rank0.mgr`, under [`bounded`]: its
/// error, which must be one line naming the file.
fn read_error(bytes: Vec<u8>) -> Bounded<String> {
    bounded(move || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(rank_file_name(0));
        std::fs::write(&path, &bytes).unwrap();
        let e = RankTrace::read(&path).expect_err("a damaged file");
        assert_one_line_naming(&e, "rank0.mgr");
        e.to_string()
    })
}

/// Found by this harness: the CALL_STATS and COMMS decoders sized their
/// tables by the declared count, which `ByteReader::count` only checks
/// against the bytes left (one byte per entry) while an entry takes 32
/// bytes in memory: 32 times the section's size at once. Now the capacity
/// follows what the bytes can hold.
/// STATS_COLUMNS's decoder (since 2026-11-30) sizes each column so too.
#[test]
fn a_forged_count_does_not_size_a_table() {
    const N: usize = 1 << 20;
    for kind in [section::CALL_STATS, section::STATS_COLUMNS, section::COMMS] {
        // A count of N and N zero bytes: room for N/4 stats entries at most.
        let mut payload = vec![0x80, 0x80, 0x40];
        payload.resize(3 + N, 0);
        let bytes = sample_with(kind, payload);
        let file_len = bytes.len();
        let run = read_error(bytes);
        // The decoded section itself is N bytes; its entries may take 8 N.
        assert!(
            run.largest_allocation <= 8 * N + (1 << 20),
            "kind {kind}: {} bytes allocated at once for a file of {file_len} bytes",
            run.largest_allocation
        );
    }
}

/// Found by this harness: a grammar section of a few bytes may declare 2^24
/// streams, which the grammar decoder listed (128 MiB) before the rank
/// reader found that a rank file has one. It now tells the decoder so.
#[test]
fn a_forged_stream_count_is_refused_before_it_takes_memory() {
    // One rule of one run (terminal 0); one group: rule 0, 0..2^24.
    let grammar = vec![1, 1, 1, 0, 1, 0, 1, 0, 1, 0x80, 0x80, 0x80, 0x08];
    let run = read_error(sample_with(section::GRAMMAR, grammar));
    let e = run.value;
    assert!(
        e.ends_with("GRAMMAR section: grammar data, byte 7: bad stream progression"),
        "{e}"
    );
    assert!(
        run.largest_allocation < 1 << 20,
        "{}",
        run.largest_allocation
    );
}

/// A trace whose function numbers mean other functions (written by
/// another mpigram) is refused in one line, not misread.
#[test]
fn another_function_table_is_refused_in_one_line() {
    let funcs = vec![0x2a];
    let e = read_error(sample_with(section::FUNCS, funcs)).value;
    assert!(e.contains("written by another version"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

/// A whole-run file whose per-rank chunk sections (PARTS, CALL_STATS,
/// per-call times) are each zstd frames of 48 MiB of zeros (within what a section
/// may decode to): the reader decodes and checks them one at a time, so
/// it never holds more than one of them, and refuses the file at the first.
#[test]
fn inflated_sections_are_decoded_and_refused_one_at_a_time() {
    const INFLATED: usize = 48 << 20;
    let (kind, flags, mut sections) = read_sections(sample_run_file());
    for s in &mut sections {
        let chunked = [
            section::PARTS,
            section::CALL_STATS,
            section::LOSSY_TIMES,
            section::EXACT_TIMES,
        ];
        if chunked.contains(&s.kind) {
            s.codec = mpigram_format::Codec::Zstd;
            s.payload = vec![0; INFLATED];
        }
    }
    let bytes = write_sections(kind, flags, &sections);
    drop(sections);
    let run = bounded(move || {
        Trace::from_bytes(bytes, RUN_FILE_NAME)
            .err()
            .map(|e| e.to_string())
    });
    let e = run.value.expect("refused");
    assert!(e.contains("PARTS"), "{e}");
    assert!(
        run.most_held < 2 * INFLATED,
        "held {} MiB at once",
        run.most_held >> 20
    );
}
