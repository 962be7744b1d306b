//! Reading container files defensively: every field is checked against the file size before it
//! is used, so any input gives either the right content or an [`Error`], never a panic, a hang
//! or an allocation sized by an unchecked number.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Mutex;

use crate::codec::{Codec, decode};
use crate::compact::{self, PREFIX_LEN};
use crate::error::{Error, ErrorKind, Region, SectionRef};
use crate::layout::{
    ENTRY_LEN, Entry, FORMAT_MAJOR, H_CHECKSUM, H_ENTRY_LEN, H_MAJOR, H_TABLE_OFFSET, HEADER_LEN,
    Header, MAGIC, V1_MAJOR,
};
use crate::varint::DecodeError;

/// Largest decoded section a [`TraceFile`] returns unless
/// [`set_decode_limit`](TraceFile::set_decode_limit) says otherwise: 4 GiB.
pub const DEFAULT_DECODE_LIMIT: u64 = 4 << 30;

/// A compressed section may decode to at most this many times its stored
/// bytes (beyond [`RATIO_FREE_LEN`]): the sections of real traces compress
/// 3 to 100 times; zstd frames of zeros, 10,000 times and more.
pub const MAX_RATIO: u64 = 1024;

/// Decoded bytes any compressed section may have, whatever its ratio.
pub const RATIO_FREE_LEN: u64 = 64 << 20;

/// A format version, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible layout changes.
    pub major: u16,
    /// Compatible additions that older readers of the same major may ignore.
    pub minor: u16,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// One entry of a file's section table, as validated when the file was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SectionInfo {
    /// Position in the section table.
    pub position: usize,
    /// Section kind.
    pub kind: u32,
    /// Instance of that kind.
    pub index: u32,
    /// Codec id as stored; see [`codec`](SectionInfo::codec).
    pub codec_id: u32,
    /// CRC-32 of the stored bytes.
    pub checksum: u32,
    /// File offset of the stored bytes.
    pub offset: u64,
    /// Number of stored bytes.
    pub stored_len: u64,
    /// Number of bytes after decoding.
    pub decoded_len: u64,
}

impl SectionInfo {
    /// The codec, or `None` if this version does not know the stored id.
    pub fn codec(&self) -> Option<Codec> {
        Codec::from_id(self.codec_id)
    }

    /// The section as named in error messages.
    pub fn section_ref(&self) -> SectionRef {
        SectionRef {
            position: self.position,
            kind: self.kind,
            index: self.index,
        }
    }
}

/// Where the bytes come from: memory, or a file read on demand.
pub(crate) enum Source {
    Bytes(Vec<u8>),
    File(Mutex<File>),
}

impl Source {
    /// `len` bytes at `offset`; fails (without allocating) if they are not all there.
    pub(crate) fn read_at(&self, offset: u64, len: usize) -> io::Result<Cow<'_, [u8]>> {
        match self {
            Source::Bytes(b) => usize::try_from(offset)
                .ok()
                .and_then(|start| b.get(start..start.checked_add(len)?))
                .map(Cow::Borrowed)
                .ok_or_else(|| io::ErrorKind::UnexpectedEof.into()),
            Source::File(f) => {
                // A panic elsewhere cannot leave the file in a state that matters: every use
                // seeks first.
                let mut f = f.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                f.seek(SeekFrom::Start(offset))?;
                let mut buf = Vec::new();
                (&mut *f).take(len as u64).read_to_end(&mut buf)?;
                if buf.len() != len {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                Ok(Cow::Owned(buf))
            }
        }
    }
}

/// An open container file: header and section table validated, payloads read on demand.
pub struct TraceFile {
    name: String,
    source: Source,
    file_len: u64,
    version: Version,
    file_kind: u32,
    flags: u32,
    sections: Vec<SectionInfo>,
    lookup: HashMap<(u32, u32), usize>,
    decode_limit: u64,
}

impl fmt::Debug for TraceFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceFile")
            .field("name", &self.name)
            .field("file_len", &self.file_len)
            .field("version", &self.version)
            .field("file_kind", &self.file_kind)
            .field("flags", &self.flags)
            .field("sections", &self.sections)
            .finish_non_exhaustive()
    }
}

