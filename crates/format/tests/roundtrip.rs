//! Files written by the writer read back exactly, from memory and from disk.

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
    let bytes = encode(9, 0, &[]);
    assert_eq!(bytes.len(), HEADER_LEN);
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
        let f = TraceFile::from_bytes("one.mgr", encode(1, 0, &sections)).unwrap();
        assert_reads_back(&f, &sections);
    }
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
    let bytes = encode(3, flags::PARTIAL, &sections);
    let f = TraceFile::from_bytes("many.mgr", bytes).unwrap();
    assert!(f.is_partial());
    assert_reads_back(&f, &sections);
    let of_kind: Vec<u32> = f.sections_of_kind(0x21).map(|s| s.index).collect();
    assert_eq!(of_kind, (0..50).filter(|i| i % 3 == 1).collect::<Vec<_>>());
    assert!(f.find(0x20, 1).is_none());
}

#[test]
fn empty_payloads_with_both_codecs() {
    let sections = vec![
        (1, 0, Vec::new(), Codec::Raw),
        (1, 1, Vec::new(), Codec::Zstd),
        (1, 2, b"x".to_vec(), Codec::Raw),
    ];
    let f = TraceFile::from_bytes("e.mgr", encode(1, 0, &sections)).unwrap();
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

#[test]
fn sections_are_eight_byte_aligned() {
    let f = TraceFile::from_bytes("a.mgr", sample()).unwrap();
    for s in f.sections() {
        assert_eq!(s.offset % 8, 0, "{s:?}");
    }
    assert_eq!(table_offset(&sample()) % 8, 0);
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
    assert_eq!(fs::read(&path).unwrap(), sample());
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
    let f = TraceFile::from_bytes("b.mgr", sample()).unwrap();
    assert!(matches!(
        f.section(0x10, 0).unwrap(),
        std::borrow::Cow::Borrowed(_)
    ));
}

/// A newer minor version may use reserved header bytes, set unknown flags and append fields
/// to table entries: this reader must still read the file.
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

/// The documented layout, byte for byte, for a file with one raw section.
#[test]
fn golden_bytes_of_a_small_file() {
    let bytes = to_bytes(
        0x0102_0304,
        flags::PARTIAL,
        &[(0x10, 3, &b"abc"[..], Codec::Raw).into()],
    )
    .unwrap();
    assert_eq!(bytes.len(), 64 + 8 + 40);
    assert_eq!(&bytes[0..8], b"MPIGRAM\0");
    assert_eq!(&bytes[8..12], &[1, 0, 0, 0]); // version 1.0
    assert_eq!(&bytes[12..16], &[4, 3, 2, 1]); // file kind
    assert_eq!(rd32(&bytes, 16), 1); // flags
    assert_eq!(rd32(&bytes, 20), 1); // section count
    assert_eq!(rd64(&bytes, 24), 72); // table offset
    assert_eq!(rd32(&bytes, 32), 40); // entry size
    assert_eq!(rd32(&bytes, 36), crc32fast::hash(&bytes[72..112]));
    assert!(bytes[40..60].iter().all(|&b| b == 0));
    assert_eq!(rd32(&bytes, 60), crc32fast::hash(&bytes[..60]));
    assert_eq!(&bytes[64..72], b"abc\0\0\0\0\0"); // payload + padding to 8
    assert_eq!(
        entry(&bytes, 0),
        RawEntry {
            kind: 0x10,
            index: 3,
            codec: 0,
            checksum: crc32fast::hash(b"abc"),
            offset: 64,
            stored: 3,
            decoded: 3,
        }
    );
    // CRC-32 (IEEE) of "abc", as zlib.crc32 computes it.
    assert_eq!(crc32fast::hash(b"abc"), 0x3524_41c2);
}

#[test]
fn zstd_sections_are_standard_zstd_frames() {
    let data = b"MPI_Send ".repeat(100);
    let bytes = to_bytes(1, 0, &[(1, 0, &data[..], Codec::Zstd).into()]).unwrap();
    let e = entry(&bytes, 0);
    assert_eq!(e.codec, 1);
    let stored = &bytes[e.offset as usize..(e.offset + e.stored) as usize];
    assert_eq!(zstd::decode_all(stored).unwrap(), data);
}
