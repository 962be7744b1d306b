//! Grammar compression of symbol streams: the heart of mpigram, and a
//! library that knows nothing about MPI.
//!
//! A stream of `u32` terminals is compressed online by [`Sequitur`], an
//! incremental Sequitur extended with repetition counts (`A -> B^k`), so a
//! loop of N identical iterations — any body, loops nested to any depth —
//! costs the same space for every N. The result is a [`Grammar`]: compact,
//! immutable rules that can be
//! - expanded lazily ([`Grammar::expand`], [`Expansion::at`] to seek to the
//!   k-th terminal) in memory proportional to the grammar's depth;
//! - counted without expansion ([`Grammar::rule_len`],
//!   [`Grammar::terminal_counts`], [`Grammar::total_terminal_counts`]);
//! - encoded to bytes and decoded back exactly ([`Grammar::encode`],
//!   [`Grammar::decode`]; malformed bytes give an error, never a panic);
//! - merged across streams ([`merge`]): one start rule per stream, identical
//!   grammars stored once with their list of streams;
//! - compared without expansion ([`Fingerprints`], [`common_prefix`]):
//!   whether two streams are equal, and where they first differ.
//!
//! ```
//! use mpigram_grammar::Sequitur;
//! let mut s = Sequitur::new();
//! for _ in 0..1000 {
//!     for t in [1, 2, 3] {
//!         s.push(t);
//!     }
//! }
//! let g = s.grammar(0);
//! assert_eq!(g.stream_len(0), Some(3000));
//! assert_eq!(g.num_rules(), 2); // R0 -> 1 2 3, R1 -> R0^1000
//! assert!(g.expand(0).unwrap().eq([1, 2, 3].repeat(1000)));
//! ```

mod encode;
mod expand;
mod fingerprint;
mod grammar;
mod merge;
mod sequitur;
mod symbol;

pub use encode::{DecodeError, Progression, progressions};
pub use expand::Expansion;
pub use fingerprint::{Fingerprint, Fingerprints, common_prefix};
pub use grammar::{Grammar, GrammarError, MAX_PREDECESSORS, MAX_STREAMS};
pub use merge::{merge, share_across_streams, union};
pub use sequitur::Sequitur;
pub use symbol::{MAX_TERMINAL, RuleId, Run, StreamId, Symbol};
