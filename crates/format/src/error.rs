//! Errors of the container: what went wrong ([`ErrorKind`]) and where (file, section, offset).

use std::fmt;

use crate::layout::{FORMAT_MAJOR, V1_MAJOR};
use crate::varint::DecodeError;

/// Identifies one section of a file in an error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionRef {
    /// Position in the section table (for a writer: the order in which it was added).
    pub position: usize,
    /// Section kind.
    pub kind: u32,
    /// Section instance/index.
    pub index: u32,
}

impl fmt::Display for SectionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "section {} (kind {:#x}, index {})",
            self.position, self.kind, self.index
        )
    }
}

/// A region of a file that a section may wrongly overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// The fixed header at offset 0.
    Header,
    /// The section table.
    Table,
    /// Another section's stored bytes.
    Section(SectionRef),
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Region::Header => f.write_str("the header"),
            Region::Table => f.write_str("the section table"),
            Region::Section(s) => s.fmt(f),
        }
    }
}

/// What is wrong with a file (or with a write). Carried by [`Error`], which adds the location.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system reported an error.
    #[error("I/O error: {0}")]
    Io(std::io::Error),
    /// The file has no bytes at all.
    #[error("empty file")]
    Empty,
    /// The file does not start with [`MAGIC`](crate::MAGIC).
    // The bytes found are not shown: errors never echo a file's contents.
    #[error("not an mpigram file (it does not start with the MPIGRAM magic)")]
    NotMpigram {
        /// The first bytes found (up to 8).
        magic: Vec<u8>,
    },
    /// The file ends before a structure it declares.
    #[error("truncated: needs {needed} bytes, file has {len}")]
    Truncated {
        /// Bytes the file would need to hold the structure.
        needed: u64,
        /// Actual file length.
        len: u64,
    },
    /// The file's major version is not one this reader understands.
    #[error("{}", version_message(*.major, *.minor))]
    UnsupportedVersion {
        /// Major version found in the file.
        major: u16,
        /// Minor version found in the file.
        minor: u16,
    },
    /// The header's checksum does not match its bytes.
    #[error("header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    HeaderChecksum {
        /// Checksum stored in the file.
        stored: u32,
        /// Checksum of the bytes read.
        computed: u32,
    },
    /// A header field holds an impossible value.
    #[error("bad header: {0}")]
    BadHeader(String),
    /// The section table's checksum does not match its bytes.
    #[error("section table checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    TableChecksum {
        /// Checksum stored in the header.
        stored: u32,
        /// Checksum of the bytes read.
        computed: u32,
    },
    /// A section's stored bytes run past the end of the file.
    #[error("stored length {stored_len} runs past the end of the file ({file_len} bytes)")]
    OutOfRange {
        /// The section's stored length.
        stored_len: u64,
        /// Actual file length.
        file_len: u64,
    },
    /// A section's stored bytes overlap the header, the table or another section.
    #[error("overlaps {other}")]
    Overlap {
        /// What it overlaps.
        other: Region,
    },
    /// Two sections have the same (kind, index).
    #[error("duplicate (kind, index): same as section {first}")]
    DuplicateSection {
        /// Table position of the first section with that (kind, index).
        first: usize,
    },
    /// A section's stored bytes do not match its checksum.
    #[error("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch {
        /// Checksum stored in the table.
        stored: u32,
        /// Checksum of the bytes read.
        computed: u32,
    },
    /// A section uses a codec this reader does not know.
    #[error("unknown codec {0}")]
    UnknownCodec(u32),
    /// A zstd section's stored bytes are not a valid zstd stream.
    #[error("bad zstd stream: {0}")]
    BadCompressedData(String),
    /// A section decodes to a different length than the table declares.
    #[error("{}", length_message(*.declared, *.actual))]
    DecodedLengthMismatch {
        /// Decoded length declared in the table.
        declared: u64,
        /// Length actually decoded; `None` when it is more than `declared`.
        actual: Option<u64>,
    },
    /// A section declares a decoded length above the reader's limit
    /// ([`TraceFile::set_decode_limit`](crate::TraceFile::set_decode_limit)).
    #[error("declared decoded length {declared} exceeds the reader's limit of {limit} bytes")]
    TooLarge {
        /// Decoded length declared in the table.
        declared: u64,
        /// The reader's limit.
        limit: u64,
    },
    /// A compressed section declares more decoded bytes than any section
    /// of a trace compresses to (more than [`MAX_RATIO`](crate::MAX_RATIO)
    /// times its stored bytes, beyond [`RATIO_FREE_LEN`](crate::RATIO_FREE_LEN)):
    /// refused before decoding, as a decompression bomb would be.
    #[error(
        "declares {declared} decoded bytes from {stored} stored, more than {} times: damaged, or a decompression bomb",
        crate::MAX_RATIO
    )]
    Implausible {
        /// Decoded length declared in the table.
        declared: u64,
        /// Stored length.
        stored: u64,
    },
    /// The file has no section with the requested (kind, index).
    #[error("no section with kind {kind:#x} and index {index}")]
    NoSuchSection {
        /// Requested kind.
        kind: u32,
        /// Requested index.
        index: u32,
    },
    /// A higher layer could not decode a section's payload (see
    /// [`TraceFile::payload_error`](crate::TraceFile::payload_error)).
    #[error("bad payload: {0}")]
    Payload(DecodeError),
    /// A writer was given more sections than the table can count.
    #[error("too many sections (the table holds at most {} entries)", u32::MAX)]
    TooManySections,
}

