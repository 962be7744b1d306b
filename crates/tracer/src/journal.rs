//! The rank's crash journal (layout and reader in
//! `mpigram_trace::journal`): every recorded call is appended to a shared
//! file mapping, so that what the rank recorded survives its death by any
//! signal, SIGKILL included. Appending a call is a byte store, the
//! checksum continued over it and one 8-byte store of the tail's length
//! and checksum: a few nanoseconds, and no allocation once the scratch
//! buffer has grown. A call the grammar took as a repetition (a loop
//! body's length after an equal one) is only counted: one 8-byte store.
//! Per-call times are not copied here: the recorder fills its open blocks
//! in the mapping ([`Journal::open_blocks`]) and the journal appends each
//! block it fills ([`Journal::record_blocks`]), copied once, from where
//! the recorder keeps it, after its record's head. When the tail is full the
//! tracer writes a checkpoint and the journal starts its tail again
//! ([`Journal::reset`]).
//!
//! The file grows with the tail, by doubling from [`FIRST_TAIL_BYTES`]: a
//! short run leaves a small journal, a long one at most the tail's size.
//!
//! The mapping lives as long as the process: a fatal-signal handler may
//! store the ending into its header at any moment ([`note_signal`]), so it
//! is never unmapped.

use crate::objects::CommRecord;
use mpigram_trace::journal::{
    self, EMPTY_TAIL, ENDING_AT, EXACT_BLOCK, GENERATION_AT, IN_CALL_AT, JournalHeader,
    LOSSY_BLOCK, LOST_AT, MAX_REPEATED, REPEATED_AT, REPEATED_STEP, REPETITION_AT, SIGNAL_ENDING,
    TAIL_WORD_AT,
};
use mpigram_trace::{Ending, Lost, checkpoint_file_name, journal_file_name};
use std::ffi::c_int;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Tail bytes unless `MPIGRAM_JOURNAL_BYTES` says otherwise: 4 MiB hold
/// about four million calls of a program with under 64 distinct
/// signatures between checkpoints.
pub const DEFAULT_TAIL_BYTES: u32 = 4 << 20;
/// Smallest tail: room for a few records.
const MIN_TAIL_BYTES: u32 = 256;
/// Tail bytes the file first holds.
const FIRST_TAIL_BYTES: usize = 64 << 10;
/// Address space reserved for the tail: it may outgrow the configured size
/// when the trace itself is large (see [`Journal::raise_limit`]).
const MAPPED_TAIL_BYTES: u32 = 1 << 30;

/// Terminals whose call record the fast path writes: a varint of up to two
/// bytes.
const FAST_TERMINALS: u32 = 1 << 13;
/// Most bytes of a call's record on the fast path.
const MAX_CALL_RECORD: usize = 2;

/// `Journal::period` while no repeated calls are counted (no grammar
/// period is this long).
const NOT_COUNTING: u64 = u64::MAX;

/// The ending word of the open journal, for the signal handlers.
static ENDING: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());

pub struct Journal {
    /// The mapped file: header, open blocks at `open_at` (if per-call
    /// times are recorded), then the tail at `tail_at`.
    map: *mut u8,
    open_at: usize,
    tail_at: usize,
    /// Tail bytes mapped (and written in the header as its capacity).
    capacity: usize,
    /// Tail bytes to fill before the next checkpoint: the configured size,
    /// raised to the size of the trace's signatures.
    limit: usize,
    /// Tail bytes the file holds now (blocks allocated): the mapping
    /// covers `capacity`, but only these may be touched.
    allocated: usize,
    /// Below this tail length a call's record fits in `allocated` (0 once
    /// the journal stopped, or where the processor has no CRC-32C
    /// instruction, [`Crc`]): the fast path's one bound check.
    fast_end: usize,
    fd: std::fs::File,
    /// Published length and checksum of the tail.
    len: usize,
    checksum: u32,
    /// Entries of the communicator log the journal holds.
    comms: usize,
    /// Records of the call being appended (when not a single byte).
    scratch: Vec<u8>,
    /// The period of the repeated calls being counted in the header
    /// (`NOT_COUNTING`: none are); their count is the header's
    /// repeated-calls word, read and written where it is mapped.
    period: u64,
    /// Whether calls may be counted as repeated: the journal has not
    /// stopped.
    counts_repeats: bool,
    /// Whether the rank records per-call times, in the open blocks.
    timed: bool,
    /// A write failed: the journal holds the first this many calls, and
    /// no more.
    stopped_at: Option<u64>,
    dir: PathBuf,
    rank: u32,
    /// The process that opened it (a forked child must not remove it).
    pid: u32,
}

