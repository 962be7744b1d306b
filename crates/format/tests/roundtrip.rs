//! Files written by the writer read back exactly, from memory and from disk; files of the
//! first version (written by earlier mpigrams) still read.

mod common;

use std::fs;

use common::*;
use mpigram_format::{
    Codec, FORMAT_MAJOR, FORMAT_MINOR, NewSection, TraceFile, TraceWriter, Version, flags,
    to_bytes, write_file,
};

/// Deterministic, poorly compressible bytes.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Sections up to this size are compressed at zstd's best level.
const SMALL_SECTION: usize = 4 << 10;

fn assert_reads_back(file: &TraceFile, sections: &[(u32, u32, Vec<u8>, Codec)]) {
    assert_eq!(file.sections().len(), sections.len());
    for (pos, (kind, index, data, codec)) in sections.iter().enumerate() {
        let info = file.find(*kind, *index).expect("section present");
        assert_eq!(info.position, pos);
        assert_eq!(info.codec(), Some(*codec));
        assert_eq!(info.decoded_len, data.len() as u64);
        assert_eq!(&*file.section(*kind, *index).expect("read"), &data[..]);
        assert_eq!(&*file.read(info).expect("read"), &data[..]);
    }
    file.verify().expect("verify");
}

#[test]
fn zero_sections() {
    let bytes = compact(9, 0, &[]);
    // Magic and version, the table (kind, flags, count), the footer.
    assert_eq!(bytes.len(), 12 + 3 + 8);
    let f = TraceFile::from_bytes("empty.mgr", bytes).unwrap();
    assert!(f.sections().is_empty());
    assert_eq!(f.kind(), 9);
    assert_eq!(f.flags(), 0);
    assert!(!f.is_partial());
    assert_eq!(
        f.version(),
        Version {
            major: FORMAT_MAJOR,
            minor: FORMAT_MINOR
        }
    );
    f.verify().unwrap();
}

#[test]
fn one_section_raw_and_zstd() {
    for codec in [Codec::Raw, Codec::Zstd] {
        let sections = vec![(0x10, 0, b"hello".to_vec(), codec)];
        for bytes in [compact(1, 0, &sections), encode(1, 0, &sections)] {
            let f = TraceFile::from_bytes("one.mgr", bytes).unwrap();
            assert_reads_back(&f, &sections);
        }
    }
}

/// A small section is compressed at zstd's best level, a larger one at the writer's;
/// the codec suited to a small section is raw where zstd does not make it smaller (a
/// frame's header costs a dozen bytes), to a larger one zstd, whatever it gives.
#[test]
fn small_sections_are_compressed_at_the_best_level_where_that_helps() {
    let text: Vec<u8> = (0..60)
        .flat_map(|i| format!("rank {} ", i % 7).into_bytes())
        .collect();
    let noisy = noise(SMALL_SECTION + 1, 3);
    let sections = vec![
        (1, 0, text.clone(), Codec::suited_to(&text)),
        (1, 1, b"hello".to_vec(), Codec::suited_to(b"hello")),
        (1, 2, noisy.clone(), Codec::suited_to(&noisy)),
    ];
    let codecs: Vec<Codec> = sections.iter().map(|s| s.3).collect();
    assert_eq!(codecs, [Codec::Zstd, Codec::Raw, Codec::Zstd]);
    let f = TraceFile::from_bytes("small.mgr", compact(1, 0, &sections)).unwrap();
    assert_reads_back(&f, &sections);
    let best = zstd::bulk::compress(&text, 19).unwrap().len() as u64;
    assert!(best < zstd::bulk::compress(&text, 3).unwrap().len() as u64);
    assert!(f.sections()[0].stored_len <= best, "{:?}", f.sections()[0]);
    assert!(
        f.sections()[2].stored_len > SMALL_SECTION as u64 + 1,
        "noise does not compress"
    );
}

#[test]
fn many_sections_of_mixed_shapes() {
    let mut sections = Vec::new();
    for i in 0..50u32 {
        let codec = if i % 2 == 0 { Codec::Raw } else { Codec::Zstd };
        let data = match i % 5 {
            0 => Vec::new(),
            1 => vec![i as u8; i as usize * 37],
            2 => noise(i as usize * 11 + 1, u64::from(i)),
            3 => format!("rank {i} stream").into_bytes(),
            _ => vec![0u8; 3],
        };
        // Several sections of one kind, told apart by index.
        sections.push((0x20 + i % 3, i, data, codec));
    }
    for bytes in [
        compact(3, flags::PARTIAL, &sections),
        encode(3, flags::PARTIAL, &sections),
    ] {
        let f = TraceFile::from_bytes("many.mgr", bytes).unwrap();
        assert!(f.is_partial());
        assert_reads_back(&f, &sections);
        let of_kind: Vec<u32> = f.sections_of_kind(0x21).map(|s| s.index).collect();
        assert_eq!(of_kind, (0..50).filter(|i| i % 3 == 1).collect::<Vec<_>>());
        assert!(f.find(0x20, 1).is_none());
    }
}

