//! Every way a trace file can be wrong gives a one-line error naming the
//! file, never a panic: truncated, bit-flipped, empty, foreign, and files
//! whose container is sound but whose sections lie.

mod common;

use common::{one_line_naming, sample};
use mpigram_format::{Codec, NewSection, write_file};
use mpigram_grammar::Sequitur;
use mpigram_trace::{FILE_KIND_RANK, RankTrace, Trace, section};
use proptest::prelude::*;

#[test]
fn a_written_trace_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let t = sample(0);
    t.write(dir.path()).unwrap();
    sample(1).write(dir.path()).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(RankTrace::read(&dir.path().join("rank0.mgr")).unwrap(), t);
    assert_eq!(trace.ranks[0], Trace::from_rank(t.clone()).ranks[0]);
    assert_eq!(trace.ranks[1].meta.rank, 1);
    let calls: Vec<&[u8]> = trace.calls(0).collect();
    assert_eq!(calls, t.calls().collect::<Vec<_>>());
    assert_eq!(
        trace.signatures, t.signatures,
        "the two ranks share one table"
    );
    assert!(trace.is_complete());
}

#[test]
fn empty_foreign_and_missing_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let e = Trace::open(dir.path()).err().unwrap();
    assert!(e.to_string().contains("no mpigram trace here"), "{e}");
    let file = dir.path().join("rank0.mgr");
    for bytes in [&b""[..], b"#!/bin/sh\necho not a trace\n", &[0u8; 200]] {
        std::fs::write(&file, bytes).unwrap();
        one_line_naming(&Trace::open(dir.path()).err().unwrap(), &file);
    }
    let missing = dir.path().join("nowhere");
    assert_eq!(
        Trace::open(&missing)
            .err()
            .unwrap()
            .to_string()
            .lines()
            .count(),
        1
    );
}

#[test]
fn a_newer_format_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(0).write(dir.path()).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 9; // major version 9
    std::fs::write(&path, bytes).unwrap();
    let e = Trace::open(dir.path()).err().unwrap();
    one_line_naming(&e, &path);
    assert!(e.to_string().contains("newer"), "{e}");
}

#[test]
fn sound_containers_with_lying_sections_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = sample(0);
    let meta = good.meta.encode();
    let grammar = good.grammar.encode();
    // A grammar that names a signature the table does not have.
    let mut s = Sequitur::new();
    s.push(7);
    let bad_grammar = s.grammar(0).encode();
    let one = [1u8, 1, 4, 0, 3, 3]; // count 1, blob of 4 bytes
    let cases: Vec<(&str, Vec<NewSection>)> = vec![
        (
            "missing sections",
            vec![(section::META, 0, meta.as_slice(), Codec::Raw).into()],
        ),
        (
            "terminal out of table",
            vec![
                (section::META, 0, meta.as_slice(), Codec::Raw).into(),
                (section::FUNCS, 0, &[0u8][..], Codec::Raw).into(),
                (section::SIGNATURES, 0, &one[..], Codec::Raw).into(),
                (section::GRAMMAR, 0, bad_grammar.as_slice(), Codec::Raw).into(),
                (section::CALL_STATS, 0, &[1u8, 1, 1, 1, 1][..], Codec::Raw).into(),
                (section::COMMS, 0, &[0u8][..], Codec::Raw).into(),
            ],
        ),
        (
            "garbage meta",
            vec![
                (section::META, 0, &[0xffu8; 3][..], Codec::Raw).into(),
                (section::GRAMMAR, 0, grammar.as_slice(), Codec::Raw).into(),
            ],
        ),
    ];
    for (what, sections) in cases {
        let path = dir.path().join("rank0.mgr");
        write_file(&path, FILE_KIND_RANK, 0, &sections).unwrap();
        let e = Trace::open(dir.path())
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        one_line_naming(&e, &path);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Truncations and bit flips anywhere: an error or the same trace,
    /// never a panic, never a hang.
    #[test]
    fn damaged_files_never_panic(cut in any::<prop::sample::Index>(), flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..), 0..4)) {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(0).write(dir.path()).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        for (at, mask) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
        }
        let keep = if cut.index(4) == 0 { cut.index(bytes.len()) } else { bytes.len() };
        bytes.truncate(keep);
        std::fs::write(&path, &bytes).unwrap();
        match Trace::open(dir.path()) {
            Ok(trace) => {
                // Whatever survives (flips in padding) reads back and expands.
                let rank = trace.ranks[0].meta.rank;
                let calls = trace.calls(rank).count() as u64;
                prop_assert_eq!(Some(calls), trace.grammar.stream_len(rank));
            }
            Err(e) => one_line_naming(&e, &path),
        }
    }
}
