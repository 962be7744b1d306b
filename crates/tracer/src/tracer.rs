//! The process's tracer: one per process, behind one lock. It is created
//! on the first traced call (MPI_Initialized may come before MPI_Init),
//! learns its rank at MPI_Init, and writes the rank's trace at
//! MPI_Finalize — or at exit, marked partial, if the program never
//! finalizes. From MPI_Init until the trace is written, every call also
//! goes to the rank's crash journal (journal.rs), which survives the
//! process being killed.

use crate::abi::MPI_SUCCESS;
use crate::clock::ClockPoint;
use crate::encoder::Encoder;
use crate::front::front;
use crate::journal::Journal;
use crate::memo::CallMemo;
use crate::objects::{CommInfo, Objects};
use crate::recorder::{BLOCK_FILLED, CHECK_CALLS, PerCall, Recorder};
use mpigram_mpispec::{FuncId, HandleKind, HandleRef, put_signature_head};
use mpigram_trace::journal::JournalHeader;
use mpigram_trace::{
    ClockSync, CommEntry, Ending, NO_RANK, RankMeta, RankStats, RankTrace, Timing,
};
use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

pub struct Tracer {
    pub objects: Objects,
    pub recorder: Recorder,
    /// Rank and size of MPI_COMM_WORLD, once MPI is initialised.
    world: Option<(u32, u32)>,
    start: ClockPoint,
    finalized: bool,
    /// Calls recorded when the trace was last written.
    written_calls: Option<u64>,
    /// The crash journal, from MPI_Init until the trace is written.
    journal: Option<Journal>,
    /// This rank's clock against rank 0's, at MPI_Init and MPI_Finalize.
    pub clock_sync: Vec<ClockSync>,
    /// The run's id, agreed at MPI_Init (0 until then).
    run: u64,
    /// Parts of the trace written out to keep within the memory budget
    /// (budget.rs).
    pub parts: u32,
}

/// Signatures the recorder has room made for when it starts
/// (`Recorder::prepare`): more than most programs have (NPB's have
/// hundreds); about 800 KB, faulted in at the first MPI call (MPI_Init in
/// most programs).
const PREPARED_SIGNATURES: usize = 4096;

/// The tracer, and the lock that guards it while calls may run
/// concurrently.
struct Global {
    lock: parking_lot::Mutex<()>,
    tracer: UnsafeCell<Option<Box<Tracer>>>,
    /// The tracer's call memo (memo.rs), beside it rather than in it: at
    /// a fixed address, which a wrapper compares its call with before the
    /// MPI call without first finding the tracer. Reached as the tracer is
    /// ([`Tracer::memo_and_objects`]), and read by [`same_inputs`].
    memo: UnsafeCell<CallMemo>,
}

// SAFETY: `tracer` is only reached through `with`, which holds `lock`
// unless MPI promised that no two calls run at once (see MODE).
unsafe impl Sync for Global {}

static TRACER: Global = Global {
    lock: parking_lot::Mutex::new(()),
    tracer: UnsafeCell::new(None),
    memo: UnsafeCell::new(CallMemo::new()),
};

/// MPI settled on `provided` as the thread level.
pub fn set_thread_level(provided: c_int) {
    crate::call::set_concurrent(provided >= front().ints.MPI_THREAD_MULTIPLE);
}

/// Whether the input words of a call of `func` equal those of the
/// function's entry in the call memo expected next
/// (`CallMemo::same_inputs`), asked before MPI runs the call.
///
/// # Safety
/// MPI calls cannot overlap (`call::concurrent` is false), so that no
/// other thread uses the tracer meanwhile.
#[inline(always)]
pub(crate) unsafe fn same_inputs<const I: usize>(
    func: FuncId,
    inputs: &[u64; I],
    narrow: [bool; I],
) -> bool {
    // SAFETY: no other thread uses the tracer (nor its memo), and no
    // call is being recorded; this only reads it.
    unsafe { &*TRACER.memo.get() }.same_inputs(func, inputs, narrow)
}

