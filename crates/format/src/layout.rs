//! The byte layout of the fixed header and of a section-table entry: the one place where field
//! offsets live (mirrored, with the same numbers, in `docs/format.md`).

/// The first 8 bytes of every mpigram container file.
pub const MAGIC: [u8; 8] = *b"MPIGRAM\0";
/// Major format version written by this crate. Readers reject files with a newer major.
pub const FORMAT_MAJOR: u16 = 1;
/// Minor format version written by this crate. Readers accept any minor of a known major.
pub const FORMAT_MINOR: u16 = 0;
/// Size in bytes of the fixed header at offset 0.
pub const HEADER_LEN: usize = 64;
/// Size in bytes of one section-table entry written by this version. Files may declare larger
/// entries (a newer minor version appending fields); readers use the first `ENTRY_LEN` bytes.
pub const ENTRY_LEN: usize = 40;

/// Payloads and the section table start at multiples of this (zero padding in between), so a
/// reader that maps the file can view raw payloads as aligned arrays.
pub(crate) const ALIGN: u64 = 8;

// Header field offsets.
pub(crate) const H_MAJOR: usize = 8;
const H_MINOR: usize = 10;
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
    pub major: u16,
    pub minor: u16,
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
    /// Serialises the header, including its checksum.
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        put(&mut b, H_MAJOR, &self.major.to_le_bytes());
        put(&mut b, H_MINOR, &self.minor.to_le_bytes());
        put(&mut b, H_FILE_KIND, &self.file_kind.to_le_bytes());
        put(&mut b, H_FLAGS, &self.flags.to_le_bytes());
        put(&mut b, H_COUNT, &self.count.to_le_bytes());
        put(&mut b, H_TABLE_OFFSET, &self.table_offset.to_le_bytes());
        put(&mut b, H_ENTRY_LEN, &self.entry_len.to_le_bytes());
        put(&mut b, H_TABLE_CRC, &self.table_checksum.to_le_bytes());
        let crc = crc32fast::hash(&b[..H_CHECKSUM]);
        put(&mut b, H_CHECKSUM, &crc.to_le_bytes());
        b
    }

    /// The major version, readable before anything else is trusted: bytes 8..10 keep this
    /// meaning in every major version.
    pub fn version_of(b: &[u8; HEADER_LEN]) -> (u16, u16) {
        (u16_at(b, H_MAJOR), u16_at(b, H_MINOR))
    }

    /// `(stored, computed)` header checksums.
    pub fn checksums(b: &[u8; HEADER_LEN]) -> (u32, u32) {
        (u32_at(b, H_CHECKSUM), crc32fast::hash(&b[..H_CHECKSUM]))
    }

    /// Decodes the fields; the caller has checked magic, version and checksum.
    pub fn from_bytes(b: &[u8; HEADER_LEN]) -> Self {
        Header {
            major: u16_at(b, H_MAJOR),
            minor: u16_at(b, H_MINOR),
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
    /// Appends the entry's `ENTRY_LEN` bytes to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut b = [0u8; ENTRY_LEN];
        put(&mut b, E_KIND, &self.kind.to_le_bytes());
        put(&mut b, E_INDEX, &self.index.to_le_bytes());
        put(&mut b, E_CODEC, &self.codec.to_le_bytes());
        put(&mut b, E_CHECKSUM, &self.checksum.to_le_bytes());
        put(&mut b, E_OFFSET, &self.offset.to_le_bytes());
        put(&mut b, E_STORED, &self.stored_len.to_le_bytes());
        put(&mut b, E_DECODED, &self.decoded_len.to_le_bytes());
        out.extend_from_slice(&b);
    }

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

/// Rounds `pos` up to the next multiple of [`ALIGN`], or `None` on overflow.
pub(crate) fn align_up(pos: u64) -> Option<u64> {
    pos.checked_add(ALIGN - 1).map(|p| p / ALIGN * ALIGN)
}

// The helpers below take fixed-size arrays and constant offsets, so the slicing is checked at
// compile time in spirit: every call site passes an offset that fits.
fn put<const N: usize>(b: &mut [u8; N], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

fn field<const N: usize, const W: usize>(b: &[u8; N], at: usize) -> [u8; W] {
    let mut out = [0u8; W];
    out.copy_from_slice(&b[at..at + W]);
    out
}

fn u16_at<const N: usize>(b: &[u8; N], at: usize) -> u16 {
    u16::from_le_bytes(field(b, at))
}

fn u32_at<const N: usize>(b: &[u8; N], at: usize) -> u32 {
    u32::from_le_bytes(field(b, at))
}

fn u64_at<const N: usize>(b: &[u8; N], at: usize) -> u64 {
    u64::from_le_bytes(field(b, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_checksums_itself() {
        let h = Header {
            major: 1,
            minor: 3,
            file_kind: 0xABCD,
            flags: 1,
            count: 5,
            table_offset: 4096,
            entry_len: 40,
            table_checksum: 0xDEAD_BEEF,
        };
        let b = h.to_bytes();
        assert_eq!(&b[..8], b"MPIGRAM\0");
        assert_eq!(Header::from_bytes(&b), h);
        let (stored, computed) = Header::checksums(&b);
        assert_eq!(stored, computed);
        assert_eq!(Header::version_of(&b), (1, 3));
    }

    #[test]
    fn entry_round_trips() {
        let e = Entry {
            kind: 0x10,
            index: 3,
            codec: 1,
            checksum: 42,
            offset: 64,
            stored_len: 100,
            decoded_len: 1000,
        };
        let mut v = Vec::new();
        e.write_to(&mut v);
        assert_eq!(v.len(), ENTRY_LEN);
        let arr: [u8; ENTRY_LEN] = v.try_into().expect("ENTRY_LEN bytes");
        assert_eq!(Entry::from_bytes(&arr), e);
    }

    #[test]
    fn align_up_rounds_to_eight() {
        assert_eq!(align_up(0), Some(0));
        assert_eq!(align_up(1), Some(8));
        assert_eq!(align_up(64), Some(64));
        assert_eq!(align_up(65), Some(72));
        assert_eq!(align_up(u64::MAX), None);
    }
}
