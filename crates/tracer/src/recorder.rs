//! One process's record: the call-signature table, the grammar of the
//! stream of signatures, the aggregated timing of each signature, and
//! per-call times when `MPIGRAM_TIMING` asks for them. Nothing here
//! allocates once the program's behaviour has been seen, but for the
//! per-call times, which grow with the calls.

use crate::intern::{Interner, same};
use crate::memo::WaitallMemo;
use crate::open_block::FixedColumn;
use mpigram_grammar::Sequitur;
use mpigram_mpispec::{FUNCS, FuncId};
use mpigram_trace::timing::{
    Bins, CODES_MIN_HITS, ColumnWriter, ExactWriter, LossyClock, OPEN_COLUMN_BYTES,
};
use mpigram_trace::{CallStats, CallTimes, Gaps, PairGap, Timing};
use rustc_hash::FxHashMap;

/// Lossy per-call timing being recorded.
pub struct Lossy {
    /// The bins of each base in use.
    bins: Vec<Bins>,
    /// Index in `bins` of each function's base.
    base_of: Vec<u8>,
    clock: LossyClock,
    /// Interval and duration codes.
    codes: ColumnWriter<FixedColumn>,
}

impl Lossy {
    /// Records a call's codes (ticks, counted from `origin`); true if they
    /// filled a block. (Apart: a search of the bins needs more registers
    /// than the path it is called from has free.)
    #[inline(never)]
    fn record(&mut self, func: FuncId, origin: u64, start: u64, end: u64) -> bool {
        let (start, end) = (start.saturating_sub(origin), end.saturating_sub(origin));
        let bins = &self.bins[self.base_of.get(func as usize).copied().unwrap_or(0) as usize];
        let (i, d) = self.clock.encode(bins, start, end);
        self.codes.push(i.into(), d.into())
    }
}

/// Per-call timing being recorded.
pub struct PerCall {
    pub timing: Timing,
    /// Clock ticks at the rank's origin: times are ticks since.
    origin: u64,
    lossy: Option<Lossy>,
    exact: Option<ExactWriter<FixedColumn>>,
    /// Bytes of room made for each column writer's blocks.
    room: usize,
}

impl PerCall {
    /// Per-call timing as `timing` says (which must hold valid bases),
    /// with times counted from `origin` ticks.
    pub fn new(timing: Timing, origin: u64) -> PerCall {
        let lossy = timing.lossy.as_ref().map(|bases| {
            let mut distinct = vec![bases.default];
            for &(_, b) in &bases.by_func {
                if !distinct.contains(&b) {
                    distinct.push(b);
                }
            }
            let base_of = FUNCS
                .iter()
                .map(|f| {
                    let b = bases.of(f.name);
                    distinct.iter().position(|&d| d == b).unwrap_or(0) as u8
                })
                .collect();
            Lossy {
                bins: distinct
                    .iter()
                    .map(|&b| Bins::new(b).expect("bases were checked"))
                    .collect(),
                base_of,
                clock: LossyClock::default(),
                codes: ColumnWriter::with_columns(fixed_columns(), CODES_MIN_HITS),
            }
        });
        let exact = timing
            .lossless
            .then(|| ExactWriter::with_columns(fixed_columns()).counted_from(origin));
        PerCall {
            timing,
            origin,
            lossy,
            exact,
            room: 0,
        }
    }

    /// Records a call's times; true if they filled a block. Where both
    /// modes are recorded, a block of one that fills ends the other's (a
    /// block of long numbers fills before `BLOCK_CALLS` calls): their
    /// blocks start and end together.
    #[inline(always)]
    pub(crate) fn record(&mut self, func: FuncId, start: u64, end: u64) -> bool {
        let mut filled = false;
        if let Some(l) = &mut self.lossy {
            filled = l.record(func, self.origin, start, end);
        }
        if let Some(e) = &mut self.exact {
            // Counted from the origin (`PerCall::new`).
            filled |= e.push(start, end);
        }
        if filled {
            self.end_blocks();
        }
        filled
    }

    /// The blocks the last filled, of lossy timing and of lossless timing
    /// (empty where not recorded), as stored: for the crash journal.
    pub fn last_blocks(&mut self) -> [&[u8]; 2] {
        self.columns()
            .map(|c| c.map_or(&[][..], |c| c.last_block()))
    }