/// [`same_inputs`], or else whether another of the function's entries in
/// the call memo holds the input words, which then becomes the one
/// expected (`CallMemo::expect_holding`): asked off the fast path, when
/// its call was not the one expected.
///
/// # Safety
/// As [`same_inputs`].
#[inline(always)]
pub(crate) unsafe fn known_inputs<const I: usize>(func: FuncId, inputs: &[u64; I]) -> bool {
    // SAFETY: no other thread uses the tracer (nor its memo), and no
    // call is being recorded.
    let memo = unsafe { &mut *TRACER.memo.get() };
    let narrow = [false; I];
    memo.same_inputs(func, inputs, narrow) || memo.expect_holding(func, inputs, narrow)
}

/// Whether an MPI_Waitall of the `count` requests `handle` gives (by
/// position, their values before the call), recording statuses or not,
/// completes exactly the requests created since the last lookup and the
/// Waitall memo knows its terminal, but for its statuses' bytes
/// ([`recording::record_known_waitall`](crate::recording::record_known_waitall)
/// checks those).
///
/// # Safety
/// MPI calls cannot overlap (`call::concurrent` is false), so that no
/// other thread uses the tracer meanwhile.
#[inline(always)]
pub(crate) unsafe fn waitall_known(
    count: c_int,
    statuses: bool,
    handle: impl Fn(usize) -> u64,
) -> bool {
    // SAFETY: no other thread uses the tracer, and no call is being
    // recorded; this only reads it.
    let Some(t) = (unsafe { &*TRACER.tracer.get() }) else {
        return false;
    };
    let requests = t.objects.requests();
    requests.logged_are(count.max(0) as usize, handle)
        && t.recorder
            .waitall
            .knows(count, statuses, requests.logged().map(|(id, _)| id))
            .is_some()
}

/// Runs `f` on the tracer, creating it on first use. A panic inside turns
/// tracing off with one message; the application carries on.
pub fn with<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    if crate::call::is_off() {
        return None;
    }
    recording(f)
}

/// [`with`], for a traced call (`call::Call`): recording is on.
#[inline(always)]
pub(crate) fn recording<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    let _guard = crate::call::concurrent().then(|| TRACER.lock.lock());
    // SAFETY: the lock is held, or MPI calls cannot overlap.
    unsafe { recording_alone(f) }
}

/// [`recording`] without the lock.
///
/// # Safety
/// No other thread uses the tracer meanwhile: the caller holds the lock,
/// or MPI calls cannot overlap ([`concurrent`] is false).
#[inline(always)]
pub(crate) unsafe fn recording_alone<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    let run = || {
        // SAFETY: exclusive access, by the lock or by MPI's thread level.
        let tracer = unsafe { &mut *TRACER.tracer.get() };
        match tracer {
            Some(t) => f(t),
            None => f(tracer.insert(Tracer::new())),
        }
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(r) => Some(r),
        Err(_) => {
            crate::call::disable();
            crate::message::say(
                "internal error, tracing is off for this process; the application continues",
            );
            None
        }
    }
}

/// A call encoded in full.
pub(crate) struct Encoded {
    pub terminal: u32,
    /// Its signature is new (it is in `Recorder::scratch`).
    pub new: bool,
    /// The request it created.
    pub created: Option<crate::encoder::Created>,
    /// Its first communicator argument.
    pub comm: Option<u64>,
}

impl Tracer {
    /// The call memo, and the objects it recalls calls against.
    #[inline(always)]
    pub(crate) fn memo_and_objects(&mut self) -> (&mut CallMemo, &mut Objects) {
        // SAFETY: `&mut self` is exclusive access to the tracer (its lock
        // is held, or MPI calls cannot overlap), which the memo shares.
        (unsafe { &mut *TRACER.memo.get() }, &mut self.objects)
    }

    /// Encodes a call of `func` that returned `ret` (arguments from
    /// `encode`) into the recorder's scratch, and finds its terminal.
    pub(crate) fn encode(
        &mut self,
        func: FuncId,
        ret: c_int,
        encode: impl FnOnce(&mut Encoder),
    ) -> Encoded {
        let Tracer {
            objects, recorder, ..
        } = self;
        objects.seq = recorder.calls;
        recorder.scratch.clear();
        put_signature_head(&mut recorder.scratch, func, i64::from(ret));
        let front = front();
        let mut e = Encoder {
            front,
            out: &mut recorder.scratch,
            objects,
            ok: ret == MPI_SUCCESS,
            errors_in_statuses: ret == front.ints.MPI_ERR_IN_STATUS,
            comm: None,
            func,
            request_comms: &mut recorder.request_comms,
            idup_comm: None,
            created: None,
        };
        encode(&mut e);
        let (created, comm) = (e.created, e.comm);
        let (terminal, new) = recorder.terminal(func);
        Encoded {
            terminal,
            new,
            created,
            comm,
        }
    }

