//! Compact binary encoding of a [`Grammar`] with LEB128 varints.
//!
//! ```text
//! grammar  = version:u8(=2) rules:varint rule* groups:varint group*
//! rule     = runs:varint run*
//! run      = head:varint [count-2:varint]      head = step<<2 | is_rule<<1 | (count>1)
//! group    = start_rule:varint progressions:varint (first:varint stride:varint len:varint)*
//! ```
//! A run's `step` is its symbol's value less the value of the rule's
//! previous symbol of the same kind (terminal or rule; 0 before the
//! first), zigzagged: terminals are numbered in the order they first
//! appear, so a rule that lists many of them (a stream that never
//! repeats, whose start rule is every call) steps by 1 from one to the
//! next, a byte each, where their values took three from terminal 16,384
//! on (and zstd then removes the bytes, which it could not from the
//! values). Version 1 stored the value itself; it is still read.
//!
//! A group lists the streams that share one start rule as arithmetic
//! progressions of stream ids, so 10,000 ranks with one behaviour cost a few
//! bytes. Decoding validates everything and never panics.

use crate::grammar::{Grammar, GrammarError, MAX_STREAMS};
use crate::symbol::{RuleId, Run, StreamId, Symbol};
use mpigram_varint::{ByteReader, PutVarint, unzigzag, zigzag};
use rustc_hash::FxHashMap;

const VERSION: u8 = 2;
/// The oldest version read: its runs hold their symbols' values.
const VALUES_VERSION: u8 = 1;