/// An error with its location: the file, the section when one is concerned, the byte offset
/// when one is known. `Display` is a single line, e.g.
/// `trace/rank0.mgr: section 3 (kind 0x10, index 0) at offset 4096: checksum mismatch (...)`.
#[derive(Debug)]
pub struct Error {
    file: String,
    section: Option<SectionRef>,
    offset: Option<u64>,
    kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(file: &str, kind: ErrorKind) -> Self {
        Error {
            file: file.to_owned(),
            section: None,
            offset: None,
            kind,
        }
    }

    pub(crate) fn at(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    pub(crate) fn in_section(mut self, section: SectionRef) -> Self {
        self.section = Some(section);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Consumes the error, returning what went wrong.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// The file (as named when it was opened or created).
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The section concerned, if any.
    pub fn section(&self) -> Option<SectionRef> {
        self.section
    }

    /// The byte offset in the file where the problem is, if known.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        match (self.section, self.offset) {
            (Some(s), Some(o)) => write!(f, ": {s} at offset {o}")?,
            (Some(s), None) => write!(f, ": {s}")?,
            (None, Some(o)) => write!(f, ": at offset {o}")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.kind)
    }
}

// The kind's message is already part of `Display`, so it is not repeated as a `source`.
impl std::error::Error for Error {}

fn version_message(major: u16, minor: u16) -> String {
    if major > FORMAT_MAJOR {
        format!(
            "format version {major}.{minor}: newer than this reader ({V1_MAJOR}.x to \
             {FORMAT_MAJOR}.x), or damaged; a newer mpigram may read it"
        )
    } else {
        format!(
            "format version {major}.{minor}: not one this reader reads ({V1_MAJOR}.x to \
             {FORMAT_MAJOR}.x); damaged, or written by an old mpigram"
        )
    }
}

fn length_message(declared: u64, actual: Option<u64>) -> String {
    match actual {
        Some(a) => format!("decodes to {a} bytes, table declares {declared}"),
        None => format!("decodes to more than the {declared} bytes the table declares"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_with_location() {
        let e = Error::new(
            "trace/rank0.mgr",
            ErrorKind::ChecksumMismatch {
                stored: 1,
                computed: 2,
            },
        )
        .in_section(SectionRef {
            position: 3,
            kind: 0x10,
            index: 0,
        })
        .at(4096);
        assert_eq!(
            e.to_string(),
            "trace/rank0.mgr: section 3 (kind 0x10, index 0) at offset 4096: \
             checksum mismatch (stored 0x00000001, computed 0x00000002)"
        );
    }

    #[test]
    fn not_mpigram_does_not_echo_the_file() {
        let e = Error::new(
            "x",
            ErrorKind::NotMpigram {
                magic: b"\x7fELF\n".to_vec(),
            },
        );
        assert_eq!(
            e.to_string(),
            "x: not an mpigram file (it does not start with the MPIGRAM magic)"
        );
    }
}
