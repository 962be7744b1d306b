//! Encoded grammars, damaged: `Grammar::decode_streams` (`Grammar::decode`
//! with a stream limit) gives an error, or a valid
//! grammar whose every way of being read agrees with itself.
//!
//! `crates/grammar/tests/properties.rs` decodes random bytes and flipped
//! encodings of single-stream grammars; here the edits also replace whole
//! varints (counts, lengths, stream progressions) with limits, insert,
//! remove and copy, on grammars of many streams too, and an accepted
//! grammar must re-encode to itself and count as it expands.

use mpigram_fuzz::*;
use mpigram_grammar::{Grammar, Sequitur, merge};
use proptest::prelude::*;
use std::sync::OnceLock;

/// A loop nest with a prologue and an epilogue.
fn loop_nest(steps: u32, seed: u32) -> Vec<u32> {
    let mut out = vec![100 + seed, 101];
    for step in 0..steps {
        for _ in 0..3 {
            out.extend([1, 2, 3, 4 + seed % 2]);
        }
        out.push(10 + step % 4);
    }
    out.push(103);
    out
}

fn build(input: &[u32], stream: u32) -> Grammar {
    let mut s = Sequitur::new();
    input.iter().for_each(|&t| s.push(t));
    s.grammar(stream)
}

/// Encodings to start from: one stream; random-ish; 64 streams of three
/// behaviours (stream progressions in the encoding); an empty stream.
fn samples() -> &'static [Vec<u8>] {
    static SAMPLES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let random: Vec<u32> = (0..300u32).map(|i| (i * 7919 + i / 13) % 23).collect();
        let parts: Vec<Grammar> = (0..64u32)
            .map(|rank| build(&loop_nest(20 + rank % 3, rank % 3), rank))
            .collect();
        vec![
            build(&loop_nest(50, 0), 0).encode(),
            build(&random, 3).encode(),
            merge(&parts).unwrap().encode(),
            build(&[], 0).encode(),
        ]
    })
}

/// Everything a reader may do with a decoded grammar, bounded, must agree.
fn use_as_readers_do(g: &Grammar) {
    let again = Grammar::decode(&g.encode()).expect("an accepted grammar re-encodes");
    assert_eq!(&again, g);
    for &(stream, _) in g.streams().iter().take(8) {
        let len = g.stream_len(stream).unwrap();
        let head: Vec<u32> = g.expand(stream).unwrap().take(CALL_LIMIT).collect();
        assert_eq!(head.len() as u64, len.min(CALL_LIMIT as u64));
        // Seeking lands where expanding from the start gets to.
        for skip in [0, len / 2, len.saturating_sub(1)] {
            if skip < head.len() as u64 {
                let from = g.expand_from(stream, skip).unwrap().next();
                assert_eq!(
                    from,
                    Some(head[skip as usize]),
                    "stream {stream}, skip {skip}"
                );
            }
        }
        if len <= CALL_LIMIT as u64 {
            // Counting without expanding agrees with expanding.
            let rule = g.start(stream).unwrap();
            let mut counted = g.terminal_counts(rule);
            let mut seen: Vec<(u32, u64)> = Vec::new();
            let mut sorted = head.clone();
            sorted.sort_unstable();
            for t in sorted {
                match seen.last_mut() {
                    Some((last, n)) if *last == t => *n += 1,
                    _ => seen.push((t, 1)),
                }
            }
            counted.retain(|&(_, n)| n > 0);
            assert_eq!(counted, seen);
        }
    }
    let total: u64 = g
        .total_terminal_counts()
        .iter()
        .fold(0u64, |s, &(_, n)| s.saturating_add(n));
    assert_eq!(total, g.total_len());
}

/// Streams a fuzzed grammar may describe. `Grammar::decode` allows 2^24,
/// which a few bytes can declare (128 MiB, and seconds in a debug build);
/// the limit is the one thing `decode_streams` adds, and readers that know
/// their stream count use it.
const MAX_STREAMS: usize = 1 << 12;

fn check(bytes: Vec<u8>) {
    let len = bytes.len();
    let run = bounded(move || {
        if let Ok(g) = Grammar::decode_streams(&bytes, MAX_STREAMS) {
            use_as_readers_do(&g);
        }
    });
    assert!(
        run.largest_allocation <= allocation_budget(len),
        "{} bytes allocated at once for {len} bytes",
        run.largest_allocation
    );
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn edited_encodings(which in any::<prop::sample::Index>(), edits in edits()) {
        let mut bytes = samples()[which.index(samples().len())].clone();
        apply(&mut bytes, &edits);
        check(bytes);
    }

    /// Random bytes after the version byte, so that decoding gets past it.
    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut with_version = vec![1u8];
        with_version.extend(bytes);
        check(with_version);
    }
}

#[test]
fn the_samples_are_accepted_and_agree() {
    for bytes in samples() {
        let g = Grammar::decode(bytes).unwrap();
        use_as_readers_do(&g);
    }
    assert!(Grammar::decode(&samples()[2]).unwrap().streams().len() == 64);
}
