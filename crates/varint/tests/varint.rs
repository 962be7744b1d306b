//! Varint encoding: round trips, canonical form, and rejection of bad input.

use mpigram_varint::{
    ByteReader, DecodeErrorKind, MAX_VARINT_LEN, PutVarint, encoded_len, unzigzag, zigzag,
};
use proptest::prelude::*;

fn enc(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.put_u64(v);
    b
}

fn err_kind(bytes: &[u8]) -> DecodeErrorKind {
    ByteReader::new(bytes)
        .u64()
        .expect_err("must be rejected")
        .kind
}

#[test]
fn overlong_varints_are_rejected() {
    assert_eq!(err_kind(&[0xff; 11]), DecodeErrorKind::OverlongVarint);
    let mut eleven = vec![0x80; 10];
    eleven.push(0x00);
    assert_eq!(err_kind(&eleven), DecodeErrorKind::OverlongVarint);
}

#[test]
fn values_above_u64_max_are_rejected() {
    let mut b = vec![0xff; 9];
    b.push(0x02);
    assert_eq!(err_kind(&b), DecodeErrorKind::Overflow);
    let mut b = vec![0xff; 9];
    b.push(0x01);
    assert_eq!(ByteReader::new(&b).u64(), Ok(u64::MAX));
}

#[test]
fn non_minimal_varints_are_rejected() {
    assert_eq!(err_kind(&[0x80, 0x00]), DecodeErrorKind::NonMinimalVarint);
    assert_eq!(
        err_kind(&[0x81, 0x80, 0x00]),
        DecodeErrorKind::NonMinimalVarint
    );
    assert_eq!(ByteReader::new(&[0x00]).u64(), Ok(0));
}

#[test]
fn truncated_varints_are_rejected() {
    assert_eq!(err_kind(&[]), DecodeErrorKind::TruncatedVarint);
    assert_eq!(err_kind(&[0x80]), DecodeErrorKind::TruncatedVarint);
}

#[test]
fn length_prefixed_values_check_the_length_first() {
    let mut b = Vec::new();
    b.put_u64(u64::MAX);
    b.extend_from_slice(b"abc");
    let e = ByteReader::new(&b).blob().unwrap_err();
    assert_eq!(e.offset, 0);
    assert_eq!(
        e.kind,
        DecodeErrorKind::UnexpectedEnd {
            needed: u64::MAX,
            left: 3
        }
    );
    let mut b = Vec::new();
    b.put_blob(&[0xff, 0xfe]);
    let e = ByteReader::new(&b).str().unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::InvalidUtf8);
    let mut b = Vec::new();
    b.put_u64(4);
    b.extend_from_slice(&[1, 2, 3]);
    let mut r = ByteReader::new(&b);
    let e = r.count().unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::TooManyElements { count: 4, left: 3 }
    );
    assert_eq!(r.position(), 0, "a failed read does not advance");
}

#[test]
fn finish_rejects_trailing_bytes() {
    let mut b = Vec::new();
    b.put_u32(7);
    b.push(0);
    let mut r = ByteReader::new(&b);
    assert_eq!(r.u32(), Ok(7));
    let e = r.clone().finish().unwrap_err();
    assert_eq!(e.offset, 1);
    assert_eq!(e.kind, DecodeErrorKind::TrailingBytes { count: 1 });
    assert_eq!(r.u8(), Ok(0));
    r.finish().unwrap();
}

#[test]
fn mixed_payload_round_trip() {
    let mut b = Vec::new();
    b.put_u32(u32::MAX);
    b.put_i64(i64::MIN);
    b.put_str("MPI_Allreduce");
    b.put_blob(&[]);
    b.put_u64(3);
    b.extend_from_slice(&[9, 8, 7]);
    let mut r = ByteReader::new(&b);
    assert_eq!(r.u32(), Ok(u32::MAX));
    assert_eq!(r.i64(), Ok(i64::MIN));
    assert_eq!(r.str(), Ok("MPI_Allreduce"));
    assert_eq!(r.blob(), Ok(&[][..]));
    let n = r.count().unwrap();
    assert_eq!(r.bytes(n), Ok(&[9, 8, 7][..]));
    assert!(r.is_empty());
    assert_eq!(r.rest(), &[] as &[u8]);
    r.finish().unwrap();
}

proptest! {
    #[test]
    fn u64_round_trips(v in any::<u64>()) {
        let b = enc(v);
        prop_assert_eq!(b.len(), encoded_len(v));
        prop_assert!(b.len() <= MAX_VARINT_LEN);
        let mut r = ByteReader::new(&b);
        prop_assert_eq!(r.u64(), Ok(v));
        prop_assert!(r.is_empty());
    }

    #[test]
    fn i64_round_trips(v in any::<i64>()) {
        prop_assert_eq!(unzigzag(zigzag(v)), v);
        let mut b = Vec::new();
        b.put_i64(v);
        let mut r = ByteReader::new(&b);
        prop_assert_eq!(r.i64(), Ok(v));
        prop_assert!(r.is_empty());
    }

    #[test]
    fn u32_is_range_checked(v in any::<u64>()) {
        let b = enc(v);
        let got = ByteReader::new(&b).u32();
        match u32::try_from(v) {
            Ok(small) => prop_assert_eq!(got, Ok(small)),
            Err(_) => prop_assert_eq!(
                got.unwrap_err().kind,
                DecodeErrorKind::OutOfRange { value: v, target: "u32" }
            ),
        }
    }

    #[test]
    fn sequences_round_trip(values in proptest::collection::vec(any::<i64>(), 0..64), s in ".{0,20}") {
        let mut b = Vec::new();
        for &v in &values {
            b.put_i64(v);
        }
        b.put_str(&s);
        let mut r = ByteReader::new(&b);
        for &v in &values {
            prop_assert_eq!(r.i64(), Ok(v));
        }
        prop_assert_eq!(r.str(), Ok(s.as_str()));
        prop_assert!(r.finish().is_ok());
    }

    #[test]
    fn every_proper_prefix_is_truncated(v in 128u64..) {
        let b = enc(v);
        for cut in 0..b.len() {
            prop_assert_eq!(err_kind(&b[..cut]), DecodeErrorKind::TruncatedVarint);
        }
    }

    /// Canonical: whatever random bytes decode to, re-encoding gives back exactly the bytes
    /// consumed, and a failed read leaves the cursor where it was.
    #[test]
    fn decoding_random_bytes_is_canonical(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
        let mut r = ByteReader::new(&bytes);
        loop {
            let start = r.position();
            match r.u64() {
                Ok(v) => prop_assert_eq!(&enc(v)[..], &bytes[start..r.position()]),
                Err(e) => {
                    prop_assert_eq!(e.offset, start);
                    prop_assert_eq!(r.position(), start);
                    break;
                }
            }
        }
    }

    #[test]
    fn readers_never_panic_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64), ops in proptest::collection::vec(0u8..8, 0..16)) {
        let mut r = ByteReader::new(&bytes);
        for op in ops {
            let before = r.position();
            let ok = match op {
                0 => r.u64().is_ok(),
                1 => r.i64().is_ok(),
                2 => r.u32().is_ok(),
                // A count is safe as a capacity: no more than the bytes left.
                3 => r.count().inspect(|&n| assert!(n <= r.remaining())).is_ok(),
                4 => r.blob().is_ok(),
                5 => r.str().is_ok(),
                6 => r.u8().is_ok(),
                _ => r.bytes(3).is_ok(),
            };
            prop_assert!(r.position() <= bytes.len());
            if !ok {
                prop_assert_eq!(r.position(), before);
            }
        }
    }
}