    /// Ends the blocks being filled: a checkpoint of the crash journal
    /// holds them, and the tail after it starts a block.
    #[cold]
    pub fn end_blocks(&mut self) {
        self.columns()
            .into_iter()
            .flatten()
            .for_each(ColumnWriter::end_block);
    }

    /// Fills the blocks from now on in the crash journal's open blocks at
    /// `open` (lossy timing's two columns, then lossless timing's; see
    /// `mpigram_trace::journal::open_blocks_bytes`), their calls so far
    /// copied there.
    ///
    /// # Safety
    /// `open` is valid for reads and writes of those bytes for the rest of
    /// the process, and nothing else writes them.
    pub unsafe fn move_open_blocks(&mut self, open: *mut u8) {
        let columns = self.columns().into_iter().flatten();
        for (i, column) in columns.flat_map(ColumnWriter::open_columns).enumerate() {
            // SAFETY: the caller's bytes hold each column in turn.
            unsafe { column.move_to(open.add(i * OPEN_COLUMN_BYTES)) };
        }
    }

    /// Fills the blocks on the heap from now on: the crash journal stopped,
    /// and its open blocks keep the calls it holds.
    pub fn open_blocks_to_heap(&mut self) {
        let columns = self.columns().into_iter().flatten();
        columns
            .flat_map(ColumnWriter::open_columns)
            .for_each(FixedColumn::move_to_heap);
    }

    /// The stored columns of lossy and of lossless times (None: not
    /// recorded).
    fn columns(&mut self) -> [Option<&mut ColumnWriter<FixedColumn>>; 2] {
        [
            self.lossy.as_mut().map(|l| &mut l.codes),
            self.exact.as_mut().map(ExactWriter::columns),
        ]
    }

    /// Makes room for `bytes` of times in each column writer, up front (in
    /// address space: pages are used as they are written).
    fn reserve(&mut self, bytes: usize) {
        self.room = bytes;
        self.columns()
            .into_iter()
            .flatten()
            .for_each(|c| c.reserve(bytes));
    }

    /// Takes out what was recorded so far, as stored: the times of a part
    /// written out (recording goes on; the next part's times continue
    /// these).
    fn take(&mut self) -> CallTimes {
        let room = self.room;
        let [lossy, exact] = self.columns().map(|c| {
            c.map_or_else(Vec::new, |c| {
                let taken = c.take();
                c.reserve(room);
                taken
            })
        });
        CallTimes { lossy, exact }
    }

    /// Puts back what [`take`](PerCall::take) took.
    fn put_back(&mut self, times: CallTimes) {
        let [lossy, exact] = self.columns();
        if let Some(c) = lossy {
            c.put_back(times.lossy);
        }
        if let Some(c) = exact {
            c.put_back(times.exact);
        }
    }

    /// Bytes the times recorded take.
    fn heap_bytes(&self) -> usize {
        self.lossy.as_ref().map_or(0, |l| l.codes.heap_bytes())
            + self.exact.as_ref().map_or(0, ExactWriter::heap_bytes)
    }

    /// What was recorded so far, as stored (recording goes on).
    pub fn times(&self) -> CallTimes {
        CallTimes {
            lossy: self
                .lossy
                .as_ref()
                .map_or_else(Vec::new, |l| l.codes.bytes()),
            exact: self
                .exact
                .as_ref()
                .map_or_else(Vec::new, ExactWriter::bytes),
        }
    }
}

/// The columns of a column writer whose blocks are filled in
/// [`FixedColumn`]s.
fn fixed_columns() -> [FixedColumn; 3] {
    [(); 3].map(|()| FixedColumn::on_heap())
}

/// Set in what [`Recorder::record`] returns when the call filled a block
/// of per-call times (above any period).
pub const BLOCK_FILLED: u64 = 1 << 63;

/// A call of `s`'s signature took `ticks`, fewer than any before it (as
/// the first call does: `min` starts at the most ticks there are); its
/// gap was `gap`. Out of line: then the hot path adds one to the count
/// in memory, not in a register kept for this.
#[cold]
#[inline(never)]
fn shortest_yet(s: &mut TickStats, ticks: u64, gap: u64) {
    s.min = ticks;
    if s.count == 1 {
        s.first = gap;
    }
}

