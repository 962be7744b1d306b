//! Incremental Sequitur (Nevill-Manning & Witten) extended with repetition
//! counts, as in Pilgrim: a rule body is a list of runs `X^k`, adjacent equal
//! symbols are always folded (`X^i X^j` -> `X^(i+j)`), and a digram is a pair
//! of adjacent runs *with* their counts.
//!
//! The two Sequitur invariants are kept after every push:
//! - digram uniqueness: no digram occurs twice in the grammar;
//! - rule utility: every rule is referenced twice, or once with a count >= 2
//!   (`S -> A^5` needs `A`).
//!
//! Rules are circular doubly linked lists of nodes in one arena, each with a
//! guard node, as in the original algorithm. The digram index maps a digram
//! to the node where it starts. Pending digram checks go through a work list
//! instead of recursion, so deep cascades cannot overflow the stack.
//!
//! A terminal that occurs in one node only (a *lone* terminal: a signature
//! seen once, or only in one run) makes digrams that cannot occur twice, so
//! they are not indexed until a second node of it appears; then the first
//! node's digrams are indexed before the new one is checked, and the
//! grammar is the one full indexing would build. A stream of calls that
//! never repeat so costs no index probe, which at millions of signatures is
//! a cache miss each.
//!
//! A fast path handles a stream that keeps repeating the start rule's last
//! symbol `X` (a loop body, however nested): while each new terminal equals
//! the one `len(X)` positions back, the push only compares and counts; whole
//! repetitions are added to the count of `X` when the repetition ends.

mod check;
mod index;

use crate::grammar::Grammar;
use crate::symbol::{MAX_TERMINAL, Run, StreamId, Symbol};
use index::DigramIndex;

/// Top bit of a node value: the node refers to a rule (or is a rule's guard).
const RULE_BIT: u32 = 1 << 31;
/// Marks a free node slot.
const FREE: u32 = u32::MAX;
const NIL: u32 = u32::MAX;
/// Recent terminals kept for the repeat fast path (a power of two): loop
/// bodies up to this length repeat at the cost of a compare.
const HISTORY: usize = 1 << 16;
const HISTORY_MASK: usize = HISTORY - 1;
/// The start rule: the whole input.
const START: u32 = 0;
/// [`Sequitur::lone`]: the terminal occurs in more than one node, or may
/// (its digrams are indexed). 0 there: it occurs in none (no terminal's
/// node is node 0, the start rule's guard); else the one node it occurs in.
const MANY: u32 = u32::MAX;
/// Terminals [`Sequitur::lone`] grows to cover past its end at once: the
/// tracer numbers terminals densely, in the order they first occur.
const LONE_REACH: usize = 1 << 12;

#[derive(Clone, Copy, Debug)]
struct Node {
    /// A terminal, `RULE_BIT | rule` for a reference, or (guard) its own rule.
    value: u32,
    prev: u32,
    next: u32,
    /// Repetition count, >= 1; 0 for a guard or a free slot.
    exp: u64,
}

#[derive(Clone, Copy, Debug)]
struct RuleSlot {
    /// The rule's guard node, NIL when the slot is free.
    guard: u32,
    /// Number of nodes that refer to the rule.
    uses: u32,
    /// Length of the rule's expansion. A rule's expansion never changes while
    /// it exists: every operation replaces symbols by equal expansions.
    len: u64,
}

/// Online grammar compressor: push terminals one at a time, take the grammar
/// at any moment with [`Sequitur::grammar`].
pub struct Sequitur {
    nodes: Vec<Node>,
    free_nodes: Vec<u32>,
    rules: Vec<RuleSlot>,
    free_rules: Vec<u32>,
    index: DigramIndex,
    /// Nodes whose digram (node, next) must be checked.
    work: Vec<u32>,
    /// Ring of the last HISTORY terminals pushed.
    history: Box<[u32; HISTORY]>,
    pushed: u64,
    /// Expansion length of the start rule's last symbol when it is at most
    /// HISTORY, else 0 (fast path off).
    period: u64,
    /// The terminals from this position of the input on were accepted by
    /// the fast path and are not in the grammar yet: whole repetitions of
    /// the start rule's last symbol, then part of one ([`Sequitur::accepted`]).
    accepted_from: u64,
    /// Per terminal below its length: 0 (in no node), the one node it
    /// occurs in (a lone terminal: its digrams are not indexed), or
    /// [`MANY`]. Terminals at or past its length are `MANY`.
    lone: Vec<u32>,
    /// A terminal far past `lone`'s end occurred: `lone` no longer grows
    /// (the terminals between its end and that one would not be known to
    /// have occurred).
    lone_closed: bool,
}

