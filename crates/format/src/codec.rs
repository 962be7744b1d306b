//! Per-section encodings of the stored bytes: raw or zstd.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{self, Read, Write};

use crate::error::ErrorKind;

/// How a section's bytes are stored. The numeric ids are part of the file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// Stored as given (id 0).
    Raw,
    /// One or more zstd frames (id 1); the table records the decoded length.
    Zstd,
}

impl Codec {
    /// The id stored in the section table.
    pub fn id(self) -> u32 {
        match self {
            Codec::Raw => 0,
            Codec::Zstd => 1,
        }
    }

    /// The codec with the given table id, or `None` for an id this version does not know.
    pub fn from_id(id: u32) -> Option<Codec> {
        match id {
            0 => Some(Codec::Raw),
            1 => Some(Codec::Zstd),
            _ => None,
        }
    }
}

/// A writer that counts and checksums what passes through it.
struct Tally<W> {
    inner: W,
    len: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Tally<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let written = buf.get(..n).unwrap_or(buf);
        self.crc.update(written);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Sections up to this many bytes are compressed at [`SMALL_SECTION_LEVEL`]: for a
/// few kilobytes the best level costs a millisecond at most, and saves a tenth of a
/// small trace.
const SMALL_SECTION: usize = 4 << 10;

/// zstd level of small sections.
const SMALL_SECTION_LEVEL: i32 = 19;

impl Codec {
    /// The codec to store `data` with: zstd, unless `data` is small and zstd does not
    /// make it smaller (for a few hundred bytes a frame's header can cost more than
    /// zstd saves).
    pub fn suited_to(data: &[u8]) -> Codec {
        if data.len() > SMALL_SECTION {
            return Codec::Zstd;
        }
        match zstd::bulk::compress(data, SMALL_SECTION_LEVEL) {
            Ok(packed) if packed.len() < data.len() => Codec::Zstd,
            _ => Codec::Raw,
        }
    }
}

/// Encodes `data` with `codec` straight into `out`; returns `(stored length, CRC-32 of the
/// stored bytes)`. Streaming keeps memory flat for large sections.
pub(crate) fn encode_into<W: Write>(
    codec: Codec,
    data: &[u8],
    zstd_level: i32,
    out: W,
) -> io::Result<(u64, u32)> {
    let mut tally = Tally {
        inner: out,
        len: 0,
        crc: crc32fast::Hasher::new(),
    };
    match codec {
        Codec::Raw => tally.write_all(data)?,
        Codec::Zstd => {
            let level = match data.len() {
                n if n <= SMALL_SECTION => zstd_level.max(SMALL_SECTION_LEVEL),
                _ => zstd_level,
            };
            // One frame, which records the decoded size in its header too,
            // for standalone zstd tools.
            with_compressor(|c, frame| {
                compress_into(c, data, (level, 0), frame)?;
                tally.write_all(frame)
            })?;
        }
    }
    Ok((tally.len, tally.crc.finalize()))
}

/// A zstd context and an output buffer, kept for the thread's next
/// section: a new context per section allocated its tables again, and the
/// kernel zeroed their pages again (the tracer writes a part of five
/// sections every few hundred thousand new signatures).
struct Compression {
    compressor: zstd::bulk::Compressor<'static>,
    frame: Vec<u8>,
}

thread_local! {
    static COMPRESSION: RefCell<Option<Compression>> = const { RefCell::new(None) };
}

/// `data` as one zstd frame at `level` into `frame` (emptied first).
fn compress_into(
    c: &mut zstd::bulk::Compressor<'static>,
    data: &[u8],
    (level, hash_log): (i32, u32),
    frame: &mut Vec<u8>,
) -> io::Result<()> {
    frame.clear();
    frame.reserve(zstd::zstd_safe::compress_bound(data.len()));
    c.set_compression_level(level)?;
    // The context is kept from frame to frame: its hash log is set every
    // time, 0 being the level's own.
    c.set_parameter(zstd::zstd_safe::CParameter::HashLog(hash_log))?;
    c.include_contentsize(true)?;
    c.compress_to_buffer(data, frame)?;
    Ok(())
}

/// Runs `f` with the thread's kept compressor and buffer, or new ones
/// where they cannot be had (a thread's exit under way).
fn with_compressor<R>(
    f: impl FnOnce(&mut zstd::bulk::Compressor<'static>, &mut Vec<u8>) -> io::Result<R>,
) -> io::Result<R> {
    let new = || -> io::Result<Compression> {
        Ok(Compression {
            compressor: zstd::bulk::Compressor::new(0)?,
            frame: Vec::new(),
        })
    };
    let mut f = Some(f);
    let kept = COMPRESSION.try_with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        let c = match &mut *slot {
            Some(c) => c,
            None => slot.insert(new().ok()?),
        };
        let f = f.take()?;
        Some(f(&mut c.compressor, &mut c.frame))
    });
    match (kept, f) {
        (Ok(Some(r)), _) => r,
        (_, Some(f)) => {
            let mut c = new()?;
            f(&mut c.compressor, &mut c.frame)
        }
        (_, None) => unreachable!("f ran, and its result was returned"),
    }
}

