//! Every way a file can be wrong gives the right error, shown as one line naming the file.

mod common;

use common::*;
use mpigram_format::varint::ByteReader;
use mpigram_format::{Codec, ErrorKind, Region, SectionRef, TraceFile};

const NAME: &str = "trace/rank0.mgr";

fn open_err(bytes: Vec<u8>) -> mpigram_format::Error {
    let e = TraceFile::from_bytes(NAME, bytes).expect_err("must be rejected");
    assert_one_line(&e, NAME);
    e
}

fn read_err(bytes: Vec<u8>, kind: u32, index: u32) -> mpigram_format::Error {
    let f = TraceFile::from_bytes(NAME, bytes).expect("table is valid");
    let e = f.section(kind, index).expect_err("must be rejected");
    assert_one_line(&e, NAME);
    assert_eq!(e.section().map(|s| (s.kind, s.index)), Some((kind, index)));
    e
}

#[test]
fn empty_file() {
    let e = open_err(Vec::new());
    assert!(matches!(e.kind(), ErrorKind::Empty));
    assert_eq!(e.to_string(), "trace/rank0.mgr: empty file");
}

#[test]
fn truncated_at_every_offset() {
    let full = sample();
    for len in 1..full.len() {
        let e = open_err(full[..len].to_vec());
        // Below 10 bytes the version is unknown: 12 bytes (magic and version) are needed to
        // tell; a version-1 file needs its 64-byte header.
        let needed = if len < 10 {
            12
        } else if len < HEADER_LEN {
            HEADER_LEN
        } else {
            full.len()
        };
        match e.kind() {
            ErrorKind::Truncated { needed: n, len: l } => {
                assert_eq!((*n, *l), (needed as u64, len as u64), "cut at {len}")
            }
            other => panic!("cut at {len}: {other:?}"),
        }
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}

#[test]
fn truncated_file_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.mgr");
    let full = sample();
    std::fs::write(&path, &full[..full.len() - 1]).unwrap();
    let e = TraceFile::open(&path).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    assert_one_line(&e, &path.display().to_string());
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let e = TraceFile::open("/nonexistent/dir/rank9.mgr").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Io(_)));
    assert_one_line(&e, "/nonexistent/dir/rank9.mgr");
}

#[test]
fn directories_and_fifos_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let e = TraceFile::open(dir.path()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Io(_)), "{e}");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if status.is_ok_and(|s| s.success()) {
        let e = TraceFile::open(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}

#[test]
fn bad_magic_says_not_an_mpigram_file() {
    for bytes in [
        b"hello, this is a text file and not a trace at all, really not a trace".to_vec(),
        b"abc".to_vec(),
        b"MPIGRAX\0".to_vec(),
    ] {
        let e = open_err(bytes);
        assert!(matches!(e.kind(), ErrorKind::NotMpigram { .. }), "{e}");
        assert!(e.to_string().contains("not an mpigram file"), "{e}");
        assert!(
            !e.to_string().contains("hello") && !e.to_string().contains("abc"),
            "{e}"
        );
        assert_eq!(e.offset(), Some(0));
    }
}

#[test]
fn newer_major_version_is_rejected_clearly() {
    let mut b = sample();
    wr16(&mut b, 8, 3);
    // Deliberately not resealed: a future major may lay out (and checksum) its header
    // differently, so the version is checked first.
    let e = open_err(b);
    assert!(matches!(
        e.kind(),
        ErrorKind::UnsupportedVersion { major: 3, minor: 0 }
    ));
    assert!(e.to_string().contains("newer"), "{e}");
    assert!(e.to_string().contains("or damaged"), "{e}");
    let mut b = sample();
    wr16(&mut b, 8, 0);
    reseal_header(&mut b);
    let e = open_err(b);
    assert!(matches!(
        e.kind(),
        ErrorKind::UnsupportedVersion { major: 0, .. }
    ));
}

#[test]
fn header_checksum_mismatch() {
    let mut b = sample();
    b[16] ^= 1; // the PARTIAL flag
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::HeaderChecksum { .. }), "{e}");
    assert_eq!(e.offset(), Some(60));
}

#[test]
fn impossible_header_fields() {
    let mut b = sample();
    wr32(&mut b, 32, 39);
    reseal_header(&mut b);
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::BadHeader(_)), "{e}");
    let mut b = sample();
    wr64(&mut b, 24, 8);
    reseal_header(&mut b);
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::BadHeader(_)), "{e}");
}

#[test]
fn forged_section_count_does_not_allocate() {
    let mut b = sample();
    wr32(&mut b, 20, u32::MAX);
    wr32(&mut b, 32, u32::MAX);
    wr64(&mut b, 24, u64::MAX - 3);
    reseal_header(&mut b);
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
}

