//! `ByteReader` on edited section payloads of a real rank file, read with
//! any sequence of its methods: every read returns one value and moves past
//! exactly its canonical encoding, or fails where it stands without moving;
//! counts and lengths never promise more than the bytes left.
//!
//! `crates/varint/tests/varint.rs` does the same on random bytes; payloads
//! hold the varints, blobs and strings that readers really meet.

use mpigram_fuzz::*;
use mpigram_varint::{ByteReader, PutVarint};
use proptest::prelude::*;
use std::sync::OnceLock;

fn payloads() -> &'static [Vec<u8>] {
    static PAYLOADS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    PAYLOADS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::read(sample_rank_trace(0).write(dir.path()).unwrap()).unwrap();
        read_sections(&file)
            .2
            .into_iter()
            .map(|s| s.payload)
            .collect()
    })
}

fn encoded(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.put_u64(v);
    b
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn every_read_moves_past_one_value_or_not_at_all(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 0..4),
        ops in prop::collection::vec(0u8..8, 1..48),
    ) {
        let mut data = payloads()[which.index(payloads().len())].clone();
        apply(&mut data, &edits);
        let mut r = ByteReader::new(&data);
        for op in ops {
            let at = r.position();
            // The bytes the read consumed must be exactly these.
            let expected: Result<Vec<u8>, _> = match op {
                0 => r.u64().map(encoded),
                1 => r.i64().map(|v| encoded(mpigram_varint::zigzag(v))),
                2 => r.u32().map(|v| encoded(v.into())),
                3 => r.count().map(|n| {
                    assert!(n <= r.remaining(), "count {n} with {} bytes left", r.remaining());
                    encoded(n as u64)
                }),
                4 => r.blob().map(|b| [encoded(b.len() as u64), b.to_vec()].concat()),
                5 => r.str().map(|s| [encoded(s.len() as u64), s.as_bytes().to_vec()].concat()),
                6 => r.u8().map(|b| vec![b]),
                _ => r.bytes(3).map(<[u8]>::to_vec),
            };
            match expected {
                Ok(bytes) => prop_assert_eq!(&data[at..r.position()], &bytes[..]),
                Err(e) => {
                    prop_assert_eq!(r.position(), at);
                    prop_assert_eq!(e.offset, at);
                }
            }
        }
        let left = r.remaining();
        prop_assert_eq!(r.finish().is_ok(), left == 0);
    }
}