/// `data` as one zstd frame (which names the decoded size) at `level`, with
/// zstd's hash log `hash_log` (0: the level's own), into `frame` (emptied
/// first), with the thread's kept context: for writers
/// that compress piece by piece (the tracer's per-call times, a block of
/// 65,536 calls at a time) and keep `frame` from one piece to the next, so
/// that no piece allocates (a new buffer of a block's size is fresh pages
/// from the system each time, a page fault every 4 KiB).
pub fn zstd_frame_into(
    data: &[u8],
    (level, hash_log): (i32, u32),
    frame: &mut Vec<u8>,
) -> io::Result<()> {
    with_compressor(|c, _| compress_into(c, data, (level, hash_log), frame))
}

/// Decodes checksummed stored bytes. The caller has checked `decoded_len` against its limit;
/// output never grows past `decoded_len + 1` bytes whatever the stream says.
pub(crate) fn decode<'a>(
    codec: Codec,
    stored: Cow<'a, [u8]>,
    decoded_len: u64,
) -> Result<Cow<'a, [u8]>, ErrorKind> {
    match codec {
        Codec::Raw => {
            // The reader checked stored == decoded length when it opened the file.
            Ok(stored)
        }
        Codec::Zstd => {
            // Start small: a forged length must not reserve memory that the stream never fills.
            let hint = (stored.len() as u64).saturating_mul(8).max(4096);
            let capacity = usize::try_from(decoded_len.min(hint)).unwrap_or(0);
            let mut out = Vec::with_capacity(capacity);
            let bad = |e: io::Error| ErrorKind::BadCompressedData(e.to_string());
            let decoder = zstd::stream::read::Decoder::with_buffer(&stored[..]).map_err(bad)?;
            decoder
                .take(decoded_len.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(bad)?;
            let actual = out.len() as u64;
            if actual != decoded_len {
                return Err(ErrorKind::DecodedLengthMismatch {
                    declared: decoded_len,
                    actual: (actual <= decoded_len).then_some(actual),
                });
            }
            Ok(Cow::Owned(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(codec: Codec, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (len, crc) = encode_into(codec, data, 3, &mut out).expect("encode to Vec");
        assert_eq!(len, out.len() as u64);
        assert_eq!(crc, crc32fast::hash(&out));
        out
    }

    #[test]
    fn ids_are_stable() {
        assert_eq!(Codec::Raw.id(), 0);
        assert_eq!(Codec::Zstd.id(), 1);
        assert_eq!(Codec::from_id(1), Some(Codec::Zstd));
        assert_eq!(Codec::from_id(2), None);
    }

    #[test]
    fn zstd_round_trips_including_empty() {
        for data in [&b""[..], b"abc", &[7u8; 100_000]] {
            let stored = encoded(Codec::Zstd, data);
            let back = decode(Codec::Zstd, Cow::Owned(stored), data.len() as u64).expect("decode");
            assert_eq!(&*back, data);
        }
    }

    /// Each section is one frame that names its decoded size, whichever
    /// level the thread's kept compressor last ran at.
    #[test]
    fn zstd_frames_record_their_size_at_every_level() {
        let text: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for (data, level) in [(&text[..], 3), (&text[..100], 3), (&text[..], -5), (b"", 1)] {
            let mut out = Vec::new();
            encode_into(Codec::Zstd, data, level, &mut out).expect("encode to Vec");
            let size = zstd::zstd_safe::get_frame_content_size(&out).expect("a frame");
            assert_eq!(size, Some(data.len() as u64));
            assert_eq!(
                zstd::zstd_safe::find_frame_compressed_size(&out),
                Ok(out.len())
            );
            let back = decode(Codec::Zstd, Cow::Owned(out), data.len() as u64).expect("decode");
            assert_eq!(&*back, data);
        }
    }

    #[test]
    fn zstd_longer_than_declared_is_rejected_without_decoding_everything() {
        let stored = encoded(Codec::Zstd, &[1u8; 1 << 20]);
        let err = decode(Codec::Zstd, Cow::Owned(stored), 10).expect_err("too long");
        assert!(matches!(
            err,
            ErrorKind::DecodedLengthMismatch {
                declared: 10,
                actual: None
            }
        ));
    }

    #[test]
    fn zstd_shorter_than_declared_is_rejected() {
        let stored = encoded(Codec::Zstd, b"hello");
        let err = decode(Codec::Zstd, Cow::Owned(stored), 6).expect_err("too short");
        assert!(matches!(
            err,
            ErrorKind::DecodedLengthMismatch {
                declared: 6,
                actual: Some(5)
            }
        ));
    }

    #[test]
    fn garbage_and_cut_streams_are_bad_zstd() {
        let err = decode(Codec::Zstd, Cow::Borrowed(b"not zstd at all"), 5).expect_err("garbage");
        assert!(matches!(err, ErrorKind::BadCompressedData(_)), "{err:?}");
        let stored = encoded(Codec::Zstd, &[9u8; 5000]);
        let cut = &stored[..stored.len() - 3];
        let err = decode(Codec::Zstd, Cow::Borrowed(cut), 5000).expect_err("cut");
        assert!(
            matches!(
                err,
                ErrorKind::BadCompressedData(_) | ErrorKind::DecodedLengthMismatch { .. }
            ),
            "{err:?}"
        );
    }
}