/// `MPIGRAM_JOURNAL_BYTES`: the tail's size; 0 turns the journal off.
pub fn tail_bytes() -> Option<u32> {
    let Some(value) = std::env::var_os("MPIGRAM_JOURNAL_BYTES").filter(|v| !v.is_empty()) else {
        return Some(DEFAULT_TAIL_BYTES);
    };
    match value.to_str().and_then(|v| v.parse::<u64>().ok()) {
        Some(0) => None,
        Some(n) => Some(n.clamp(u64::from(MIN_TAIL_BYTES), u64::from(u32::MAX)) as u32),
        None => {
            crate::message::say_for_job(&format!(
                "MPIGRAM_JOURNAL_BYTES={} is not a number of bytes; using {DEFAULT_TAIL_BYTES}",
                value.to_string_lossy()
            ));
            Some(DEFAULT_TAIL_BYTES)
        }
    }
}

impl Journal {
    /// Creates `dir/rank<N>.journal` for `header`'s rank, removing an older
    /// run's checkpoint first. The file is filled in under a temporary name
    /// (created exclusively, see `mpigram_format::create_temp`) and renamed,
    /// so a journal is never seen half made; its blocks are allocated up
    /// front, so a full disk is an error here and never a SIGBUS in the
    /// middle of a call.
    pub fn open(dir: &Path, header: &JournalHeader) -> std::io::Result<Journal> {
        let rank = header.rank;
        remove_if_there(&dir.join(checkpoint_file_name(rank)))?;
        let path = dir.join(journal_file_name(rank));
        let limit = header.capacity as usize;
        // The header names the mapped capacity, which the tail may grow to
        // when the limit is raised, not the configured size: a reader
        // refuses a tail longer than the header's capacity.
        let header = JournalHeader {
            capacity: header.capacity.max(MAPPED_TAIL_BYTES),
            ..header.clone()
        };
        let head = header.encode();
        // The open blocks' bytes are allocated with the header's: the
        // recorder's stores to them never meet a full disk either.
        let tail_at = head.len() + journal::open_blocks_bytes(&header.timing);
        let capacity = header.capacity as usize;
        let allocated = limit.min(FIRST_TAIL_BYTES);
        let (file, tmp) = mpigram_format::create_temp(&path)?;
        let map = (|| {
            allocate(&file, tail_at + allocated)?;
            // SAFETY: plain system call on a file we own.
            let map = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    tail_at + capacity,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            if map == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let map = map.cast::<u8>();
            // SAFETY: the file and the mapping hold the header.
            unsafe { std::ptr::copy_nonoverlapping(head.as_ptr(), map, head.len()) };
            // The first tail's pages are faulted in now, in MPI_Init, not
            // by the first calls' records (`Recorder::prepare`). The file
            // reads as zeros there already.
            // SAFETY: the file holds `allocated` tail bytes after `tail_at`.
            unsafe { std::ptr::write_bytes(map.add(tail_at), 0, allocated) };
            std::fs::rename(&tmp, &path)?;
            Ok(map)
        })();
        let map = map.inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
        let mut journal = Journal {
            map,
            open_at: head.len(),
            tail_at,
            capacity,
            limit,
            allocated: 0,
            fast_end: 0,
            fd: file,
            len: 0,
            checksum: EMPTY_TAIL,
            comms: 0,
            scratch: Vec::new(),
            period: NOT_COUNTING,
            counts_repeats: true,
            timed: header.timing.per_call(),
            stopped_at: None,
            dir: dir.to_owned(),
            rank,
            pid: header.pid,
        };
        journal.set_allocated(allocated);
        ENDING.store(journal.word::<AtomicU32>(ENDING_AT), Ordering::Release);
        crate::call::name_calls_in(journal.word(IN_CALL_AT));
        Ok(journal)
    }

    /// The open blocks, where the recorder fills its blocks of per-call
    /// times (`PerCall::move_open_blocks`): `open_blocks_bytes` of the
    /// header's timing, valid for the rest of the process (the mapping is
    /// never unmapped) and written by nothing else. None without per-call
    /// times.
    pub fn open_blocks(&self) -> Option<*mut u8> {
        // SAFETY: `open_at` is within the mapping.
        self.timed.then(|| unsafe { self.map.add(self.open_at) })
    }

