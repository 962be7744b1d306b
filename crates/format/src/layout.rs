//! The byte layout of version 1's fixed header and section-table entry: the one place where
//! their field offsets live (mirrored, with the same numbers, in `docs/format.md`). Version 2,
//! which this crate writes, keeps only the magic and the version at the same place and lays
//! out the rest compactly (`compact.rs`).

/// The first 8 bytes of every mpigram container file.
pub const MAGIC: [u8; 8] = *b"MPIGRAM\0";
/// Major format version written by this crate: the compact layout. Readers reject files with
/// a newer major, and read [`V1_MAJOR`] too.
pub const FORMAT_MAJOR: u16 = 2;
/// The first major version: a 64-byte header and 40-byte table entries. Still read.
pub const V1_MAJOR: u16 = 1;
/// Minor format version written by this crate. Readers accept any minor of a known major.
pub const FORMAT_MINOR: u16 = 0;
/// Size in bytes of a version-1 file's fixed header at offset 0.
pub const HEADER_LEN: usize = 64;
/// Size in bytes of one section-table entry of version 1.0. Files may declare larger entries
/// (a newer minor version appending fields); readers use the first `ENTRY_LEN` bytes.
pub const ENTRY_LEN: usize = 40;

// Header field offsets.
pub(crate) const H_MAJOR: usize = 8;
const H_FILE_KIND: usize = 12;
const H_FLAGS: usize = 16;
const H_COUNT: usize = 20;
pub(crate) const H_TABLE_OFFSET: usize = 24;
pub(crate) const H_ENTRY_LEN: usize = 32;
const H_TABLE_CRC: usize = 36;
/// Bytes `40..60` are reserved: written as zero, ignored by readers of the same major.
pub(crate) const H_CHECKSUM: usize = 60;

// Entry field offsets.
const E_KIND: usize = 0;
const E_INDEX: usize = 4;
const E_CODEC: usize = 8;
const E_CHECKSUM: usize = 12;
const E_OFFSET: usize = 16;
const E_STORED: usize = 24;
const E_DECODED: usize = 32;

/// The decoded fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub file_kind: u32,
    pub flags: u32,
    pub count: u32,
    pub table_offset: u64,
    pub entry_len: u32,
    pub table_checksum: u32,
}

/// One section-table entry as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub kind: u32,
    pub index: u32,
    pub codec: u32,
    pub checksum: u32,
    pub offset: u64,
    pub stored_len: u64,
    pub decoded_len: u64,
}

impl Header {
    /// `(stored, computed)` header checksums.
    pub fn checksums(b: &[u8; HEADER_LEN]) -> (u32, u32) {
        (u32_at(b, H_CHECKSUM), crc32fast::hash(&b[..H_CHECKSUM]))
    }

    /// Decodes the fields; the caller has checked magic, version and checksum.
    pub fn from_bytes(b: &[u8; HEADER_LEN]) -> Self {
        Header {
            file_kind: u32_at(b, H_FILE_KIND),
            flags: u32_at(b, H_FLAGS),
            count: u32_at(b, H_COUNT),
            table_offset: u64_at(b, H_TABLE_OFFSET),
            entry_len: u32_at(b, H_ENTRY_LEN),
            table_checksum: u32_at(b, H_TABLE_CRC),
        }
    }
}

impl Entry {
    /// Decodes the first `ENTRY_LEN` bytes of an entry; extra trailing bytes (a newer minor
    /// version's fields) are ignored.
    pub fn from_bytes(b: &[u8; ENTRY_LEN]) -> Self {
        Entry {
            kind: u32_at(b, E_KIND),
            index: u32_at(b, E_INDEX),
            codec: u32_at(b, E_CODEC),
            checksum: u32_at(b, E_CHECKSUM),
            offset: u64_at(b, E_OFFSET),
            stored_len: u64_at(b, E_STORED),
            decoded_len: u64_at(b, E_DECODED),
        }
    }
}

// The helpers below take fixed-size arrays and constant offsets, so the slicing is checked at
// compile time in spirit: every call site passes an offset that fits.
fn field<const N: usize, const W: usize>(b: &[u8; N], at: usize) -> [u8; W] {
    let mut out = [0u8; W];
    out.copy_from_slice(&b[at..at + W]);
    out
}

fn u32_at<const N: usize>(b: &[u8; N], at: usize) -> u32 {
    u32::from_le_bytes(field(b, at))
}

fn u64_at<const N: usize>(b: &[u8; N], at: usize) -> u64 {
    u64::from_le_bytes(field(b, at))
}
