//! Test helpers that build and edit files at the byte offsets documented in `docs/format.md`
//! (written independently of the crate's own layout code, so the tests check the document too).
//!
//! [`encode`] and [`sample`] build files of version 1, the layout mpigram wrote before the
//! compact version 2: the tests of `errors.rs` and `mutations.rs` hold the reader to it, as
//! files written by earlier mpigrams must still read. [`compact`] is the crate's own writer.
#![allow(dead_code)]

use mpigram_format::{Codec, Error, NewSection, to_bytes};

pub const HEADER_LEN: usize = 64;
pub const ENTRY_LEN: usize = 40;

pub fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub fn rd64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
pub fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn wr32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn wr64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A section-table entry as documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEntry {
    pub kind: u32,
    pub index: u32,
    pub codec: u32,
    pub checksum: u32,
    pub offset: u64,
    pub stored: u64,
    pub decoded: u64,
}

pub fn table_offset(b: &[u8]) -> usize {
    rd64(b, 24) as usize
}
pub fn entry_len(b: &[u8]) -> usize {
    rd32(b, 32) as usize
}
pub fn count(b: &[u8]) -> usize {
    rd32(b, 20) as usize
}

pub fn entry_at(b: &[u8], i: usize) -> usize {
    table_offset(b) + i * entry_len(b)
}

pub fn entry(b: &[u8], i: usize) -> RawEntry {
    let at = entry_at(b, i);
    RawEntry {
        kind: rd32(b, at),
        index: rd32(b, at + 4),
        codec: rd32(b, at + 8),
        checksum: rd32(b, at + 12),
        offset: rd64(b, at + 16),
        stored: rd64(b, at + 24),
        decoded: rd64(b, at + 32),
    }
}

pub fn set_entry(b: &mut [u8], i: usize, e: RawEntry) {
    let at = entry_at(b, i);
    wr32(b, at, e.kind);
    wr32(b, at + 4, e.index);
    wr32(b, at + 8, e.codec);
    wr32(b, at + 12, e.checksum);
    wr64(b, at + 16, e.offset);
    wr64(b, at + 24, e.stored);
    wr64(b, at + 32, e.decoded);
}

/// Recomputes the table checksum and the header checksum after an edit.
pub fn reseal(b: &mut [u8]) {
    let start = table_offset(b);
    let end = start + count(b) * entry_len(b);
    let table_crc = crc32fast::hash(&b[start..end]);
    wr32(b, 36, table_crc);
    reseal_header(b);
}

/// Recomputes only the header checksum.
pub fn reseal_header(b: &mut [u8]) {
    let crc = crc32fast::hash(&b[..60]);
    wr32(b, 60, crc);
}

/// Edits entry `i` and reseals the file.
pub fn patch_entry(b: &mut [u8], i: usize, f: impl FnOnce(&mut RawEntry)) {
    let mut e = entry(b, i);
    f(&mut e);
    set_entry(b, i, e);
    reseal(b);
}

/// Three sections of different shapes: raw, zstd, empty raw.
pub fn sample_sections() -> Vec<(u32, u32, Vec<u8>, Codec)> {
    vec![
        (0x10, 0, b"grammar rules".to_vec(), Codec::Raw),
        (0x11, 2, b"timing ".repeat(40), Codec::Zstd),
        (0x12, 0, Vec::new(), Codec::Raw),
    ]
}

/// A version-1.0 file, laid out as `docs/format.md` documents it: the 64-byte header, each
/// payload at a multiple of 8, the table of 40-byte entries last.
pub fn encode(file_kind: u32, flags: u32, sections: &[(u32, u32, Vec<u8>, Codec)]) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_LEN];
    let mut entries = Vec::new();
    for (kind, index, data, codec) in sections {
        let stored = match codec {
            Codec::Raw => data.clone(),
            _ => zstd::encode_all(&data[..], 3).expect("zstd in memory"),
        };
        entries.push(RawEntry {
            kind: *kind,
            index: *index,
            codec: u32::from(*codec != Codec::Raw),
            checksum: crc32fast::hash(&stored),
            offset: b.len() as u64,
            stored: stored.len() as u64,
            decoded: data.len() as u64,
        });
        b.extend_from_slice(&stored);
        b.resize(b.len().next_multiple_of(8), 0);
    }
    finish_v1(&mut b, file_kind, flags, entries);
    b
}

/// Ends a version-1.0 file whose first 64 bytes are room for the header and whose payloads
/// follow: appends the table of `entries` and writes the header, checksums right.
pub fn finish_v1(b: &mut Vec<u8>, file_kind: u32, flags: u32, entries: Vec<RawEntry>) {
    let table = b.len();
    b.resize(table + entries.len() * ENTRY_LEN, 0);
    b[..8].copy_from_slice(b"MPIGRAM\0");
    wr16(b, 8, 1);
    wr32(b, 12, file_kind);
    wr32(b, 16, flags);
    wr32(b, 20, entries.len() as u32);
    wr64(b, 24, table as u64);
    wr32(b, 32, ENTRY_LEN as u32);
    for (i, e) in entries.into_iter().enumerate() {
        set_entry(b, i, e);
    }
    reseal(b);
}

/// A version-1.0 file of [`sample_sections`].
pub fn sample() -> Vec<u8> {
    encode(2, 0, &sample_sections())
}

/// The file the crate's writer makes (the current version).
pub fn compact(file_kind: u32, flags: u32, sections: &[(u32, u32, Vec<u8>, Codec)]) -> Vec<u8> {
    let specs: Vec<NewSection<'_>> = sections
        .iter()
        .map(|(k, i, d, c)| (*k, *i, d.as_slice(), *c).into())
        .collect();
    to_bytes(file_kind, flags, &specs).expect("encode in memory")
}

/// The current version's file of [`sample_sections`].
pub fn compact_sample() -> Vec<u8> {
    compact(2, 0, &sample_sections())
}

/// Every error must be shown as one line naming the file.
pub fn assert_one_line(e: &Error, file: &str) {
    let s = e.to_string();
    assert!(!s.contains('\n'), "multi-line error: {s:?}");
    assert!(
        s.starts_with(file),
        "error does not start with {file:?}: {s}"
    );
    assert_eq!(e.file(), file);
}