impl TraceFile {
    /// Opens `path`, reads and validates the header and the section table. Payloads are read
    /// (and their checksums verified) only when asked for.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let name = path.as_ref().display().to_string();
        let io = |e: io::Error| Error::new(&name, ErrorKind::Io(e));
        // Checked before opening: opening a FIFO would block until someone writes to it.
        if !std::fs::metadata(path.as_ref()).map_err(io)?.is_file() {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
            return Err(io(e));
        }
        let file = File::open(path.as_ref()).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        Self::load(name, Source::File(Mutex::new(file)), file_len)
    }

    /// Validates a file held in memory; `name` is used in error messages.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Result<Self, Error> {
        let file_len = bytes.len() as u64;
        Self::load(name.into(), Source::Bytes(bytes), file_len)
    }

    fn load(name: String, source: Source, file_len: u64) -> Result<Self, Error> {
        let version = read_version(&name, &source, file_len)?;
        let (file_kind, flags, sections) = if version.major == V1_MAJOR {
            let header = read_header(&name, &source, file_len)?;
            let sections = read_table(&name, &source, file_len, &header)?;
            (header.file_kind, header.flags, sections)
        } else {
            let table = compact::read_table(&name, &source, file_len)?;
            (table.file_kind, table.flags, table.sections)
        };
        let lookup = sections
            .iter()
            .map(|s| ((s.kind, s.index), s.position))
            .collect();
        Ok(TraceFile {
            name,
            source,
            file_len,
            version,
            file_kind,
            flags,
            sections,
            lookup,
            decode_limit: DEFAULT_DECODE_LIMIT,
        })
    }

    /// The name used in error messages (the path given to `open`, or the name given to
    /// `from_bytes`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's format version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The file-kind tag from the header (an open registry: see `docs/format.md`).
    pub fn kind(&self) -> u32 {
        self.file_kind
    }

    /// The header flags; bits this version does not define are passed through.
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// Whether the [`PARTIAL`](crate::flags::PARTIAL) flag is set: the run did not end cleanly.
    pub fn is_partial(&self) -> bool {
        self.flags & crate::flags::PARTIAL != 0
    }

    /// Size of the file in bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// All sections, in table order.
    pub fn sections(&self) -> &[SectionInfo] {
        &self.sections
    }

    /// The section with this (kind, index), if present.
    pub fn find(&self, kind: u32, index: u32) -> Option<&SectionInfo> {
        self.lookup
            .get(&(kind, index))
            .and_then(|&p| self.sections.get(p))
    }

    /// All sections of one kind, in table order.
    pub fn sections_of_kind(&self, kind: u32) -> impl Iterator<Item = &SectionInfo> {
        self.sections.iter().filter(move |s| s.kind == kind)
    }

    /// Sets the largest decoded length [`read`](TraceFile::read) accepts (default
    /// [`DEFAULT_DECODE_LIMIT`]); larger sections fail with [`ErrorKind::TooLarge`].
    pub fn set_decode_limit(&mut self, limit: u64) {
        self.decode_limit = limit;
    }

    /// The decoded bytes of section (`kind`, `index`), checksum verified; an error if absent.
    pub fn section(&self, kind: u32, index: u32) -> Result<Cow<'_, [u8]>, Error> {
        match self.find(kind, index) {
            Some(info) => self.read(info),
            None => Err(Error::new(
                &self.name,
                ErrorKind::NoSuchSection { kind, index },
            )),
        }
    }

    /// The decoded bytes of a section of this file: reads the stored bytes, verifies their
    /// checksum and decodes them into at most the declared decoded length.
    pub fn read(&self, info: &SectionInfo) -> Result<Cow<'_, [u8]>, Error> {
        let Some(info) = self.sections.get(info.position).filter(|s| *s == info) else {
            let kind = ErrorKind::NoSuchSection {
                kind: info.kind,
                index: info.index,
            };
            return Err(Error::new(&self.name, kind));
        };
        let fail = |kind| {
            Error::new(&self.name, kind)
                .in_section(info.section_ref())
                .at(info.offset)
        };
        let codec = info
            .codec()
            .ok_or_else(|| fail(ErrorKind::UnknownCodec(info.codec_id)))?;
        let limit = self.decode_limit.min(usize::MAX as u64);
        if info.decoded_len > limit {
            return Err(fail(ErrorKind::TooLarge {
                declared: info.decoded_len,
                limit,
            }));
        }
        if codec != Codec::Raw
            && info.decoded_len > RATIO_FREE_LEN.max(info.stored_len.saturating_mul(MAX_RATIO))
        {
            return Err(fail(ErrorKind::Implausible {
                declared: info.decoded_len,
                stored: info.stored_len,
            }));
        }
        // Within the file (checked at open), so this allocation is bounded by the file size.
        let stored_len = usize::try_from(info.stored_len).map_err(|_| {
            fail(ErrorKind::TooLarge {
                declared: info.stored_len,
                limit,
            })
        })?;
        let stored = self
            .source
            .read_at(info.offset, stored_len)
            .map_err(|e| fail(ErrorKind::Io(e)))?;
        let computed = crc32fast::hash(&stored);
        if computed != info.checksum {
            return Err(fail(ErrorKind::ChecksumMismatch {
                stored: info.checksum,
                computed,
            }));
        }
        decode(codec, stored, info.decoded_len).map_err(fail)
    }

    /// Reads every section, verifying checksums and decoded lengths; the first problem found.
    pub fn verify(&self) -> Result<(), Error> {
        self.sections
            .iter()
            .try_for_each(|s| self.read(s).map(drop))
    }

    /// Wraps an error that a higher layer met while decoding a section's payload, so it is
    /// reported like any other: one line with the file and the section.
    pub fn payload_error(&self, info: &SectionInfo, error: DecodeError) -> Error {
        Error::new(&self.name, ErrorKind::Payload(error)).in_section(info.section_ref())
    }
}