#[test]
fn empty_payloads_with_both_codecs() {
    let sections = vec![
        (1, 0, Vec::new(), Codec::Raw),
        (1, 1, Vec::new(), Codec::Zstd),
        (1, 2, b"x".to_vec(), Codec::Raw),
    ];
    let f = TraceFile::from_bytes("e.mgr", compact(1, 0, &sections)).unwrap();
    assert_reads_back(&f, &sections);
}

#[test]
fn large_payloads() {
    let compressible: Vec<u8> = (0..6_000_000u32)
        .flat_map(|i| (i % 1000).to_le_bytes())
        .collect();
    let sections = vec![
        (1, 0, noise(3 << 20, 7), Codec::Raw),
        (1, 1, compressible.clone(), Codec::Zstd),
        (1, 2, noise(1 << 20, 8), Codec::Zstd),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.mgr");
    let specs: Vec<NewSection<'_>> = sections
        .iter()
        .map(|(k, i, d, c)| (*k, *i, d.as_slice(), *c).into())
        .collect();
    write_file(&path, 1, 0, &specs).unwrap();
    let f = TraceFile::open(&path).unwrap();
    assert_reads_back(&f, &sections);
    let z = f.find(1, 1).unwrap();
    assert!(z.stored_len * 10 < z.decoded_len, "zstd did compress");
    assert_eq!(f.file_len(), fs::metadata(&path).unwrap().len());
}

/// The version-2 writer leaves no gaps: each payload starts where the previous one ends.
#[test]
fn sections_follow_each_other_without_padding() {
    let f = TraceFile::from_bytes("a.mgr", compact_sample()).unwrap();
    let mut at = 12;
    for s in f.sections() {
        assert_eq!(s.offset, at, "{s:?}");
        at += s.stored_len;
    }
}

#[test]
fn file_writer_matches_memory_encoding_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank0.mgr");
    let mut w = TraceWriter::create(&path, 2).unwrap();
    assert_eq!(w.path(), path);
    for (k, i, d, c) in sample_sections() {
        w.add(k, i, &d, c).unwrap();
    }
    assert!(!path.exists(), "nothing at the destination before finish");
    w.finish().unwrap();
    assert_eq!(fs::read(&path).unwrap(), compact_sample());
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["rank0.mgr"]);
    let f = TraceFile::open(&path).unwrap();
    assert_eq!(f.name(), path.display().to_string());
    assert_reads_back(&f, &sample_sections());
}

#[test]
fn finish_replaces_an_existing_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.mgr");
    fs::write(&path, b"old content").unwrap();
    let mut w = TraceWriter::create(&path, 1).unwrap();
    w.add(1, 0, b"new", Codec::Raw).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"old content");
    w.finish().unwrap();
    assert_eq!(
        &*TraceFile::open(&path).unwrap().section(1, 0).unwrap(),
        b"new"
    );
}

#[test]
fn dropping_an_unfinished_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.mgr");
    let mut w = TraceWriter::create(&path, 1).unwrap();
    w.add(1, 0, b"lost", Codec::Zstd).unwrap();
    drop(w);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn writer_flags_and_zstd_level() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mgr");
    let mut w = TraceWriter::create(&path, 5).unwrap();
    w.set_flags(flags::PARTIAL | 0x8000_0000);
    w.set_zstd_level(19);
    w.add(7, 7, &b"abc".repeat(1000), Codec::Zstd).unwrap();
    w.finish().unwrap();
    let f = TraceFile::open(&path).unwrap();
    assert_eq!(f.kind(), 5);
    assert!(f.is_partial());
    assert_eq!(f.flags(), flags::PARTIAL | 0x8000_0000);
    assert_eq!(&*f.section(7, 7).unwrap(), &b"abc".repeat(1000)[..]);
}

#[test]
fn writer_rejects_duplicates_and_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.mgr");
    let mut w = TraceWriter::create(&path, 1).unwrap();
    w.add(1, 0, b"a", Codec::Raw).unwrap();
    let e = w.add(1, 0, b"b", Codec::Zstd).unwrap_err();
    assert!(matches!(
        e.kind(),
        mpigram_format::ErrorKind::DuplicateSection { first: 0 }
    ));
    assert_one_line(&e, &path.display().to_string());
    w.add(1, 1, b"c", Codec::Raw).unwrap();
    w.finish().unwrap();
    let f = TraceFile::open(&path).unwrap();
    assert_eq!(f.sections().len(), 2);
    assert_eq!(&*f.section(1, 0).unwrap(), b"a");
    assert_eq!(&*f.section(1, 1).unwrap(), b"c");
    let e = to_bytes(1, 0, &[(1, 0, &b""[..], Codec::Raw).into(); 2]).unwrap_err();
    assert!(matches!(
        e.kind(),
        mpigram_format::ErrorKind::DuplicateSection { first: 0 }
    ));
}

