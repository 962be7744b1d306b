//! The compact, immutable form of a grammar: what is stored, expanded,
//! counted and merged.

use crate::symbol::{MAX_TERMINAL, RuleId, Run, StreamId, Symbol};
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

/// Most streams one grammar may describe (protects readers from forged sizes).
pub const MAX_STREAMS: usize = 1 << 24;

/// A straight-line grammar with repetition counts, describing one or more
/// streams of terminals. Rules are numbered so that a rule refers only to
/// rules with smaller numbers; each stream has its own start rule, and
/// streams with identical content share one.
#[derive(Clone)]
pub struct Grammar {
    /// All rule bodies, concatenated in rule order.
    runs: Vec<Run>,
    /// Rule `r`'s body is `runs[bounds[r]..bounds[r + 1]]`.
    bounds: Vec<u32>,
    /// Expansion length of each rule.
    lengths: Vec<u64>,
    /// Start rule of each stream, sorted by stream.
    streams: Vec<(StreamId, RuleId)>,
    /// Expansion offset of each run within its rule, built on first seek.
    offsets: OnceLock<Vec<u64>>,
}

/// Why a set of rules is not a valid grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    #[error("rule {rule} refers to rule {target}, which is not numbered below it")]
    ForwardReference { rule: RuleId, target: RuleId },
    #[error("rule {rule} refers to rule {target}, which is empty")]
    EmptyReference { rule: RuleId, target: RuleId },
    #[error("rule {rule} has a run with count 0")]
    ZeroCount { rule: RuleId },
    #[error("rule {rule} holds terminal {terminal}, above the largest allowed ({MAX_TERMINAL})")]
    TerminalRange { rule: RuleId, terminal: u32 },
    #[error("rule {rule} expands to more than 2^64 terminals")]
    LengthOverflow { rule: RuleId },
    #[error("stream {stream} starts at rule {rule}, which does not exist")]
    MissingStart { stream: StreamId, rule: RuleId },
    #[error("stream {stream} is described twice")]
    DuplicateStream { stream: StreamId },
    #[error("more than {MAX_STREAMS} streams")]
    TooManyStreams,
    #[error("grammar exceeds the size limits (2^32 runs, 2^31 terminals)")]
    TooLarge,
}

impl Grammar {
    /// Builds a grammar from rule bodies (rule `i` may refer only to rules
    /// `< i`, and only to non-empty ones) and the start rule of each stream.
    pub fn new(
        rules: Vec<Vec<Run>>,
        streams: Vec<(StreamId, RuleId)>,
    ) -> Result<Grammar, GrammarError> {
        let mut runs = Vec::with_capacity(rules.iter().map(Vec::len).sum());
        let mut bounds = Vec::with_capacity(rules.len() + 1);
        bounds.push(0);
        for body in rules {
            runs.extend(body);
            bounds.push(u32::try_from(runs.len()).map_err(|_| GrammarError::TooLarge)?);
        }
        Grammar::from_parts(runs, bounds, streams)
    }

    /// Validates the parts and computes rule lengths. `bounds` must start at
    /// 0, be non-decreasing and end at `runs.len()` (callers build it so).
    pub(crate) fn from_parts(
        runs: Vec<Run>,
        bounds: Vec<u32>,
        mut streams: Vec<(StreamId, RuleId)>,
    ) -> Result<Grammar, GrammarError> {
        debug_assert!(bounds.first() == Some(&0) && bounds.last() == Some(&(runs.len() as u32)));
        let mut lengths = Vec::with_capacity(bounds.len() - 1);
        for rule in 0..bounds.len() - 1 {
            let rule_id = rule as RuleId;
            let mut len = 0u64;
            for run in &runs[bounds[rule] as usize..bounds[rule + 1] as usize] {
                if run.count == 0 {
                    return Err(GrammarError::ZeroCount { rule: rule_id });
                }
                let symbol_len: u64 = match run.symbol {
                    Symbol::Terminal(terminal) if terminal > MAX_TERMINAL => {
                        return Err(GrammarError::TerminalRange {
                            rule: rule_id,
                            terminal,
                        });
                    }
                    Symbol::Terminal(_) => 1,
                    Symbol::Rule(target) if target >= rule_id => {
                        return Err(GrammarError::ForwardReference {
                            rule: rule_id,
                            target,
                        });
                    }
                    Symbol::Rule(target) if lengths[target as usize] == 0 => {
                        return Err(GrammarError::EmptyReference {
                            rule: rule_id,
                            target,
                        });
                    }
                    Symbol::Rule(target) => lengths[target as usize],
                };
                len = symbol_len
                    .checked_mul(run.count)
                    .and_then(|l| l.checked_add(len))
                    .ok_or(GrammarError::LengthOverflow { rule: rule_id })?;
            }
            lengths.push(len);
        }
        if streams.len() > MAX_STREAMS {
            return Err(GrammarError::TooManyStreams);
        }
        streams.sort_unstable();
        for pair in streams.windows(2) {
            if pair[0].0 == pair[1].0 {
                return Err(GrammarError::DuplicateStream { stream: pair[0].0 });
            }
        }
        if let Some(&(stream, rule)) = streams
            .iter()
            .find(|&&(_, rule)| rule as usize >= lengths.len())
        {
            return Err(GrammarError::MissingStart { stream, rule });
        }
        Ok(Grammar {
            runs,
            bounds,
            lengths,
            streams,
            offsets: OnceLock::new(),
        })
    }