    /// Appends a call of `func` with the signature `terminal` (`new`: in
    /// the recorder's scratch) from `start` to `end` ticks to the record
    /// and the crash journal.
    #[inline(always)]
    pub(crate) fn append(&mut self, func: FuncId, terminal: u32, new: bool, start: u64, end: u64) {
        let repeats = self.recorder.record(func, terminal, start, end);
        self.journal_call(terminal, repeats, new, true);
        if new && self.recorder.over_budget {
            self.spill();
        } else {
            self.check_budget();
        }
        // Last: nothing is kept across its call.
        crate::cpu_share::after_call(end, &self.start);
    }

    /// [`append`](Tracer::append) of a call the memos recalled, while
    /// calls are not verified: the memos' fast path.
    #[inline(always)]
    pub(crate) fn append_recalled(&mut self, func: FuncId, terminal: u32, start: u64, end: u64) {
        let repeats = self.recorder.record(func, terminal, start, end);
        // Nothing was encoded for this call: the communicator log is as the
        // journal's last record left it (entries are only logged while a
        // call is encoded, or at MPI_Init, and the call that encoded them
        // wrote them; each also changes the objects' epoch, so no call is
        // recalled by the memo before such a call).
        self.journal_call(terminal, repeats, false, false);
        self.check_budget();
        // Last: nothing is kept across its call.
        crate::cpu_share::after_call(end, &self.start);
    }

    /// Every [`CHECK_CALLS`] calls: what grows without new signatures
    /// (per-call times; the grammar of signatures in an order that does not
    /// repeat) is held to the memory budget too.
    #[inline(always)]
    fn check_budget(&mut self) {
        if self.recorder.calls & (CHECK_CALLS - 1) == 0 && self.recorder.check_budget() {
            self.spill();
        }
    }