/// Timing of one signature, in clock ticks.
#[derive(Clone, Copy)]
pub struct TickStats {
    pub total: u64,
    pub min: u64,
    pub max: u64,
    /// (Apart from `total`: two adjacent sums the compiler would add as a
    /// vector, in more instructions than two adds.)
    pub count: u64,
    /// Sum of the gaps before the calls after `pred`: from the previous
    /// call's end to the call's start (the computation before it). The
    /// signature's gap is this, `again_gap` and those after others.
    pub gap: u64,
    /// The terminal before the signature's first call ([`NO_PRED`] if it
    /// was the first of its table), whose gaps `gap` sums; those after
    /// others are kept apart (`again`, [`Recorder::pair_gaps`]).
    pub pred: u32,
    /// The second predecessor seen ([`NO_PRED`]: none yet), or the
    /// signature itself once it followed itself (a call repeated in a
    /// loop: `Recorder::gap_after_another`), and the gaps after it.
    pub again: u32,
    pub again_gap: u64,
    /// The gap before the first call (`mpigram_trace::Gaps::firsts`).
    pub first: u64,
}

/// Bytes of encoded signature [`Recorder::prepare`] makes room for, per
/// signature on average (longer ones grow the table's bytes as before).
const PREPARED_SIGNATURE_BYTES: usize = 48;

/// Bytes a prepared signature takes in all: its encoding, its end and
/// index slot, its [`TickStats`], its grammar node and digram slot.
const PREPARED_BYTES: usize = PREPARED_SIGNATURE_BYTES + 150;

/// No terminal before (the first call of a table).
pub const NO_PRED: u32 = u32::MAX;

/// Calls between two checks of the memory budget where no signature is
/// new (a power of two: the check is a mask on the call count).
pub const CHECK_CALLS: u64 = 1 << 14;

pub struct Recorder {
    /// The signature being encoded.
    pub scratch: Vec<u8>,
    /// The call-signature table: signature <-> terminal.
    pub signatures: Interner,
    /// The last terminal of each function: a loop calls the same function
    /// with the same arguments again, found with one comparison.
    last: Vec<u32>,
    pub stats: Vec<TickStats>,
    /// When the previous call ended (ticks): the gap before a call starts there.
    last_end: u64,
    /// The previous call's terminal ([`NO_PRED`] before the first).
    last_terminal: u32,
    /// Gaps before a signature's calls after another predecessor than its
    /// first two (`TickStats::pred`, `TickStats::again`), by (terminal,
    /// predecessor), in ticks: a compare or two on the hot path, a probe
    /// here where a signature follows more (`mpigram_trace::PairGap`).
    pub pair_gaps: FxHashMap<(u32, u32), u64>,
    pub grammar: Sequitur,
    /// MPIGRAM_VERIFY: every signature, uncompressed, in call order, each
    /// after its length as 4 little-endian bytes.
    pub verify: Option<Vec<u8>>,
    pub calls: u64,
    /// Scratch for the encoder: communicators of a completion call's requests.
    pub request_comms: Vec<crate::objects::RequestInfo>,
    /// Per-call times, if recorded (see [`Recorder::set_per_call`]).
    per_call: Option<PerCall>,
    /// A call records more than its terminal and aggregated timing: its
    /// per-call times, or its signature into the verification stream (a
    /// field the hot path tests where the recorder is, set with either).
    extras: bool,
    /// The terminal of a repeated MPI_Waitall on a window of new requests.
    pub waitall: WaitallMemo,
    /// The bytes the signature table, its timing, the grammar and the
    /// per-call times may use before they are written out as a part: half
    /// of `MPIGRAM_MEMORY`, since writing them out takes about as much
    /// again (budget.rs).
    pub budget: usize,
    /// They used more than `budget` at the last check.
    pub over_budget: bool,
    /// The most they used, in bytes (at a check).
    pub peak_bytes: usize,
    /// What they used when the last part was taken out.
    floor_bytes: usize,
}

/// What a rank recorded since its previous part: taken out of the
/// recorder, which goes on with an empty table.
pub struct Part {
    pub signatures: Interner,
    pub grammar: Sequitur,
    pub stats: Vec<TickStats>,
    pub pair_gaps: FxHashMap<(u32, u32), u64>,
    /// The per-call times of its calls (empty where not recorded).
    pub times: CallTimes,
}

