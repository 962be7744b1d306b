//! Every reader error names the file and the section: each section of a
//! whole-run file and of a rank file, as the writers make them, damaged
//! in turn — a byte of its stored bytes flipped (caught by the container's
//! checksum), its payload cut short behind a valid checksum (caught by
//! the section's decoder) — gives a one-line error that names the file
//! and that section, and echoes none of the file's bytes.

use mpigram_format::TraceFile;
use mpigram_fuzz::*;
use mpigram_trace::{RUN_FILE_NAME, Trace, rank_file_name, section};

/// The error of opening a directory that holds `bytes` as `file`.
fn error_of(file: &str, bytes: &[u8], what: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), bytes).unwrap();
    match Trace::open(dir.path()) {
        Ok(_) => panic!("{file} read whole although {what}"),
        Err(e) => e.to_string(),
    }
}

/// Damages each section of `sample` in turn; returns the sections' names.
fn each_section_damaged(file: &str, sample: &[u8]) -> Vec<&'static str> {
    let container = TraceFile::from_bytes(file, sample.to_vec()).unwrap();
    let (kind, flags, sections) = read_sections(sample);
    let mut names = Vec::new();
    for (i, s) in container.sections().iter().enumerate() {
        let name = section::name(s.kind);
        assert_ne!(name, "unknown");
        names.push(name);
        let says = format!("{name} section");

        let mut flipped = sample.to_vec();
        flipped[(s.offset + s.stored_len / 2) as usize] ^= 0x10;
        let mut cut = sections.clone();
        let payload = &mut cut[i].payload;
        payload.truncate(payload.len() / 2);
        let cut = write_sections(kind, flags, &cut);

        for (how, bytes) in [("flipped", flipped), ("cut short", cut)] {
            let e = error_of(file, &bytes, &format!("{name} was {how}"));
            assert!(!e.contains('\n'), "{how} {name}: {e:?}");
            assert!(
                e.contains(file) && e.contains(&says),
                "{how} {name}: the error does not name {file} and {says}: {e}"
            );
            // Nothing of the file: the error is plain text that names no
            // byte of the damaged payload as a string.
            assert!(e.chars().all(|c| c.is_ascii_graphic() || c == ' '), "{e:?}");
        }
    }
    names
}