    /// The crash journal's record of the call just recorded (`repeats`:
    /// the period the grammar took it in, or 0, and `BLOCK_FILLED` if its
    /// per-call times filled a block, which the journal then appends; `new`:
    /// its signature is in the recorder's scratch; `encoded`: it was
    /// encoded, and may have added communicator-log entries).
    #[inline(always)]
    fn journal_call(&mut self, terminal: u32, repeats: u64, new: bool, encoded: bool) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        let comm_log = &self.objects.comm_log;
        // (A call that filled a block is never counted: no period has the
        // flag's bit.)
        if journal.count(repeats, comm_log.len(), encoded) {
            return;
        }
        // Rare where it matters most: a loop's calls are counted.
        crate::call::cold_path();
        let recorder = &mut self.recorder;
        let signature = new.then_some(&recorder.scratch[..]);
        if !journal.record(terminal, repeats & !BLOCK_FILLED, signature, comm_log) {
            // The journal holds every call before this one; the checkpoint
            // holds the block too.
            let journaled = recorder.calls - 1;
            return self.checkpoint(journaled);
        }
        if repeats & BLOCK_FILLED != 0
            && let Some(per_call) = recorder.per_call_mut()
            && !journal.record_blocks(per_call.last_blocks())
        {
            self.checkpoint(self.recorder.calls);
        }
    }

    /// The signature table, grammar and per-call times are large enough to
    /// go out as a part rather than be copied whole (into a checkpoint of
    /// the crash journal, or the merge at MPI_Finalize): grown by an eighth
    /// of the budget, and at least 1 MiB, since the last part (so the
    /// checkpoint after a part is never one).
    fn large_record(&self) -> bool {
        self.recorder.grown_bytes() > (self.recorder.budget / 8).max(1 << 20)
    }

    /// The signature table, grammar and per-call times outgrew the memory
    /// budget: writes them out as the rank's next part
    /// (`rank<N>.part<K>.mgr`) and goes on with an empty table. The crash
    /// journal then continues a checkpoint of the new, empty part: its tail
    /// numbered signatures in the old table. If the part cannot be written, the rank keeps its table (and
    /// grows past the budget) instead.
    #[cold]
    #[inline(never)]
    fn spill(&mut self) {
        let Some(dir) = create_output_dir() else {
            self.recorder.budget = usize::MAX;
            return;
        };
        crate::call::writing_out(|| {
            let rank = self.rank();
            let mut part = self.recorder.take_part();
            self.memo_and_objects().0.forget();
            let end = ClockPoint::now();
            let ns_per_tick = self.start.ns_per_tick(end);
            let mut trace = RankTrace {
                meta: self.meta(None, end),
                // Written from the part's packed table.
                signatures: Vec::new(),
                grammar: part.grammar.grammar(rank),
                stats: crate::recorder::call_stats(&part.stats, &part.pair_gaps, ns_per_tick),
                gaps: crate::recorder::gaps(&part.stats, &part.pair_gaps, ns_per_tick, false),
                comms: Vec::new(),
                times: std::mem::take(&mut part.times),
            };
            let path = dir.join(mpigram_trace::part_file_name(rank, self.parts));
            let signatures: Vec<&[u8]> = part.signatures.iter().collect();
            let written = trace.write_with_signatures(&signatures, &path);
            drop(signatures);
            match written {
                Ok(()) => {
                    self.parts += 1;
                    self.recorder.reuse(part);
                }
                Err(e) => {
                    crate::message::say(&format!(
                        "cannot write {} ({e}): rank {rank} keeps its whole signature table in memory, past MPIGRAM_MEMORY",
                        path.display()
                    ));
                    part.times = std::mem::take(&mut trace.times);
                    self.recorder.put_back(part);
                }
            }
        });
        if self.journal.is_some() {
            self.checkpoint(self.recorder.calls);
        }
    }

    #[cold]
    #[inline(never)]
    fn new() -> Box<Tracer> {
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(at_exit) };
        crate::call::watch_forks();
        let start = ClockPoint::now();
        crate::cpu_share::start(start);
        let mut recorder = Recorder::new(start.ticks);
        let budget = crate::budget::budget_from_env();
        recorder.budget = budget / 2;
        crate::writer_heap::keep_up_to(budget - recorder.budget);
        recorder.prepare(PREPARED_SIGNATURES);
        if std::env::var_os("MPIGRAM_VERIFY").is_some_and(|v| !v.is_empty() && v != "0") {
            recorder.set_verify();
        }
        let timing = timing_from_env();
        if timing.per_call() {
            recorder.set_per_call(PerCall::new(timing, start.ticks));
        }
        Box::new(Tracer {
            objects: Objects::default(),
            recorder,
            world: None,
            start,
            finalized: false,
            written_calls: None,
            journal: None,
            clock_sync: Vec::new(),
            run: 0,
            parts: 0,
        })
    }

    /// MPI is initialised: learn this process's place in the world.
    pub fn on_init(&mut self) {
        crate::alloc::start_tracking();
        let world = front().MPI_COMM_WORLD;
        crate::pmpi_query::world_ready();
        if let Some(info) = crate::pmpi_query::comm_info(world) {
            self.objects
                .set_comm(front().value(HandleKind::Comm, world), info);
            self.world = Some((info.rank as u32, info.size as u32));
        }
        let me = CommInfo {
            rank: 0,
            size: 1,
            remote_size: 0,
            inter: false,
            leader: self.world.map_or(-1, |(rank, _)| rank as i32),
            instance: 0,
        };
        let comm_self = front().value(HandleKind::Comm, front().MPI_COMM_SELF);
        self.objects.set_comm(comm_self, me);
    }

    /// The census found the run (`outcome`): the trace directory is this
    /// run's. What earlier runs left there goes, and the crash journal
    /// starts.
    pub fn take_directory(&mut self, outcome: &crate::census::Outcome) {
        self.run = outcome.run;
        if let (Some((rank, _)), Some(dir)) = (self.world, create_output_dir()) {
            crate::ownership::clear_earlier_runs(&dir, rank, outcome.lowest, &|r| {
                outcome.traced.contains(&r)
            });
        }
        self.open_journal();
    }

    /// Opens the rank's crash journal and installs the fatal-signal
    /// handlers that note in it how the rank died. Without a journal
    /// (MPIGRAM_JOURNAL_BYTES=0, or no room for it) tracing goes on.
    fn open_journal(&mut self) {
        let (Some((rank, world_size)), Some(capacity)) = (self.world, crate::journal::tail_bytes())
        else {
            return;
        };
        let header = JournalHeader {
            rank,
            world_size,
            pid: std::process::id(),
            start_ns: self.start.ns,
            host: host_name(),
            mpi_library: crate::front::library().map_or_else(String::new, |l| l.describe()),
            capacity,
            run: self.run,
            timing: self
                .recorder
                .per_call()
                .map_or_else(Timing::default, |p| p.timing.clone()),
            ns_per_tick: self.start.ns_per_tick(ClockPoint::now()),
        };
        let Some(dir) = create_output_dir() else {
            return;
        };
        match Journal::open(&dir, &header) {
            Ok(journal) => {
                if let (Some(open), Some(per_call)) =
                    (journal.open_blocks(), self.recorder.per_call_mut())
                {
                    // SAFETY: the journal's open blocks, for the rest of
                    // the process, written by nothing else.
                    unsafe { per_call.move_open_blocks(open) };
                }
                self.journal = Some(journal);
            }
            Err(e) => {
                crate::message::say(&format!(
                    "no crash journal for rank {rank} in {} ({e}): tracing goes on, but if this rank is killed its calls are lost",
                    dir.display()
                ));
                return;
            }
        }
        crate::signals::install();
        if self.recorder.calls > 0 {
            // Calls before MPI_Init (MPI_Initialized, MPI_T_*): into a
            // checkpoint, which the tail then continues.
            self.checkpoint(0);
        }
    }

    /// The journal's tail is full: writes everything recorded so far as
    /// the journal's checkpoint, and starts the tail again. Every few
    /// million calls; its allocations are not the recorder's per-call ones,
    /// and are not counted as such. If the checkpoint cannot be written,
    /// the journal stops, holding its first `journaled` calls.
    #[cold]
    fn checkpoint(&mut self, journaled: u64) {
        // Rather than copied into a checkpoint again and again: the part
        // holds it for good, and the checkpoint after it is small.
        if self.large_record() {
            return self.spill();
        }
        crate::call::writing_out(|| {
            let Some(path) = self.journal.as_ref().map(Journal::checkpoint_path) else {
                return;
            };
            // The tail after the checkpoint starts a block of per-call times
            // (see "Per-call times" in `mpigram_trace::journal`).
            if let Some(per_call) = self.recorder.per_call_mut() {
                per_call.end_blocks();
            }
            let snapshot = self.snapshot_without_signatures(None);
            let signatures: Vec<&[u8]> = self.recorder.signatures.iter().collect();
            let written = snapshot.write_with_signatures(&signatures, &path);
            let (calls, comms) = (self.recorder.calls, self.objects.comm_log.len());
            // What a checkpoint writes grows with the signatures and the
            // per-call times.
            let trace_bytes: usize = self.recorder.signatures.string_bytes()
                + snapshot.times.lossy.len()
                + snapshot.times.exact.len();
            let Some(journal) = &mut self.journal else {
                return;
            };
            match written {
                Ok(()) => {
                    journal.reset(calls, comms);
                    // Within a quarter of MPIGRAM_MEMORY: its pages are the rank's.
                    journal.raise_limit((2 * trace_bytes).min(self.recorder.budget / 2));
                }
                Err(e) => {
                    crate::message::say(&format!(
                        "cannot write the crash journal's checkpoint ({e}); the journal keeps the calls until now, and says that later ones are missing"
                    ));
                    journal.stop(journaled);
                    // Its open blocks keep the times of the calls it holds.
                    if let Some(per_call) = self.recorder.per_call_mut() {
                        per_call.open_blocks_to_heap();
                    }
                }
            }
        });
    }

    /// The rank's trace is written: removes its crash journal (and
    /// checkpoint). Once, after the write that makes them redundant.
    pub fn discard_journal(&mut self) {
        if let Some(journal) = self.journal.take() {
            journal.discard();
        }
    }

    /// Everything recorded so far, as the rank's trace ending with
    /// `ending`; `None` while the rank runs (a checkpoint: the trace says
    /// nothing of an ending, and the grammar is taken without disturbing a
    /// loop in progress, so recording goes on allocation-free).
    fn snapshot(&mut self, ending: Option<Ending>) -> RankTrace {
        let mut trace = self.snapshot_without_signatures(ending);
        trace.signatures = self
            .recorder
            .signatures
            .iter()
            .map(<[u8]>::to_vec)
            .collect();
        trace
    }

    /// [`snapshot`](Tracer::snapshot) with an empty signature table, for a
    /// file written from the recorder's (`RankTrace::write_with_signatures`).
    fn snapshot_without_signatures(&mut self, ending: Option<Ending>) -> RankTrace {
        let rank = self.rank();
        let end = ClockPoint::now();
        let ns_per_tick = self.start.ns_per_tick(end);
        let times = self
            .recorder
            .per_call()
            .map_or_else(Default::default, PerCall::times);
        RankTrace {
            meta: self.meta(ending, end),
            signatures: Vec::new(),
            grammar: match ending {
                Some(_) => self.recorder.grammar.grammar(rank),
                None => self.recorder.grammar.snapshot(rank),
            },
            stats: self.recorder.call_stats(ns_per_tick),
            // All of them for the merge's summary; a checkpoint is a file.
            gaps: self.recorder.gaps(ns_per_tick, ending.is_some()),
            comms: self
                .objects
                .comm_log
                .iter()
                .filter_map(comm_entry)
                .collect(),
            times,
        }
    }

    /// The rank's metadata now (`end`), ending with `ending` (`None`: it
    /// runs on). Its calls are all the rank's, those of parts written out
    /// included.
    fn meta(&self, ending: Option<Ending>, end: ClockPoint) -> RankMeta {
        let ns_per_tick = self.start.ns_per_tick(end);
        RankMeta {
            rank: self.rank(),
            world_size: self.world.map_or(0, |(_, size)| size),
            pid: std::process::id(),
            host: host_name(),
            mpi_library: crate::front::library().map_or_else(String::new, |l| l.describe()),
            timing: self
                .recorder
                .per_call()
                .map_or_else(Timing::default, |p| p.timing.clone()),
            calls: self.recorder.calls,
            start_ns: self.start.ns,
            end_ns: end.ns,
            ending: ending.unwrap_or(Ending::Killed),
            recorder_allocations: crate::alloc::recorder_allocations(),
            ns_per_tick,
            cpus: crate::cpu_share::cpus().unwrap_or(0),
            cpu_share: crate::cpu_share::share(ns_per_tick).map(mpigram_trace::stored_cpu_share),
            clock_sync: self.clock_sync.clone(),
            run: self.run,
            lost: mpigram_trace::Lost::None,
            // MPI may end the process inside a call (exit() from a fatal
            // error handler): the rank says which.
            ended_in: ending
                .filter(|e| !e.is_complete())
                .and_then(|_| crate::call::call_in_progress()),
        }
    }

    /// The rank's trace at MPI_Finalize, for the merge; the verification
    /// stream is written now.
    pub fn finish(&mut self) -> RankTrace {
        self.finalized = true;
        // Into the merge, which would hold it two or three times over.
        if self.large_record() {
            self.spill();
        }
        let trace = self.snapshot(Some(Ending::Finalized));
        if let Some(dir) = create_output_dir() {
            self.write_verify(&dir);
        }
        self.written_calls = Some(self.recorder.calls);
        trace
    }

    /// Writes this rank's own trace file (and verification stream): when
    /// it cannot take part in the merge (MPI_Abort, exit without
    /// MPI_Finalize).
    pub fn write(&mut self, ending: Ending) {
        let Some(dir) = create_output_dir() else {
            return;
        };
        // The verification stream first: a rank killed in between (hydra
        // kills the others once one exits) leaves no trace without it.
        self.write_verify(&dir);
        let trace = self.snapshot(Some(ending));
        self.save(&dir, &trace);
    }

    /// Writes `trace` (this rank's, up to now) as the rank's own file;
    /// then the crash journal is no longer needed.
    pub fn save(&mut self, dir: &Path, trace: &RankTrace) {
        if let Some(journal) = &self.journal {
            journal.set_ending(trace.meta.ending, self.recorder.calls);
        }
        match trace.write(dir) {
            Ok(_) => self.discard_journal(),
            Err(e) => crate::message::say(&format!(
                "cannot write the trace of rank {}: {e}",
                trace.meta.rank
            )),
        }
        self.written_calls = Some(self.recorder.calls);
    }

    fn write_verify(&self, dir: &Path) {
        if let Some(stream) = &self.recorder.verify {
            let path = dir.join(mpigram_trace::verify_file_name(self.rank()));
            if let Err(e) = mpigram_format::replace_with(&path, stream) {
                crate::message::say(&format!("cannot write {}: {e}", path.display()));
            }
        }
    }

    /// World rank; before MPI_Init (or with MPI sessions only) the
    /// launcher's rank variable, else 0.
    /// Size of MPI_COMM_WORLD, once MPI is initialised.
    pub fn world_size(&self) -> Option<u32> {
        self.world.map(|(_, size)| size)
    }

    /// Rank in MPI_COMM_WORLD, once MPI is initialised.
    pub fn world_rank(&self) -> Option<u32> {
        self.world.map(|(rank, _)| rank)
    }

    fn rank(&self) -> u32 {
        match self.world {
            Some((rank, _)) => rank,
            None => crate::census::launcher_rank(),
        }
    }
}

