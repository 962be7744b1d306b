//! Damaged and random inputs: the reader never panics or hangs, never returns wrong content,
//! and a flipped bit anywhere a checksum covers is always caught.

mod common;

use std::collections::HashMap;
use std::ops::Range;

use common::*;
use mpigram_format::{Codec, ErrorKind, MAGIC, TraceFile};
use proptest::prelude::*;

/// Opens `bytes` and reads every section; every section that reads successfully must have
/// exactly the content of the original section with the same (kind, index).
/// Returns whether everything (open and all reads) succeeded.
fn check_against(bytes: Vec<u8>, original: &Contents) -> bool {
    let Ok(f) = TraceFile::from_bytes("m.mgr", bytes) else {
        return false;
    };
    let mut all_ok = true;
    for s in f.sections() {
        match f.read(s) {
            Ok(data) => assert_eq!(
                Some(&data.to_vec()),
                original.get(&(s.kind, s.index)),
                "wrong content for {s:?}"
            ),
            Err(e) => {
                assert!(!e.to_string().contains('\n'));
                all_ok = false;
            }
        }
    }
    all_ok
}

/// Decoded content by (kind, index).
type Contents = HashMap<(u32, u32), Vec<u8>>;

fn originals() -> Contents {
    sample_sections()
        .into_iter()
        .map(|(k, i, d, _)| ((k, i), d))
        .collect()
}

/// Byte ranges covered by a checksum: header, table, stored payloads. The rest is padding.
fn covered(bytes: &[u8]) -> Vec<Range<usize>> {
    let t = table_offset(bytes);
    let mut r = vec![0..HEADER_LEN, t..t + count(bytes) * entry_len(bytes)];
    for i in 0..count(bytes) {
        let e = entry(bytes, i);
        r.push(e.offset as usize..(e.offset + e.stored) as usize);
    }
    r
}

/// Does it without proptest too: every single bit of the sample file, exhaustively.
#[test]
fn every_single_bit_flip_is_caught_or_harmless() {
    let original = sample();
    let ranges = covered(&original);
    let contents = originals();
    for pos in 0..original.len() {
        for bit in 0..8 {
            let mut b = original.clone();
            b[pos] ^= 1 << bit;
            let ok = check_against(b, &contents);
            let in_covered = ranges.iter().any(|r| r.contains(&pos));
            assert_eq!(ok, !in_covered, "flip of bit {bit} at byte {pos}");
        }
    }
}

#[test]
fn bit_flip_in_a_payload_is_a_checksum_mismatch() {
    let original = sample();
    for i in 0..count(&original) {
        let e = entry(&original, i);
        for pos in e.offset..e.offset + e.stored {
            let mut b = original.clone();
            b[pos as usize] ^= 0x80;
            let f = TraceFile::from_bytes("m.mgr", b).expect("table untouched");
            let err = f.section(e.kind, e.index).expect_err("payload flipped");
            assert!(
                matches!(err.kind(), ErrorKind::ChecksumMismatch { .. }),
                "{err}"
            );
        }
    }
}

/// A larger file with zstd payloads, for the random mutations.
fn bigger() -> (Vec<u8>, Contents) {
    let sections: Vec<(u32, u32, Vec<u8>, Codec)> = (0..6u32)
        .map(|i| {
            let data: Vec<u8> = (0..i * 150).map(|j| (j % (i + 3)) as u8).collect();
            let codec = if i % 2 == 0 { Codec::Zstd } else { Codec::Raw };
            (0x30, i, data, codec)
        })
        .collect();
    let map = sections
        .iter()
        .map(|(k, i, d, _)| ((*k, *i), d.clone()))
        .collect();
    (encode(4, 0, &sections), map)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_against(bytes, &HashMap::new());
    }

    #[test]
    fn random_bytes_after_the_magic_never_panic(
        rest in proptest::collection::vec(any::<u8>(), 0..512)
    ) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        bytes.extend_from_slice(&rest);
        check_against(bytes, &HashMap::new());
    }

    #[test]
    fn truncated_and_extended_files_never_give_wrong_content(
        cut in 0usize..2000,
        extra in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let (mut b, map) = bigger();
        let cut = cut.min(b.len());
        b.truncate(cut);
        b.extend_from_slice(&extra);
        check_against(b, &map);
    }

    #[test]
    fn bit_flips_never_give_wrong_content(flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..6)) {
        let (mut b, map) = bigger();
        let len = b.len();
        for (pos, bit) in flips {
            b[pos % len] ^= 1 << bit;
        }
        check_against(b, &map);
    }

    #[test]
    fn single_bit_flip_in_covered_bytes_is_always_caught(pos in any::<usize>(), bit in 0u8..8) {
        let (mut b, map) = bigger();
        let ranges = covered(&b);
        let pos = pos % b.len();
        b[pos] ^= 1 << bit;
        let caught = !check_against(b, &map);
        prop_assert_eq!(caught, ranges.iter().any(|r| r.contains(&pos)));
    }

    #[test]
    fn overwritten_bytes_never_give_wrong_content(
        writes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16)
    ) {
        let (mut b, map) = bigger();
        let len = b.len();
        for (pos, v) in writes {
            b[pos % len] = v;
        }
        check_against(b, &map);
    }

    /// Forged files whose checksums are all right but whose fields are slightly or wildly off:
    /// this reaches the range, overlap, codec and decompression checks that plain corruption
    /// cannot (a flipped bit is caught by a checksum first).
    #[test]
    fn forged_tables_with_valid_checksums_never_panic(
        pieces in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..200), any::<bool>(), 0u32..4, tweak()),
            0..6),
    ) {
        let mut b = vec![0u8; HEADER_LEN];
        let mut entries = Vec::new();
        for (i, (data, zstd, kind, (field, delta))) in pieces.iter().enumerate() {
            let stored = if *zstd { zstd::encode_all(&data[..], 1).unwrap() } else { data.clone() };
            let mut e = RawEntry {
                kind: *kind,
                index: i as u32,
                codec: u32::from(*zstd),
                checksum: 0,
                offset: b.len() as u64,
                stored: stored.len() as u64,
                decoded: data.len() as u64,
            };
            b.extend_from_slice(&stored);
            match field {
                0 => e.offset = e.offset.wrapping_add(*delta),
                1 => e.stored = e.stored.wrapping_add(*delta),
                2 => e.decoded = e.decoded.wrapping_add(*delta),
                3 => e.codec = e.codec.wrapping_add(*delta as u32),
                4 => e.index = 0,
                _ => {}
            }
            e.checksum = b
                .get(e.offset as usize..e.offset.saturating_add(e.stored) as usize)
                .map_or(0, crc32fast::hash);
            entries.push(e);
        }
        finish_v1(&mut b, 0, 0, entries);
        if let Ok(f) = TraceFile::from_bytes("forged.mgr", b) {
            for (s, (data, _, _, (field, delta))) in f.sections().iter().zip(&pieces) {
                if let Ok(got) = f.read(s) {
                    prop_assert_eq!(got.len() as u64, s.decoded_len);
                    // Sections whose location and codec were not disturbed read back exactly.
                    if !matches!(field, 0 | 1 | 3) || *delta == 0 {
                        prop_assert_eq!(&got[..], &data[..]);
                    }
                }
            }
        }
    }
}

/// Which entry field to disturb (5 and up: none) and by how much (small, or anything).
fn tweak() -> impl Strategy<Value = (u8, u64)> {
    (
        0u8..8,
        prop_oneof![
            0u64..4,
            (0u64..4).prop_map(|d| d.wrapping_neg()),
            any::<u64>()
        ],
    )
}
