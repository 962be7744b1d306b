//! Test helpers that edit files at the byte offsets documented in `docs/format.md` (written
//! independently of the crate's own layout code, so the tests check the document too).
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

pub fn encode(file_kind: u32, flags: u32, sections: &[(u32, u32, Vec<u8>, Codec)]) -> Vec<u8> {
    let specs: Vec<NewSection<'_>> = sections
        .iter()
        .map(|(k, i, d, c)| (*k, *i, d.as_slice(), *c).into())
        .collect();
    to_bytes(file_kind, flags, &specs).expect("encode in memory")
}

pub fn sample() -> Vec<u8> {
    encode(2, 0, &sample_sections())
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
