//! One process's record: the call-signature table, the grammar of the
//! stream of signatures, and the aggregated timing of each signature.
//! Nothing here allocates once the program's behaviour has been seen.

use crate::intern::{Interner, same};
use mpigram_grammar::Sequitur;
use mpigram_mpispec::FuncId;
use mpigram_trace::CallStats;

/// Timing of one signature, in clock ticks.
#[derive(Clone, Copy)]
pub struct TickStats {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
}

pub struct Recorder {
    /// The signature being encoded.
    pub scratch: Vec<u8>,
    /// The call-signature table: signature <-> terminal.
    pub signatures: Interner,
    /// The last terminal of each function: a loop calls the same function
    /// with the same arguments again, found with one comparison.
    last: Vec<u32>,
    pub stats: Vec<TickStats>,
    pub grammar: Sequitur,
    /// MPIGRAM_VERIFY: every signature, uncompressed, in call order, each
    /// after its length as 4 little-endian bytes.
    pub verify: Option<Vec<u8>>,
    pub calls: u64,
    /// Scratch for the encoder: communicators of a completion call's requests.
    pub request_comms: Vec<crate::objects::RequestInfo>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            scratch: Vec::with_capacity(256),
            signatures: Interner::default(),
            last: Vec::new(),
            stats: Vec::new(),
            grammar: Sequitur::new(),
            verify: None,
            calls: 0,
            request_comms: Vec::new(),
        }
    }

    /// Records the signature in `scratch` (a call of `func`) for a call
    /// that took `ticks`. Returns its terminal, and whether the signature
    /// is new.
    #[inline]
    pub fn record(&mut self, func: FuncId, ticks: u64) -> (u32, bool) {
        let f = func as usize;
        let (terminal, new) = match self.last.get(f) {
            Some(&t)
                if self
                    .signatures
                    .get(t)
                    .is_some_and(|s| same(s, &self.scratch)) =>
            {
                (t, false)
            }
            _ => {
                let (t, new) = self.intern();
                if f >= self.last.len() {
                    self.last.resize(f + 1, u32::MAX);
                }
                self.last[f] = t;
                (t, new)
            }
        };
        self.grammar.push(terminal);
        let s = &mut self.stats[terminal as usize];
        s.count += 1;
        s.total += ticks;
        s.min = s.min.min(ticks);
        s.max = s.max.max(ticks);
        self.calls += 1;
        if let Some(out) = &mut self.verify {
            out.extend_from_slice(&(self.scratch.len() as u32).to_le_bytes());
            out.extend_from_slice(&self.scratch);
        }
        (terminal, new)
    }

    /// The terminal of the signature in `scratch`, added to the table if
    /// new (and whether it was).
    fn intern(&mut self) -> (u32, bool) {
        let (t, new) = self.signatures.intern(&self.scratch);
        if new {
            self.stats.push(TickStats {
                count: 0,
                total: 0,
                min: u64::MAX,
                max: 0,
            });
        }
        (t, new)
    }

    /// Timing in nanoseconds, given the clock's nanoseconds per tick.
    pub fn call_stats(&self, ns_per_tick: f64) -> Vec<CallStats> {
        let ns = |ticks: u64| (ticks as f64 * ns_per_tick).round() as u64;
        self.stats
            .iter()
            .map(|s| CallStats {
                count: s.count,
                total_ns: ns(s.total),
                min_ns: if s.count == 0 { 0 } else { ns(s.min) },
                max_ns: ns(s.max),
            })
            .collect()
    }
}
