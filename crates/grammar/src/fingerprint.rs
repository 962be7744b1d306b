//! Fingerprints of expansions: comparing what two grammars expand to, and
//! finding where they first differ, without expanding them.
//!
//! The fingerprint of a sequence `s_1 … s_n` is the polynomial hash
//! `Σ v(s_i)·B^(n−i) mod (2^61 − 1)` (Karp–Rabin), where `v` gives each
//! terminal a value. Fingerprints of concatenations and of `X^k` follow
//! from those of the parts, so every rule's fingerprint costs a few
//! multiplications per run, and the fingerprint of any prefix of a stream
//! costs O(depth · log body) with the per-run offsets. Two different
//! sequences of length n have the same fingerprint with probability at most
//! n / 2^61 for a base chosen independently of them.

use crate::{Grammar, RuleId, Symbol};

const P: u64 = (1 << 61) - 1;
/// The base: a fixed odd number well inside the field.
const BASE: u64 = 0x1d8e_4e27_c47d_124f % P;

fn mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let r = (p as u64 & P) + (p >> 61) as u64;
    if r >= P { r - P } else { r }
}

fn add(a: u64, b: u64) -> u64 {
    let r = a + b;
    if r >= P { r - P } else { r }
}

/// The fingerprint of a sequence: its hash, `BASE^len` and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    hash: u64,
    power: u64,
    pub len: u64,
}

impl Fingerprint {
    /// The empty sequence.
    pub const EMPTY: Fingerprint = Fingerprint {
        hash: 0,
        power: 1,
        len: 0,
    };

    /// A single terminal of value `value`.
    pub fn terminal(value: u64) -> Fingerprint {
        Fingerprint {
            hash: value % P,
            power: BASE,
            len: 1,
        }
    }

    /// `self` followed by `next`.
    pub fn then(self, next: Fingerprint) -> Fingerprint {
        Fingerprint {
            hash: add(mul(self.hash, next.power), next.hash),
            power: mul(self.power, next.power),
            len: self.len + next.len,
        }
    }

    /// `self` repeated `count` times.
    pub fn repeat(self, mut count: u64) -> Fingerprint {
        let (mut out, mut square) = (Fingerprint::EMPTY, self);
        while count > 0 {
            if count & 1 == 1 {
                out = out.then(square);
            }
            count >>= 1;
            if count > 0 {
                square = square.then(square);
            }
        }
        out
    }
}

/// The fingerprint of every rule of a grammar, and of every prefix of its
/// rule bodies' runs.
pub struct Fingerprints<'g> {
    grammar: &'g Grammar,
    /// Fingerprint of each terminal's value, by terminal.
    terminals: Vec<Fingerprint>,
    /// Fingerprint of each rule's expansion.
    rules: Vec<Fingerprint>,
    /// For the runs of rule `r` (indices `bounds[r]..bounds[r + 1]` of the
    /// grammar's runs), the fingerprint of the rule body before each run.
    before_run: Vec<Fingerprint>,
}