/// Why bytes are not an encoded grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(
        "grammar encoding version {found} is not supported (this reader knows {VALUES_VERSION} to {VERSION})"
    )]
    Version { found: u8 },
    #[error("grammar data, {0}")]
    Malformed(#[from] mpigram_varint::DecodeError),
    #[error("grammar data, byte {offset}: bad {what}")]
    BadValue { what: &'static str, offset: usize },
    #[error("invalid grammar: {0}")]
    Invalid(#[from] GrammarError),
}

impl Grammar {
    /// The grammar as bytes; [`Grammar::decode`] gives it back exactly.
    pub fn encode(&self) -> Vec<u8> {
        let (runs, bounds) = self.raw();
        let mut out = Vec::with_capacity(runs.len() * 2 + 16);
        out.push(VERSION);
        out.put_u64((bounds.len() - 1) as u64);
        for w in bounds.windows(2) {
            out.put_u64(u64::from(w[1] - w[0]));
            let mut previous = [0u32; 2];
            for run in &runs[w[0] as usize..w[1] as usize] {
                let (value, is_rule) = match run.symbol {
                    Symbol::Terminal(t) => (t, 0),
                    Symbol::Rule(r) => (r, 1),
                };
                let step = i64::from(value) - i64::from(previous[is_rule]);
                previous[is_rule] = value;
                let repeated = u64::from(run.count > 1);
                let head = (zigzag(step) << 2) | ((is_rule as u64) << 1) | repeated;
                out.put_u64(head);
                if run.count > 1 {
                    out.put_u64(run.count - 2);
                }
            }
        }
        let groups = stream_groups(self.streams());
        out.put_u64(groups.len() as u64);
        for (rule, streams) in groups {
            out.put_u64(u64::from(rule));
            let progressions = progressions(&streams);
            out.put_u64(progressions.len() as u64);
            for (first, stride, len) in progressions {
                out.put_u64(u64::from(first));
                out.put_u64(u64::from(stride));
                out.put_u64(u64::from(len));
            }
        }
        out
    }

    /// Reads a grammar written by [`Grammar::encode`], checking every value.
    /// It may describe up to [`MAX_STREAMS`] streams: a few bytes of stream
    /// progressions can declare that many, which costs 8 bytes each in
    /// memory (128 MiB); a reader that knows how many streams to expect
    /// says so with [`Grammar::decode_streams`].
    pub fn decode(bytes: &[u8]) -> Result<Grammar, DecodeError> {
        Grammar::decode_streams(bytes, MAX_STREAMS)
    }

    /// [`Grammar::decode`] of a grammar that describes at most
    /// `max_streams` streams (one rank's file: one), which is refused
    /// before they are listed in memory.
    pub fn decode_streams(bytes: &[u8], max_streams: usize) -> Result<Grammar, DecodeError> {
        Grammar::decode_with(bytes, max_streams, None)
    }

    /// [`Grammar::decode_streams`] keeping only stream `stream` (the other
    /// streams are checked but not listed): one rank of a whole-run trace,
    /// in time that does not grow with the number of streams.
    pub fn decode_stream(
        bytes: &[u8],
        max_streams: usize,
        stream: StreamId,
    ) -> Result<Grammar, DecodeError> {
        Grammar::decode_with(bytes, max_streams, Some(stream))
    }

    fn decode_with(
        bytes: &[u8],
        max_streams: usize,
        only: Option<StreamId>,
    ) -> Result<Grammar, DecodeError> {
        let max_streams = max_streams.min(MAX_STREAMS);
        let mut declared = 0usize;
        let mut r = ByteReader::new(bytes);
        let version = r.u8()?;
        if !(VALUES_VERSION..=VERSION).contains(&version) {
            return Err(DecodeError::Version { found: version });
        }
        let num_rules = r.count()?;
        let mut runs = Vec::new();
        let mut bounds = Vec::with_capacity(num_rules + 1);
        bounds.push(0u32);
        for _ in 0..num_rules {
            let mut previous = [0u32; 2];
            for _ in 0..r.count()? {
                let at = r.position();
                let head = r.u64()?;
                let is_rule = usize::from(head & 2 != 0);
                let value = match version {
                    VALUES_VERSION => Some((head >> 2) as i64),
                    _ => i64::from(previous[is_rule]).checked_add(unzigzag(head >> 2)),
                };
                let value =
                    value
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or(DecodeError::BadValue {
                            what: "symbol",
                            offset: at,
                        })?;
                previous[is_rule] = value;
                let symbol = if is_rule == 1 {
                    Symbol::Rule(value)
                } else {
                    Symbol::Terminal(value)
                };
                let count = if head & 1 != 0 {
                    let at = r.position();
                    r.u64()?.checked_add(2).ok_or(DecodeError::BadValue {
                        what: "count",
                        offset: at,
                    })?
                } else {
                    1
                };
                runs.push(Run::new(symbol, count));
            }
            bounds.push(u32::try_from(runs.len()).map_err(|_| GrammarError::TooLarge)?);
        }
        let mut streams: Vec<(StreamId, RuleId)> = Vec::new();
        for _ in 0..r.count()? {
            let rule = r.u32()?;
            for _ in 0..r.count()? {
                let at = r.position();
                let (first, stride, len) = (r.u32()?, r.u32()?, r.u32()?);
                let bad = DecodeError::BadValue {
                    what: "stream progression",
                    offset: at,
                };
                declared += len as usize;
                let progression = Progression { first, stride, len };
                if !progression.is_valid() || declared > max_streams {
                    return Err(bad);
                }
                match only {
                    None => streams.extend((0..len).map(|i| (first + stride * i, rule))),
                    Some(s) => {
                        if progression.position(s).is_some() {
                            streams.push((s, rule));
                        }
                    }
                }
            }
        }
        r.finish()?;
        Ok(Grammar::from_parts(runs, bounds, streams)?)
    }
}

/// Streams grouped by start rule, groups in order of their first stream.
fn stream_groups(streams: &[(StreamId, RuleId)]) -> Vec<(RuleId, Vec<StreamId>)> {
    let mut groups: Vec<(RuleId, Vec<StreamId>)> = Vec::new();
    let mut by_rule: FxHashMap<RuleId, usize> = FxHashMap::default();
    for &(stream, rule) in streams {
        let i = *by_rule.entry(rule).or_insert_with(|| {
            groups.push((rule, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(stream);
    }
    groups
}

/// An arithmetic progression of ids: `first`, `first + stride`, ... (`len` ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progression {
    pub first: u32,
    pub stride: u32,
    pub len: u32,
}

impl Progression {
    /// Not empty, a stride unless it is one id, and every id within u32.
    pub fn is_valid(&self) -> bool {
        let last = u64::from(self.first) + u64::from(self.stride) * u64::from(self.len.max(1) - 1);
        self.len > 0 && (self.len == 1 || self.stride > 0) && last <= u64::from(u32::MAX)
    }

    /// Where `id` stands in a valid progression, if it is one of its ids.
    pub fn position(&self, id: u32) -> Option<u32> {
        let offset = id.checked_sub(self.first)?;
        let i = match offset.checked_rem(self.stride) {
            Some(0) => offset / self.stride,
            None if offset == 0 => 0,
            _ => return None,
        };
        (i < self.len).then_some(i)
    }
}

/// Sorted, distinct ids as greedy arithmetic progressions (first, stride, len).
pub fn progressions(ids: &[StreamId]) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let first = ids[i];
        let stride = ids.get(i + 1).map_or(1, |&next| next - first);
        let mut len = 1;
        while i + len < ids.len() && ids[i + len] - ids[i + len - 1] == stride {
            len += 1;
        }
        out.push((first, stride, len as u32));
        i += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_stream(rules: Vec<Vec<Run>>) -> Grammar {
        let start = rules.len() as RuleId - 1;
        Grammar::new(rules, vec![(0, start)]).unwrap()
    }

    /// A start rule of terminals that each appear once, in the order
    /// they are numbered (a stream that never repeats): a byte each.
    #[test]
    fn new_terminals_in_order_take_a_byte_each() {
        let n = 100_000;
        let g = one_stream(vec![
            (0..n).map(|t| Run::new(Symbol::Terminal(t), 1)).collect(),
        ]);
        let bytes = g.encode();
        assert!(bytes.len() < n as usize + 16, "{} bytes", bytes.len());
        assert!(
            bytes[8..n as usize].iter().all(|&b| b == 1 << 3),
            "steps of +1"
        );
        assert_eq!(Grammar::decode(&bytes).unwrap(), g);
    }

    /// Steps back and forth, terminals and rules apart, and repeated runs.
    #[test]
    fn steps_of_either_sign_decode_to_the_values() {
        let t = |v, n| Run::new(Symbol::Terminal(v), n);
        let g = one_stream(vec![
            vec![t(7, 1), t(u32::MAX >> 2, 1)],
            vec![t(9, 3), Run::new(Symbol::Rule(0), 2), t(2, 1), t(9, 1)],
            vec![
                Run::new(Symbol::Rule(1), 1),
                t(0, 1),
                Run::new(Symbol::Rule(0), 1),
            ],
        ]);
        let bytes = g.encode();
        assert_eq!(bytes[0], VERSION);
        assert_eq!(Grammar::decode(&bytes).unwrap(), g);
    }

    /// Version 1 held the values themselves; such bytes still decode.
    #[test]
    fn version_1_is_read() {
        // Rule 0: terminal 5 twice, terminal 300; stream 0 starts at it.
        let mut v1 = vec![1u8, 1, 2];
        v1.put_u64(5 << 2 | 1);
        v1.push(0);
        v1.put_u64(300 << 2);
        v1.extend([1, 0, 1, 0, 1, 1]);
        let g = Grammar::decode(&v1).unwrap();
        let t = |v, n| Run::new(Symbol::Terminal(v), n);
        assert_eq!(g, one_stream(vec![vec![t(5, 2), t(300, 1)]]));
        assert_ne!(g.encode(), v1, "written as version 2");
    }

    /// A step that leaves the values a symbol may take is refused.
    #[test]
    fn a_step_below_zero_is_refused() {
        let mut bytes = vec![VERSION, 1, 1];
        bytes.put_u64(zigzag(-1) << 2);
        bytes.extend([1, 0, 1, 0, 1, 1]);
        let e = Grammar::decode(&bytes).unwrap_err();
        assert_eq!(
            e,
            DecodeError::BadValue {
                what: "symbol",
                offset: 3
            }
        );
    }
}