impl Recorder {
    /// A recorder whose first call's gap is counted from `origin` ticks.
    pub fn new(origin: u64) -> Recorder {
        Recorder {
            scratch: Vec::with_capacity(256),
            signatures: Interner::default(),
            last: Vec::new(),
            stats: Vec::new(),
            last_end: origin,
            last_terminal: NO_PRED,
            pair_gaps: FxHashMap::default(),
            grammar: Sequitur::new(),
            verify: None,
            calls: 0,
            request_comms: Vec::new(),
            per_call: None,
            extras: false,
            waitall: WaitallMemo::default(),
            budget: usize::MAX,
            over_budget: false,
            peak_bytes: 0,
            floor_bytes: 0,
        }
    }

    /// Makes room for the first `signatures` signatures of an empty
    /// recorder (their table, timing and grammar) and faults its pages in
    /// now, as the tracer starts (at the first MPI call): a page first
    /// touched costs 1.3–2.1 µs on the VMs measured, and a new signature
    /// takes about 190 bytes of new memory (46 faults for a program's
    /// first 1,000 signatures: 64–97 ns a signature).
    /// A part after the first reuses the first's memory (`reuse`). At most
    /// a quarter of the budget is prepared.
    pub fn prepare(&mut self, signatures: usize) {
        let signatures = signatures.min(self.budget / 4 / PREPARED_BYTES);
        self.signatures
            .prepare(signatures, signatures * PREPARED_SIGNATURE_BYTES);
        let empty = TickStats {
            count: 0,
            total: 0,
            min: 0,
            max: 0,
            gap: 0,
            pred: NO_PRED,
            again: NO_PRED,
            again_gap: 0,
            first: 0,
        };
        crate::intern::fault_in(&mut self.stats, signatures, empty);
        self.grammar.prepare(signatures);
    }

    /// Puts back a part taken by [`take_part`](Recorder::take_part) that
    /// could not be written: recording goes on in it, without a budget.
    pub fn put_back(&mut self, part: Part) {
        if let Some(p) = &mut self.per_call {
            p.put_back(part.times);
        }
        self.signatures = part.signatures;
        self.grammar = part.grammar;
        self.stats = part.stats;
        // The part goes on; the call before is not known by its terminal.
        self.pair_gaps = part.pair_gaps;
        self.last_terminal = NO_PRED;
        self.budget = usize::MAX;
    }

    /// Bytes the signature table, its timing, the grammar and the
    /// per-call times use.
    pub fn table_bytes(&self) -> usize {
        self.signatures.heap_bytes()
            + self.stats.len() * std::mem::size_of::<TickStats>()
            + self.pair_gaps.capacity() * std::mem::size_of::<((u32, u32), u64)>()
            + self.grammar.heap_bytes()
            + self.per_call.as_ref().map_or(0, PerCall::heap_bytes)
    }

    /// Bytes the table, grammar and times took on since the last part was
    /// taken out (a new table starts with room made for as many
    /// signatures as the last part had).
    pub fn grown_bytes(&self) -> usize {
        self.table_bytes().saturating_sub(self.floor_bytes)
    }

    /// Whether the table, grammar and times outgrew the budget: checked at
    /// every 64th new signature, and every [`CHECK_CALLS`] calls for what grows
    /// without new signatures (per-call times, and the grammar of
    /// signatures in an order that does not repeat).
    #[cold]
    #[inline(never)]
    pub fn check_budget(&mut self) -> bool {
        let bytes = self.table_bytes();
        self.peak_bytes = self.peak_bytes.max(bytes);
        // A part holds at least a quarter of the budget more than a new
        // table starts with (a budget below the tracer's working memory
        // still writes parts, not one a call).
        self.over_budget = bytes > self.budget.max(self.floor_bytes + self.budget / 4);
        self.over_budget
    }