impl<'g> Fingerprints<'g> {
    /// Fingerprints of `grammar` where terminal `t` has value
    /// `values[t]` (equal values: equal terminals). A terminal beyond
    /// `values` has value `u64::MAX`.
    pub fn new(grammar: &'g Grammar, values: &[u64]) -> Fingerprints<'g> {
        let terminals: Vec<Fingerprint> =
            values.iter().map(|&v| Fingerprint::terminal(v)).collect();
        let mut rules = Vec::with_capacity(grammar.num_rules());
        let mut before_run = Vec::with_capacity(grammar.num_runs());
        for rule in 0..grammar.num_rules() {
            let mut acc = Fingerprint::EMPTY;
            for run in grammar.rule(rule as RuleId) {
                before_run.push(acc);
                let one = match run.symbol {
                    Symbol::Terminal(t) => terminal_of(&terminals, t),
                    Symbol::Rule(r) => rules[r as usize],
                };
                acc = acc.then(one.repeat(run.count));
            }
            rules.push(acc);
        }
        Fingerprints {
            grammar,
            terminals,
            rules,
            before_run,
        }
    }

    /// The fingerprint of rule `rule`'s whole expansion.
    pub fn rule(&self, rule: RuleId) -> Fingerprint {
        self.rules[rule as usize]
    }

    /// The fingerprint of the first `len` terminals of `rule`'s expansion
    /// (all of it if `len` is larger).
    pub fn prefix(&self, rule: RuleId, len: u64) -> Fingerprint {
        let (mut rule, mut len) = (rule, len);
        let mut acc = Fingerprint::EMPTY;
        loop {
            let whole = self.rules[rule as usize];
            if len >= whole.len {
                return acc.then(whole);
            }
            if len == 0 {
                return acc;
            }
            // The last run that starts at or before `len`.
            let first = self.grammar.run_index(rule);
            let runs = self.grammar.rule(rule);
            let starts = &self.before_run[first..first + runs.len()];
            let i = starts.partition_point(|f| f.len <= len) - 1;
            acc = acc.then(starts[i]);
            len -= starts[i].len;
            let run = runs[i];
            let one = match run.symbol {
                Symbol::Terminal(t) => terminal_of(&self.terminals, t),
                Symbol::Rule(r) => self.rules[r as usize],
            };
            let whole_copies = len / one.len;
            acc = acc.then(one.repeat(whole_copies));
            len -= whole_copies * one.len;
            match run.symbol {
                Symbol::Rule(r) if len > 0 => rule = r,
                _ => return acc,
            }
        }
    }
}

fn terminal_of(terminals: &[Fingerprint], t: u32) -> Fingerprint {
    terminals
        .get(t as usize)
        .copied()
        .unwrap_or(Fingerprint::terminal(u64::MAX))
}

/// The length of the longest common prefix of rule `a` of `fa` and rule
/// `b` of `fb` (terminals compared by the values each was built with): a
/// binary search on prefix fingerprints, O(log n · depth · log body).
pub fn common_prefix(fa: &Fingerprints<'_>, a: RuleId, fb: &Fingerprints<'_>, b: RuleId) -> u64 {
    let (la, lb) = (fa.rule(a).len, fb.rule(b).len);
    let n = la.min(lb);
    if fa.prefix(a, n) == fb.prefix(b, n) {
        return n;
    }
    // Invariant: prefixes of length `lo` agree, of length `hi` differ.
    let (mut lo, mut hi) = (0, n);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fa.prefix(a, mid) == fb.prefix(b, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sequitur;

    fn build(stream: &[u32]) -> Grammar {
        let mut s = Sequitur::new();
        for &t in stream {
            s.push(t);
        }
        s.grammar(0)
    }

    fn plain(stream: &[u32]) -> Fingerprint {
        stream.iter().fold(Fingerprint::EMPTY, |acc, &t| {
            acc.then(Fingerprint::terminal(u64::from(t) * 7919 + 1))
        })
    }

    #[test]
    fn prefixes_of_a_grammar_match_the_expanded_stream() {
        let mut stream = Vec::new();
        for i in 0..300u32 {
            stream.extend([1, 2, 3]);
            if i % 7 == 0 {
                stream.push(4 + i % 3);
            }
        }
        let g = build(&stream);
        let values: Vec<u64> = (0..8).map(|t| t * 7919 + 1).collect();
        let f = Fingerprints::new(&g, &values);
        let start = g.start(0).unwrap();
        assert_eq!(f.rule(start), plain(&stream));
        for len in [0, 1, 2, 3, 4, 5, 100, 101, 555, stream.len() as u64 - 1] {
            assert_eq!(
                f.prefix(start, len),
                plain(&stream[..len as usize]),
                "len {len}"
            );
        }
    }

    #[test]
    fn the_common_prefix_of_two_long_loops_is_found_without_expanding_them() {
        // 10^12 iterations: expanding would take hours.
        let g = |last: u32| {
            Grammar::new(
                vec![
                    vec![crate::Run::terminal(1), crate::Run::terminal(2)],
                    vec![
                        crate::Run::new(Symbol::Rule(0), 1_000_000_000_000),
                        crate::Run::terminal(last),
                    ],
                ],
                vec![(0, 1)],
            )
            .unwrap()
        };
        let (a, b) = (g(5), g(6));
        let values: Vec<u64> = (0..8).collect();
        let (fa, fb) = (
            Fingerprints::new(&a, &values),
            Fingerprints::new(&b, &values),
        );
        assert_eq!(common_prefix(&fa, 1, &fb, 1), 2_000_000_000_000);
        assert_eq!(common_prefix(&fa, 1, &fa, 1), 2_000_000_000_001);
        // A different first iteration count: the prefix ends inside the loop.
        let c = Grammar::new(
            vec![
                vec![crate::Run::terminal(1), crate::Run::terminal(2)],
                vec![
                    crate::Run::new(Symbol::Rule(0), 7),
                    crate::Run::terminal(1),
                    crate::Run::terminal(3),
                ],
            ],
            vec![(0, 1)],
        )
        .unwrap();
        let fc = Fingerprints::new(&c, &values);
        assert_eq!(common_prefix(&fa, 1, &fc, 1), 15);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::Sequitur;
    use proptest::prelude::*;

    fn build(stream: &[u32]) -> Grammar {
        let mut s = Sequitur::new();
        for &t in stream {
            s.push(t);
        }
        s.grammar(0)
    }

    /// Loop-shaped streams over a small alphabet, so that grammars nest.
    fn stream() -> impl Strategy<Value = Vec<u32>> {
        prop::collection::vec((prop::collection::vec(0u32..4, 1..5), 1usize..40), 1..6).prop_map(
            |parts| {
                parts
                    .into_iter()
                    .flat_map(|(body, n)| body.repeat(n))
                    .collect()
            },
        )
    }

    proptest! {
        #[test]
        fn common_prefix_is_that_of_the_expansions(a in stream(), edit in 0usize..1000, to in 0u32..5, cut in any::<bool>()) {
            let mut b = a.clone();
            let at = edit % b.len();
            if cut { b.truncate(at) } else { b[at] = to }
            let (ga, gb) = (build(&a), build(&b));
            let values: Vec<u64> = (0..5).map(|t| t * 1_000_003 + 17).collect();
            let (fa, fb) = (Fingerprints::new(&ga, &values), Fingerprints::new(&gb, &values));
            let naive = a.iter().zip(&b).take_while(|(x, y)| x == y).count() as u64;
            let (sa, sb) = (ga.start(0).unwrap(), gb.start(0).unwrap());
            prop_assert_eq!(common_prefix(&fa, sa, &fb, sb), naive);
            prop_assert_eq!(fa.rule(sa) == fb.rule(sb), a == b);
        }
    }
}