    /// Index of rule `rule`'s first run among all runs, rule by rule.
    pub(crate) fn run_index(&self, rule: RuleId) -> usize {
        self.bounds[rule as usize] as usize
    }

    /// Number of rules.
    pub fn num_rules(&self) -> usize {
        self.lengths.len()
    }

    /// Number of runs (symbols with their counts) over all rule bodies.
    pub fn num_runs(&self) -> usize {
        self.runs.len()
    }

    /// The body of `rule`. Panics if the rule does not exist.
    pub fn rule(&self, rule: RuleId) -> &[Run] {
        let r = rule as usize;
        &self.runs[self.bounds[r] as usize..self.bounds[r + 1] as usize]
    }

    /// All rule bodies in order.
    pub fn rules(&self) -> impl ExactSizeIterator<Item = &[Run]> + '_ {
        self.bounds
            .windows(2)
            .map(|w| &self.runs[w[0] as usize..w[1] as usize])
    }

    /// Number of terminals `rule` expands to.
    pub fn rule_len(&self, rule: RuleId) -> u64 {
        self.lengths[rule as usize]
    }

    /// Streams and their start rules, in stream order.
    pub fn streams(&self) -> &[(StreamId, RuleId)] {
        &self.streams
    }

    /// The start rule of `stream`.
    pub fn start(&self, stream: StreamId) -> Option<RuleId> {
        let i = self
            .streams
            .binary_search_by_key(&stream, |&(s, _)| s)
            .ok()?;
        Some(self.streams[i].1)
    }

    /// Number of terminals in `stream`.
    pub fn stream_len(&self, stream: StreamId) -> Option<u64> {
        self.start(stream).map(|rule| self.rule_len(rule))
    }

    /// Total terminals over all streams (saturating at `u64::MAX`).
    pub fn total_len(&self) -> u64 {
        self.streams.iter().fold(0u64, |sum, &(_, rule)| {
            sum.saturating_add(self.rule_len(rule))
        })
    }

    /// The same grammar with its streams renamed by `rename` (which must
    /// keep them distinct).
    pub fn with_streams(
        mut self,
        rename: impl Fn(StreamId) -> StreamId,
    ) -> Result<Grammar, GrammarError> {
        let streams = self.streams.iter().map(|&(s, r)| (rename(s), r)).collect();
        self.streams = Vec::new();
        Grammar::from_parts(self.runs, self.bounds, streams)
    }

    /// The same grammar without the streams `drop` selects (their rules
    /// stay; [`crate::merge`] prunes unreached rules).
    pub fn without_streams(
        mut self,
        drop: impl Fn(StreamId) -> bool,
    ) -> Result<Grammar, GrammarError> {
        let mut streams = std::mem::take(&mut self.streams);
        streams.retain(|&(s, _)| !drop(s));
        Grammar::from_parts(self.runs, self.bounds, streams)
    }

    /// The same grammar with every terminal renamed by `rename` (merging
    /// call-signature tables renumbers terminals).
    pub fn with_terminals(mut self, rename: impl Fn(u32) -> u32) -> Result<Grammar, GrammarError> {
        for run in &mut self.runs {
            if let Symbol::Terminal(t) = run.symbol {
                run.symbol = Symbol::Terminal(rename(t));
            }
        }
        let streams = std::mem::take(&mut self.streams);
        Grammar::from_parts(self.runs, self.bounds, streams)
    }

    /// The same grammar with `stream` preceded by the streams of `earlier`
    /// (each of one stream, in order, over the same terminals): a stream
    /// recorded in parts. Other streams that shared `stream`'s start rule
    /// keep it; `stream` gets a new start rule that refers to the parts'.
    pub fn prepend(self, stream: StreamId, earlier: &[Grammar]) -> Result<Grammar, GrammarError> {
        let start = self
            .start(stream)
            .ok_or(GrammarError::MissingStart { stream, rule: 0 })?;
        let mut rules: Vec<Vec<Run>> = self.rules().map(<[Run]>::to_vec).collect();
        let mut body = Vec::new();
        for part in earlier {
            let offset = rules.len() as RuleId;
            let shift = |run: &Run| match run.symbol {
                Symbol::Rule(r) => Run::new(Symbol::Rule(r + offset), run.count),
                Symbol::Terminal(_) => *run,
            };
            rules.extend(part.rules().map(|b| b.iter().map(shift).collect()));
            for &(_, r) in part.streams() {
                if part.rule_len(r) > 0 {
                    body.push(Run::new(Symbol::Rule(r + offset), 1));
                }
            }
        }
        if self.rule_len(start) > 0 {
            body.push(Run::new(Symbol::Rule(start), 1));
        }
        let mut streams = self.streams;
        let new_start = rules.len() as RuleId;
        rules.push(body);
        for (s, r) in &mut streams {
            if *s == stream {
                *r = new_start;
            }
        }
        Grammar::new(rules, streams)
    }

    /// A grammar of no streams.
    pub fn empty() -> Grammar {
        Grammar::new(Vec::new(), Vec::new()).expect("the empty grammar is valid")
    }

    /// How many times each rule is expanded in one expansion of `root`
    /// (index = rule), from the grammar alone.
    pub fn rule_uses(&self, root: RuleId) -> Vec<u64> {
        let mut uses = vec![0u64; self.num_rules()];
        uses[root as usize] = 1;
        self.propagate_uses(&mut uses);
        uses
    }

    /// Pushes use counts from each rule down to the rules it refers to.
    /// Counts cannot overflow: each use yields at least one terminal and
    /// lengths fit in u64; saturation only guards hand-made inputs.
    fn propagate_uses(&self, uses: &mut [u64]) {
        for rule in (0..self.num_rules()).rev() {
            let n = uses[rule];
            if n == 0 {
                continue;
            }
            for run in self.rule(rule as RuleId) {
                if let Symbol::Rule(child) = run.symbol {
                    let c = &mut uses[child as usize];
                    *c = c.saturating_add(n.saturating_mul(run.count));
                }
            }
        }
    }

    /// For each terminal run of a rule that `root` expands (its rule and
    /// index in the rule's body), how many of the run's occurrences in one
    /// expansion of `root` follow each terminal: (terminal before, count),
    /// from the grammar alone. The first occurrence of all follows none and
    /// is not counted; nor are occurrences whose predecessor is not among
    /// the first [`MAX_PREDECESSORS`] of their rule's (a grammar whose
    /// rules are entered after that many different terminals), so the
    /// counts of a run sum to its occurrences or fewer.
    pub fn run_predecessors(&self, root: RuleId) -> FxHashMap<(RuleId, u32), Vec<(u32, u64)>> {
        let uses = self.rule_uses(root);
        let last = self.last_terminals();
        let last_of = |symbol: Symbol| match symbol {
            Symbol::Terminal(t) => t,
            Symbol::Rule(c) => last[c as usize],
        };
        // The terminals before each expansion of a rule, parents first.
        let mut entries: Vec<Vec<(u32, u64)>> = vec![Vec::new(); self.num_rules()];
        let mut runs = FxHashMap::default();
        for rule in (0..self.num_rules()).rev() {
            let n = uses[rule];
            if n == 0 {
                continue;
            }
            let entry = std::mem::take(&mut entries[rule]);
            let mut before: Option<Symbol> = None;
            for (i, run) in self.rule(rule as RuleId).iter().enumerate() {
                let mut preds = match before {
                    None => entry.clone(),
                    Some(symbol) => vec![(last_of(symbol), n)],
                };
                if run.count > 1 {
                    let again = n.saturating_mul(run.count - 1);
                    add_predecessor(&mut preds, last_of(run.symbol), again);
                }
                match run.symbol {
                    Symbol::Terminal(_) => {
                        runs.insert((rule as RuleId, i as u32), preds);
                    }
                    Symbol::Rule(c) => {
                        for (t, k) in preds {
                            add_predecessor(&mut entries[c as usize], t, k);
                        }
                    }
                }
                before = Some(run.symbol);
            }
        }
        runs
    }

    /// The last terminal of each rule's expansion (0 for an empty rule).
    fn last_terminals(&self) -> Vec<u32> {
        // Children before parents.
        let mut last = vec![0u32; self.num_rules()];
        for rule in 0..self.num_rules() {
            last[rule] = match self.rule(rule as RuleId).last().map(|r| r.symbol) {
                Some(Symbol::Terminal(t)) => t,
                Some(Symbol::Rule(c)) => last[c as usize],
                None => 0,
            };
        }
        last
    }

    /// Every terminal run (rule and index in its body) that one expansion
    /// of `root` reaches, in the order of their first occurrences, each
    /// with the terminal just before that first occurrence (none for the
    /// first of all). Each rule's body is walked once: a rule's later
    /// expansions hold no first occurrence.
    pub fn first_runs(&self, root: RuleId) -> Vec<((RuleId, u32), Option<u32>)> {
        let last = self.last_terminals();
        let mut walked = vec![false; self.num_rules()];
        let mut firsts = Vec::new();
        let mut before: Option<u32> = None;
        let mut stack: Vec<(RuleId, usize)> = vec![(root, 0)];
        walked[root as usize] = true;
        while let Some((rule, i)) = stack.pop() {
            let Some(run) = self.rule(rule).get(i) else {
                continue;
            };
            stack.push((rule, i + 1));
            match run.symbol {
                Symbol::Terminal(t) => {
                    firsts.push(((rule, i as u32), before));
                    before = Some(t);
                }
                Symbol::Rule(c) if !walked[c as usize] => {
                    walked[c as usize] = true;
                    stack.push((c, 0));
                }
                Symbol::Rule(c) => before = Some(last[c as usize]),
            }
        }
        firsts
    }

    /// Occurrences of each terminal in one expansion of `root`, sorted by
    /// terminal, without expanding.
    pub fn terminal_counts(&self, root: RuleId) -> Vec<(u32, u64)> {
        self.count_terminals(self.rule_uses(root))
    }

    /// Occurrences of each terminal over all streams, sorted by terminal.
    pub fn total_terminal_counts(&self) -> Vec<(u32, u64)> {
        let mut uses = vec![0u64; self.num_rules()];
        for &(_, rule) in &self.streams {
            uses[rule as usize] += 1;
        }
        self.propagate_uses(&mut uses);
        self.count_terminals(uses)
    }

    fn count_terminals(&self, uses: Vec<u64>) -> Vec<(u32, u64)> {
        let mut counts: FxHashMap<u32, u64> = FxHashMap::default();
        for (rule, &n) in uses.iter().enumerate() {
            if n == 0 {
                continue;
            }
            for run in self.rule(rule as RuleId) {
                if let Symbol::Terminal(t) = run.symbol {
                    let c = counts.entry(t).or_insert(0);
                    *c = c.saturating_add(n.saturating_mul(run.count));
                }
            }
        }
        let mut counts: Vec<_> = counts.into_iter().collect();
        counts.sort_unstable();
        counts
    }

    /// Expansion offset of every run within its rule.
    pub(crate) fn run_offsets(&self) -> &[u64] {
        self.offsets.get_or_init(|| {
            let mut offsets = Vec::with_capacity(self.runs.len());
            for body in self.rules() {
                let mut at = 0u64;
                for run in body {
                    offsets.push(at);
                    at += self.symbol_len(run.symbol) * run.count;
                }
            }
            offsets
        })
    }

    pub(crate) fn rule_start_index(&self, rule: RuleId) -> usize {
        self.bounds[rule as usize] as usize
    }

    /// Number of terminals one occurrence of `symbol` expands to.
    pub fn symbol_len(&self, symbol: Symbol) -> u64 {
        match symbol {
            Symbol::Terminal(_) => 1,
            Symbol::Rule(r) => self.lengths[r as usize],
        }
    }

    pub(crate) fn raw(&self) -> (&[Run], &[u32]) {
        (&self.runs, &self.bounds)
    }
}

