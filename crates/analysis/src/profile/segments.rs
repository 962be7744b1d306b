//! Segments: the iterations of the loops the grammar found.
//!
//! Each expansion of a repeated symbol is one segment — a rule or a call
//! whose run has a repetition count of 2 or more (`R4^100`: 100
//! iterations), or a rule the rank expands more than once. Its *context*
//! is the symbol and the loop nest it sits in: the repeated symbols that
//! enclose it, outermost first (the start rule, one per rank, is not part
//! of it, so ranks that run the same loops share contexts). Segments
//! nest: an outer iteration holds the inner loop's iterations.
//!
//! A segment begins where the rank's previous call ended (the computation
//! before the iteration's first call is part of the iteration) and ends
//! with its last call.

use mpigram_grammar::{Grammar, RuleId, Symbol};
use rustc_hash::FxHashMap;

/// A loop nest, outermost first, ending with the segment's own symbol.
pub type ContextPath = Vec<Symbol>;

/// One iteration on one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Index into the rank's [`RankSegments::contexts`].
    pub context: u32,
    /// Index of its first call in the rank's stream.
    pub first: u64,
    /// Number of calls.
    pub calls: u64,
}

/// A rank's segments, in the order they begin (an outer iteration before
/// its inner ones).
#[derive(Debug, Default)]
pub struct RankSegments {
    /// The rank's contexts, in order of first appearance.
    pub contexts: Vec<ContextPath>,
    pub segments: Vec<Segment>,
}

/// The segments of `stream` in `grammar` (empty if it has no such stream).
pub fn rank_segments(grammar: &Grammar, stream: u32) -> RankSegments {
    let mut walk = SegmentWalk::new(grammar, stream);
    let segments = walk.by_ref().collect();
    RankSegments {
        contexts: walk.contexts,
        segments,
    }
}

/// The segments of one stream, found as they are asked for, in the order
/// they begin: memory grows with the grammar's depth and its contexts,
/// not with the segments.
pub struct SegmentWalk<'g> {
    grammar: &'g Grammar,
    uses: Vec<u64>,
    /// Calls expanded so far.
    pos: u64,
    /// The rules being walked: rule, next run, repetitions of the run in
    /// progress left, and whether that run is a segment.
    stack: Vec<Frame>,
    /// The enclosing segments' symbols.
    path: ContextPath,
    ids: FxHashMap<ContextPath, u32>,
    /// The stream's contexts, in order of first appearance.
    pub contexts: Vec<ContextPath>,
}

struct Frame {
    rule: RuleId,
    next: usize,
    /// The run being expanded: repetitions left after this one, its
    /// context if repeated.
    left: u64,
    context: Option<u32>,
}

impl<'g> SegmentWalk<'g> {
    pub fn new(grammar: &'g Grammar, stream: u32) -> SegmentWalk<'g> {
        let start = grammar.start(stream);
        SegmentWalk {
            grammar,
            uses: start.map(|s| grammar.rule_uses(s)).unwrap_or_default(),
            pos: 0,
            stack: start
                .map(|rule| Frame {
                    rule,
                    next: 0,
                    left: 0,
                    context: None,
                })
                .into_iter()
                .collect(),
            path: Vec::new(),
            ids: FxHashMap::default(),
            contexts: Vec::new(),
        }
    }

    fn context(&mut self) -> u32 {
        if let Some(&id) = self.ids.get(&self.path) {
            return id;
        }
        let id = self.contexts.len() as u32;
        self.contexts.push(self.path.clone());
        self.ids.insert(self.path.clone(), id);
        id
    }

    /// Starts an expansion of `symbol` (one iteration of its run).
    fn enter(&mut self, symbol: Symbol, context: Option<u32>) -> Option<Segment> {
        let segment = context.map(|context| Segment {
            context,
            first: self.pos,
            calls: self.grammar.symbol_len(symbol),
        });
        match symbol {
            Symbol::Terminal(_) => self.pos += 1,
            Symbol::Rule(r) => self.stack.push(Frame {
                rule: r,
                next: 0,
                left: 0,
                context: None,
            }),
        }
        segment
    }
}

impl Iterator for SegmentWalk<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        loop {
            let depth = self.stack.len();
            let top = self.stack.last_mut()?;
            // More repetitions of the run in progress (a terminal run's
            // repetitions are walked here too).
            if top.left > 0 {
                top.left -= 1;
                let run = self.grammar.rule(top.rule)[top.next - 1];
                let context = top.context;
                if let Some(s) = self.enter(run.symbol, context) {
                    return Some(s);
                }
                continue;
            }
            // The run in progress is over: leave its context.
            if top.context.take().is_some() {
                self.path.pop();
            }
            let Some(run) = self.grammar.rule(top.rule).get(top.next).copied() else {
                self.stack.pop();
                debug_assert!(self.stack.len() < depth);
                continue;
            };
            top.next += 1;
            let repeated = run.count >= 2
                || matches!(run.symbol, Symbol::Rule(r) if self.uses[r as usize] >= 2);
            let context = if repeated && run.count > 0 {
                self.path.push(run.symbol);
                let c = self.context();
                self.stack.last_mut().expect("the top").context = Some(c);
                Some(c)
            } else {
                None
            };
            self.stack.last_mut().expect("the top").left = run.count.saturating_sub(1);
            if run.count == 0 {
                continue;
            }
            if let Some(s) = self.enter(run.symbol, context) {
                return Some(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_grammar::Run;

    fn t(x: u32) -> Run {
        Run::terminal(x)
    }

    fn r(rule: u32, count: u64) -> Run {
        Run::new(Symbol::Rule(rule), count)
    }

    #[test]
    fn loops_and_nested_loops_become_segments_with_their_nest() {
        // R0 = 1 2; R1 = 3 R0^2 4 (outer body with an inner loop);
        // stream 0: 0 R1^3 5 5 R0
        let g = Grammar::new(
            vec![
                vec![t(1), t(2)],
                vec![t(3), r(0, 2), t(4)],
                vec![t(0), r(1, 3), Run::new(Symbol::Terminal(5), 2), r(0, 1)],
            ],
            vec![(0, 2)],
        )
        .unwrap();
        let s = rank_segments(&g, 0);
        let rule = Symbol::Rule;
        assert_eq!(
            s.contexts,
            vec![
                vec![rule(1)],
                vec![rule(1), rule(0)],
                vec![Symbol::Terminal(5)],
                vec![rule(0)],
            ]
        );
        let seg = |context, first, calls| Segment {
            context,
            first,
            calls,
        };
        // Outer iterations of 6 calls from call 1; two inner ones in each.
        let mut want = Vec::new();
        for i in 0..3 {
            let at = 1 + 6 * i;
            want.extend([seg(0, at, 6), seg(1, at + 1, 2), seg(1, at + 3, 2)]);
        }
        // 5 5 at calls 19, 20; R0 used 7 times in all, so its last use is one too.
        want.extend([seg(2, 19, 1), seg(2, 20, 1), seg(3, 21, 2)]);
        assert_eq!(s.segments, want);
    }

    #[test]
    fn a_stream_without_loops_has_no_segments() {
        let g = Grammar::new(vec![vec![t(1), t(2), t(3)]], vec![(0, 0)]).unwrap();
        let s = rank_segments(&g, 0);
        assert!(s.segments.is_empty());
        assert!(rank_segments(&g, 7).segments.is_empty());
    }
}