#[test]
fn table_checksum_mismatch() {
    let mut b = sample();
    let at = entry_at(&b, 1) + 4;
    b[at] ^= 0x40;
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::TableChecksum { .. }), "{e}");
}

#[test]
fn section_out_of_range() {
    let mut b = sample();
    let len = b.len() as u64;
    patch_entry(&mut b, 0, |e| e.stored = len);
    patch_entry(&mut b, 0, |e| e.decoded = len);
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::OutOfRange { .. }), "{e}");
    assert_eq!(
        e.to_string()
            .matches("section 0 (kind 0x10, index 0)")
            .count(),
        1
    );
    let mut b = sample();
    patch_entry(&mut b, 1, |e| e.offset = u64::MAX - 1);
    let e = open_err(b);
    assert!(matches!(e.kind(), ErrorKind::OutOfRange { .. }), "{e}");
    assert_eq!(e.offset(), Some(u64::MAX - 1));
}

#[test]
fn overlapping_sections() {
    let mut b = sample();
    let first = entry(&b, 0).offset;
    patch_entry(&mut b, 1, |e| e.offset = first + 2);
    let e = open_err(b);
    match e.kind() {
        ErrorKind::Overlap {
            other: Region::Section(s),
        } => assert_eq!(s.position, 0),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.section().unwrap().position, 1);
    assert!(e.to_string().contains("overlaps section 0"), "{e}");

    let mut b = sample();
    patch_entry(&mut b, 0, |e| e.offset = 10);
    let e = open_err(b);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Overlap {
                other: Region::Header
            }
        ),
        "{e}"
    );

    let mut b = sample();
    let table = table_offset(&b) as u64;
    patch_entry(&mut b, 0, |e| e.offset = table + 8);
    let e = open_err(b);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Overlap {
                other: Region::Table
            }
        ),
        "{e}"
    );
}

#[test]
fn empty_sections_may_sit_anywhere_in_the_file() {
    let mut b = sample();
    patch_entry(&mut b, 2, |e| e.offset = 0);
    let f = TraceFile::from_bytes(NAME, b).unwrap();
    assert_eq!(&*f.section(0x12, 0).unwrap(), b"");
}

#[test]
fn duplicate_kind_and_index() {
    let mut b = sample();
    patch_entry(&mut b, 2, |e| {
        e.kind = 0x10;
        e.index = 0;
    });
    let e = open_err(b);
    assert!(
        matches!(e.kind(), ErrorKind::DuplicateSection { first: 0 }),
        "{e}"
    );
    assert_eq!(
        e.section(),
        Some(SectionRef {
            position: 2,
            kind: 0x10,
            index: 0
        })
    );
}

#[test]
fn payload_checksum_mismatch_names_section_and_offset() {
    let mut b = sample();
    let e1 = entry(&b, 1);
    b[e1.offset as usize + 3] ^= 0x01;
    let f = TraceFile::from_bytes(NAME, b).unwrap();
    assert_eq!(&*f.section(0x10, 0).unwrap(), b"grammar rules");
    let e = f.section(0x11, 2).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::ChecksumMismatch { .. }),
        "{e}"
    );
    assert_eq!(e.offset(), Some(e1.offset));
    let expected = format!(
        "{NAME}: section 1 (kind 0x11, index 2) at offset {}: checksum mismatch",
        e1.offset
    );
    assert!(e.to_string().starts_with(&expected), "{e}");
    assert!(f.verify().is_err());
}

#[test]
fn bad_zstd_stream() {
    let mut b = sample();
    let e1 = entry(&b, 1);
    let (start, end) = (e1.offset as usize, (e1.offset + e1.stored) as usize);
    for (i, byte) in b[start..end].iter_mut().enumerate() {
        *byte = i as u8;
    }
    let crc = crc32fast::hash(&b[start..end]);
    patch_entry(&mut b, 1, |e| e.checksum = crc);
    let e = read_err(b, 0x11, 2);
    assert!(matches!(e.kind(), ErrorKind::BadCompressedData(_)), "{e}");
    assert!(e.to_string().contains("bad zstd stream"), "{e}");
}

#[test]
fn decoded_length_mismatch() {
    let mut b = sample();
    patch_entry(&mut b, 1, |e| e.decoded += 1);
    let e = read_err(b, 0x11, 2);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::DecodedLengthMismatch {
                actual: Some(280),
                ..
            }
        ),
        "{e}"
    );

    let mut b = sample();
    patch_entry(&mut b, 1, |e| e.decoded -= 1);
    let e = read_err(b, 0x11, 2);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::DecodedLengthMismatch { actual: None, .. }
        ),
        "{e}"
    );

    let mut b = sample();
    patch_entry(&mut b, 0, |e| e.decoded += 1);
    let e = open_err(b);
    assert!(
        matches!(e.kind(), ErrorKind::DecodedLengthMismatch { .. }),
        "{e}"
    );
}

