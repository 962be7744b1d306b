//! LEB128 varints and zigzag signed integers: the number encoding of every mpigram payload
//! (grammars, signature tables, timing streams).
//!
//! Writing: [`PutVarint`] on `Vec<u8>`. Reading: [`ByteReader`], a cursor over `&[u8]` whose
//! every method returns a [`DecodeError`] naming the byte offset and what is wrong. Encodings
//! are canonical: a value has exactly one encoding, and a reader rejects non-minimal or longer
//! than 10-byte varints, values that overflow, and counts that cannot fit in the data left.
//!
//! ```
//! use mpigram_varint::{ByteReader, PutVarint};
//!
//! let mut buf = Vec::new();
//! buf.put_u64(300);
//! buf.put_i64(-2);
//! buf.put_str("MPI_Send");
//! let mut r = ByteReader::new(&buf);
//! assert_eq!(r.u64()?, 300);
//! assert_eq!(r.i64()?, -2);
//! assert_eq!(r.str()?, "MPI_Send");
//! r.finish()?;
//! # Ok::<(), mpigram_varint::DecodeError>(())
//! ```

/// Longest encoding of a u64 (ceil(64 / 7) bytes).
pub const MAX_VARINT_LEN: usize = 10;

/// Maps signed to unsigned so that small magnitudes stay small: 0, -1, 1, -2, ... -> 0, 1, 2, 3.
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
pub fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// The two bytes of the varint of `v`, which is at least 0x80 and below
/// 0x4000.
#[inline(always)]
pub fn two_byte_varint(v: u64) -> [u8; 2] {
    debug_assert!((0x80..0x4000).contains(&v));
    [v as u8 | 0x80, (v >> 7) as u8]
}

/// Writes `v` as a varint at `at` and returns its length: one byte, two in
/// one store (a tight loop's times in ticks), or a byte at a time. For
/// writers whose buffer has room already ([`PutVarint::put_u64`] makes it
/// in a `Vec`; the tracer's open blocks of per-call times are fixed).
///
/// # Safety
/// `at` is valid for writes of [`MAX_VARINT_LEN`] bytes.
#[inline(always)]
pub unsafe fn write_varint(at: *mut u8, mut v: u64) -> usize {
    // SAFETY: the caller's MAX_VARINT_LEN bytes hold any varint.
    unsafe {
        if v < 0x80 {
            at.write(v as u8);
            return 1;
        }
        if v < 0x4000 {
            at.cast::<[u8; 2]>().write(two_byte_varint(v));
            return 2;
        }
        let mut n = 0;
        while v >= 0x80 {
            at.add(n).write((v as u8) | 0x80);
            v >>= 7;
            n += 1;
        }
        at.add(n).write(v as u8);
        n + 1
    }
}

/// Number of bytes [`PutVarint::put_u64`] writes for `v`.
pub fn encoded_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appending varint-encoded values to a byte buffer.
pub trait PutVarint {
    /// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
    fn put_u64(&mut self, v: u64);
    /// Appends `v` zigzag-mapped, then as a varint.
    fn put_i64(&mut self, v: i64);
    /// Appends `v` as a varint (read back with [`ByteReader::u32`]).
    fn put_u32(&mut self, v: u32);
    /// Appends the length of `bytes` as a varint, then the bytes.
    fn put_blob(&mut self, bytes: &[u8]);
    /// Appends a string like [`put_blob`](PutVarint::put_blob) (UTF-8, length-prefixed).
    fn put_str(&mut self, s: &str);
}

impl PutVarint for Vec<u8> {
    #[inline]
    fn put_u64(&mut self, v: u64) {
        // Most values of a call signature fit in one byte: keep that path
        // free of loops and copies (the tracer's hot path runs through it).
        if v < 0x80 {
            self.push(v as u8);
            return;
        }
        // Longer ones (per-call times): one capacity check, not one a byte.
        self.reserve(MAX_VARINT_LEN);
        let len = self.len();
        // SAFETY: MAX_VARINT_LEN bytes are reserved past `len`, and every
        // byte up to the new length is written.
        unsafe {
            let n = write_varint(self.as_mut_ptr().add(len), v);
            self.set_len(len + n);
        }
    }

    #[inline]
    fn put_i64(&mut self, v: i64) {
        self.put_u64(zigzag(v));
    }

    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.put_u64(u64::from(v));
    }

    fn put_blob(&mut self, bytes: &[u8]) {
        self.put_u64(bytes.len() as u64);
        self.extend_from_slice(bytes);
    }

    fn put_str(&mut self, s: &str) {
        self.put_blob(s.as_bytes());
    }
}

/// What is wrong with encoded data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The data ends inside a varint.
    #[error("varint runs past the end of the data")]
    TruncatedVarint,
    /// A varint has a continuation bit on its 10th byte.
    #[error("varint longer than {MAX_VARINT_LEN} bytes")]
    OverlongVarint,
    /// A varint ends with a zero byte that a canonical encoding would not have.
    #[error("non-minimal varint encoding")]
    NonMinimalVarint,
    /// A 10-byte varint encodes a value above `u64::MAX`.
    #[error("varint overflows u64")]
    Overflow,
    /// A value does not fit the requested type.
    #[error("value {value} does not fit in {target}")]
    OutOfRange {
        /// The decoded value.
        value: u64,
        /// The requested type.
        target: &'static str,
    },
    /// Fewer bytes are left than a read needs.
    #[error("needs {needed} bytes, {left} left")]
    UnexpectedEnd {
        /// Bytes the read needs.
        needed: u64,
        /// Bytes left in the data.
        left: usize,
    },
    /// An element count larger than the bytes left could possibly hold.
    #[error("count {count} exceeds the {left} bytes left")]
    TooManyElements {
        /// The decoded count.
        count: u64,
        /// Bytes left in the data.
        left: usize,
    },
    /// A string is not valid UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// Bytes are left after the last expected value.
    #[error("{count} unexpected trailing bytes")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
}

