//! Merging grammars of many streams (one per rank) into one grammar.
//!
//! 1. Identity check: parts with the same rules are stored once; their
//!    streams all point at the one copy (a memcmp-speed pass).
//! 2. Renaming: the rules of the distinct parts are numbered into one
//!    space; rules with identical bodies become one rule (hash-consing), so
//!    a loop shared by ranks with different grammars is stored once.
//! 3. Cross-stream pass ([`merge`] only): Sequitur runs once over the start
//!    rules of the distinct streams, separated by unique markers, to find
//!    sequences repeated across streams. Each stream keeps its own start
//!    rule, so any one stream can still be expanded alone.
//!
//! The cost grows with the size of the *distinct* grammars, plus a fast
//! linear scan over all parts for step 1.

use crate::grammar::{Grammar, GrammarError};
use crate::sequitur::Sequitur;
use crate::symbol::{RuleId, Run, StreamId, Symbol};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// Merges grammars with disjoint streams into one: steps 1-3 above.
pub fn merge(parts: &[Grammar]) -> Result<Grammar, GrammarError> {
    share_across_streams(union(parts)?)
}

/// Steps 1 and 2 only: identical parts stored once, identical rules shared.
/// Cheap enough for every round of a pairwise merge; run [`merge`] (or
/// [`share_across_streams`]) once at the end.
pub fn union(parts: &[Grammar]) -> Result<Grammar, GrammarError> {
    let mut rules = RuleTable::default();
    let mut streams = Vec::new();
    // Distinct parts by content: fingerprint -> (representative part, local->global ids).
    let mut distinct: FxHashMap<u64, Vec<(usize, Vec<RuleId>)>> = FxHashMap::default();
    for (i, part) in parts.iter().enumerate() {
        let (runs, bounds) = part.raw();
        let mut h = FxHasher::default();
        runs.hash(&mut h);
        bounds.hash(&mut h);
        let same = distinct.entry(h.finish()).or_default();
        let rep = same
            .iter()
            .position(|&(j, _)| parts[j].raw() == (runs, bounds));
        let rep = match rep {
            Some(rep) => rep,
            None => {
                let ids = rules.add_all(part);
                same.push((i, ids));
                same.len() - 1
            }
        };
        let ids = &same[rep].1;
        streams.extend(
            part.streams()
                .iter()
                .map(|&(stream, start)| (stream, ids[start as usize])),
        );
    }
    Grammar::new(rules.bodies, streams)
}

/// Rule bodies numbered in one space, identical bodies once.
#[derive(Default)]
struct RuleTable {
    bodies: Vec<Vec<Run>>,
    ids: FxHashMap<Vec<Run>, RuleId>,
}

impl RuleTable {
    /// Adds every rule of `part`; returns the global id of each local rule.
    fn add_all(&mut self, part: &Grammar) -> Vec<RuleId> {
        let mut ids = Vec::with_capacity(part.num_rules());
        for body in part.rules() {
            let body: Vec<Run> = body.iter().map(|run| rename(*run, &ids)).collect();
            ids.push(self.add(body));
        }
        ids
    }

    fn add(&mut self, body: Vec<Run>) -> RuleId {
        if let Some(&id) = self.ids.get(&body) {
            return id;
        }
        let id = self.bodies.len() as RuleId;
        self.bodies.push(body.clone());
        self.ids.insert(body, id);
        id
    }
}

fn rename(run: Run, ids: &[RuleId]) -> Run {
    match run.symbol {
        Symbol::Rule(r) => Run::new(Symbol::Rule(ids[r as usize]), run.count),
        Symbol::Terminal(_) => run,
    }
}

/// Step 3: finds sequences repeated across the start rules of different
/// streams and makes them shared rules.
pub fn share_across_streams(grammar: Grammar) -> Result<Grammar, GrammarError> {
    let mut starts: Vec<RuleId> = grammar.streams().iter().map(|&(_, rule)| rule).collect();
    starts.sort_unstable();
    starts.dedup();
    if starts.len() < 2 {
        return Ok(grammar);
    }
    // Each distinct run of a start body becomes one token; each start body is
    // followed by a marker token of its own, so no rule spans two streams.
    let mut tokens: Vec<Run> = Vec::new();
    let mut token_of: FxHashMap<Run, u32> = FxHashMap::default();
    for &start in &starts {
        for &run in grammar.rule(start) {
            token_of.entry(run).or_insert_with(|| {
                tokens.push(run);
                tokens.len() as u32 - 1
            });
        }
    }
    if tokens.len() + starts.len() > crate::symbol::MAX_TERMINAL as usize {
        return Err(GrammarError::TooLarge);
    }
    let mut sequitur = Sequitur::new();
    for (i, &start) in starts.iter().enumerate() {
        for run in grammar.rule(start) {
            sequitur.push(token_of[run]);
        }
        sequitur.push((tokens.len() + i) as u32);
    }
    let pass = sequitur.grammar(0);

    // New rule space: the old rules, then the pass's rules, then new starts.
    let mut bodies: Vec<Vec<Run>> = grammar.rules().map(<[Run]>::to_vec).collect();
    let old = bodies.len() as RuleId;
    let pass_start = pass.start(0).unwrap_or(0);
    let translate = |run: Run| match run.symbol {
        Symbol::Terminal(token) => {
            let t = tokens[token as usize];
            Run::new(t.symbol, t.count.saturating_mul(run.count))
        }
        Symbol::Rule(r) => Run::new(Symbol::Rule(old + r), run.count),
    };
    for rule in 0..pass_start {
        bodies.push(pass.rule(rule).iter().map(|&run| translate(run)).collect());
    }
    let mut new_start: FxHashMap<RuleId, RuleId> = FxHashMap::default();
    let mut segment = Vec::new();
    for &run in pass.rule(pass_start) {
        match run.symbol {
            Symbol::Terminal(token) if token as usize >= tokens.len() => {
                let start = starts[token as usize - tokens.len()];
                let id = match segment.as_slice() {
                    // A stream that is exactly one shared rule starts there.
                    [
                        Run {
                            symbol: Symbol::Rule(shared),
                            count: 1,
                        },
                    ] => *shared,
                    _ => {
                        bodies.push(std::mem::take(&mut segment));
                        bodies.len() as RuleId - 1
                    }
                };
                segment.clear();
                new_start.insert(start, id);
            }
            _ => segment.push(translate(run)),
        }
    }
    let streams = grammar
        .streams()
        .iter()
        .map(|&(stream, start)| (stream, new_start[&start]))
        .collect();
    prune(bodies, streams)
}

/// Drops rules no stream reaches and renumbers the rest in order.
fn prune(bodies: Vec<Vec<Run>>, streams: Vec<(StreamId, RuleId)>) -> Result<Grammar, GrammarError> {
    let mut reached = vec![false; bodies.len()];
    for &(_, start) in &streams {
        reached[start as usize] = true;
    }
    for rule in (0..bodies.len()).rev() {
        if reached[rule] {
            for run in &bodies[rule] {
                if let Symbol::Rule(r) = run.symbol {
                    reached[r as usize] = true;
                }
            }
        }
    }
    let mut ids = vec![RuleId::MAX; bodies.len()];
    let mut kept = Vec::new();
    for (rule, body) in bodies.into_iter().enumerate() {
        if reached[rule] {
            ids[rule] = kept.len() as RuleId;
            kept.push(body.into_iter().map(|run| rename(run, &ids)).collect());
        }
    }
    let streams = streams
        .into_iter()
        .map(|(stream, start)| (stream, ids[start as usize]))
        .collect();
    Grammar::new(kept, streams)
}