/// Reads the magic and the version, which every major version keeps at bytes 0..12, and
/// refuses a version this reader does not read.
fn read_version(name: &str, source: &Source, file_len: u64) -> Result<Version, Error> {
    let err = |kind| Error::new(name, kind);
    if file_len == 0 {
        return Err(err(ErrorKind::Empty));
    }
    let prefix_len = file_len.min(PREFIX_LEN as u64) as usize;
    let prefix = source
        .read_at(0, prefix_len)
        .map_err(|e| err(ErrorKind::Io(e)).at(0))?;
    let magic_len = prefix.len().min(MAGIC.len());
    if prefix[..magic_len] != MAGIC[..magic_len] {
        let magic = prefix[..magic_len].to_vec();
        return Err(err(ErrorKind::NotMpigram { magic }).at(0));
    }
    let Some(&[a, b]) = prefix.get(H_MAJOR..H_MAJOR + 2) else {
        let needed = PREFIX_LEN as u64;
        return Err(err(ErrorKind::Truncated {
            needed,
            len: file_len,
        }));
    };
    let major = u16::from_le_bytes([a, b]);
    // A file cut inside the minor version is refused by its major's checks of the length.
    let minor = match prefix.get(H_MAJOR + 2..PREFIX_LEN) {
        Some(&[c, d]) => u16::from_le_bytes([c, d]),
        _ => 0,
    };
    if major != V1_MAJOR && major != FORMAT_MAJOR {
        return Err(err(ErrorKind::UnsupportedVersion { major, minor }).at(H_MAJOR as u64));
    }
    Ok(Version { major, minor })
}

/// Reads and checks the fixed header of a version-1 file (whose magic and version
/// [`read_version`] checked): checksum, plausible table fields.
fn read_header(name: &str, source: &Source, file_len: u64) -> Result<Header, Error> {
    let err = |kind| Error::new(name, kind);
    let needed = HEADER_LEN as u64;
    let truncated = || {
        err(ErrorKind::Truncated {
            needed,
            len: file_len,
        })
    };
    if file_len < needed {
        return Err(truncated());
    }
    let prefix = source
        .read_at(0, HEADER_LEN)
        .map_err(|e| err(ErrorKind::Io(e)).at(0))?;
    let Ok(raw) = <[u8; HEADER_LEN]>::try_from(&prefix[..]) else {
        return Err(truncated());
    };
    let (stored, computed) = Header::checksums(&raw);
    if stored != computed {
        let kind = ErrorKind::HeaderChecksum { stored, computed };
        return Err(err(kind).at(H_CHECKSUM as u64));
    }
    let header = Header::from_bytes(&raw);
    if (header.entry_len as usize) < ENTRY_LEN {
        let what = format!(
            "section entry size {} is smaller than {ENTRY_LEN}",
            header.entry_len
        );
        return Err(err(ErrorKind::BadHeader(what)).at(H_ENTRY_LEN as u64));
    }
    if header.table_offset < HEADER_LEN as u64 {
        let what = format!(
            "section table offset {} is inside the header",
            header.table_offset
        );
        return Err(err(ErrorKind::BadHeader(what)).at(H_TABLE_OFFSET as u64));
    }
    Ok(header)
}