impl Default for Sequitur {
    fn default() -> Self {
        Self::new()
    }
}

impl Sequitur {
    pub fn new() -> Sequitur {
        let mut s = Sequitur {
            nodes: Vec::new(),
            free_nodes: Vec::new(),
            rules: Vec::new(),
            free_rules: Vec::new(),
            index: DigramIndex::default(),
            work: Vec::new(),
            history: vec![0; HISTORY]
                .into_boxed_slice()
                .try_into()
                .expect("HISTORY terminals"),
            pushed: 0,
            period: 0,
            accepted_from: 0,
            lone: Vec::new(),
            lone_closed: false,
        };
        let start = s.new_rule();
        debug_assert_eq!(start, START);
        s
    }

    /// Appends one terminal (at most [`MAX_TERMINAL`]). Amortised O(1); a
    /// compare and a store while the input repeats the last loop body
    /// (inlined into the caller: it is the tracer's per-call fast path).
    #[inline(always)]
    pub fn push(&mut self, terminal: u32) {
        self.push_repeating(terminal);
    }

    /// [`push`](Sequitur::push), saying whether the fast path took the
    /// terminal: then it equals the terminal `period` positions back, and
    /// the period is returned; else 0. A run of pushes with the same
    /// non-zero period repeats the `period` terminals before it, which is
    /// all a crash journal needs to keep of them
    /// ([`recent`](Sequitur::recent) reads them back).
    #[inline(always)]
    pub fn push_repeating(&mut self, terminal: u32) -> u64 {
        let pos = self.pushed as usize;
        let period = self.period;
        // Every terminal in the history passed push_slow's bound check,
        // so one equal to it needs none.
        let repeats = period != 0
            && self.history[pos.wrapping_sub(period as usize) & HISTORY_MASK] == terminal;
        self.history[pos & HISTORY_MASK] = terminal;
        self.pushed += 1;
        if !repeats {
            self.push_slow(terminal);
            return 0;
        }
        period
    }

    /// The terminal pushed `back` positions ago (1: the last one), if it
    /// is still in the history the fast path compares with: `back` at most
    /// the terminals pushed and the longest period.
    pub fn recent(&self, back: u64) -> Option<u32> {
        (back >= 1 && back <= self.pushed && back <= HISTORY as u64)
            .then(|| self.history[(self.pushed - back) as usize & HISTORY_MASK])
    }

    /// What the fast path accepted before position `end` and the grammar
    /// does not hold yet: (whole repetitions of the start rule's last
    /// symbol, terminals of a repetition begun).
    fn accepted(&self, end: u64) -> (u64, u64) {
        match end - self.accepted_from {
            0 => (0, 0),
            n => (n / self.period, n % self.period),
        }
    }