    /// The header word at `at` (aligned: the header is at the start of a page).
    fn word<T>(&self, at: usize) -> *mut T {
        // SAFETY: `at` is within the header.
        unsafe { self.map.add(at).cast() }
    }

    fn tail_word(&self) -> &AtomicU64 {
        self.header_word(TAIL_WORD_AT)
    }

    /// The header's 8-byte word at `at` (TAIL_WORD_AT, REPETITION_AT, ...).
    #[inline(always)]
    fn header_word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: an aligned u64 of the mapping, which is never unmapped.
        unsafe { &*self.word(at) }
    }

    /// A call returned and is being recorded: counts it, if it continues
    /// the repeated calls being counted (`repeats`: the period of the
    /// repetition the grammar took it in, else 0) and the communicator log
    /// (`comms` entries) holds no entry the journal does not; only a call
    /// that was `encoded` may have added one. False: it needs
    /// [`record`](Journal::record).
    #[inline(always)]
    pub fn count(&mut self, repeats: u64, comms: usize, encoded: bool) -> bool {
        let map = self.map;
        // No longer in progress (see `crate::call`).
        // SAFETY: an aligned u32 of the mapping.
        unsafe { &*map.add(IN_CALL_AT).cast::<AtomicU32>() }.store(0, Ordering::Relaxed);
        debug_assert!(
            encoded || comms == self.comms || self.stopped_at.is_some(),
            "a call that was not encoded added communicator-log entries"
        );
        // (The count stays at most MAX_REPEATED: one more is above it
        // only when this one was at it.)
        let word = self.header_word(REPEATED_AT);
        let repeated = word.load(Ordering::Relaxed).wrapping_add(REPEATED_STEP);
        if repeats != self.period
            || repeated as u32 > MAX_REPEATED
            || encoded && comms != self.comms
        {
            return false;
        }
        word.store(repeated, Ordering::Release);
        true
    }

    /// Appends a call of `terminal` that [`count`](Journal::count) did not
    /// take, with its signature if it is new and the communicator-log
    /// entries the call added; `repeats` as for `count`. False if the
    /// records do not fit: the caller writes a checkpoint (which holds
    /// this call).
    #[inline(always)]
    pub fn record(
        &mut self,
        terminal: u32,
        repeats: u64,
        new_signature: Option<&[u8]>,
        comm_log: &[CommRecord],
    ) -> bool {
        if self.period == NOT_COUNTING
            && (repeats == 0 || !self.counts_repeats)
            && new_signature.is_none()
            && comm_log.len() == self.comms
            && terminal < FAST_TERMINALS
            && self.len < self.fast_end
        {
            // The common case: a known signature, whose call record (a
            // varint of one byte, or two from terminal 64 on) fits.
            let call = journal::call_record(terminal) as u32;
            let crc = Crc::continuing(self.checksum);
            // SAFETY: len < fast_end: the record is inside the file's part
            // of the tail, and the processor has the CRC-32C instruction.
            unsafe {
                let at = self.map.add(self.tail_at + self.len);
                let (n, crc) = if call < 0x80 {
                    at.write(call as u8);
                    (1, crc.byte(call as u8))
                } else {
                    let bytes = mpigram_varint::two_byte_varint(call.into());
                    at.cast::<[u8; 2]>().write(bytes);
                    (2, crc.two_bytes(bytes))
                };
                self.publish(n, crc.checksum());
            }
            return true;
        }
        self.record_slow(terminal, repeats, new_signature, comm_log)
    }

    /// The call's records when [`record`](Journal::record)'s fast paths
    /// do not take it: the repeated calls counted so far become a record,
    /// and a call the grammar took as a repetition begins a new count
    /// (unless it adds communicator-log entries).
    #[cold]
    fn record_slow(
        &mut self,
        terminal: u32,
        repeats: u64,
        new_signature: Option<&[u8]>,
        comm_log: &[CommRecord],
    ) -> bool {
        if self.stopped_at.is_some() {
            return true;
        }
        // A call without records of its own but its call's.
        let count = repeats != 0
            && self.counts_repeats
            && new_signature.is_none()
            && comm_log.len() == self.comms;
        self.start_records();
        if let Some(s) = new_signature {
            journal::put_signature(&mut self.scratch, s);
        }
        for entry in comm_log[self.comms.min(comm_log.len())..]
            .iter()
            .filter_map(crate::tracer::comm_entry)
        {
            journal::put_comm(&mut self.scratch, &entry);
        }
        if !count {
            journal::put_call(&mut self.scratch, terminal, &[]);
        }
        if !self.append_records([]) {
            return false;
        }
        self.comms = comm_log.len();
        if count {
            self.count_repeats(repeats);
        }
        true
    }

    /// Appends the blocks of per-call times the last call filled
    /// (`PerCall::last_blocks`: lossy timing's, lossless timing's; empty
    /// where not recorded), after that call's record. False if they do not
    /// fit: the caller writes a checkpoint (which holds them).
    #[cold]
    pub fn record_blocks(&mut self, blocks: [&[u8]; 2]) -> bool {
        if self.stopped_at.is_some() {
            return true;
        }
        self.start_records();
        // The blocks' bytes go to the tail from where the writers keep
        // them, each after the head of its record.
        let [lossy, exact] = blocks;
        let heads = [(LOSSY_BLOCK, lossy), (EXACT_BLOCK, exact)]
            .map(|(which, block)| journal::TimesBlockHead::new(which, block.len()));
        let head = |i: usize| match blocks[i].is_empty() {
            true => &[][..],
            false => heads[i].bytes(),
        };
        self.append_records([head(0), lossy, head(1), exact])
    }

    /// Starts the records to append in `scratch`: the repeated calls
    /// counted so far, if any, as a record.
    fn start_records(&mut self) {
        self.scratch.clear();
        if self.period != NOT_COUNTING {
            let repeated = self.header_word(REPEATED_AT).load(Ordering::Relaxed) as u32;
            journal::put_repeat(&mut self.scratch, self.period, u64::from(repeated));
        }
    }

    /// Appends the records in `scratch`, then those whose bytes are
    /// `more` (one after the other), to the tail and publishes them; false
    /// if they do not fit.
    #[inline(always)]
    fn append_records<const N: usize>(&mut self, more: [&[u8]; N]) -> bool {
        let n = self.scratch.len() + more.iter().map(|p| p.len()).sum::<usize>();
        let end = self.len + n;
        if end > self.limit || !self.grow_to(end) {
            return false;
        }
        if n > 0 {
            // SAFETY: len + n <= allocated: the n bytes from here are inside
            // the file's part of the tail.
            let at = unsafe { self.map.add(self.tail_at + self.len) };
            // SAFETY: as above; the pieces are not in the mapping.
            let mut checksum = unsafe { put_at(at, &self.scratch, self.checksum) };
            let mut to = self.scratch.len();
            for piece in more {
                // SAFETY: as above.
                checksum = unsafe { put_at(at.add(to), piece, checksum) };
                to += piece.len();
            }
            // The counted calls are in the tail now: the header's words
            // name an older length from here on.
            self.period = NOT_COUNTING;
            self.publish(n, checksum);
        }
        true
    }

    /// Counts this call, and those after it, as repeating the call
    /// `period` calls before each (see `mpigram_trace::journal`,
    /// "Repeated calls"). The words are stored so that a rank killed
    /// between two stores counts no call it did not record.
    fn count_repeats(&mut self, period: u64) {
        let repetition = journal::repetition_word(period as u32, self.len as u32);
        self.header_word(REPEATED_AT).store(0, Ordering::Release);
        self.header_word(REPETITION_AT)
            .store(repetition, Ordering::Release);
        self.header_word(REPEATED_AT)
            .store(journal::repeated_word(repetition, 1), Ordering::Release);
        self.period = period;
    }

    /// Makes the file hold at least `len` tail bytes (at most `limit`),
    /// doubling; false if the disk has no room.
    fn grow_to(&mut self, len: usize) -> bool {
        if len <= self.allocated {
            return true;
        }
        let want = len.max(self.allocated * 2).min(self.limit);
        if allocate(&self.fd, self.tail_at + want).is_err() {
            return false;
        }
        self.set_allocated(want);
        true
    }

    /// The file holds `allocated` tail bytes.
    fn set_allocated(&mut self, allocated: usize) {
        self.allocated = allocated;
        self.fast_end = match self.stopped_at {
            None if Crc::available() => allocated.saturating_sub(MAX_CALL_RECORD),
            _ => 0,
        };
    }

    /// The tail grew by `n` bytes, its checksum now `checksum`: one store
    /// makes both visible (the bytes were stored before it).
    #[inline]
    fn publish(&mut self, n: usize, checksum: u32) {
        self.len += n;
        self.checksum = checksum;
        self.tail_word().store(
            journal::tail_word(self.len as u32, checksum),
            Ordering::Release,
        );
    }

    /// A checkpoint holding `calls` calls and `comms` communicator-log
    /// entries is on disk: empty the tail, then name the checkpoint (in
    /// this order, see `mpigram_trace::journal`).
    pub fn reset(&mut self, calls: u64, comms: usize) {
        self.len = 0;
        self.checksum = EMPTY_TAIL;
        self.comms = comms;
        self.tail_word()
            .store(journal::tail_word(0, EMPTY_TAIL), Ordering::Release);
        // Calls counted as repeated are in the checkpoint. (A rank killed
        // before this store leaves words that name an older tail length,
        // or, if the count began at an empty tail, a tail of only those
        // calls, which the checkpoint holds: either way the reader takes
        // the checkpoint alone.)
        self.period = NOT_COUNTING;
        self.header_word(REPEATED_AT).store(0, Ordering::Release);
        // SAFETY: an aligned u64 of the mapping.
        unsafe { &*self.word::<AtomicU64>(GENERATION_AT) }.store(calls, Ordering::Release);
    }

    /// The tail may take `bytes` before the next checkpoint (the tracer
    /// passes twice the bytes of the part's signatures and per-call times,
    /// at most a quarter of `MPIGRAM_MEMORY`). A checkpoint costs time in
    /// proportion to the part, so on a program whose calls rarely repeat
    /// (every call a new signature) fixed-size tails would make the
    /// checkpoints' total cost grow with the square of the calls; tails
    /// that grow with the part keep it linear (a part is written out before
    /// it outgrows the budget).
    pub fn raise_limit(&mut self, bytes: usize) {
        self.limit = self.limit.max(bytes.min(self.capacity));
    }

    /// A write failed (a checkpoint, or room for the tail): keep the
    /// journal as it is (it holds the first `held` calls) and append
    /// nothing more. Its header says so: calls are missing at its end.
    /// Once stopped it holds what it held then: a later failure (the
    /// checkpoint after a part that could not be written) changes nothing.
    pub fn stop(&mut self, held: u64) {
        if self.stopped_at.is_some() {
            return;
        }
        self.stopped_at = Some(held);
        // Repeated calls counted so far stay: the journal holds them.
        self.period = NOT_COUNTING;
        self.counts_repeats = false;
        self.set_allocated(self.allocated); // keeps `record` off its fast path
        self.set_lost(journal::lost_word(Lost::Unknown));
    }

    /// Notes how the rank ended after `calls` calls, before its trace is
    /// written: if the write fails, the journal still says it, and how many
    /// calls it lacks if it had stopped.
    pub fn set_ending(&self, ending: Ending, calls: u64) {
        if self.pid == std::process::id() {
            if let Some(held) = self.stopped_at {
                self.set_lost(journal::lost_word(Lost::Calls(calls.saturating_sub(held))));
            }
            // SAFETY: an aligned u32 of the mapping.
            unsafe { &*self.word::<AtomicU32>(ENDING_AT) }
                .store(journal::ending_word_of(ending), Ordering::Release);
        }
    }

    fn set_lost(&self, word: u32) {
        // SAFETY: an aligned u32 of the mapping.
        unsafe { &*self.word::<AtomicU32>(LOST_AT) }.store(word, Ordering::Release);
    }

    /// Path of the checkpoint this journal continues.
    pub fn checkpoint_path(&self) -> PathBuf {
        self.dir.join(checkpoint_file_name(self.rank))
    }

    /// The rank's trace file is written: the journal and its checkpoint
    /// are no longer needed. The one place that removes them.
    pub fn discard(self) {
        if self.pid != std::process::id() {
            return;
        }
        ENDING.store(std::ptr::null_mut(), Ordering::Release);
        crate::call::name_calls_in(std::ptr::null_mut());
        for path in [
            self.dir.join(journal_file_name(self.rank)),
            self.checkpoint_path(),
        ] {
            if let Err(e) = remove_if_there(&path) {
                crate::message::say(&format!("cannot remove {}: {e}", path.display()));
            }
        }
    }
}