/// A decoding error at a byte offset of the data given to a [`ByteReader`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset}: {kind}")]
pub struct DecodeError {
    /// Offset (from the start of the reader's data) of the value that failed.
    pub offset: usize,
    /// What is wrong.
    pub kind: DecodeErrorKind,
}

/// A cursor over encoded bytes. Every read either advances past one value or fails without
/// advancing.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        ByteReader { data, pos: 0 }
    }

    /// Offset of the next byte to read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Number of bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Whether all bytes have been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or_default()
    }

    fn fail<T>(&self, offset: usize, kind: DecodeErrorKind) -> Result<T, DecodeError> {
        Err(DecodeError { offset, kind })
    }

    /// Reads an unsigned LEB128 varint.
    #[inline]
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let rest = self.rest();
        // Most values in traces are small: one byte, no loop.
        if let Some(&b) = rest.first() {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        let mut value = 0u64;
        for (i, &b) in rest.iter().take(MAX_VARINT_LEN).enumerate() {
            if i == MAX_VARINT_LEN - 1 {
                if b >= 0x80 {
                    return self.fail(self.pos, DecodeErrorKind::OverlongVarint);
                }
                if b > 1 {
                    return self.fail(self.pos, DecodeErrorKind::Overflow);
                }
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                if b == 0 && i > 0 {
                    return self.fail(self.pos, DecodeErrorKind::NonMinimalVarint);
                }
                self.pos += i + 1;
                return Ok(value);
            }
        }
        self.fail(self.pos, DecodeErrorKind::TruncatedVarint)
    }

    /// Reads a zigzag-encoded signed varint.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.u64().map(unzigzag)
    }

    /// Reads a varint and checks that it fits in a u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let start = self.pos;
        let value = self.u64()?;
        u32::try_from(value).or_else(|_| {
            self.pos = start;
            let target = "u32";
            self.fail(start, DecodeErrorKind::OutOfRange { value, target })
        })
    }

    /// Reads a varint element count and checks that it is at most the number of bytes left,
    /// as when every element takes at least one byte: safe to use as a `Vec` capacity.
    pub fn count(&mut self) -> Result<usize, DecodeError> {
        let start = self.pos;
        let count = self.u64()?;
        let left = self.remaining();
        match usize::try_from(count) {
            Ok(n) if n <= left => Ok(n),
            _ => {
                self.pos = start;
                self.fail(start, DecodeErrorKind::TooManyElements { count, left })
            }
        }
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        self.bytes(1).map(|b| b[0])
    }

    /// Reads the next `n` bytes as they are.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let rest = self.rest();
        match rest.get(..n) {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => {
                let kind = DecodeErrorKind::UnexpectedEnd {
                    needed: n as u64,
                    left: rest.len(),
                };
                self.fail(self.pos, kind)
            }
        }
    }

    /// Reads a varint length, then that many bytes (written by [`PutVarint::put_blob`]).
    pub fn blob(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let len = self.u64()?;
        let left = self.remaining();
        match usize::try_from(len) {
            Ok(n) if n <= left => self.bytes(n),
            _ => {
                self.pos = start;
                let kind = DecodeErrorKind::UnexpectedEnd { needed: len, left };
                self.fail(start, kind)
            }
        }
    }

    /// Reads a length-prefixed UTF-8 string (written by [`PutVarint::put_str`]).
    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        let start = self.pos;
        let bytes = self.blob()?;
        std::str::from_utf8(bytes).or_else(|_| {
            self.pos = start;
            self.fail(start, DecodeErrorKind::InvalidUtf8)
        })
    }

    /// Checks that nothing is left: call after the last value of a payload.
    pub fn finish(self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            count => self.fail(self.pos, DecodeErrorKind::TrailingBytes { count }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.put_u64(v);
        b
    }

    #[test]
    fn known_encodings() {
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(
            enc(u64::MAX),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        for v in [0, 1, 127, 128, 16383, 16384, u64::MAX >> 1, u64::MAX] {
            assert_eq!(encoded_len(v), enc(v).len(), "{v}");
        }
    }

    /// Every value of up to three bytes (the two-byte ones have a path of
    /// their own) reads back, and after another value too.
    #[test]
    fn short_values_read_back() {
        for v in 0..1 << 21 {
            let mut b = vec![7];
            b.put_u64(v);
            assert_eq!(b.len(), 1 + encoded_len(v), "{v}");
            let mut r = ByteReader::new(&b[1..]);
            assert_eq!(r.u64(), Ok(v));
            r.finish().unwrap();
        }
    }

    #[test]
    fn zigzag_maps_small_magnitudes_to_small_values() {
        let pairs = [
            (0i64, 0u64),
            (-1, 1),
            (1, 2),
            (-2, 3),
            (i64::MAX, u64::MAX - 1),
        ];
        for (s, u) in pairs {
            assert_eq!(zigzag(s), u);
            assert_eq!(unzigzag(u), s);
        }
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn errors_name_the_offset_and_leave_the_cursor() {
        let mut b = Vec::new();
        b.put_u64(5);
        b.put_u64(1 << 40);
        let mut r = ByteReader::new(&b);
        assert_eq!(r.u64(), Ok(5));
        let e = r.u32().expect_err("2^40 is not a u32");
        assert_eq!(e.offset, 1);
        assert_eq!(
            e.to_string(),
            "byte 1: value 1099511627776 does not fit in u32"
        );
        assert_eq!(r.position(), 1);
        assert_eq!(r.u64(), Ok(1 << 40));
        assert!(r.is_empty());
    }
}