    /// Takes out the signatures, grammar and timing recorded so far, and
    /// starts a new part: its calls are encoded against a new table. The
    /// new table is empty until [`reuse`](Recorder::reuse) gives it the
    /// part's memory back, once the part is written.
    pub fn take_part(&mut self) -> Part {
        let part = Part {
            signatures: std::mem::take(&mut self.signatures),
            grammar: std::mem::take(&mut self.grammar),
            stats: std::mem::take(&mut self.stats),
            pair_gaps: std::mem::take(&mut self.pair_gaps),
            times: self
                .per_call
                .as_mut()
                .map_or_else(Default::default, PerCall::take),
        };
        self.last.clear();
        self.last_terminal = NO_PRED;
        // The memos' terminals are the old table's (and the call memo's:
        // see `Tracer::spill`).
        self.waitall = WaitallMemo::default();
        self.over_budget = false;
        part
    }

    /// The part taken by [`take_part`](Recorder::take_part) is written:
    /// its tables, emptied, become the new part's, with the room the old
    /// one grew to. Memory the tables hold stays theirs, so a part touches
    /// no new page until it outgrows the last (fresh tables faulted their
    /// pages in again every part: about 60 ns a new signature).
    pub fn reuse(&mut self, part: Part) {
        debug_assert!(self.signatures.is_empty() && self.grammar.is_empty());
        let Part {
            mut signatures,
            mut grammar,
            mut stats,
            mut pair_gaps,
            times: _,
        } = part;
        signatures.clear();
        grammar.clear();
        stats.clear();
        pair_gaps.clear();
        self.signatures = signatures;
        self.grammar = grammar;
        self.stats = stats;
        self.pair_gaps = pair_gaps;
        self.floor_bytes = self.table_bytes();
    }

    /// The terminal of the signature in `scratch` (a call of `func`), and
    /// whether the signature is new.
    #[inline]
    pub fn terminal(&mut self, func: FuncId) -> (u32, bool) {
        let f = func as usize;
        match self.last.get(f) {
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
        }
    }

    /// Records a call of `func` with the signature `terminal`, from `start`
    /// to `end` ticks (its signature in `scratch`, under verification).
    /// Returns the period of the repetition the grammar took it in, or 0
    /// (`Sequitur::push_repeating`), with [`BLOCK_FILLED`] set if its
    /// per-call times filled a block.
    #[inline(always)]
    pub fn record(&mut self, func: FuncId, terminal: u32, start: u64, end: u64) -> u64 {
        let repeats = self.record_plain(terminal, start, end);
        if self.extras {
            return repeats | self.record_extras(func, start, end);
        }
        repeats
    }

    /// [`record`](Recorder::record) without per-call times or verification.
    #[inline(always)]
    fn record_plain(&mut self, terminal: u32, start: u64, end: u64) -> u64 {
        let ticks = end.wrapping_sub(start);
        let repeats = self.grammar.push_repeating(terminal);
        let s = &mut self.stats[terminal as usize];
        s.count += 1;
        s.total += ticks;
        // A new shortest or longest call, or a clock that went back, is
        // rare: a compare and a branch each. The first call is a new
        // shortest (`min` starts at the most ticks there are).
        if ticks < s.min {
            shortest_yet(s, ticks, start.saturating_sub(self.last_end));
        }
        if ticks > s.max {
            crate::call::cold_path();
            s.max = ticks;
        }
        let pred = std::mem::replace(&mut self.last_terminal, terminal);
        if let Some(gap) = start.checked_sub(self.last_end) {
            // Most signatures follow one other, or one other and
            // themselves: a compare and a branch, or two.
            if pred == s.pred {
                s.gap += gap;
            } else if pred == s.again {
                s.again_gap += gap;
            } else {
                self.gap_after_another(terminal, pred, gap);
            }
        }
        self.last_end = end;
        self.calls += 1;
        repeats
    }

    /// A gap before a call of `terminal` after `pred`, which is not the
    /// predecessor of its first call.
    #[cold]
    #[inline(never)]
    fn gap_after_another(&mut self, terminal: u32, pred: u32, gap: u64) {
        let s = &mut self.stats[terminal as usize];
        if pred == NO_PRED {
            // The first call of a new table (budget.rs): the gap counts as
            // the first predecessor's.
            s.gap += gap;
        } else if s.again == NO_PRED {
            s.again = pred;
            s.again_gap = gap;
        } else if pred == terminal {
            // The signature follows itself: in a loop of it, nearly every
            // call does, so its own gaps take the second slot and the
            // predecessor that held it goes to the map (which had no pair
            // of the signature with itself: it takes the slot at once).
            let (moved, moved_gap) = (s.again, s.again_gap);
            s.again = pred;
            s.again_gap = gap;
            *self.pair_gaps.entry((terminal, moved)).or_default() += moved_gap;
        } else {
            *self.pair_gaps.entry((terminal, pred)).or_default() += gap;
        }
    }

