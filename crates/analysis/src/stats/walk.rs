//! The fallback for ranks whose signatures mean different things over the
//! run: their calls are walked in order, keeping what the ids mean as of
//! each call. Between two events (a datatype defined, a persistent request
//! created, a communicator entered in the rank's log) nothing changes, so
//! the walk counts how often each data-moving signature is called and
//! works out what it moved only when the next event comes; stretches of
//! the grammar without events are counted without expanding them.

use super::traffic::RankContext;
use super::{Signatures, Tally, rules_with};
use crate::members::Members;
use mpigram_grammar::{Grammar, Symbol};
use mpigram_trace::{CommEntry, RankPart};

/// How often progress is reported, in calls.
const PROGRESS_STEP: u64 = 1 << 20;

pub(crate) struct Walker<'a> {
    grammar: &'a Grammar,
    signatures: &'a Signatures,
    members: &'a Members,
    /// Rules that contain an event terminal, by rule.
    rule_has_event: Vec<bool>,
    /// Calls of each data-moving signature since the last event.
    pending: Vec<u64>,
    touched: Vec<u32>,
    /// Calls walked over all ranks, of `total`.
    done: u64,
    total: u64,
    reported: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

/// One rank's walk.
struct RankWalk<'r> {
    ctx: RankContext<'r>,
    comms: &'r [CommEntry],
    /// Next entry of the communicator log to apply.
    next_comm: usize,
    /// Index of the next call in the rank's stream.
    pos: u64,
}

impl<'a> Walker<'a> {
    pub fn new(
        grammar: &'a Grammar,
        signatures: &'a Signatures,
        members: &'a Members,
        total: u64,
        progress: &'a mut dyn FnMut(u64, u64),
    ) -> Walker<'a> {
        Walker {
            grammar,
            signatures,
            members,
            rule_has_event: if total > 0 {
                rules_with(grammar, &signatures.event)
            } else {
                Vec::new()
            },
            pending: vec![0; signatures.sigs.len()],
            touched: Vec::new(),
            done: 0,
            total,
            reported: 0,
            progress,
        }
    }

    pub fn walk_rank(&mut self, part: &RankPart, tally: &mut Tally) {
        let Some(start) = self.grammar.start(part.meta.rank) else {
            return;
        };
        let mut rank = RankWalk {
            ctx: RankContext::new(self.members, part.meta.rank, part.meta.world_size),
            comms: &part.comms,
            next_comm: 0,
            pos: 0,
        };
        self.symbol(&mut rank, tally, Symbol::Rule(start), 1);
        self.flush(&rank, tally);
        (self.progress)(self.done, self.total);
    }

    /// `count` copies of `symbol`, in order.
    fn symbol(&mut self, rank: &mut RankWalk<'_>, tally: &mut Tally, symbol: Symbol, count: u64) {
        let len = self.grammar.symbol_len(symbol);
        if len == 0 {
            return; // an empty stream
        }
        let has_event = match symbol {
            Symbol::Terminal(t) => self.signatures.event[t as usize],
            Symbol::Rule(r) => self.rule_has_event[r as usize],
        };
        let mut left = count;
        while left > 0 {
            self.apply_comm_log(rank, tally);
            // Whole copies before the next log entry hold no event.
            let quiet = match rank.comms.get(rank.next_comm) {
                _ if has_event => 0,
                None => left,
                Some(e) => ((e.seq - rank.pos) / len).min(left),
            };
            if quiet > 0 {
                self.count(symbol, quiet);
                self.advance(rank, quiet * len);
                left -= quiet;
                continue;
            }
            match symbol {
                Symbol::Terminal(t) => {
                    self.call(rank, tally, t);
                    self.advance(rank, 1);
                }
                Symbol::Rule(r) => {
                    for run in self.grammar.rule(r) {
                        self.symbol(rank, tally, run.symbol, run.count);
                    }
                }
            }
            left -= 1;
        }
    }

    /// One call of terminal `t` at the rank's current position.
    fn call(&mut self, rank: &mut RankWalk<'_>, tally: &mut Tally, t: u32) {
        if !self.signatures.event[t as usize] {
            self.count(Symbol::Terminal(t), 1);
            return;
        }
        self.flush(rank, tally);
        let sig = &self.signatures.sigs[t as usize];
        rank.ctx.types.define(sig);
        if let Some((key, traffic)) = rank.ctx.persistent_request(&self.signatures.call(t)) {
            rank.ctx.requests.insert(key, traffic);
        }
    }

    /// Applies the log entries of calls up to the current one.
    fn apply_comm_log(&mut self, rank: &mut RankWalk<'_>, tally: &mut Tally) {
        while let Some(e) = rank.comms.get(rank.next_comm).filter(|e| e.seq <= rank.pos) {
            self.flush(rank, tally);
            rank.ctx.comms.insert(e.comm, *e);
            rank.next_comm += 1;
        }
    }

    /// Counts `n` expansions of `symbol` towards the pending calls.
    fn count(&mut self, symbol: Symbol, n: u64) {
        match symbol {
            Symbol::Terminal(t) => {
                if self.signatures.moves_data[t as usize] {
                    let p = &mut self.pending[t as usize];
                    if *p == 0 {
                        self.touched.push(t);
                    }
                    *p = p.saturating_add(n);
                }
            }
            Symbol::Rule(r) => {
                for run in self.grammar.rule(r) {
                    self.count(run.symbol, n.saturating_mul(run.count));
                }
            }
        }
    }

    /// Accounts the pending calls with what their ids mean now.
    fn flush(&mut self, rank: &RankWalk<'_>, tally: &mut Tally) {
        for t in self.touched.drain(..) {
            let n = std::mem::take(&mut self.pending[t as usize]);
            let call = self.signatures.call(t);
            tally.account(call.sig.func, rank.ctx.rank, &rank.ctx.traffic(&call), n);
        }
    }

    fn advance(&mut self, rank: &mut RankWalk<'_>, calls: u64) {
        rank.pos += calls;
        self.done += calls;
        if self.done - self.reported >= PROGRESS_STEP {
            self.reported = self.done;
            (self.progress)(self.done, self.total);
        }
    }
}