#[test]
fn each_section_of_a_whole_run_file_damaged_is_named() {
    let names = each_section_damaged(RUN_FILE_NAME, sample_run_file());
    for expected in [
        "RUN",
        "SIGNATURE_DELTAS",
        "PARTS",
        "STATS_COLUMNS",
        "GAPS",
        "LOSSY_TIMES",
        "EXACT_TIMES",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
}

#[test]
fn each_section_of_a_rank_file_damaged_is_named() {
    let names = each_section_damaged(&rank_file_name(0), sample_rank_file(0));
    for expected in [
        "META",
        "FUNCS",
        "SIGNATURE_DELTAS",
        "GRAMMAR",
        "STATS_COLUMNS",
        "GAPS",
        "COMMS",
        "LOSSY_TIMES",
        "EXACT_TIMES",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
}

/// A signature cut short inside a well-formed signature table (its
/// function the same, so the function table's check passes) is refused
/// when the file is read, naming the section, not later by a tool; in
/// the table as files store it since 2026-11-29 (SIGNATURE_DELTAS) and
/// as they stored it before (SIGNATURES).
#[test]
fn a_signature_that_does_not_decode_is_named_at_open() {
    use mpigram_trace::{decode_signature_deltas, encode_signature_deltas};
    use mpigram_varint::PutVarint;
    for old_table in [false, true] {
        let (kind, flags, mut sections) = read_sections(sample_rank_file(0));
        let table = sections
            .iter_mut()
            .find(|s| s.kind == section::SIGNATURE_DELTAS)
            .unwrap();
        let mut signatures = decode_signature_deltas(&table.payload).unwrap();
        let last = signatures.len() - 1;
        signatures[last].pop();
        if old_table {
            table.kind = section::SIGNATURES;
            table.payload.clear();
            table.payload.put_u64(signatures.len() as u64);
            for s in &signatures {
                table.payload.put_blob(s);
            }
        } else {
            table.payload = encode_signature_deltas(&signatures);
        }
        let e = error_of(
            &rank_file_name(0),
            &write_sections(kind, flags, &sections),
            "a signature was cut short",
        );
        let name = if old_table {
            "SIGNATURES"
        } else {
            "SIGNATURE_DELTAS"
        };
        assert!(
            e.contains(&format!("rank0.mgr: {name} section: signature {last}: ")),
            "{e}"
        );
    }
}

/// A whole-run file keeps its signature table in SIGNATURE_DELTAS since
/// 2026-11-30, and its RUN section an empty plain table (earlier files
/// hold the table there, `crates/trace/tests/older.rs`): a signature cut
/// short is named in SIGNATURE_DELTAS, and the table put back into RUN
/// is read alone, but not beside SIGNATURE_DELTAS.
#[test]
fn a_whole_run_files_signature_table_is_read_from_either_place() {
    use mpigram_trace::{decode_signature_deltas, encode_signature_deltas};
    use mpigram_varint::PutVarint;
    let sample = sample_run_file();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(RUN_FILE_NAME), sample).unwrap();
    let whole = Trace::open(dir.path()).unwrap();
    let (kind, flags, sections) = read_sections(sample);
    let at = |k| sections.iter().position(|s| s.kind == k).unwrap();
    let (run, deltas) = (at(section::RUN), at(section::SIGNATURE_DELTAS));
    let signatures = decode_signature_deltas(&sections[deltas].payload).unwrap();
    assert_eq!(signatures, whole.signatures);

    let mut cut = sections.clone();
    let mut short = signatures.clone();
    short[1].pop();
    cut[deltas].payload = encode_signature_deltas(&short);
    let e = error_of(
        RUN_FILE_NAME,
        &write_sections(kind, flags, &cut),
        "a signature was cut short",
    );
    assert!(
        e.contains("trace.mgr: SIGNATURE_DELTAS section: signature 1: "),
        "{e}"
    );

    // RUN's empty table is the byte before the grammar's blob.
    let mut grammar = Vec::new();
    grammar.put_blob(&whole.grammar.encode());
    let payload = &sections[run].payload;
    let table_at = payload
        .windows(grammar.len())
        .position(|w| w == grammar)
        .unwrap()
        - 1;
    assert_eq!(payload[table_at], 0, "an empty table");
    let mut plain = payload[..table_at].to_vec();
    plain.put_u64(signatures.len() as u64);
    signatures.iter().for_each(|s| plain.put_blob(s));
    plain.extend_from_slice(&payload[table_at + 1..]);
    let mut both = sections.clone();
    both[run].payload = plain;
    let e = error_of(
        RUN_FILE_NAME,
        &write_sections(kind, flags, &both),
        "two tables",
    );
    assert!(
        e.contains("trace.mgr: RUN section: a signature table both here and in SIGNATURE_DELTAS"),
        "{e}"
    );
    let mut old = both;
    old.remove(deltas);
    std::fs::write(
        dir.path().join(RUN_FILE_NAME),
        write_sections(kind, flags, &old),
    )
    .unwrap();
    let read = Trace::open(dir.path()).unwrap();
    assert_eq!(read.signatures, whole.signatures);
    assert!(read.calls(0).eq(whole.calls(0)) && read.calls(1).eq(whole.calls(1)));
}

/// A rank file's aggregated timing is read from its columns
/// (STATS_COLUMNS, since 2026-11-30) and from rows as older files hold it
/// (CALL_STATS: the count, then each signature's count, total, minimum,
/// maximum and gap), to the same numbers.
#[test]
fn a_rank_files_stats_are_read_from_rows_and_columns_alike() {
    use mpigram_trace::decode_stats_columns;
    use mpigram_varint::PutVarint;
    let sample = sample_rank_file(0);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(rank_file_name(0));
    std::fs::write(&file, sample).unwrap();
    let columns = Trace::open(dir.path()).unwrap();
    let (kind, flags, mut sections) = read_sections(sample);
    let table = sections
        .iter_mut()
        .find(|s| s.kind == section::STATS_COLUMNS)
        .unwrap();
    let stats = decode_stats_columns(&table.payload).unwrap();
    assert!(stats.iter().any(|s| s.min_ns < s.max_ns), "a spread");
    table.kind = section::CALL_STATS;
    table.payload.clear();
    table.payload.put_u64(stats.len() as u64);
    for s in &stats {
        for v in [s.count, s.total_ns, s.min_ns, s.max_ns, s.gap_ns] {
            table.payload.put_u64(v);
        }
    }
    std::fs::write(&file, write_sections(kind, flags, &sections)).unwrap();
    let rows = Trace::open(dir.path()).unwrap();
    assert_eq!(rows.ranks[0].stats, columns.ranks[0].stats);
    let by_terminal: Vec<_> = rows.ranks[0].stats.iter().map(|&(_, s)| s).collect();
    assert_eq!(by_terminal, stats);
}