    /// The next call's gap is counted from `ticks`: after the tracer's own
    /// work in MPI_Init (claiming the directory, the census, the clocks'
    /// alignment), which is not the application's computation.
    pub fn gaps_from(&mut self, ticks: u64) {
        self.last_end = ticks;
    }

    /// The per-call times and the verification stream of a call:
    /// [`BLOCK_FILLED`] if its times filled a block, else 0. (Apart: the
    /// path of a call without them stays as short as it was.)
    #[inline(never)]
    fn record_extras(&mut self, func: FuncId, start: u64, end: u64) -> u64 {
        let mut filled = 0;
        if let Some(p) = &mut self.per_call
            && p.record(func, start, end)
        {
            filled = BLOCK_FILLED;
        }
        if self.verify.is_some() {
            self.record_verified();
        }
        filled
    }

    /// Appends the call's signature to the verification stream: under
    /// verification every call is encoded in full (memo.rs).
    #[cold]
    #[inline(never)]
    fn record_verified(&mut self) {
        if let Some(out) = &mut self.verify {
            out.extend_from_slice(&(self.scratch.len() as u32).to_le_bytes());
            out.extend_from_slice(&self.scratch);
        }
    }

    /// Records per-call times from now on.
    pub fn set_per_call(&mut self, mut per_call: PerCall) {
        // Room for the times that fit in the budget (a part is written out
        // before they outgrow it); beyond 1 GiB they grow as they go.
        per_call.reserve(self.budget.min(1 << 30));
        self.per_call = Some(per_call);
        self.extras = true;
    }

    /// Keeps every call's signature, uncompressed, from now on
    /// (`MPIGRAM_VERIFY`).
    pub fn set_verify(&mut self) {
        self.verify = Some(Vec::new());
        self.extras = true;
        crate::call::set_verify();
    }

    /// The per-call times being recorded, if any.
    pub fn per_call(&self) -> Option<&PerCall> {
        self.per_call.as_ref()
    }

    /// The per-call times being recorded, to change where they go.
    pub fn per_call_mut(&mut self) -> Option<&mut PerCall> {
        self.per_call.as_mut()
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
                gap: 0,
                // This call's (recorded next).
                pred: self.last_terminal,
                again: NO_PRED,
                again_gap: 0,
                first: 0,
            });
            // Every 64th: the sum over the tables is about a hundred
            // instructions, and 64 signatures a few kilobytes.
            if t % 64 == 0 {
                self.check_budget();
            }
        }
        (t, new)
    }

    /// Timing in nanoseconds, given the clock's nanoseconds per tick.
    pub fn call_stats(&self, ns_per_tick: f64) -> Vec<CallStats> {
        call_stats(&self.stats, &self.pair_gaps, ns_per_tick)
    }

    /// Where the gaps were, in nanoseconds, given the clock's nanoseconds
    /// per tick (`complete`: see [`gaps`]).
    pub fn gaps(&self, ns_per_tick: f64, complete: bool) -> Gaps {
        gaps(&self.stats, &self.pair_gaps, ns_per_tick, complete)
    }
}