pub fn comm_entry(r: &crate::objects::CommRecord) -> Option<CommEntry> {
    let HandleRef::User(comm) = r.id else {
        return None;
    };
    Some(CommEntry {
        seq: r.seq,
        comm,
        rank: r.info.rank.max(0) as u32,
        size: r.info.size.max(0) as u32,
        remote_size: r.info.remote_size.max(0) as u32,
        inter: r.info.inter,
        leader: u32::try_from(r.info.leader).unwrap_or(NO_RANK),
        instance: r.info.instance,
    })
}

/// `MPIGRAM_TIMING` and `MPIGRAM_TIMING_BASE`; aggregated timing, with one
/// message, if they make no sense.
fn timing_from_env() -> Timing {
    let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let Some(mode) = var("MPIGRAM_TIMING") else {
        return Timing::default();
    };
    Timing::parse(&mode, var("MPIGRAM_TIMING_BASE").as_deref()).unwrap_or_else(|e| {
        crate::message::say_for_job(&format!(
            "MPIGRAM_TIMING={mode}: {e}; recording aggregated timing only"
        ));
        Timing::default()
    })
}

/// `MPIGRAM_RANK_STATS`: how the whole-run file keeps the ranks'
/// aggregated timing (summarised across ranks unless `exact`).
pub fn rank_stats_from_env() -> RankStats {
    let Ok(v) = std::env::var("MPIGRAM_RANK_STATS") else {
        return RankStats::default();
    };
    RankStats::parse(&v).unwrap_or_else(|e| {
        eprintln!("mpigram: MPIGRAM_RANK_STATS={v}: {e}; summarising");
        RankStats::default()
    })
}