    /// Number of terminals pushed so far.
    pub fn len(&self) -> u64 {
        self.pushed
    }

    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Bytes of memory the builder uses: its node arena, rule table,
    /// digram index (its capacity: a hash table touches all of it) and
    /// history. The arenas count by use, not capacity: untouched capacity
    /// of a large vector is address space, not memory.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.nodes.len() * size_of::<Node>()
            + (self.free_nodes.len() + self.free_rules.len() + self.work.len()) * size_of::<u32>()
            + self.rules.len() * size_of::<RuleSlot>()
            + self.index.heap_bytes()
            + self.lone.len() * size_of::<u32>()
            + HISTORY * size_of::<u32>()
    }

    /// Forgets everything pushed, keeping the memory: a builder cleared
    /// and filled again touches no new page until it outgrows its last
    /// fill (the tracer's parts: a fresh builder each part faulted its
    /// pages in again).
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.free_nodes.clear();
        self.rules.clear();
        self.free_rules.clear();
        self.index.clear();
        self.work.clear();
        self.history.fill(0);
        self.pushed = 0;
        self.period = 0;
        self.accepted_from = 0;
        self.lone.clear();
        self.lone_closed = false;
        let start = self.new_rule();
        debug_assert_eq!(start, START);
    }

    /// Makes room for about `terminals` more terminals that each add a node
    /// and an indexed digram (known terminals in an order that does not
    /// repeat; a lone terminal's digrams take no index room): a caller that
    /// knows how much will come avoids the digram index's re-hashing as it
    /// grows (a pause and, while it lasts, two tables).
    pub fn reserve(&mut self, terminals: usize) {
        self.nodes.reserve(terminals);
        self.index.reserve(terminals);
    }

    /// Makes room for the first `terminals` terminals of an empty builder,
    /// each in a node of its own and with an indexed digram, and faults
    /// the pages in now: a caller that must not pause when the grammar
    /// first grows (a tracer, in MPI_Init) takes the page faults at once.
    /// Where the memory is not to be had, nothing changes.
    pub fn prepare(&mut self, terminals: usize) {
        if self.nodes.try_reserve(terminals).is_err() || self.lone.try_reserve(terminals).is_err() {
            return;
        }
        let (nodes, lone) = (self.nodes.len(), self.lone.len());
        self.nodes.resize(nodes + terminals, self.nodes[0]);
        self.nodes.truncate(nodes);
        self.lone.resize(lone + terminals, 0);
        self.lone.truncate(lone);
        self.index.prepare(terminals);
    }

    /// The grammar of everything pushed so far, as the single stream `stream`.
    /// The builder stays usable: pushing may continue afterwards.
    pub fn grammar(&mut self, stream: StreamId) -> Grammar {
        self.flush_repeat(self.pushed);
        self.period = self.tail_period();
        self.to_grammar(stream, &[])
    }

    /// The grammar of everything pushed so far, leaving the builder as it
    /// is: a loop in progress stays on the fast path, and what later pushes
    /// cost (and allocate) is what it would have been. For periodic
    /// snapshots of a running stream. The repetitions the fast path has
    /// accepted are counted in; a partly repeated loop body ends the start
    /// rule as plain terminals, so the result may be a little larger than
    /// [`grammar`](Sequitur::grammar)'s.
    pub fn snapshot(&self, stream: StreamId) -> Grammar {
        let (_, matched) = self.accepted(self.pushed);
        let matched: Vec<u32> = (self.pushed - matched..self.pushed)
            .map(|pos| self.history[pos as usize & HISTORY_MASK])
            .collect();
        self.to_grammar(stream, &matched)
    }

    #[cold]
    #[inline(never)]
    fn push_slow(&mut self, terminal: u32) {
        assert!(
            terminal <= MAX_TERMINAL,
            "terminal {terminal} exceeds MAX_TERMINAL"
        );
        // `terminal` is already in the history, after the matched ones.
        let pos = self.pushed - 1;
        if pos != self.accepted_from {
            self.flush_repeat(pos);
        }
        if self.unseen(terminal) {
            self.append_unseen(terminal);
            return;
        }
        // The start rule may now end with the whole body of an outer loop
        // (its last repetition of an inner loop is in): the terminal may
        // begin that body again. Then the fast path takes it, and the rest
        // of the body, rather than only the inner loop's repetitions.
        let period = self.tail_period();
        if period != 0 && self.history[(pos - period) as usize & HISTORY_MASK] == terminal {
            self.period = period;
            self.accepted_from = pos;
            return;
        }
        self.append(terminal);
        self.period = self.tail_period();
        self.accepted_from = self.pushed;
    }

    /// Moves what the fast path accepted into the grammar. `end` is the
    /// history position just after the last accepted terminal.
    fn flush_repeat(&mut self, end: u64) {
        let (pending, matched) = self.accepted(end);
        self.accepted_from = end;
        if pending > 0 {
            let tail = self.last(START);
            let before = self.prev(tail);
            self.unindex(before);
            self.nodes[tail as usize].exp += pending;
            self.work.push(before);
            self.process();
        }
        for pos in end - matched..end {
            self.append(self.history[pos as usize & HISTORY_MASK]);
        }
    }

    fn tail_period(&self) -> u64 {
        let tail = self.last(START);
        if self.is_guard(tail) {
            return 0;
        }
        let len = self.value_len(self.nodes[tail as usize].value);
        if len <= HISTORY as u64 { len } else { 0 }
    }

    /// Appends a terminal to the start rule and restores the invariants.
    fn append(&mut self, terminal: u32) {
        let last = self.last(START);
        if !self.is_guard(last) && self.nodes[last as usize].value == terminal {
            let before = self.prev(last);
            self.unindex(before);
            self.nodes[last as usize].exp += 1;
            self.work.push(before);
        } else {
            let node = self.insert_after(last, terminal, 1);
            self.work.push(last);
            // Checked before `last`: the index holds every digram that
            // could match the new one.
            self.occurs_in(terminal, node);
        }
        self.process();
    }

    /// Whether `terminal` occurs in no node yet, as far as [`lone`](Sequitur::lone)
    /// can tell (a call never seen before).
    fn unseen(&self, terminal: u32) -> bool {
        let t = terminal as usize;
        match self.lone.get(t) {
            Some(&node) => node == 0,
            None => self.lone_reaches(t),
        }
    }

    /// Whether [`lone`](Sequitur::lone), which ends before terminal `t`,
    /// may grow to cover it: it is not closed and `t` is within
    /// [`LONE_REACH`] of its end.
    fn lone_reaches(&self, t: usize) -> bool {
        !self.lone_closed && t < self.lone.len() + LONE_REACH
    }

    /// [`push_slow`](Sequitur::push_slow) of a terminal that is in no node
    /// yet, with what it would find known: no earlier input position holds
    /// the terminal, so the fast path cannot take it; appended, it is lone,
    /// so its digram with the start rule's last symbol is not checked; and
    /// the start rule then ends with a terminal, a period of 1.
    fn append_unseen(&mut self, terminal: u32) {
        let node = self.insert_after(self.last(START), terminal, 1);
        self.occurs_in(terminal, node);
        self.period = 1;
        self.accepted_from = self.pushed;
    }

    /// `terminal` now occurs in the new node `node` of the start rule
    /// (too). If it was lone, its first node's digrams go on the work list.
    fn occurs_in(&mut self, terminal: u32, node: u32) {
        let t = terminal as usize;
        if t >= self.lone.len() {
            if !self.lone_reaches(t) {
                self.lone_closed = true;
                return;
            }
            if t == self.lone.len() {
                // The next terminal of a dense numbering: its first node.
                self.lone.push(node);
                return;
            }
            self.lone.resize(t + 1, 0);
        }
        match self.lone[t] {
            MANY => {}
            0 => self.lone[t] = node,
            first => {
                self.lone[t] = MANY;
                self.work.push(self.prev(first));
                self.work.push(first);
            }
        }
    }

    /// Whether `value` is a lone terminal (its digrams are not indexed).
    #[inline]
    fn is_lone(&self, value: u32) -> bool {
        value & RULE_BIT == 0
            && self
                .lone
                .get(value as usize)
                .is_some_and(|&n| n != 0 && n != MANY)
    }

    /// Whether the digram at `n` (not a guard, nor before one) is indexed:
    /// neither of its symbols is a lone terminal.
    #[inline]
    fn indexed(&self, n: u32) -> bool {
        let node = self.nodes[n as usize];
        !self.is_lone(node.value) && !self.is_lone(self.nodes[node.next as usize].value)
    }

    fn process(&mut self) {
        while let Some(n) = self.work.pop() {
            self.check(n);
        }
    }

    /// Enforces digram uniqueness for the digram starting at `n`.
    fn check(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        if node.value == FREE || node.exp == 0 || self.is_guard(node.next) || !self.indexed(n) {
            return;
        }
        if let Some(m) = self.index.find_or_insert(&self.nodes, n) {
            self.match_digram(n, m);
        }
    }

    /// The digram at `n` also occurs at `m` (where the index points; `n` is
    /// not indexed): replace both by one rule.
    fn match_digram(&mut self, n: u32, m: u32) {
        let rule = if let Some(rule) = self.whole_rule_at(m) {
            self.substitute(n, rule);
            rule
        } else {
            // The occurrence at `m` is replaced too: its index entry goes.
            self.index.remove(&self.nodes, m);
            if let Some(rule) = self.whole_rule_at(n) {
                self.substitute(m, rule);
                rule
            } else {
                let rule = self.new_rule();
                let guard = self.rules[rule as usize].guard;
                let (a, b) = (self.nodes[m as usize], self.nodes[self.next(m) as usize]);
                let first = self.insert_after(guard, a.value, a.exp);
                self.insert_after(first, b.value, b.exp);
                self.rules[rule as usize].len =
                    self.value_len(a.value) * a.exp + self.value_len(b.value) * b.exp;
                self.substitute(m, rule);
                self.substitute(n, rule);
                rule
            }
        };
        self.work.push(self.first(rule));
        // Only the symbols of this rule's body can have lost their last
        // other use: the replaced occurrences referred to the same rules.
        self.keep_useful(self.first(rule));
        self.keep_useful(self.last(rule));
    }

    /// The rule whose whole body is the digram at `n`, if any (never the start rule).
    fn whole_rule_at(&self, n: u32) -> Option<u32> {
        let before = self.prev(n);
        if self.is_guard(before) && self.is_guard(self.next(self.next(n))) {
            let rule = self.nodes[before as usize].value & !RULE_BIT;
            (rule != START).then_some(rule)
        } else {
            None
        }
    }

    /// Replaces the digram at `n`, which is not indexed, by a reference to `rule`.
    fn substitute(&mut self, n: u32, rule: u32) {
        let second = self.next(n);
        let before = self.prev(n);
        self.unindex(before);
        self.unindex(second);
        self.remove(n);
        self.remove(second);
        let r = self.insert_after(before, RULE_BIT | rule, 1);
        self.settle(r);
    }

    /// Folds `n` into equal neighbours and queues its digrams for checking.
    fn settle(&mut self, mut n: u32) {
        let before = self.prev(n);
        if !self.is_guard(before)
            && self.nodes[before as usize].value == self.nodes[n as usize].value
        {
            self.merge_next(before);
            n = before;
        }
        let after = self.next(n);
        if !self.is_guard(after) && self.nodes[after as usize].value == self.nodes[n as usize].value
        {
            self.merge_next(n);
        }
        self.work.push(self.prev(n));
        self.work.push(n);
    }

    /// `X^i X^j` -> `X^(i+j)` for `a` and its successor.
    fn merge_next(&mut self, a: u32) {
        let b = self.next(a);
        self.unindex(self.prev(a));
        self.unindex(a);
        self.unindex(b);
        self.nodes[a as usize].exp += self.nodes[b as usize].exp;
        self.remove(b);
    }

    /// Rule utility: a rule referenced only from `n`, once, is inlined there.
    fn keep_useful(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        if node.exp != 1 || node.value & RULE_BIT == 0 {
            return;
        }
        let rule = node.value & !RULE_BIT;
        if self.rules[rule as usize].uses == 1 {
            self.inline(n);
        }
    }

    /// Replaces the reference `n` by the body of its rule and frees the rule.
    fn inline(&mut self, n: u32) {
        let rule = self.nodes[n as usize].value & !RULE_BIT;
        let guard = self.rules[rule as usize].guard;
        let (first, last) = (self.next(guard), self.prev(guard));
        let (before, after) = (self.prev(n), self.next(n));
        self.unindex(before);
        self.unindex(n);
        self.link(before, first);
        self.link(last, after);
        self.free_node(n);
        self.free_node(guard);
        self.rules[rule as usize] = RuleSlot {
            guard: NIL,
            uses: 0,
            len: 0,
        };
        self.free_rules.push(rule);
        // The body's inner digrams stay indexed; only the seams are new.
        if !self.is_guard(before)
            && self.nodes[before as usize].value == self.nodes[first as usize].value
        {
            self.merge_next(before);
        }
        let seam = self.prev(after);
        if !self.is_guard(after)
            && self.nodes[seam as usize].value == self.nodes[after as usize].value
        {
            self.merge_next(seam);
        }
        self.work.push(before);
        self.work.push(self.prev(after));
    }

    // --- arena ---

    fn new_rule(&mut self) -> u32 {
        let rule = match self.free_rules.pop() {
            Some(r) => r,
            None => {
                let r = self.rules.len() as u32;
                assert!(r < RULE_BIT - 1, "grammar exceeds 2^31 rules");
                self.rules.push(RuleSlot {
                    guard: NIL,
                    uses: 0,
                    len: 0,
                });
                r
            }
        };
        let guard = self.alloc_node(RULE_BIT | rule, 0);
        self.link(guard, guard);
        self.rules[rule as usize] = RuleSlot {
            guard,
            uses: 0,
            len: 0,
        };
        rule
    }

    fn alloc_node(&mut self, value: u32, exp: u64) -> u32 {
        let node = Node {
            value,
            prev: NIL,
            next: NIL,
            exp,
        };
        match self.free_nodes.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => {
                let n = u32::try_from(self.nodes.len())
                    .ok()
                    .filter(|&n| n != NIL)
                    .expect("grammar exceeds 2^32 nodes");
                self.nodes.push(node);
                n
            }
        }
    }

    fn free_node(&mut self, n: u32) {
        self.nodes[n as usize] = Node {
            value: FREE,
            prev: NIL,
            next: NIL,
            exp: 0,
        };
        self.free_nodes.push(n);
    }

    fn insert_after(&mut self, at: u32, value: u32, exp: u64) -> u32 {
        let n = self.alloc_node(value, exp);
        let after = self.next(at);
        self.link(at, n);
        self.link(n, after);
        if value & RULE_BIT != 0 {
            self.rules[(value & !RULE_BIT) as usize].uses += 1;
        }
        n
    }

    /// Unlinks and frees `n`; its digrams must already be unindexed.
    fn remove(&mut self, n: u32) {
        let Node {
            value, prev, next, ..
        } = self.nodes[n as usize];
        self.link(prev, next);
        if value & RULE_BIT != 0 {
            self.rules[(value & !RULE_BIT) as usize].uses -= 1;
        }
        self.free_node(n);
    }

    fn link(&mut self, a: u32, b: u32) {
        self.nodes[a as usize].next = b;
        self.nodes[b as usize].prev = a;
    }

    /// Removes the digram at `n` from the index if the index points at `n`.
    fn unindex(&mut self, n: u32) {
        if self.is_guard(n) || self.is_guard(self.next(n)) || !self.indexed(n) {
            return;
        }
        self.index.remove(&self.nodes, n);
    }

    fn is_guard(&self, n: u32) -> bool {
        self.nodes[n as usize].exp == 0
    }

    fn next(&self, n: u32) -> u32 {
        self.nodes[n as usize].next
    }

    fn prev(&self, n: u32) -> u32 {
        self.nodes[n as usize].prev
    }

    fn first(&self, rule: u32) -> u32 {
        self.next(self.rules[rule as usize].guard)
    }

    fn last(&self, rule: u32) -> u32 {
        self.prev(self.rules[rule as usize].guard)
    }

    fn value_len(&self, value: u32) -> u64 {
        if value & RULE_BIT == 0 {
            1
        } else {
            self.rules[(value & !RULE_BIT) as usize].len
        }
    }

    fn symbol(value: u32) -> Symbol {
        if value & RULE_BIT == 0 {
            Symbol::Terminal(value)
        } else {
            Symbol::Rule(value & !RULE_BIT)
        }
    }

    fn body(&self, rule: u32) -> impl Iterator<Item = Node> + '_ {
        let guard = self.rules[rule as usize].guard;
        let mut n = self.next(guard);
        std::iter::from_fn(move || {
            (n != guard).then(|| {
                let node = self.nodes[n as usize];
                n = node.next;
                node
            })
        })
    }

    /// Compact copy, rules numbered in post order (children first) from the start rule.
    /// The grammar, with the fast path's pending repetitions added to the
    /// start rule's last run and `matched` appended to the start rule.
    fn to_grammar(&self, stream: StreamId, matched: &[u32]) -> Grammar {
        const UNSEEN: u32 = u32::MAX;
        const OPEN: u32 = u32::MAX - 1;
        let mut number = vec![UNSEEN; self.rules.len()];
        let mut order = Vec::new();
        // Iterative DFS: (rule, next body node to visit).
        let mut stack = vec![(START, self.first(START))];
        number[START as usize] = OPEN;
        while let Some(top) = stack.last_mut() {
            let (rule, cursor) = *top;
            if cursor == self.rules[rule as usize].guard {
                number[rule as usize] = order.len() as u32;
                order.push(rule);
                stack.pop();
                continue;
            }
            let node = self.nodes[cursor as usize];
            top.1 = node.next;
            if node.value & RULE_BIT != 0 {
                let child = node.value & !RULE_BIT;
                if number[child as usize] == UNSEEN {
                    number[child as usize] = OPEN;
                    stack.push((child, self.first(child)));
                }
            }
        }
        let mut runs = Vec::with_capacity(self.nodes.len() - self.free_nodes.len() - order.len());
        let mut bounds = Vec::with_capacity(order.len() + 1);
        bounds.push(0);
        for &rule in &order {
            runs.extend(self.body(rule).map(|node| {
                let symbol = match Self::symbol(node.value) {
                    Symbol::Rule(r) => Symbol::Rule(number[r as usize]),
                    terminal => terminal,
                };
                Run::new(symbol, node.exp)
            }));
            bounds.push(runs.len() as u32);
        }
        // The start rule is numbered last (post-order): its runs end `runs`.
        let (pending, _) = self.accepted(self.pushed);
        if let Some(last) = runs.last_mut().filter(|_| pending > 0) {
            last.count += pending;
        }
        let start_begin = bounds[bounds.len() - 2] as usize;
        for &t in matched {
            let folds = runs.len() > start_begin
                && runs.last().is_some_and(|r| r.symbol == Symbol::Terminal(t));
            match runs.last_mut() {
                Some(last) if folds => last.count += 1,
                _ => runs.push(Run::new(Symbol::Terminal(t), 1)),
            }
        }
        *bounds.last_mut().expect("the start rule's bound") = runs.len() as u32;
        let start = number[START as usize];
        Grammar::from_parts(runs, bounds, vec![(stream, start)])
            .expect("Sequitur builds a valid grammar")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A builder that indexes every digram, as before lone terminals.
    fn indexing_every_digram() -> Sequitur {
        let mut s = Sequitur::new();
        s.lone_closed = true;
        s
    }

    #[test]
    fn calls_that_never_repeat_index_no_digram() {
        let mut s = Sequitur::new();
        let mut every = indexing_every_digram();
        for t in 0..10_000 {
            s.push(t);
            every.push(t);
        }
        assert_eq!(s.index.len(), 0);
        assert_eq!(every.index.len(), 9_999);
        assert!(s.heap_bytes() < every.heap_bytes());
        // A second node of a lone terminal: its first node's digrams are
        // indexed, and the repeated digram becomes a rule.
        s.push(4_999);
        s.push(5_000);
        s.check_invariants().unwrap();
        assert_eq!(s.grammar(0).encode(), {
            every.push(4_999);
            every.push(5_000);
            every.grammar(0).encode()
        });
        assert_eq!(s.lone[4_999], MANY);
        assert_eq!(s.lone[5_000], MANY);
    }

    #[test]
    fn terminals_far_apart_are_indexed_as_before() {
        let mut s = Sequitur::new();
        for t in [1, 2, 1 << 20, 3, 1 << 20, 4, 1, 2] {
            s.push(t);
            s.check_invariants().unwrap();
        }
        assert!(s.lone_closed);
        assert_eq!(s.lone.len(), 3);
    }

    #[test]
    fn a_prepared_builder_has_room_and_nothing_in_it() {
        let mut s = Sequitur::new();
        s.prepare(1_000);
        assert!(s.nodes.capacity() > 1_000 && s.lone.capacity() >= 1_000);
        assert!(s.index.heap_bytes() >= 1_000 * 9);
        assert_eq!((s.nodes.len(), s.lone.len(), s.index.len()), (1, 0, 0));
        assert!(s.is_empty());
        s.check_invariants().unwrap();
    }

    proptest! {
        /// Lone terminals change when digrams are indexed, not the grammar;
        /// nor does room made before the first push.
        #[test]
        fn the_grammar_is_the_one_every_digram_indexed_builds(
            input in prop::collection::vec(
                prop_oneof![0u32..8, 8u32..400, 0u32..3], 0..800)
        ) {
            let mut s = Sequitur::new();
            let mut every = indexing_every_digram();
            let mut prepared = Sequitur::new();
            prepared.prepare(64);
            for (i, &t) in input.iter().enumerate() {
                s.push(t);
                every.push(t);
                prepared.push(t);
                if i % 16 == 0 {
                    prop_assert_eq!(s.check_invariants(), Ok(()));
                    prop_assert_eq!(prepared.check_invariants(), Ok(()));
                }
            }
            let g = s.grammar(0).encode();
            prop_assert_eq!(&g, &every.grammar(0).encode());
            prop_assert_eq!(&g, &prepared.grammar(0).encode());
            prop_assert_eq!(s.check_invariants(), Ok(()));
        }
    }
}