/// Every (terminal, predecessor) pair of `stats` and `others` (the gaps
/// after another predecessor than the first two), and every first call's
/// gap, in nanoseconds; unless `complete`, only those of signatures that
/// follow more than one other and of signatures called more than once
/// (what a file keeps: `Gaps::trimmed`; the merge summarises the rest). A
/// first call with none before (the table's first) has neither: its gap
/// stays in the signature's alone.
pub fn gaps(
    stats: &[TickStats],
    others: &FxHashMap<(u32, u32), u64>,
    ns_per_tick: f64,
    complete: bool,
) -> Gaps {
    let scale = TickScale::new(ns_per_tick);
    let ns = |ticks: u64| scale.ns(ticks);
    // `others` holds no gap after the table's first call, which has no
    // call before (`Recorder::gap_after_another`).
    let mut pairs: Vec<PairGap> = others
        .iter()
        .map(|(&(terminal, pred), &gap)| PairGap {
            terminal,
            pred,
            gap_ns: ns(gap),
        })
        .collect();
    for (t, s) in stats.iter().enumerate() {
        let terminal = t as u32;
        // Followed another than its first predecessor (`others` has only
        // signatures that did).
        let twice = s.again != NO_PRED;
        if twice {
            pairs.push(PairGap {
                terminal,
                pred: s.again,
                gap_ns: ns(s.again_gap),
            });
        }
        if s.count > 0 && s.pred != NO_PRED && (complete || twice) {
            pairs.push(PairGap {
                terminal,
                pred: s.pred,
                gap_ns: ns(s.gap),
            });
        }
    }
    pairs.sort_unstable();
    let firsts = stats
        .iter()
        .enumerate()
        .filter(|(_, s)| s.pred != NO_PRED && (s.count > 1 || complete && s.count > 0))
        .map(|(t, s)| (t as u32, ns(s.first)))
        .collect();
    Gaps { pairs, firsts }
}

/// Ticks to nanoseconds, to the nearest, in fixed point: a multiply and a
/// shift. The float conversions it replaces (u64 to f64 and back, each
/// saturating) took 16 instructions a value, five values a signature when
/// a part of 10^5 signatures is written.
#[derive(Clone, Copy)]
struct TickScale {
    /// Nanoseconds per tick times 2^[`TickScale::FRACTION`].
    fixed: u64,
}

impl TickScale {
    /// Fraction bits: an hour of a 3 GHz clock's ticks is off by under
    /// 0.1 ns, and a clock of up to 2^16 ns a tick is scaled.
    const FRACTION: u32 = 48;

    fn new(ns_per_tick: f64) -> TickScale {
        // Saturating: NaN and negatives give 0, like the cast it replaces.
        let fixed = (ns_per_tick * (1u64 << Self::FRACTION) as f64).round() as u64;
        TickScale { fixed }
    }

    #[inline]
    fn ns(self, ticks: u64) -> u64 {
        let half = 1u128 << (Self::FRACTION - 1);
        let ns = (u128::from(ticks) * u128::from(self.fixed) + half) >> Self::FRACTION;
        ns.min(u128::from(u64::MAX)) as u64
    }
}

