//! Lazy expansion: the terminals of a rule, one at a time, in memory
//! proportional to the grammar's depth, never the expansion's length.

use crate::grammar::Grammar;
use crate::symbol::{RuleId, Run, StreamId, Symbol};

/// Iterator over the terminals a rule expands to.
#[derive(Clone)]
pub struct Expansion<'g> {
    grammar: &'g Grammar,
    /// One frame per rule being expanded, innermost last.
    stack: Vec<Frame<'g>>,
    /// Terminals not yet returned.
    remaining: u64,
}

#[derive(Clone)]
struct Frame<'g> {
    body: &'g [Run],
    /// Index of the current run in `body`.
    pos: usize,
    /// Repetitions of the current run still to expand, the current one included.
    left: u64,
}

impl<'g> Frame<'g> {
    fn new(body: &'g [Run], pos: usize) -> Frame<'g> {
        Frame {
            body,
            pos,
            left: body.get(pos).map_or(0, |run| run.count),
        }
    }

    /// Finishes one repetition of the current run; false when the body is done.
    fn step(&mut self) -> bool {
        self.left -= 1;
        if self.left == 0 {
            self.pos += 1;
            match self.body.get(self.pos) {
                Some(run) => self.left = run.count,
                None => return false,
            }
        }
        true
    }
}

impl<'g> Expansion<'g> {
    /// Expands `rule` from its first terminal.
    pub fn new(grammar: &'g Grammar, rule: RuleId) -> Expansion<'g> {
        Expansion::at(grammar, rule, 0)
    }

    /// Expands `rule` from its `skip`-th terminal (0-based): O(depth * log
    /// body length) using the stored rule lengths. Past the end, the
    /// iterator is empty.
    pub fn at(grammar: &'g Grammar, rule: RuleId, skip: u64) -> Expansion<'g> {
        let total = grammar.rule_len(rule);
        let mut it = Expansion {
            grammar,
            stack: Vec::new(),
            remaining: total.saturating_sub(skip),
        };
        if skip >= total {
            return it;
        }
        let offsets = grammar.run_offsets();
        let (mut rule, mut skip) = (rule, skip);
        loop {
            let body = grammar.rule(rule);
            let base = grammar.rule_start_index(rule);
            let starts = &offsets[base..base + body.len()];
            // The last run starting at or before `skip`.
            let pos = starts.partition_point(|&o| o <= skip) - 1;
            let run = body[pos];
            let len = grammar.symbol_len(run.symbol);
            let within = skip - starts[pos];
            let mut frame = Frame::new(body, pos);
            frame.left = run.count - within / len;
            it.stack.push(frame);
            match run.symbol {
                Symbol::Terminal(_) => return it,
                Symbol::Rule(child) => {
                    rule = child;
                    skip = within % len;
                }
            }
        }
    }

    /// Terminals not yet returned.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Depth of the current position in the rule hierarchy.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Finishes one repetition of the innermost frame's current run, popping
    /// every frame that this completes.
    fn advance(&mut self) {
        while let Some(frame) = self.stack.last_mut() {
            if frame.step() {
                return;
            }
            self.stack.pop();
        }
    }
}

impl Iterator for Expansion<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        loop {
            let frame = self.stack.last()?;
            let run = frame.body[frame.pos];
            match run.symbol {
                Symbol::Terminal(t) => {
                    self.advance();
                    self.remaining -= 1;
                    return Some(t);
                }
                Symbol::Rule(child) => {
                    let body = self.grammar.rule(child);
                    self.stack.push(Frame::new(body, 0));
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, usize::try_from(self.remaining).ok())
    }
}

impl Grammar {
    /// The terminals of `stream`, lazily; `None` if the stream is absent.
    pub fn expand(&self, stream: StreamId) -> Option<Expansion<'_>> {
        self.start(stream).map(|rule| Expansion::new(self, rule))
    }

    /// The terminals of `stream` from its `skip`-th one.
    pub fn expand_from(&self, stream: StreamId, skip: u64) -> Option<Expansion<'_>> {
        self.start(stream)
            .map(|rule| Expansion::at(self, rule, skip))
    }

    /// The terminals of `rule`, lazily.
    pub fn expand_rule(&self, rule: RuleId) -> Expansion<'_> {
        Expansion::new(self, rule)
    }
}
