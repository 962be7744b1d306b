//! The compact layout of format version 2 (`docs/format.md`): the magic and the version, the
//! payloads back to back, then the section table as varints and an 8-byte footer (the table's
//! length and a CRC-32 of the version and the table). Section offsets are not stored: a
//! section starts where the one before it ends.

use crate::error::{Error, ErrorKind, SectionRef};
use crate::layout::{Entry, FORMAT_MAJOR, FORMAT_MINOR, MAGIC};
use crate::reader::{SectionInfo, Source};
use crate::varint::{ByteReader, DecodeError, PutVarint};
use std::collections::HashMap;

/// Magic and version: the bytes before the first payload.
pub(crate) const PREFIX_LEN: usize = 12;
/// The footer: table length (u32) and checksum (u32).
pub(crate) const FOOTER_LEN: usize = 8;

/// What the table says besides the sections.
pub(crate) struct Table {
    pub file_kind: u32,
    pub flags: u32,
    pub sections: Vec<SectionInfo>,
}

/// The first bytes of a version-2 file.
pub(crate) fn prefix() -> [u8; PREFIX_LEN] {
    let mut b = [0u8; PREFIX_LEN];
    b[..8].copy_from_slice(&MAGIC);
    b[8..10].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
    b[10..12].copy_from_slice(&FORMAT_MINOR.to_le_bytes());
    b
}

/// The table and footer that end a file whose sections are `entries`, in file order; `None`
/// if the table would not fit its u32 length.
pub(crate) fn table_and_footer(file_kind: u32, flags: u32, entries: &[Entry]) -> Option<Vec<u8>> {
    let mut table = Vec::with_capacity(8 + entries.len() * 16);
    table.put_u32(file_kind);
    table.put_u32(flags);
    table.put_u64(entries.len() as u64);
    for e in entries {
        table.put_u32(e.kind);
        table.put_u32(e.index);
        table.put_u32(e.codec);
        table.put_u64(e.stored_len);
        if e.codec != crate::Codec::Raw.id() {
            table.put_u64(e.decoded_len);
        }
        table.extend_from_slice(&e.checksum.to_le_bytes());
    }
    let len = u32::try_from(table.len()).ok()?;
    let crc = checksum(&prefix(), &table);
    table.extend_from_slice(&len.to_le_bytes());
    table.extend_from_slice(&crc.to_le_bytes());
    Some(table)
}

/// CRC-32 of the prefix followed by the table.
fn checksum(prefix: &[u8], table: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(prefix);
    h.update(table);
    h.finalize()
}

/// Reads and checks the footer and the table of a version-2 file whose prefix (magic and
/// version) the caller has checked.
pub(crate) fn read_table(name: &str, source: &Source, file_len: u64) -> Result<Table, Error> {
    let err = |kind| Error::new(name, kind);
    let fixed = (PREFIX_LEN + FOOTER_LEN) as u64;
    if file_len < fixed {
        return Err(err(ErrorKind::Truncated {
            needed: fixed,
            len: file_len,
        }));
    }
    let footer_at = file_len - FOOTER_LEN as u64;
    let footer = source
        .read_at(footer_at, FOOTER_LEN)
        .map_err(|e| err(ErrorKind::Io(e)).at(footer_at))?;
    let word = |at: usize| {
        u32::from_le_bytes([footer[at], footer[at + 1], footer[at + 2], footer[at + 3]])
    };
    let (table_len, stored) = (word(0), word(4));
    let needed = fixed + u64::from(table_len);
    if needed > file_len {
        return Err(err(ErrorKind::Truncated {
            needed,
            len: file_len,
        })
        .at(footer_at));
    }
    let table_at = footer_at - u64::from(table_len);
    let prefix = source
        .read_at(0, PREFIX_LEN)
        .map_err(|e| err(ErrorKind::Io(e)).at(0))?;
    // Bounded by the file length just checked.
    let table = source
        .read_at(table_at, table_len as usize)
        .map_err(|e| err(ErrorKind::Io(e)).at(table_at))?;
    let computed = checksum(&prefix, &table);
    if computed != stored {
        return Err(err(ErrorKind::TableChecksum { stored, computed }).at(table_at));
    }
    let bad =
        |e: DecodeError| err(ErrorKind::BadHeader(format!("section table: {e}"))).at(table_at);
    let mut r = ByteReader::new(&table);
    let file_kind = r.u32().map_err(bad)?;
    let flags = r.u32().map_err(bad)?;
    // Every entry takes at least 9 bytes, so the count cannot reserve more than the table.
    let count = r.count().map_err(bad)?;
    let mut sections: Vec<SectionInfo> = Vec::with_capacity(count.min(r.remaining() / 9));
    let mut seen = HashMap::with_capacity(sections.capacity());
    let mut offset = PREFIX_LEN as u64;
    for position in 0..count {
        let kind = r.u32().map_err(bad)?;
        let index = r.u32().map_err(bad)?;
        let codec_id = r.u32().map_err(bad)?;
        let stored_len = r.u64().map_err(bad)?;
        let decoded_len = if codec_id == crate::Codec::Raw.id() {
            stored_len
        } else {
            r.u64().map_err(bad)?
        };
        let crc = r.bytes(4).map_err(bad)?;
        let here = SectionRef {
            position,
            kind,
            index,
        };
        if let Some(&first) = seen.get(&(kind, index)) {
            let kind = ErrorKind::DuplicateSection { first };
            return Err(err(kind).in_section(here).at(table_at));
        }
        if offset
            .checked_add(stored_len)
            .is_none_or(|end| end > table_at)
        {
            let kind = ErrorKind::OutOfRange {
                stored_len,
                file_len,
            };
            return Err(err(kind).in_section(here).at(offset));
        }
        seen.insert((kind, index), position);
        sections.push(SectionInfo {
            position,
            kind,
            index,
            codec_id,
            checksum: u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]),
            offset,
            stored_len,
            decoded_len,
        });
        offset += stored_len;
    }
    // Bytes after the last entry belong to later minor versions: ignored.
    if offset != table_at {
        let what = format!(
            "the sections end at byte {offset} but the section table starts at byte {table_at}"
        );
        return Err(err(ErrorKind::BadHeader(what)).at(table_at));
    }
    Ok(Table {
        file_kind,
        flags,
        sections,
    })
}