/// `stats` in nanoseconds, given the clock's nanoseconds per tick; `others`
/// holds the gaps after predecessors other than each signature's first
/// two (see [`TickStats::gap`]).
pub fn call_stats(
    stats: &[TickStats],
    others: &FxHashMap<(u32, u32), u64>,
    ns_per_tick: f64,
) -> Vec<CallStats> {
    let scale = TickScale::new(ns_per_tick);
    let ns = |ticks: u64| scale.ns(ticks);
    let mut gaps: Vec<u64> = stats.iter().map(|s| s.gap + s.again_gap).collect();
    for (&(t, _), &gap) in others {
        if let Some(g) = gaps.get_mut(t as usize) {
            *g += gap;
        }
    }
    stats
        .iter()
        .zip(gaps)
        .map(|(s, gap)| CallStats {
            count: s.count,
            total_ns: ns(s.total),
            min_ns: if s.count == 0 { 0 } else { ns(s.min) },
            max_ns: ns(s.max),
            gap_ns: ns(gap),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_mpispec::func;

    /// Records a call whose signature is `sig` from `start` to `end` ticks;
    /// returns its terminal.
    fn call(r: &mut Recorder, sig: &[u8], start: u64, end: u64) -> u32 {
        r.scratch.clear();
        r.scratch.extend_from_slice(sig);
        let (t, _) = r.terminal(func::MPI_Comm_rank);
        r.record(func::MPI_Comm_rank, t, start, end);
        t
    }

    /// The fixed-point scale rounds ticks to the nearest nanosecond as the
    /// exact product would, for clocks of 3 GHz, 1 GHz (`clock_gettime`) and
    /// an odd rate, up to an hour's ticks; it saturates where the
    /// nanoseconds do not fit, and a rate that is not a number gives 0.
    #[test]
    fn ticks_scale_to_the_nearest_nanosecond() {
        for ns_per_tick in [1.0 / 3.0, 1.0, 0.385_208_4, 2.5] {
            let scale = TickScale::new(ns_per_tick);
            let hour = (3.6e12 / ns_per_tick) as u64;
            let mut ticks = 0u64;
            while ticks < hour {
                let exact = ticks as f64 * ns_per_tick;
                let ns = scale.ns(ticks) as f64;
                // Off by at most the half nanosecond of rounding, plus
                // the float product's own error at large counts.
                assert!(
                    (ns - exact).abs() <= 0.5 + exact * 1e-12,
                    "{ticks} ticks at {ns_per_tick} ns: {ns}, exactly {exact}"
                );
                ticks = ticks * 3 + 7;
            }
        }
        assert_eq!(TickScale::new(1.0).ns(123_456_789), 123_456_789);
        assert_eq!(TickScale::new(0.5).ns(3), 2); // 1.5 rounds up
        assert_eq!(TickScale::new(1000.0).ns(u64::MAX), u64::MAX);
        assert_eq!(TickScale::new(f64::NAN).ns(1_000), 0);
    }

    #[test]
    fn a_signature_that_follows_itself_takes_the_second_slot_and_keeps_every_gap() {
        let mut r = Recorder::new(0);
        let a = call(&mut r, b"a", 0, 1);
        let c = call(&mut r, b"c", 3, 4); // after a: gap 2
        let b = call(&mut r, b"b", 10, 11);
        assert_eq!(call(&mut r, b"c", 15, 16), c); // after b: gap 4
        for i in 0..10 {
            // After itself: gaps of 5.
            call(&mut r, b"c", 21 + 6 * i, 22 + 6 * i);
        }
        let s = r.stats[c as usize];
        assert_eq!((s.count, s.pred, s.gap), (12, a, 2));
        // The loop's own gaps took the second slot; b's went to the map.
        assert_eq!((s.again, s.again_gap), (c, 50));
        assert_eq!(r.pair_gaps.get(&(c, b)), Some(&4));
        assert_eq!(r.pair_gaps.get(&(c, c)), None);
        let pairs: Vec<(u32, u32, u64)> = gaps(&r.stats, &r.pair_gaps, 1.0, true)
            .pairs
            .iter()
            .filter(|p| p.terminal == c)
            .map(|p| (p.terminal, p.pred, p.gap_ns))
            .collect();
        let mut expected = vec![(c, a, 2), (c, b, 4), (c, c, 50)];
        expected.sort_unstable();
        assert_eq!(pairs, expected);
        // A third predecessor goes to the map, the loop keeps the slot.
        call(&mut r, b"a", 80, 81);
        call(&mut r, b"c", 90, 91); // after a: its first predecessor's
        call(&mut r, b"b", 95, 96);
        call(&mut r, b"c", 100, 101); // after b: in the map
        let s = r.stats[c as usize];
        assert_eq!((s.gap, s.again, s.again_gap), (11, c, 50));
        assert_eq!(r.pair_gaps.get(&(c, b)), Some(&8));
    }

    /// A prepared recorder is empty, has the room (at most a quarter of
    /// its budget) and records as an unprepared one does.
    #[test]
    fn a_prepared_recorder_has_room_and_records_the_same() {
        let mut plain = Recorder::new(0);
        let mut prepared = Recorder::new(0);
        prepared.budget = 32 << 20;
        prepared.prepare(1_000);
        assert!(prepared.signatures.is_empty() && prepared.stats.is_empty());
        assert!(prepared.stats.capacity() >= 1_000);
        assert!(prepared.table_bytes() > 100_000);
        for r in [&mut plain, &mut prepared] {
            for i in 0..300u64 {
                let sig = (i % 97).to_le_bytes();
                call(r, &sig, 10 * i, 10 * i + 1 + i % 3);
            }
        }
        let sigs = |r: &Recorder| r.signatures.iter().map(<[u8]>::to_vec).collect::<Vec<_>>();
        assert_eq!(sigs(&plain), sigs(&prepared));
        assert_eq!(plain.call_stats(1.0), prepared.call_stats(1.0));
        assert_eq!(plain.grammar.grammar(0), prepared.grammar.grammar(0));
        // A small budget gets room for fewer.
        let mut small = Recorder::new(0);
        small.budget = 64 << 10;
        small.prepare(1_000);
        assert!(small.stats.capacity() < 100, "{}", small.stats.capacity());
    }
}
