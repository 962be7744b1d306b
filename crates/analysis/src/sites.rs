//! Call sites: where in the grammar a call comes from — the innermost rule
//! holding it and the position of its run in that rule's body (`R5:2`).
//! A loop body's call is one call site however many iterations run, and
//! ranks that share the loop's rule share its call sites. Two calls of one
//! signature in different places of the program are different call sites.
//!
//! Used by the trace profile (wait states) and the critical path (time on
//! the path and waits per call site).

use mpigram_grammar::{Grammar, RuleId, Symbol};
use std::fmt;

/// A call's place in the grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallSite {
    pub rule: RuleId,
    /// Index of the call's run in the rule's body.
    pub position: u32,
}

impl fmt::Display for CallSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "R{}:{}", self.rule, self.position)
    }
}

/// Finds call sites by call index, without expanding the grammar, and
/// numbers them densely (rule by rule, run by run) for tables keyed by
/// call site.
pub struct Sites<'g> {
    grammar: &'g Grammar,
    /// Per rule, the expansion offset of each run of its body.
    offsets: Vec<Vec<u64>>,
    /// Per rule, the number of its first run; one more entry: the runs of
    /// all rules.
    first: Vec<u32>,
}

impl<'g> Sites<'g> {
    pub fn new(grammar: &'g Grammar) -> Sites<'g> {
        let offsets = grammar
            .rules()
            .map(|body| {
                let mut at = 0u64;
                body.iter()
                    .map(|run| {
                        let o = at;
                        at = at.saturating_add(
                            grammar.symbol_len(run.symbol).saturating_mul(run.count),
                        );
                        o
                    })
                    .collect()
            })
            .collect();
        let mut first = Vec::with_capacity(grammar.num_rules() + 1);
        let mut at = 0u32;
        for body in grammar.rules() {
            first.push(at);
            // A grammar held in memory has fewer than 2^32 runs.
            at = at.saturating_add(u32::try_from(body.len()).unwrap_or(u32::MAX));
        }
        first.push(at);
        Sites {
            grammar,
            offsets,
            first,
        }
    }

    /// How many numbers [`Sites::number`] gives out: one per run of the
    /// grammar (a run of a rule is not a call site; its number is unused).
    pub fn count(&self) -> u32 {
        self.first.last().copied().unwrap_or(0)
    }

    /// The dense number of `site`, below [`Sites::count`].
    pub fn number(&self, site: CallSite) -> u32 {
        self.first[site.rule as usize] + site.position
    }

    /// The call site numbered `n`: None past the grammar's runs or at a
    /// run of a rule.
    pub fn numbered(&self, n: u32) -> Option<CallSite> {
        let rule = self.first.partition_point(|&f| f <= n).checked_sub(1)?;
        let site = CallSite {
            rule: rule as RuleId,
            position: n - self.first[rule],
        };
        self.signature(site).map(|_| site)
    }

    /// The signature (terminal) called at `site`.
    pub fn signature(&self, site: CallSite) -> Option<u32> {
        if site.rule as usize >= self.grammar.num_rules() {
            return None;
        }
        match self
            .grammar
            .rule(site.rule)
            .get(site.position as usize)?
            .symbol
        {
            Symbol::Terminal(t) => Some(t),
            Symbol::Rule(_) => None,
        }
    }

    /// The number of the call site of every call of `stream`, in call
    /// order: `numbered(calls[seq]) == of(stream, seq)`. One pass, O(calls);
    /// a rule's sites do not depend on where it is used, so every
    /// repetition of a rule is copied from its first.
    pub fn calls(&self, stream: u32) -> Option<Vec<u32>> {
        let root = self.grammar.start(stream)?;
        let len = usize::try_from(self.grammar.rule_len(root)).unwrap_or(0);
        let mut out: Vec<u32> = Vec::with_capacity(len);
        /// A rule being walked: its current run, and where in `out` the
        /// current run's first repetition began.
        struct Frame {
            rule: RuleId,
            pos: usize,
            start: usize,
        }
        let mut stack = vec![Frame {
            rule: root,
            pos: 0,
            start: 0,
        }];
        while let Some(top) = stack.last_mut() {
            let body = self.grammar.rule(top.rule);
            let Some(run) = body.get(top.pos) else {
                stack.pop();
                // The parent's current run (of this rule) has its first
                // repetition in `out`: copy the rest.
                if let Some(parent) = stack.last_mut() {
                    let count = self.grammar.rule(parent.rule)[parent.pos].count;
                    let first = parent.start..out.len();
                    for _ in 1..count {
                        out.extend_from_within(first.clone());
                    }
                    parent.pos += 1;
                }
                continue;
            };
            match run.symbol {
                Symbol::Terminal(_) => {
                    let n = self.first[top.rule as usize] + top.pos as u32;
                    let count = usize::try_from(run.count).unwrap_or(usize::MAX);
                    out.extend(std::iter::repeat_n(n, count));
                    top.pos += 1;
                }
                Symbol::Rule(child) => {
                    top.start = out.len();
                    stack.push(Frame {
                        rule: child,
                        pos: 0,
                        start: 0,
                    });
                }
            }
        }
        Some(out)
    }

    /// The number of the call site and the signature of every call of
    /// `stream`, in call order, walked as they are asked for: memory grows
    /// with the grammar's depth, not with the calls ([`Sites::calls`]
    /// holds them all).
    pub fn walk(&self, stream: u32) -> Option<SiteWalk<'_, 'g>> {
        let root = self.grammar.start(stream)?;
        Some(SiteWalk {
            sites: self,
            stack: vec![WalkFrame {
                rule: root,
                pos: 0,
                left: 0,
            }],
            run: (0, 0),
            run_left: 0,
        })
    }

    /// The call site of call `seq` of `stream`; None past its end.
    pub fn of(&self, stream: u32, seq: u64) -> Option<CallSite> {
        let mut rule = self.grammar.start(stream)?;
        let mut skip = seq;
        if skip >= self.grammar.rule_len(rule) {
            return None;
        }
        loop {
            let starts = &self.offsets[rule as usize];
            let pos = starts.partition_point(|&o| o <= skip).checked_sub(1)?;
            let run = self.grammar.rule(rule)[pos];
            match run.symbol {
                Symbol::Terminal(_) => {
                    return Some(CallSite {
                        rule,
                        position: pos as u32,
                    });
                }
                Symbol::Rule(child) => {
                    skip = (skip - starts[pos]) % self.grammar.rule_len(child);
                    rule = child;
                }
            }
        }
    }

    /// How many times `stream` runs the call at `site`, from the grammar.
    pub fn executions(&self, uses: &[u64], site: CallSite) -> u64 {
        let count = self
            .grammar
            .rule(site.rule)
            .get(site.position as usize)
            .map_or(0, |run| run.count);
        uses.get(site.rule as usize)
            .copied()
            .unwrap_or(0)
            .saturating_mul(count)
    }
}

/// The calls of one stream as (call site number, signature), lazily
/// ([`Sites::walk`]).
pub struct SiteWalk<'s, 'g> {
    sites: &'s Sites<'g>,
    /// The rules being walked, outermost first.
    stack: Vec<WalkFrame>,
    /// The run of a terminal being repeated, and repetitions left.
    run: (u32, u32),
    run_left: u64,
}

struct WalkFrame {
    rule: RuleId,
    /// The run being walked.
    pos: usize,
    /// Repetitions of that run (of a rule) left after the one in progress.
    left: u64,
}

impl Iterator for SiteWalk<'_, '_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        if self.run_left > 0 {
            self.run_left -= 1;
            return Some(self.run);
        }
        let grammar = self.sites.grammar;
        loop {
            let top = self.stack.last_mut()?;
            let Some(run) = grammar.rule(top.rule).get(top.pos).copied() else {
                self.stack.pop();
                if let Some(parent) = self.stack.last_mut() {
                    if parent.left > 0 {
                        parent.left -= 1;
                        let child = match grammar.rule(parent.rule)[parent.pos].symbol {
                            Symbol::Rule(child) => child,
                            Symbol::Terminal(_) => unreachable!("a frame is pushed for a rule"),
                        };
                        self.stack.push(WalkFrame {
                            rule: child,
                            pos: 0,
                            left: 0,
                        });
                    } else {
                        parent.pos += 1;
                    }
                }
                continue;
            };
            if run.count == 0 {
                top.pos += 1;
                continue;
            }
            match run.symbol {
                Symbol::Terminal(t) => {
                    let n = self.sites.first[top.rule as usize] + top.pos as u32;
                    top.pos += 1;
                    self.run = (n, t);
                    self.run_left = run.count - 1;
                    return Some(self.run);
                }
                Symbol::Rule(child) => {
                    top.left = run.count - 1;
                    self.stack.push(WalkFrame {
                        rule: child,
                        pos: 0,
                        left: 0,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_grammar::Run;

    #[test]
    fn call_sites_name_the_innermost_rule_and_run() {
        // R0 = 7 8^2; R1 = 1 R0^3 2; stream 0: R1
        let g = Grammar::new(
            vec![
                vec![Run::terminal(7), Run::new(Symbol::Terminal(8), 2)],
                vec![
                    Run::terminal(1),
                    Run::new(Symbol::Rule(0), 3),
                    Run::terminal(2),
                ],
            ],
            vec![(0, 1)],
        )
        .unwrap();
        let sites = Sites::new(&g);
        let site = |rule, position| Some(CallSite { rule, position });
        assert_eq!(sites.of(0, 0), site(1, 0));
        for i in 0..3 {
            assert_eq!(sites.of(0, 1 + 3 * i), site(0, 0));
            assert_eq!(sites.of(0, 2 + 3 * i), site(0, 1));
            assert_eq!(sites.of(0, 3 + 3 * i), site(0, 1));
        }
        assert_eq!(sites.of(0, 10), site(1, 2));
        assert_eq!(sites.of(0, 11), None);
        assert_eq!(sites.of(1, 0), None);
        let uses = g.rule_uses(1);
        assert_eq!(
            sites.executions(
                &uses,
                CallSite {
                    rule: 0,
                    position: 1
                }
            ),
            6
        );
        assert_eq!(
            sites.executions(
                &uses,
                CallSite {
                    rule: 1,
                    position: 2
                }
            ),
            1
        );
        assert_eq!(
            CallSite {
                rule: 0,
                position: 1
            }
            .to_string(),
            "R0:1"
        );
    }

    #[test]
    fn every_calls_site_in_one_pass_is_its_site_found_alone() {
        // R0 = 7 8^2; R1 = 9 R0^2; R2 = 1 R0^3 R1^2 2; stream 0: R2,
        // stream 1: R1.
        let g = Grammar::new(
            vec![
                vec![Run::terminal(7), Run::new(Symbol::Terminal(8), 2)],
                vec![Run::terminal(9), Run::new(Symbol::Rule(0), 2)],
                vec![
                    Run::terminal(1),
                    Run::new(Symbol::Rule(0), 3),
                    Run::new(Symbol::Rule(1), 2),
                    Run::terminal(2),
                ],
            ],
            vec![(0, 2), (1, 1)],
        )
        .unwrap();
        let sites = Sites::new(&g);
        assert_eq!(sites.count(), 2 + 2 + 4);
        for stream in [0, 1] {
            let calls = sites.calls(stream).unwrap();
            assert_eq!(Some(calls.len() as u64), g.stream_len(stream));
            for (seq, &n) in calls.iter().enumerate() {
                let site = sites.of(stream, seq as u64).unwrap();
                assert_eq!(sites.numbered(n), Some(site), "stream {stream} call {seq}");
                assert_eq!(sites.number(site), n);
            }
        }
        for stream in [0, 1] {
            let walked: Vec<(u32, u32)> = sites.walk(stream).unwrap().collect();
            let calls = sites.calls(stream).unwrap();
            let terminals: Vec<u32> = g.expand(stream).unwrap().collect();
            assert_eq!(walked.iter().map(|w| w.0).collect::<Vec<_>>(), calls);
            assert_eq!(walked.iter().map(|w| w.1).collect::<Vec<_>>(), terminals);
        }
        assert!(sites.walk(2).is_none());
        assert_eq!(sites.calls(2), None);
        // Runs of rules are not call sites; past the runs there are none.
        assert_eq!(
            sites.numbered(sites.number(CallSite {
                rule: 2,
                position: 1
            })),
            None
        );
        assert_eq!(sites.numbered(sites.count()), None);
        assert_eq!(
            sites.signature(CallSite {
                rule: 1,
                position: 0
            }),
            Some(9)
        );
        assert_eq!(
            sites.signature(CallSite {
                rule: 3,
                position: 0
            }),
            None
        );
    }

    #[test]
    fn one_signature_called_in_two_places_is_two_call_sites() {
        // Signature 5 before a loop and in its body: R0 = 5 6; R1 = 5 R0^4.
        let g = Grammar::new(
            vec![
                vec![Run::terminal(5), Run::terminal(6)],
                vec![Run::terminal(5), Run::new(Symbol::Rule(0), 4)],
            ],
            vec![(0, 1)],
        )
        .unwrap();
        let sites = Sites::new(&g);
        let calls = sites.calls(0).unwrap();
        let of_signature_5: std::collections::BTreeSet<String> = calls
            .iter()
            .filter_map(|&n| sites.numbered(n))
            .filter(|&s| sites.signature(s) == Some(5))
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            of_signature_5.into_iter().collect::<Vec<_>>(),
            ["R0:0", "R1:0"]
        );
        // The loop body's call is one site over its four iterations.
        assert_eq!(calls.iter().filter(|&&n| n == calls[1]).count(), 4);
    }
}