/// `MPIGRAM_OUT`, else `mpigram-trace` in the working directory.
pub fn output_dir() -> PathBuf {
    std::env::var_os("MPIGRAM_OUT")
        .filter(|v| !v.is_empty())
        .map_or_else(|| "mpigram-trace".into(), PathBuf::from)
}

/// The trace directory, created if needed (readable by the user alone:
/// a trace records the program's arguments and host); `None` if it cannot
/// be, said once per process.
pub fn create_output_dir() -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static SAID: AtomicBool = AtomicBool::new(false);
    let dir = output_dir();
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
    {
        Ok(()) => Some(dir),
        Err(e) => {
            if !SAID.swap(true, Relaxed) {
                crate::message::say(&format!(
                    "cannot create the trace directory {}: {e}; this rank is not traced",
                    dir.display()
                ));
            }
            None
        }
    }
}

pub(crate) fn host_name() -> String {
    mpigram_trace::host_name()
}

/// At exit: write what was recorded since the last write. A process that
/// initialised MPI and never finalized leaves a partial trace.
extern "C" fn at_exit() {
    with(|t| {
        if t.recorder.calls == 0 {
            return;
        }
        if t.written_calls == Some(t.recorder.calls) {
            return;
        }
        let ending = if t.finalized || t.world.is_none() {
            Ending::Finalized
        } else {
            Ending::ExitWithoutFinalize
        };
        t.write(ending);
    });
    crate::call::disable();
}
