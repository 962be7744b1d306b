//! The compact layout (version 2) damaged: every byte of a file is covered by a checksum, so a
//! flipped bit anywhere is caught; cut, random and forged files give one-line errors, never a
//! panic or wrong content.

mod common;

use common::*;
use mpigram_format::varint::PutVarint;
use mpigram_format::{Codec, ErrorKind, MAGIC, TraceFile};
use proptest::prelude::*;

const NAME: &str = "trace/rank0.mgr";

/// Opens `bytes` and reads every section: each one read must be the sample's.
fn reads_all(bytes: Vec<u8>) -> Result<(), mpigram_format::Error> {
    let f = TraceFile::from_bytes(NAME, bytes)?;
    let sample = sample_sections();
    for s in f.sections() {
        let data = f.read(s)?;
        let original = sample
            .iter()
            .find(|(k, i, _, _)| (*k, *i) == (s.kind, s.index))
            .map(|(_, _, d, _)| d);
        assert_eq!(Some(&data.to_vec()), original, "wrong content for {s:?}");
    }
    Ok(())
}

#[test]
fn truncated_at_every_offset() {
    let full = compact_sample();
    for len in 1..full.len() {
        let e = reads_all(full[..len].to_vec()).expect_err("cut");
        assert_one_line(&e, NAME);
        if len < 20 {
            assert!(
                matches!(e.kind(), ErrorKind::Truncated { .. }),
                "cut at {len}: {e}"
            );
        }
    }
}

#[test]
fn every_single_bit_flip_is_caught() {
    let original = compact_sample();
    for pos in 0..original.len() {
        for bit in 0..8 {
            let mut b = original.clone();
            b[pos] ^= 1 << bit;
            let e = reads_all(b).expect_err("flipped");
            assert_one_line(&e, NAME);
        }
    }
}

#[test]
fn a_flipped_payload_names_its_section() {
    let original = compact_sample();
    let f = TraceFile::from_bytes(NAME, original.clone()).unwrap();
    let s = f.find(0x11, 2).unwrap();
    let mut b = original;
    b[(s.offset + s.stored_len / 2) as usize] ^= 0x04;
    let e = reads_all(b).expect_err("flipped");
    assert!(
        matches!(e.kind(), ErrorKind::ChecksumMismatch { .. }),
        "{e}"
    );
    assert_eq!(e.section().map(|s| (s.kind, s.index)), Some((0x11, 2)));
    assert_eq!(e.offset(), Some(s.offset));
}

/// A file of the given table (everything after the prefix's payloads), with a right footer.
fn with_table(payloads: &[u8], table: &[u8]) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(&[2, 0, 0, 0]);
    let prefix = b.clone();
    b.extend_from_slice(payloads);
    b.extend_from_slice(table);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&prefix);
    crc.update(table);
    b.extend_from_slice(&(table.len() as u32).to_le_bytes());
    b.extend_from_slice(&crc.finalize().to_le_bytes());
    b
}

#[test]
fn tables_that_disagree_with_the_payloads_are_refused() {
    let entry = |t: &mut Vec<u8>, kind: u32, stored: u64| {
        t.put_u32(kind);
        t.put_u32(0);
        t.put_u32(0);
        t.put_u64(stored);
        t.extend_from_slice(&crc32fast::hash(&b"abcdef"[..stored.min(6) as usize]).to_le_bytes());
    };
    let header = |n: u64| {
        let mut t = Vec::new();
        t.put_u32(1);
        t.put_u32(0);
        t.put_u64(n);
        t
    };
    // Stored lengths adding up to less, or more, than the payload bytes.
    for stored in [5, 7, u64::MAX] {
        let mut t = header(1);
        entry(&mut t, 1, stored);
        let e = TraceFile::from_bytes(NAME, with_table(b"abcdef", &t)).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::BadHeader(_) | ErrorKind::OutOfRange { .. }
            ),
            "{e}"
        );
        assert_one_line(&e, NAME);
    }
    // A duplicate (kind, index).
    let mut t = header(2);
    entry(&mut t, 1, 3);
    entry(&mut t, 1, 3);
    let e = TraceFile::from_bytes(NAME, with_table(b"abcabc", &t)).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::DuplicateSection { first: 0 }),
        "{e}"
    );
    // A count larger than the table can hold.
    let t = header(u64::from(u32::MAX));
    let e = TraceFile::from_bytes(NAME, with_table(b"", &t)).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::BadHeader(_)), "{e}");
    // The right table reads.
    let mut t = header(1);
    entry(&mut t, 1, 6);
    let f = TraceFile::from_bytes(NAME, with_table(b"abcdef", &t)).unwrap();
    assert_eq!(&*f.section(1, 0).unwrap(), b"abcdef");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_after_the_version_never_panic(
        rest in proptest::collection::vec(any::<u8>(), 0..512)
    ) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[2, 0, 0, 0]);
        bytes.extend_from_slice(&rest);
        let _ = reads_all(bytes);
    }

    /// Tables of random varints behind a right checksum reach every check of the table.
    #[test]
    fn forged_tables_with_valid_checksums_never_panic(
        payloads in proptest::collection::vec(any::<u8>(), 0..64),
        numbers in proptest::collection::vec(
            prop_oneof![0u64..8, 0u64..80, any::<u64>()], 0..24),
    ) {
        let mut table = Vec::new();
        for n in numbers {
            table.put_u64(n);
        }
        if let Ok(f) = TraceFile::from_bytes(NAME, with_table(&payloads, &table)) {
            for s in f.sections() {
                if let Ok(data) = f.read(s) {
                    prop_assert_eq!(data.len() as u64, s.decoded_len);
                }
            }
        }
    }

    #[test]
    fn overwritten_bytes_never_give_wrong_content(
        writes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16)
    ) {
        let mut b = compact(4, 0, &sample_sections());
        let len = b.len();
        for (pos, v) in writes {
            b[pos % len] = v;
        }
        let _ = reads_all(b);
    }
}

#[test]
fn a_zstd_section_reads_back() {
    let sections = vec![(7, 1, b"zstd ".repeat(50), Codec::Zstd)];
    let f = TraceFile::from_bytes(NAME, compact(1, 0, &sections)).unwrap();
    assert_eq!(&*f.section(7, 1).unwrap(), &sections[0].2[..]);
}