/// The tail's checksum ([`journal::tail_checksum`], CRC-32C) continued a
/// byte or two at a time by the processor's instruction, as `record`'s
/// fast path writes a call's record. The `crc32c` crate computes the same
/// on slices, but a call to it checks the processor's features and
/// aligns its input, which on a record of 1 to 5 bytes cost more than
/// the per-byte hash of journal version 4 (114 more instructions a
/// lossless MPI_Comm_rank); here each step is one instruction. The state
/// is the CRC's register, which the checksum holds inverted.
#[derive(Clone, Copy)]
struct Crc(u32);

impl Crc {
    /// Whether the steps may run: on x86-64, whether the processor has
    /// the instruction (SSE 4.2; where it has not, every record takes
    /// `record_slow`, which uses the crate). Elsewhere the steps are the
    /// crate's.
    fn available() -> bool {
        #[cfg(target_arch = "x86_64")]
        return std::arch::is_x86_feature_detected!("sse4.2");
        #[cfg(not(target_arch = "x86_64"))]
        return true;
    }

    fn continuing(checksum: u32) -> Crc {
        Crc(!checksum)
    }

    fn checksum(self) -> u32 {
        !self.0
    }

    /// # Safety
    /// [`available`](Crc::available).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn byte(self, b: u8) -> Crc {
        let mut r = self.0;
        // SAFETY: the caller says the instruction exists; it reads and
        // writes registers only.
        unsafe {
            std::arch::asm!("crc32 {r:e}, {b}", r = inout(reg) r, b = in(reg_byte) b,
                options(pure, nomem, nostack));
        }
        Crc(r)
    }

    /// # Safety
    /// [`available`](Crc::available).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn two_bytes(self, bytes: [u8; 2]) -> Crc {
        let mut r = self.0;
        let w = u16::from_le_bytes(bytes);
        // SAFETY: as in `byte`.
        unsafe {
            std::arch::asm!("crc32 {r:e}, {w:x}", r = inout(reg) r, w = in(reg) w,
                options(pure, nomem, nostack));
        }
        Crc(r)
    }

    /// # Safety
    /// [`available`](Crc::available).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn four_bytes(self, bytes: [u8; 4]) -> Crc {
        let mut r = self.0;
        let w = u32::from_le_bytes(bytes);
        // SAFETY: as in `byte`.
        unsafe {
            std::arch::asm!("crc32 {r:e}, {w:e}", r = inout(reg) r, w = in(reg) w,
                options(pure, nomem, nostack));
        }
        Crc(r)
    }

    /// `bytes`, eight at a step. The crate takes 90 to 160 instructions
    /// for a new signature's record of a few dozen bytes (its feature test,
    /// alignment and three-way split); this takes a step per eight.
    ///
    /// # Safety
    /// [`available`](Crc::available).
    #[cfg(target_arch = "x86_64")]
    #[inline]
    unsafe fn bytes(self, bytes: &[u8]) -> Crc {
        let mut words = bytes.chunks_exact(8);
        let mut r = u64::from(self.0);
        for word in &mut words {
            let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            // SAFETY: as in `byte`.
            unsafe {
                std::arch::asm!("crc32 {r}, {w}", r = inout(reg) r, w = in(reg) w,
                    options(pure, nomem, nostack));
            }
        }
        // The last 0 to 7 bytes: four, two and one at a step.
        let mut crc = Crc(r as u32);
        let mut rest = words.remainder();
        if let Some((four, after)) = rest.split_first_chunk::<4>() {
            // SAFETY: the caller's.
            crc = unsafe { crc.four_bytes(*four) };
            rest = after;
        }
        if let Some((two, after)) = rest.split_first_chunk::<2>() {
            // SAFETY: the caller's.
            crc = unsafe { crc.two_bytes(*two) };
            rest = after;
        }
        if let Some(&b) = rest.first() {
            // SAFETY: the caller's.
            crc = unsafe { crc.byte(b) };
        }
        crc
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn bytes(self, bytes: &[u8]) -> Crc {
        Crc::continuing(journal::tail_checksum(self.checksum(), bytes))
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn byte(self, b: u8) -> Crc {
        Crc::continuing(journal::tail_checksum(self.checksum(), &[b]))
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn two_bytes(self, bytes: [u8; 2]) -> Crc {
        Crc::continuing(journal::tail_checksum(self.checksum(), &bytes))
    }
}

/// The tail's `checksum` continued over `bytes` (as
/// [`journal::tail_checksum`]): by the processor's instruction where it
/// has it and the bytes are a record or a few (the crate is faster on
/// long ones), else by the crate.
fn continued(checksum: u32, bytes: &[u8]) -> u32 {
    if bytes.len() < 512 && Crc::available() {
        // SAFETY: the processor has the instruction.
        unsafe { Crc::continuing(checksum).bytes(bytes).checksum() }
    } else {
        journal::tail_checksum(checksum, bytes)
    }
}

/// Copies `bytes` to `at` and returns the tail's `checksum` continued
/// over them.
///
/// # Safety
/// `at` is valid for writes of `bytes.len()`, which do not overlap it.
#[inline(always)]
unsafe fn put_at(at: *mut u8, bytes: &[u8], checksum: u32) -> u32 {
    // SAFETY: the caller's.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len());
        continued(checksum, std::slice::from_raw_parts(at, bytes.len()))
    }
}

/// Makes `file` at least `len` bytes long, with its blocks allocated: a
/// store to the mapping never meets a full disk.
fn allocate(file: &std::fs::File, len: usize) -> std::io::Result<()> {
    // SAFETY: a plain system call on an open file.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) } {
        0 => Ok(()),
        err => Err(std::io::Error::from_raw_os_error(err)),
    }
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// In a fatal-signal handler: notes `signal` as the rank's ending and
/// returns the ending word it replaced (0 if no journal is open).
/// Async-signal-safe: one atomic swap.
pub fn note_signal(signal: c_int) -> u32 {
    let ending = ENDING.load(Ordering::Acquire);
    // A forked child shares the mapping, but its death is not the rank's.
    if ending.is_null() || crate::call::in_forked_child() {
        return 0;
    }
    let word = journal::ending_word(SIGNAL_ENDING | (signal & 0xff) as u16);
    // SAFETY: points into the journal's mapping, which is never unmapped.
    unsafe { &*ending }.swap(word, Ordering::AcqRel)
}

/// In a fatal-signal handler whose chained handler returned (the process
/// lives on): puts back the ending word [`note_signal`] replaced.
pub fn unnote_signal(previous: u32) {
    let ending = ENDING.load(Ordering::Acquire);
    if !ending.is_null() && previous != 0 {
        // SAFETY: as in note_signal.
        unsafe { &*ending }.store(previous, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's steps continue the checksum as the reader computes
    /// it, over records of one and two bytes.
    #[test]
    fn crc_steps_give_the_tails_checksum() {
        assert!(Crc::available(), "this machine has SSE 4.2");
        let mut tail = Vec::new();
        let mut crc = Crc::continuing(EMPTY_TAIL);
        for i in 0..=255u8 {
            // SAFETY: the machine has the instruction (asserted).
            crc = unsafe { crc.byte(i).two_bytes([0x80 | i, i >> 1]) };
            tail.extend_from_slice(&[i, 0x80 | i, i >> 1]);
            assert_eq!(crc.checksum(), journal::tail_checksum(EMPTY_TAIL, &tail));
        }
    }

    /// Where a rank may die as it records per-call times.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Death {
        /// After its last call's records.
        AfterRecords,
        /// Its last call filled a block: after the call's record, before
        /// the block's.
        BeforeBlock,
        /// After its journal stopped (a checkpoint that could not be
        /// written) at call `n`; it recorded on.
        Stopped(u64),
    }

    /// Per-call times as the tracer writes them (journal version 8): the
    /// recorder fills its blocks in the journal's open blocks, and the
    /// journal appends each block it fills after the call's record. A
    /// rank that dies in the first block, just after a block filled
    /// (before or after the block's record), two blocks on, with calls
    /// counted, or after its journal stopped, has every journaled call's
    /// times back as the recorder stored them: one-, two- and longer
    /// varints, lossless timing alone and with lossy timing, and blocks
    /// of six-byte intervals, which fill their open block's column before
    /// `BLOCK_CALLS` calls (21,844 calls).
    #[test]
    fn times_read_back_from_the_open_and_the_finished_blocks() {
        use crate::recorder::{BLOCK_FILLED, PerCall};
        use mpigram_mpispec::encoding::{put_handle, put_rank};
        use mpigram_mpispec::{HandleRef, Rank, func, put_signature_head};
        use mpigram_trace::timing::{BLOCK_CALLS, decode_columns};
        let block = u64::from(BLOCK_CALLS);
        let signature = |comm| {
            let mut b = Vec::new();
            put_signature_head(&mut b, func::MPI_Comm_rank, 0);
            put_handle(&mut b, HandleRef::Predefined(comm));
            put_rank(&mut b, Rank::Relative(0));
            b
        };
        // (calls, death, intervals of six bytes)
        let wide = 21_844;
        let cases = [
            (10, Death::AfterRecords, false),
            (block, Death::AfterRecords, false),
            (block, Death::BeforeBlock, false),
            (2 * block + 7, Death::AfterRecords, false),
            (2 * block, Death::BeforeBlock, false),
            (block + 100, Death::Stopped(block + 40), false),
            (2 * wide + 5, Death::AfterRecords, true),
            (2 * wide, Death::BeforeBlock, true),
        ];
        for timing in ["lossless", "lossy,lossless"] {
            for (calls, death, six_bytes) in cases {
                let dir = tempfile::tempdir().unwrap();
                let header = JournalHeader {
                    rank: 0,
                    world_size: 1,
                    pid: std::process::id(),
                    start_ns: 1,
                    host: "node".into(),
                    mpi_library: "MPI".into(),
                    capacity: 1 << 22,
                    run: 0,
                    timing: mpigram_trace::Timing::parse(timing, None).unwrap(),
                    ns_per_tick: 1.0,
                };
                let mut journal = Journal::open(dir.path(), &header).unwrap();
                let mut per_call = PerCall::new(header.timing.clone(), 0);
                // SAFETY: the journal's open blocks, used by nothing else.
                unsafe { per_call.move_open_blocks(journal.open_blocks().unwrap()) };
                let mut end = 0;
                for i in 0..calls {
                    if death == Death::Stopped(i) {
                        // As a checkpoint that fails: the block ends, the
                        // journal stops, the open blocks stay as they are.
                        per_call.end_blocks();
                        journal.stop(i);
                        per_call.open_blocks_to_heap();
                    }
                    // A loop of three signatures; gaps and durations of
                    // one, two and more bytes (six-byte gaps all differ,
                    // so that no call is a token alone).
                    let terminal = (i % 3) as u32;
                    let start = end
                        + (i * i) % 300
                        + match (six_bytes, i % 1000) {
                            (true, _) => (1 << 40) + 300 * i,
                            (false, 999) => 1 << 30,
                            _ => 0,
                        };
                    end = start + (i % 13) * 20;
                    let filled = per_call.record(func::MPI_Comm_rank, start, end);
                    if death == Death::BeforeBlock && i == calls - 1 {
                        assert!(filled, "{timing}: the last of {calls} calls fills a block");
                    }
                    let repeats = if i < 3 { 0 } else { 3 };
                    let flagged = repeats | if filled { BLOCK_FILLED } else { 0 };
                    if journal.count(flagged, 0, false) {
                        continue;
                    }
                    let new = (i < 3).then(|| signature(terminal));
                    assert!(journal.record(terminal, repeats, new.as_deref(), &[]));
                    if filled && !(death == Death::BeforeBlock && i == calls - 1) {
                        assert!(journal.record_blocks(per_call.last_blocks()));
                        // A block goes to the tail from where its writer
                        // keeps it: no copy of it stays on the heap.
                        assert!(
                            journal.scratch.capacity() < 1024,
                            "{timing}: a block in scratch"
                        );
                    }
                }
                let held = match death {
                    Death::Stopped(n) => n,
                    _ => calls,
                };
                let trace = mpigram_trace::journal::recover_rank(dir.path(), 0)
                    .unwrap_or_else(|e| panic!("{timing}, {calls} calls, {death:?}: {e}"));
                assert_eq!(trace.meta.calls, held);
                let recorded = per_call.times();
                for (read, stored) in [
                    (&trace.times.lossy, &recorded.lossy),
                    (&trace.times.exact, &recorded.exact),
                ] {
                    let read = decode_columns(read).unwrap();
                    let stored = decode_columns(stored).unwrap();
                    // (Empty, both, where the mode is not recorded.)
                    let expected = &stored[..stored.len().min(held as usize)];
                    assert_eq!(read[..], *expected, "{timing}, {calls} calls, {death:?}");
                }
            }
        }
    }

    #[test]
    fn checksums_of_slices_are_the_crates() {
        // Every length up to past the crate's cut, from every start
        // checksum of a few, over bytes that are not a pattern.
        let bytes: Vec<u8> = (0..600u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in [EMPTY_TAIL, 0, 0xdead_beef] {
            for len in (0..40).chain([63, 64, 65, 511, 512, 513, 600]) {
                let slice = &bytes[600 - len..];
                assert_eq!(
                    continued(start, slice),
                    journal::tail_checksum(start, slice),
                    "{len} bytes from {start:#x}"
                );
            }
        }
    }
}
