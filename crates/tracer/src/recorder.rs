//! One process's record: the call-signature table, the grammar of the
//! stream of signatures, and the aggregated timing of each signature.
//! Nothing here allocates once the program's behaviour has been seen.

use hashbrown::HashTable;
use mpigram_grammar::Sequitur;
use mpigram_mpispec::FuncId;
use mpigram_trace::CallStats;
use rustc_hash::FxHasher;
use std::hash::Hasher;

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
    /// Signature -> terminal, as indices into `signatures`.
    index: HashTable<u32>,
    /// The last terminal of each function: a loop calls the same function
    /// with the same arguments again, found with one comparison.
    last: Vec<u32>,
    pub signatures: Vec<Box<[u8]>>,
    pub stats: Vec<TickStats>,
    pub grammar: Sequitur,
    /// MPIGRAM_VERIFY: every signature, uncompressed, in call order, each
    /// after its length as 4 little-endian bytes.
    pub verify: Option<Vec<u8>>,
    pub calls: u64,
    /// Scratch for the encoder: communicators of a completion call's requests.
    pub request_comms: Vec<crate::objects::RequestInfo>,
}

/// Byte-slice equality without a call to memcmp: signatures are a few
/// bytes long, and this comparison runs on every traced call.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut a8, mut b8) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in a8.by_ref().zip(b8.by_ref()) {
        if u64::from_ne_bytes(x.try_into().unwrap()) != u64::from_ne_bytes(y.try_into().unwrap()) {
            return false;
        }
    }
    a8.remainder()
        .iter()
        .zip(b8.remainder())
        .all(|(x, y)| x == y)
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            scratch: Vec::with_capacity(256),
            index: HashTable::new(),
            last: Vec::new(),
            signatures: Vec::new(),
            stats: Vec::new(),
            grammar: Sequitur::new(),
            verify: None,
            calls: 0,
            request_comms: Vec::new(),
        }
    }

    /// Records the signature in `scratch` (a call of `func`) for a call
    /// that took `ticks`.
    pub fn record(&mut self, func: FuncId, ticks: u64) {
        let f = func as usize;
        let terminal = match self.last.get(f) {
            Some(&t)
                if same(
                    self.signatures.get(t as usize).map_or(&[], |s| s),
                    &self.scratch,
                ) =>
            {
                t
            }
            _ => {
                let t = self.intern();
                if f >= self.last.len() {
                    self.last.resize(f + 1, u32::MAX);
                }
                self.last[f] = t;
                t
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
    }

    /// The terminal of the signature in `scratch`, added to the table if new.
    fn intern(&mut self) -> u32 {
        let h = hash(&self.scratch);
        let (scratch, signatures) = (&self.scratch, &self.signatures);
        if let Some(&t) = self
            .index
            .find(h, |&t| same(&signatures[t as usize], scratch))
        {
            return t;
        }
        let t = self.signatures.len() as u32;
        self.signatures.push(self.scratch.as_slice().into());
        self.stats.push(TickStats {
            count: 0,
            total: 0,
            min: u64::MAX,
            max: 0,
        });
        let signatures = &self.signatures;
        self.index
            .insert_unique(h, t, |&t| hash(&signatures[t as usize]));
        t
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