/// Reads the section table and checks every entry against the file and the others.
fn read_table(
    name: &str,
    source: &Source,
    file_len: u64,
    header: &Header,
) -> Result<Vec<SectionInfo>, Error> {
    let err = |kind| Error::new(name, kind).at(header.table_offset);
    // u32 * u32 always fits in u64; the sum may not.
    let table_len = u64::from(header.count) * u64::from(header.entry_len);
    let table_end = header.table_offset.saturating_add(table_len);
    if table_end > file_len {
        let kind = ErrorKind::Truncated {
            needed: table_end,
            len: file_len,
        };
        return Err(err(kind));
    }
    // Bounded by the file length just checked (and so fits in memory when the file does).
    let table_len_usize = usize::try_from(table_len).map_err(|_| {
        err(ErrorKind::BadHeader(format!(
            "section table of {table_len} bytes"
        )))
    })?;
    let table = source
        .read_at(header.table_offset, table_len_usize)
        .map_err(|e| err(ErrorKind::Io(e)))?;
    let computed = crc32fast::hash(&table);
    if computed != header.table_checksum {
        let stored = header.table_checksum;
        return Err(err(ErrorKind::TableChecksum { stored, computed }));
    }

    let mut sections: Vec<SectionInfo> = Vec::with_capacity(header.count as usize);
    let mut seen = HashMap::with_capacity(header.count as usize);
    for (position, chunk) in table.chunks_exact(header.entry_len as usize).enumerate() {
        let entry_offset = header.table_offset + position as u64 * u64::from(header.entry_len);
        let Some(fixed) = chunk.first_chunk::<ENTRY_LEN>() else {
            let what = "section entry shorter than its declared size".to_owned();
            return Err(Error::new(name, ErrorKind::BadHeader(what)).at(entry_offset));
        };
        let e = Entry::from_bytes(fixed);
        let here = SectionRef {
            position,
            kind: e.kind,
            index: e.index,
        };
        let fail = |kind, offset| Err(Error::new(name, kind).in_section(here).at(offset));
        if let Some(&first) = seen.get(&(e.kind, e.index)) {
            return fail(ErrorKind::DuplicateSection { first }, entry_offset);
        }
        if e.offset
            .checked_add(e.stored_len)
            .is_none_or(|end| end > file_len)
        {
            let stored_len = e.stored_len;
            return fail(
                ErrorKind::OutOfRange {
                    stored_len,
                    file_len,
                },
                e.offset,
            );
        }
        if e.codec == Codec::Raw.id() && e.stored_len != e.decoded_len {
            let kind = ErrorKind::DecodedLengthMismatch {
                declared: e.decoded_len,
                actual: Some(e.stored_len),
            };
            return fail(kind, entry_offset);
        }
        seen.insert((e.kind, e.index), position);
        sections.push(SectionInfo {
            position,
            kind: e.kind,
            index: e.index,
            codec_id: e.codec,
            checksum: e.checksum,
            offset: e.offset,
            stored_len: e.stored_len,
            decoded_len: e.decoded_len,
        });
    }
    check_overlaps(name, header.table_offset, table_len, &sections)?;
    Ok(sections)
}

/// Fails if a non-empty section overlaps the header, the table or another section.
fn check_overlaps(
    name: &str,
    table_offset: u64,
    table_len: u64,
    sections: &[SectionInfo],
) -> Result<(), Error> {
    let mut regions: Vec<(u64, u64, Region)> = Vec::with_capacity(sections.len() + 2);
    regions.push((0, HEADER_LEN as u64, Region::Header));
    if table_len > 0 {
        regions.push((table_offset, table_offset + table_len, Region::Table));
    }
    regions.extend(sections.iter().filter(|s| s.stored_len > 0).map(|s| {
        (
            s.offset,
            s.offset + s.stored_len,
            Region::Section(s.section_ref()),
        )
    }));
    regions.sort_by_key(|&(start, end, _)| (start, end));
    let mut furthest: Option<(u64, Region)> = None;
    for &(start, end, region) in &regions {
        if let Some((prev_end, prev)) = furthest {
            if start < prev_end {
                // Report against a section: header and table never overlap each other.
                let (section, other) = match (region, prev) {
                    (Region::Section(s), other) | (other, Region::Section(s)) => (s, other),
                    // Cannot happen (the table starts after the header); reported all the same.
                    _ => {
                        let what = "the section table overlaps the header".to_owned();
                        return Err(Error::new(name, ErrorKind::BadHeader(what)).at(start));
                    }
                };
                let offset = sections.get(section.position).map_or(start, |s| s.offset);
                let kind = ErrorKind::Overlap { other };
                return Err(Error::new(name, kind).in_section(section).at(offset));
            }
        }
        if furthest.is_none_or(|(prev_end, _)| end > prev_end) {
            furthest = Some((end, region));
        }
    }
    Ok(())
}
