//! The container, damaged: `TraceFile::open` (a file read on demand) and
//! `TraceFile::from_bytes` (a file in memory) accept and refuse the same
//! inputs, with the same one-line errors naming the file, and read the same
//! bytes from every section.
//!
//! `crates/format/tests/mutations.rs` fuzzes `from_bytes` thoroughly (random,
//! flipped, truncated, forged tables); here the two entry points are held to
//! each other, on real rank files edited with and without valid checksums.

use mpigram_format::TraceFile;
use mpigram_fuzz::*;
use proptest::prelude::*;
use std::sync::OnceLock;

fn sample_file() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::read(sample_rank_trace(0).write(dir.path()).unwrap()).unwrap()
    })
}

/// Every section's content, or its error, as text.
fn contents(f: &TraceFile) -> Vec<Result<Vec<u8>, String>> {
    f.sections()
        .iter()
        .map(|s| f.read(s).map(|b| b.to_vec()).map_err(|e| e.to_string()))
        .collect()
}

fn check(bytes: Vec<u8>) {
    let len = bytes.len();
    let run = bounded(move || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rank0.mgr");
        std::fs::write(&path, &bytes).unwrap();
        let name = path.display().to_string();
        let on_disk = TraceFile::open(&path);
        let in_memory = TraceFile::from_bytes(name.clone(), bytes);
        match (on_disk, in_memory) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.sections(), b.sections());
                assert_eq!((a.kind(), a.flags()), (b.kind(), b.flags()));
                let (ca, cb) = (contents(&a), contents(&b));
                assert_eq!(ca, cb);
                for e in ca.iter().filter_map(|c| c.as_ref().err()) {
                    assert_one_line_naming(e, &name);
                }
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string());
                assert_one_line_naming(&a, &name);
            }
            (a, b) => panic!("open: {a:?}, from_bytes: {b:?}"),
        }
    });
    assert!(run.largest_allocation <= allocation_budget(len));
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn edited_bytes(edits in edits()) {
        let mut bytes = sample_file().to_vec();
        apply(&mut bytes, &edits);
        check(bytes);
    }

    #[test]
    fn edited_sections_with_valid_checksums(edit in file_edit()) {
        check(apply_file_edit(sample_file(), &edit));
    }
}