impl PartialEq for Grammar {
    fn eq(&self, other: &Self) -> bool {
        self.runs == other.runs && self.bounds == other.bounds && self.streams == other.streams
    }
}

impl Eq for Grammar {}

impl std::fmt::Debug for Grammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

/// One rule per line, `R3 -> 1 R2^4 7`, then the start rule of each stream.
impl std::fmt::Display for Grammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (rule, body) in self.rules().enumerate() {
            write!(f, "R{rule} ->")?;
            for run in body {
                write!(f, " {run}")?;
            }
            writeln!(f)?;
        }
        for &(stream, rule) in &self.streams {
            writeln!(f, "stream {stream}: R{rule}")?;
        }
        Ok(())
    }
}

/// Most terminals [`Grammar::run_predecessors`] tells apart before the
/// expansions of one rule.
pub const MAX_PREDECESSORS: usize = 64;

/// Counts `count` more occurrences after `pred` (none past
/// [`MAX_PREDECESSORS`] different ones).
fn add_predecessor(preds: &mut Vec<(u32, u64)>, pred: u32, count: u64) {
    if let Some((_, k)) = preds.iter_mut().find(|(t, _)| *t == pred) {
        *k = k.saturating_add(count);
    } else if preds.len() < MAX_PREDECESSORS {
        preds.push((pred, count));
    }
}
