//! The mpigram trace container: one file holds a set of typed, versioned, checksummed sections.
//!
//! A trace is a directory of files; this crate owns how *one* file is laid out on disk, how it
//! is written atomically ([`TraceWriter`], [`write_file`], [`to_bytes`]) and how it is read back
//! defensively ([`TraceFile`]). It knows nothing about MPI or about what a section holds: higher
//! crates store grammar bytes, signature tables or timing streams in sections and identify them
//! by a numeric kind and index. The byte layout is specified in `docs/format.md`; it is a
//! contract that other readers may implement without this crate.
//!
//! Readers never panic and never allocate more than the file size (or a configurable cap for
//! decompressed sections) whatever the input: every problem is an [`Error`] whose `Display` is
//! one line naming the file, the section and the byte offset.
//!
//! [`varint`] holds the LEB128/zigzag helpers that higher crates use to encode section payloads.
//!
//! ```
//! use mpigram_format::{Codec, TraceFile, to_bytes};
//!
//! let bytes = to_bytes(7, 0, &[(0x10, 0, b"grammar".as_slice(), Codec::Zstd).into()])?;
//! let file = TraceFile::from_bytes("example.mgr", bytes)?;
//! assert_eq!(file.kind(), 7);
//! assert_eq!(&*file.section(0x10, 0)?, b"grammar");
//! # Ok::<(), mpigram_format::Error>(())
//! ```

#![warn(missing_docs)]

mod codec;
mod compact;
mod error;
mod layout;
mod reader;
pub use mpigram_varint as varint;
mod temp;
mod writer;

pub use codec::{Codec, zstd_frame_into};
pub use error::{Error, ErrorKind, Region, SectionRef};
pub use layout::{ENTRY_LEN, FORMAT_MAJOR, FORMAT_MINOR, HEADER_LEN, MAGIC, V1_MAJOR};
pub use reader::{
    DEFAULT_DECODE_LIMIT, MAX_RATIO, RATIO_FREE_LEN, SectionInfo, TraceFile, Version,
};
pub use temp::{create_temp, replace_with, temp_of};
pub use writer::{NewSection, TraceWriter, to_bytes, write_file};

/// File flag bits (the header's `flags` field).
pub mod flags {
    /// The run that wrote this file did not end cleanly (abort, signal, exit without
    /// `MPI_Finalize`): the content is what was recorded up to that point.
    pub const PARTIAL: u32 = 1 << 0;
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs the README's example as a doctest, so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    /// Analysis code shares one open file between threads.
    #[test]
    fn trace_file_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<crate::TraceFile>();
        check::<crate::Error>();
    }
}
