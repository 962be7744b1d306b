//! Call sites: where in the grammar a call comes from — the innermost rule
//! holding it and the position of its run in that rule's body (`R5:2`).
//! A loop body's call is one call site however many iterations run, and
//! ranks that share the loop's rule share its call sites.

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

/// Finds call sites by call index, without expanding the grammar.
pub struct Sites<'g> {
    grammar: &'g Grammar,
    /// Per rule, the expansion offset of each run of its body.
    offsets: Vec<Vec<u64>>,
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
        Sites { grammar, offsets }
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
}