#[test]
fn raw_sections_from_memory_are_borrowed() {
    for bytes in [compact_sample(), sample()] {
        let f = TraceFile::from_bytes("b.mgr", bytes).unwrap();
        assert!(matches!(
            f.section(0x10, 0).unwrap(),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

/// A newer minor version of version 1 may use reserved header bytes, set unknown flags and
/// append fields to table entries: this reader must still read the file.
#[test]
fn newer_minor_version_with_extensions_is_read() {
    let old = sample();
    let n = count(&old);
    let t = table_offset(&old);
    let wide = ENTRY_LEN + 8;
    let mut b = old[..t].to_vec();
    for i in 0..n {
        b.extend_from_slice(&old[t + i * ENTRY_LEN..t + (i + 1) * ENTRY_LEN]);
        b.extend_from_slice(&[0xEE; 8]); // a future field
    }
    wr16(&mut b, 10, FORMAT_MINOR + 7);
    wr32(&mut b, 16, 0x4000_0000);
    wr32(&mut b, 32, wide as u32);
    b[40..60].fill(0xAB);
    reseal(&mut b);
    let f = TraceFile::from_bytes("future.mgr", b).unwrap();
    assert_eq!(f.version().minor, FORMAT_MINOR + 7);
    assert_eq!(f.flags(), 0x4000_0000);
    assert_reads_back(&f, &sample_sections());
}

/// A newer minor version of version 2 may set unknown flags and append bytes to the table
/// after the last entry: this reader must still read the file.
#[test]
fn newer_compact_minor_version_with_extensions_is_read() {
    let old = compact(2, 0x4000_0000, &sample_sections());
    let (table_len, footer) = (rd32(&old, old.len() - 8) as usize, old.len() - 8);
    let mut b = old[..footer].to_vec();
    b.extend_from_slice(&[0xEE; 5]); // a future field
    wr16(&mut b, 10, FORMAT_MINOR + 7);
    let table = &b[footer - table_len..];
    let mut crc = crc32fast::Hasher::new();
    crc.update(&b[..12]);
    crc.update(table);
    let (len, crc) = (table.len() as u32, crc.finalize());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&crc.to_le_bytes());
    let f = TraceFile::from_bytes("future.mgr", b).unwrap();
    assert_eq!(f.version().minor, FORMAT_MINOR + 7);
    assert_eq!(f.flags(), 0x4000_0000);
    assert_reads_back(&f, &sample_sections());
}

/// The documented layout of version 2, byte for byte, for a file with one raw section.
#[test]
fn golden_bytes_of_a_small_file() {
    let bytes = to_bytes(
        0x0102_0304,
        flags::PARTIAL,
        &[(0x10, 3, &b"abc"[..], Codec::Raw).into()],
    )
    .unwrap();
    let table = [
        0x84, 0x86, 0x88, 0x08, // file kind 0x01020304 as a varint
        0x01, // flags
        0x01, // section count
        0x10, 0x03, 0x00, 0x03, // kind, index, codec raw, stored length
        0xc2, 0x41, 0x24, 0x35, // CRC-32 of "abc"
    ];
    let mut expected = b"MPIGRAM\0".to_vec();
    expected.extend_from_slice(&[2, 0, 0, 0]); // version 2.0
    expected.extend_from_slice(b"abc");
    expected.extend_from_slice(&table);
    expected.extend_from_slice(&(table.len() as u32).to_le_bytes());
    let crc = crc32fast::hash(&[&expected[..12], &table[..]].concat());
    expected.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(bytes, expected);
    assert_eq!(bytes.len(), 37);
    // CRC-32 (IEEE) of "abc", as zlib.crc32 computes it.
    assert_eq!(crc32fast::hash(b"abc"), 0x3524_41c2);
}

/// The first version's example file of `docs/format.md`, as mpigram 1.0 wrote it, still reads.
#[test]
fn a_version_1_file_still_reads() {
    let hex = "4d50494752414d000100000004030201010000000100000048000000000000002800000093\
               1afb9300000000000000000000000000000000000000000a3bc26c6162630000000000100000\
               000300000000000000c241243540000000000000000300000000000000030000000000000\
               0";
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(bytes.len(), 64 + 8 + 40);
    let f = TraceFile::from_bytes("old.mgr", bytes.clone()).unwrap();
    assert_eq!(f.version(), Version { major: 1, minor: 0 });
    assert_eq!((f.kind(), f.flags()), (0x0102_0304, flags::PARTIAL));
    assert_eq!(&*f.section(0x10, 3).unwrap(), b"abc");
    assert_eq!(f.find(0x10, 3).unwrap().offset, 64);
    // And the test kit's own version-1 writer makes the same bytes.
    let sections = [(0x10, 3, b"abc".to_vec(), Codec::Raw)];
    assert_eq!(encode(0x0102_0304, flags::PARTIAL, &sections), bytes);
}

#[test]
fn zstd_sections_are_standard_zstd_frames() {
    let data = b"MPI_Send ".repeat(100);
    let bytes = to_bytes(1, 0, &[(1, 0, &data[..], Codec::Zstd).into()]).unwrap();
    let f = TraceFile::from_bytes("z.mgr", bytes.clone()).unwrap();
    let e = f.find(1, 0).unwrap();
    assert_eq!(e.codec_id, 1);
    let stored = &bytes[e.offset as usize..(e.offset + e.stored_len) as usize];
    assert_eq!(zstd::decode_all(stored).unwrap(), data);
}