#[test]
fn unknown_codec_fails_only_that_section() {
    let mut b = sample();
    patch_entry(&mut b, 0, |e| e.codec = 9);
    let f = TraceFile::from_bytes(NAME, b.clone()).unwrap();
    assert_eq!(f.sections()[0].codec(), None);
    assert_eq!(f.sections()[0].codec_id, 9);
    let e = read_err(b, 0x10, 0);
    assert!(matches!(e.kind(), ErrorKind::UnknownCodec(9)), "{e}");
    assert_eq!(f.section(0x11, 2).unwrap().len(), 280);
}

#[test]
fn decoded_length_above_the_limit_is_refused_before_decoding() {
    let mut b = sample();
    patch_entry(&mut b, 1, |e| e.decoded = 1 << 40);
    let e = read_err(b, 0x11, 2);
    assert!(
        matches!(e.kind(), ErrorKind::TooLarge { declared, limit } if *declared == 1 << 40 && *limit == 4 << 30),
        "{e}"
    );

    let mut f = TraceFile::from_bytes(NAME, sample()).unwrap();
    f.set_decode_limit(100);
    let e = f.section(0x11, 2).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::TooLarge {
                declared: 280,
                limit: 100
            }
        ),
        "{e}"
    );
    assert_eq!(&*f.section(0x10, 0).unwrap(), b"grammar rules");
}

#[test]
fn missing_section() {
    let f = TraceFile::from_bytes(NAME, sample()).unwrap();
    let e = f.section(0x99, 1).unwrap_err();
    assert!(matches!(
        e.kind(),
        ErrorKind::NoSuchSection {
            kind: 0x99,
            index: 1
        }
    ));
    assert_eq!(
        e.to_string(),
        "trace/rank0.mgr: no section with kind 0x99 and index 1"
    );
}

#[test]
fn section_info_from_another_file_is_not_read_blindly() {
    let other = TraceFile::from_bytes(
        "other",
        encode(1, 0, &[(0x10, 0, vec![1; 500], Codec::Raw)]),
    )
    .unwrap();
    let f = TraceFile::from_bytes(NAME, sample()).unwrap();
    let e = f.read(&other.sections()[0]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NoSuchSection { .. }), "{e}");
}

#[test]
fn payload_errors_from_higher_layers_name_the_section() {
    let f = TraceFile::from_bytes(NAME, sample()).unwrap();
    let info = *f.find(0x10, 0).unwrap();
    let data = f.read(&info).unwrap();
    let mut r = ByteReader::new(&data);
    let err = r.bytes(1000).unwrap_err();
    let e = f.payload_error(&info, err);
    assert!(matches!(e.kind(), ErrorKind::Payload(_)));
    assert_eq!(
        e.to_string(),
        "trace/rank0.mgr: section 0 (kind 0x10, index 0): bad payload: byte 0: needs 1000 bytes, 13 left"
    );
}

#[test]
fn a_decompression_bomb_is_refused_before_it_is_decoded() {
    use std::io::Read;
    // 256 MiB of zeros in a zstd frame of a few kilobytes.
    let decoded: u64 = 256 << 20;
    let frame = zstd::stream::encode_all(std::io::repeat(0).take(decoded), 3).unwrap();
    assert!((frame.len() as u64) * mpigram_format::MAX_RATIO < decoded);
    let mut b = encode(2, 0, &[(0x10, 0, frame.clone(), Codec::Raw)]);
    patch_entry(&mut b, 0, |e| {
        e.codec = 1;
        e.decoded = decoded;
    });
    let e = read_err(b, 0x10, 0);
    assert!(
        matches!(e.kind(), ErrorKind::Implausible { declared, stored } if *declared == decoded && *stored == frame.len() as u64),
        "{e}"
    );
    assert_one_line(&e, NAME);
    assert!(e.to_string().contains("decompression bomb"), "{e}");

    // Within 64 MiB any ratio is taken: 1 MiB of zeros reads back.
    let small: u64 = 1 << 20;
    let frame = zstd::stream::encode_all(std::io::repeat(0).take(small), 3).unwrap();
    let mut b = encode(2, 0, &[(0x10, 0, frame, Codec::Raw)]);
    patch_entry(&mut b, 0, |e| {
        e.codec = 1;
        e.decoded = small;
    });
    let f = TraceFile::from_bytes(NAME, b).unwrap();
    assert_eq!(f.section(0x10, 0).unwrap().len() as u64, small);
}
