//! A rank's crash journal: what the tracer has recorded, kept where the
//! kernel holds it, so that a rank killed without warning (SIGKILL from
//! the launcher after another rank's MPI_Abort) still leaves every call
//! it recorded behind.
//!
//! Two files beside the rank's (future) `rank<N>.mgr`:
//! - `rank<N>.journal`: a header, the *open blocks* of per-call times if
//!   the rank records them, and a *tail*. The tracer maps the file shared
//!   and appends a record for every call (its terminal, one byte for the
//!   first 64 signatures), every new signature and every new
//!   communicator-log entry, then publishes the tail's length and checksum
//!   ([`tail_checksum`]) with one 8-byte store. Per-call times are written
//!   once, where the tracer keeps them: the block being filled of each
//!   mode's two columns (`crate::timing`) is the open blocks' part of the
//!   mapping, and each finished block is appended to the tail as a record. A call that repeats the call a loop body's length before it
//!   (the grammar's fast path took it) is only counted, in a header word
//!   (see "Repeated calls" below). Stores to a shared file mapping are in
//!   the page cache at once: they survive the death of the process.
//! - `rank<N>.checkpoint`: when the tail is full, the tracer writes the
//!   whole record so far as a rank file (the `rank<N>.mgr` format, partial)
//!   and starts the tail again. So the journal stays small however long
//!   the run (the checkpoint is the compressed trace).
//!
//! The tracer removes both once `rank<N>.mgr` is written. [`recover_rank`]
//! rebuilds a rank's trace from them; [`crate::Trace::open`] does so for
//! every rank that has a journal and no rank file.
//!
//! # Layout of `rank<N>.journal` (little-endian)
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MPIGRJNL` |
//! | 8 | 4 | journal version ([`VERSION`]) |
//! | 12 | 4 | offset of the tail (a multiple of 64) |
//! | 16 | 4 | rank in MPI_COMM_WORLD |
//! | 20 | 4 | size of MPI_COMM_WORLD |
//! | 24 | 4 | process id |
//! | 28 | 4 | length of the identity |
//! | 32 | 8 | CLOCK_MONOTONIC ns when recording started |
//! | 40 | 4 | capacity of the tail in bytes: the most it may grow to (the tracer's reserved address space; it checkpoints sooner) |
//! | 44 | 4 | [`hash`] of bytes 0..44 and the identity |
//! | 48 | 4 | ending: a code in the low half, its complement in the high half ([`ending_word`]) |
//! | 52 | 4 | calls lost ([`lost_word`]): 0 while the journal holds every call; once a write failed and it stopped, "not known", or, when the rank's last write failed too, the calls it lacks |
//! | 56 | 8 | generation: calls held by the checkpoint the tail continues (0: none) |
//! | 64 | 8 | the tail's published length (low half) and checksum (high half) ([`tail_word`]): [`tail_checksum`] from version 5, [`hash`] before |
//! | 72 | 4 | in call ([`in_call_word`], version 3): the MPI function a traced call of the rank is inside (stored as the call begins, cleared as the tracer records it), 0 between calls |
//! | 76 | 4 | reserved (0; readers refuse anything else) |
//! | 80 | 8 | repetition ([`repetition_word`], version 4): the period of the calls being counted (low half) and the tail's published length when their counting began (high half) |
//! | 88 | 8 | repeated calls ([`repeated_word`], version 4): how many calls of that repetition the tail's end leaves out (low half) and a check (high half); 0: none |
//! | 96 | 8 | counted times ([`counted_times_word`], version 6 only): while calls with per-call times are counted, the length (low half) and CRC-32C (high half) of their times; 0 in journals without per-call times, and from version 7 on |
//! | 104 (96 in versions 4 and 5, 80 in version 3, 72 before) | | identity: host name and MPI library version, varint-length-prefixed; the run id, a varint; the timing mode as META stores it; nanoseconds per clock tick, f64 bits as a varint (the run id and what follows are absent in journals of older versions: 0, aggregated timing, 1) |
//! | identity's end, rounded up to 64 | [`open_blocks_bytes`] | version 7 on: the open blocks, if the rank records per-call times: for lossy timing, then lossless (as the header's timing says), the columns of the block being filled, [`OPEN_COLUMN_BYTES`] each, from its start: its tokens, a byte a call, then its two columns of numbers, a varint per escaped call each (`crate::timing`; version 7 has no tokens, and a varint per call in each column) |
//! | tail offset | up to capacity | records; bytes past the published length are ignored (the file grows with the tail) |
//!
//! A record starts with a varint `v`: even, a call of terminal `v / 2`
//! ([`call_record`]), in versions 2 to 6 followed by its per-call times as
//! the header's timing mode says: with lossy timing the two numbers of its
//! lossy codes, with lossless timing its interval and duration in ticks,
//! zig-zagged (each a varint: the two columns of `crate::timing`, a call
//! at a time); 1, a new signature (a varint length and its bytes),
//! whose terminal is the next after the checkpoint's and the tail's
//! earlier ones; 3, a communicator-log entry (as in the COMMS section); 5
//! (version 4), repeated calls: a period `p` and a count `n`, varints, for
//! `n` calls each of the signature of the call `p` calls before it (in
//! the rank's calls: the checkpoint's, then the tail's; `p` is at most
//! [`MAX_PERIOD`]); 7 (version 6), timed repeated calls: a head of
//! [`TIMED_REPEAT_HEAD`] bytes (the varint 7, then the period and the
//! count as 4-byte little-endian numbers, [`timed_repeat_head`]), then
//! each call's per-call times as in a call record; 9 (version 7), a
//! finished block of per-call times ([`put_times_block`]): 0 for lossy
//! timing's columns or 1 for lossless timing's, then the block as stored
//! (a varint length and its bytes).
//!
//! # Per-call times (version 7 on)
//! A checkpoint ends the block being filled, so the tail's calls start a
//! block. Their times are the blocks of the tail's records of each mode,
//! in order, then the open block's first calls, as many as the tail's
//! calls the blocks do not hold (at most a block's). A block fills with
//! a call: the tracer appends that call's record, then the block's; a rank
//! killed between the two leaves the block's numbers in the open block,
//! which the next call, the first to overwrite them, has not reached.
//! The open blocks are outside the tail's checksum (a call's stores would
//! have to continue one more): a killed rank cannot tear them, since its
//! stores are in the page cache, but a byte damaged on disk there changes
//! a time, not a call, unless it breaks a varint, which is refused.
//!
//! # Repeated calls
//! While a loop repeats, the grammar's fast path takes each call as the
//! call a loop body's length (its period) before it, and so does the
//! journal: when such a run of calls begins, the tracer stores the
//! repetition word (the period, and the tail length it continues), then
//! counts each call in the repeated-calls word, one 8-byte store a call
//! with nothing appended to the tail. The run ends as a record (5) when a
//! call breaks it, with that call's record, published together; the two
//! words then name an older tail length, and are ignored. So a reader takes
//! the count as calls after the tail only while the repetition word names
//! the published length, and the check ties the two words: a flipped bit
//! in either is noticed.
//!
//! From version 7, per-call times are not in the tail (see "Per-call
//! times"): calls are counted as without them. In version 6, with
//! per-call times the calls were counted so too, and
//! their times go where their record will be: after the published tail,
//! [`TIMED_REPEAT_HEAD`] bytes are left for the record's head, and each
//! call's times follow, as varints; the counted-times word (96) names
//! their length and CRC-32C, stored at once after each call's times;
//! then the repeated-calls word counts the call. The run ends as a
//! record (7): the tracer writes its head into the room left and
//! publishes head and times with the call that broke the run. A reader
//! of a run still counted checks the times against the word and takes
//! as many calls' as the count says (a rank killed between the two
//! stores has written one call's times more: they are not read). Before
//! version 6, calls with per-call times were never counted: their times
//! are in their records.
//!
//! # Which checkpoint a tail continues
//! The generation names the checkpoint by the number of calls it holds,
//! which grows with every checkpoint. A checkpoint is written to a
//! temporary file and renamed; then the tail is emptied (one store) and
//! the generation set (one store). So a rank killed while checkpointing
//! leaves either the old checkpoint with its full tail, or the new
//! checkpoint, which holds every call, with a tail that it already holds
//! or an empty one. The reader tells these apart by the call counts
//! ([`recover_rank`]); the process id and start time tie the checkpoint
//! to the journal.

use crate::timing::{ALL_ESCAPED, BLOCK_CALLS, ColumnWriter, OPEN_COLUMN_BYTES, PairTable};
use crate::{
    CallStats, CallTimes, CommEntry, Ending, Error, Lost, RankMeta, RankTrace, Timing,
    checkpoint_file_name, journal_file_name, rank_file_name, rank_in_file_name,
};
use mpigram_grammar::Sequitur;
use mpigram_mpispec::FuncId;
use mpigram_varint::{ByteReader, MAX_VARINT_LEN, PutVarint, write_varint};
use std::path::Path;

/// Ending of a journal's file name.
pub const JOURNAL_SUFFIX: &str = ".journal";
/// Ending of a checkpoint's file name.
pub const CHECKPOINT_SUFFIX: &str = ".checkpoint";

pub const MAGIC: [u8; 8] = *b"MPIGRJNL";
pub const VERSION: u32 = 8;
/// Oldest journal version read: version 1 had no timing in its header
/// and no per-call times in its tail.
const OLDEST_VERSION: u32 = 1;
/// Offset of the ending word.
pub const ENDING_AT: usize = 48;
/// Offset of the lost-calls word ([`lost_word`]).
pub const LOST_AT: usize = 52;

/// The largest count of lost calls the lost-calls word holds (more are
/// "at least" this many).
const LOST_MAX: u32 = (1 << 24) - 2;
const LOST_UNKNOWN: u32 = (1 << 24) - 1;

/// The lost-calls word: 0 while nothing is lost (as journals before it
/// held); else the count in the low 24 bits (all ones: not known) and a
/// check byte above it, so that a flipped bit is noticed.
pub fn lost_word(lost: Lost) -> u32 {
    let value = match lost {
        Lost::None | Lost::Calls(0) => return 0,
        Lost::Unknown => LOST_UNKNOWN,
        Lost::Calls(n) => u32::try_from(n).unwrap_or(LOST_MAX).min(LOST_MAX),
    };
    value | lost_check(value) << 24
}

fn lost_check(value: u32) -> u32 {
    ((value ^ value >> 8 ^ value >> 16) & 0xff) ^ 0xa5
}

fn lost_of_word(word: u32) -> Result<Lost, String> {
    let value = word & 0xff_ffff;
    if word == 0 {
        return Ok(Lost::None);
    }
    if word >> 24 != lost_check(value) {
        return Err(format!("lost-calls word {word:#010x} is damaged"));
    }
    Ok(match value {
        LOST_UNKNOWN => Lost::Unknown,
        n => Lost::Calls(u64::from(n)),
    })
}

/// Offset of the generation word.
pub const GENERATION_AT: usize = 56;
/// Offset of the tail word.
pub const TAIL_WORD_AT: usize = 64;
/// Offset of the in-call word ([`in_call_word`]; version 3 on).
pub const IN_CALL_AT: usize = 72;
/// Offset of the repetition word ([`repetition_word`]; version 4 on).
pub const REPETITION_AT: usize = 80;
/// Offset of the repeated-calls word ([`repeated_word`]; version 4 on).
pub const REPEATED_AT: usize = 88;
/// Offset of the counted-times word ([`counted_times_word`]; version 6 on).
pub const COUNTED_TIMES_AT: usize = 96;
/// Bytes before the identity.
const FIXED_LEN: usize = 104;
/// Bytes before the identity in journals of versions 4 and 5.
const FIXED_LEN_5: usize = 96;
/// Bytes before the identity in journals of version 3.
const FIXED_LEN_3: usize = 80;
/// Bytes before the identity in journals before version 3.
const FIXED_LEN_2: usize = 72;
/// Bytes covered by the header checksum before the identity.
const CHECKED_LEN: usize = 44;

/// First value of [`hash`]: the hash of nothing (FNV-1a's offset basis).
pub const HASH_SEED: u32 = 0x811c_9dc5;

/// FNV-1a (32 bits) of `bytes`, continuing from `h`. One multiply per
/// byte: the tracer hashes each record as it appends it. Every step is a
/// bijection of the state, so a change in any single byte changes the hash.
#[inline]
pub fn hash(h: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(h, |h, &b| hash_byte(h, b))
}

/// One step of [`hash`]: `h` continued by the byte `b`.
#[inline(always)]
pub const fn hash_byte(h: u32, b: u8) -> u32 {
    (h ^ b as u32).wrapping_mul(0x0100_0193)
}

/// The checksum of a tail of no bytes (version 5 on).
pub const EMPTY_TAIL: u32 = 0;

/// The checksum of a tail (version 5 on): CRC-32C of its bytes, continued
/// from `crc`, the checksum of the bytes before them ([`EMPTY_TAIL`] for
/// none). The tracer continues it over every record it appends, so it
/// must be cheap on a few bytes and on a new signature's tens: processors
/// compute CRC-32C eight bytes an instruction (SSE 4.2, the ARMv8 CRC
/// instructions), where [`hash`] takes a multiply a byte, one after
/// another (about 60 ns of a new MPI_Sendrecv signature's record). It
/// notices every change of up to 32 bits in a row.
#[inline]
pub fn tail_checksum(crc: u32, bytes: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, bytes)
}

/// The checksum a tail of a journal of version `version` has, when its
/// bytes are `tail`.
fn tail_checksum_of(version: u32, tail: &[u8]) -> u32 {
    match version {
        5.. => tail_checksum(EMPTY_TAIL, tail),
        _ => hash(HASH_SEED, tail),
    }
}

/// The tail word: published length and hash, stored at once so that a
/// reader never sees one without the other.
#[inline]
pub const fn tail_word(len: u32, hash: u32) -> u64 {
    len as u64 | (hash as u64) << 32
}

/// Ending codes of the ending word; 0: none yet.
const NO_ENDING: u16 = 0;
/// Added to the signal number of [`Ending::Signal`].
pub const SIGNAL_ENDING: u16 = 0x100;

/// The ending word of an ending code: a single flipped bit is noticed.
/// A `const fn` of plain arithmetic: signal handlers compute it.
#[inline]
pub const fn ending_word(code: u16) -> u32 {
    code as u32 | ((!code) as u32) << 16
}

/// The ending word that says the rank ended as `ending` (0 for
/// [`Ending::Killed`]: the journal says nothing).
pub fn ending_word_of(ending: Ending) -> u32 {
    ending_word(match ending {
        Ending::Killed => NO_ENDING,
        Ending::Finalized => 1,
        Ending::ExitWithoutFinalize => 2,
        Ending::Abort => 3,
        Ending::Signal(s) => SIGNAL_ENDING | (s.clamp(0, 255) as u16),
    })
}

fn ending_of_word(word: u32) -> Result<Ending, String> {
    let (code, check) = (word as u16, (word >> 16) as u16);
    if check != !code {
        return Err(format!("ending word {word:#010x} is damaged"));
    }
    Ok(match code {
        NO_ENDING => Ending::Killed,
        1 => Ending::Finalized,
        2 => Ending::ExitWithoutFinalize,
        3 => Ending::Abort,
        c if c > SIGNAL_ENDING && c <= SIGNAL_ENDING | 0xff => {
            Ending::Signal(i32::from(c - SIGNAL_ENDING))
        }
        c => return Err(format!("unknown ending code {c}")),
    })
}

/// The in-call word of a call of `func` in progress: the function's
/// number plus 1 in the low half, its complement in the high half (a
/// flipped bit is noticed); 0 between calls. A `const fn`: each wrapper's
/// word is a constant.
#[inline(always)]
pub const fn in_call_word(func: FuncId) -> u32 {
    ending_word(func + 1)
}

/// The function of an in-call word ([`in_call_word`]), `None` for 0.
pub fn in_call_of_word(word: u32) -> Result<Option<FuncId>, String> {
    let (code, check) = (word as u16, (word >> 16) as u16);
    if word == 0 {
        return Ok(None);
    }
    if check != !code || usize::from(code) > mpigram_mpispec::FUNCS.len() || code == 0 {
        return Err(format!("in-call word {word:#010x} is damaged"));
    }
    Ok(Some(code - 1))
}

/// The first varint of a call's record.
#[inline]
pub const fn call_record(terminal: u32) -> u64 {
    (terminal as u64) << 1
}
const SIGNATURE_RECORD: u64 = 1;
const COMM_RECORD: u64 = 3;
const REPEAT_RECORD: u64 = 5;
const TIMED_REPEAT_RECORD: u8 = 7;
const TIMES_BLOCK_RECORD: u64 = 9;

/// Bytes of a timed-repeat record's head: its kind, its period and its
/// count, fixed-size, so that the tracer leaves room for it before the
/// times and fills it in when the run ends.
pub const TIMED_REPEAT_HEAD: usize = 9;

/// The head of a record of `calls` calls with per-call times, each
/// repeating the call `period` calls before it (their times follow).
#[inline]
pub fn timed_repeat_head(period: u32, calls: u32) -> [u8; TIMED_REPEAT_HEAD] {
    let mut head = [TIMED_REPEAT_RECORD, 0, 0, 0, 0, 0, 0, 0, 0];
    head[1..5].copy_from_slice(&period.to_le_bytes());
    head[5..].copy_from_slice(&calls.to_le_bytes());
    head
}

/// The counted-times word: the length of the per-call times of the calls
/// being counted (low half) and their CRC-32C ([`tail_checksum`] from
/// [`EMPTY_TAIL`], high half), both stored at once.
#[inline]
pub const fn counted_times_word(len: u32, crc: u32) -> u64 {
    tail_word(len, crc)
}

/// Appends the record of calls with per-call times that each repeat the
/// call `period` calls before them: `times` holds each call's numbers,
/// as many as the timing mode gives a call.
pub fn put_timed_repeat(out: &mut Vec<u8>, period: u32, calls: u32, times: &[u64]) {
    out.extend_from_slice(&timed_repeat_head(period, calls));
    times.iter().for_each(|&v| out.put_u64(v));
}

/// The longest period of repeated calls (the grammar's history: a reader
/// finds each repeated call there).
pub const MAX_PERIOD: u64 = 1 << 16;

/// The repetition word: calls that each repeat the call `period` calls
/// before them, counted from when the tail's published length was `len`.
#[inline]
pub const fn repetition_word(period: u32, len: u32) -> u64 {
    period as u64 | (len as u64) << 32
}

/// The repeated-calls word of `calls` calls (at least 1) of the repetition
/// `repetition` ([`repetition_word`]): the count in the low half, the
/// repetition word's [`hash`] less the count in the high half. The next
/// call's word is this one plus [`REPEATED_STEP`].
pub fn repeated_word(repetition: u64, calls: u32) -> u64 {
    let check = hash(HASH_SEED, &repetition.to_le_bytes()).wrapping_sub(calls);
    u64::from(calls) | u64::from(check) << 32
}

/// What one more call adds to a [`repeated_word`]: 1 to the count, -1 to
/// the check (wrapping), while the count stays below [`MAX_REPEATED`].
pub const REPEATED_STEP: u64 = 1u64.wrapping_sub(1 << 32);

/// Most calls the tracer counts in one repeated-calls word (it then
/// appends them as a record and counts on in a new word); readers take up
/// to `u32::MAX`.
pub const MAX_REPEATED: u32 = i32::MAX as u32;

/// Appends the record of `calls` calls that repeat the call `period`
/// calls before each.
pub fn put_repeat(out: &mut Vec<u8>, period: u64, calls: u64) {
    out.put_u64(REPEAT_RECORD);
    out.put_u64(period);
    out.put_u64(calls);
}

/// The calls after the published tail that the two words say (None: none).
fn repeated_of_words(repetition: u64, repeated: u64, len: u32) -> Result<Option<Repeat>, String> {
    if repeated == 0 {
        return Ok(None);
    }
    let calls = repeated as u32;
    if calls == 0 || repeated_word(repetition, calls) != repeated {
        return Err(format!(
            "damaged header: repeated calls {repeated:#018x} do not match repetition {repetition:#018x}"
        ));
    }
    // Words of a run that a later record ended (or a checkpoint emptied
    // the tail after): its calls are in the tail, or the checkpoint.
    if (repetition >> 32) as u32 != len {
        return Ok(None);
    }
    let period = u64::from(repetition as u32);
    if !(1..=MAX_PERIOD).contains(&period) {
        return Err(format!("damaged header: repeated calls of period {period}"));
    }
    Ok(Some(Repeat {
        period,
        calls: u64::from(calls),
    }))
}

/// Appends the record of a call of `terminal` with its per-call times
/// (the numbers the header's timing mode says, see the module's doc).
pub fn put_call(out: &mut Vec<u8>, terminal: u32, times: &[u64]) {
    out.put_u64(call_record(terminal));
    times.iter().for_each(|&v| out.put_u64(v));
}

/// Bytes of a journal's open blocks: three columns of [`OPEN_COLUMN_BYTES`]
/// for each per-call timing mode `timing` records.
pub fn open_blocks_bytes(timing: &Timing) -> usize {
    open_blocks_bytes_of(VERSION, timing)
}

/// Columns of an open block in a journal of `version` (7 on): tokens and
/// two columns of numbers, or (version 7) the two columns alone.
fn open_columns_of(version: u32) -> usize {
    if version >= 8 { 3 } else { 2 }
}

/// [`open_blocks_bytes`] in a journal of `version` (7 on).
fn open_blocks_bytes_of(version: u32, timing: &Timing) -> usize {
    let modes = usize::from(timing.lossy.is_some()) + usize::from(timing.lossless);
    open_columns_of(version) * modes * OPEN_COLUMN_BYTES
}

/// Which columns a block of per-call times holds: lossy timing's.
pub const LOSSY_BLOCK: u8 = 0;
/// Which columns a block of per-call times holds: lossless timing's.
pub const EXACT_BLOCK: u8 = 1;

/// Appends the record of a finished block of per-call times of the mode
/// `which` ([`LOSSY_BLOCK`] or [`EXACT_BLOCK`]), as
/// `crate::timing::ColumnWriter` stored it.
pub fn put_times_block(out: &mut Vec<u8>, which: u8, block: &[u8]) {
    out.extend_from_slice(TimesBlockHead::new(which, block.len()).bytes());
    out.extend_from_slice(block);
}

/// What precedes a block's bytes in its record ([`put_times_block`]), for
/// a writer that copies the bytes from where they are.
pub struct TimesBlockHead {
    bytes: [u8; 3 * MAX_VARINT_LEN],
    len: usize,
}

impl TimesBlockHead {
    /// The head of the record of a block of `len` bytes of the columns
    /// `which` says.
    pub fn new(which: u8, len: usize) -> TimesBlockHead {
        let mut head = TimesBlockHead {
            bytes: [0; 3 * MAX_VARINT_LEN],
            len: 0,
        };
        for v in [TIMES_BLOCK_RECORD, which.into(), len as u64] {
            // SAFETY: three varints of at most MAX_VARINT_LEN bytes fit.
            head.len += unsafe { write_varint(head.bytes.as_mut_ptr().add(head.len), v) };
        }
        head
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Appends the record of a new signature (it gets the next terminal).
pub fn put_signature(out: &mut Vec<u8>, signature: &[u8]) {
    out.put_u64(SIGNATURE_RECORD);
    out.put_blob(signature);
}

/// Appends the record of a new communicator-log entry.
pub fn put_comm(out: &mut Vec<u8>, entry: &CommEntry) {
    out.put_u64(COMM_RECORD);
    entry.encode(out);
}

/// What a journal's header says about its rank.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalHeader {
    pub rank: u32,
    pub world_size: u32,
    pub pid: u32,
    pub start_ns: u64,
    pub host: String,
    pub mpi_library: String,
    /// Most bytes the tail may hold (what the tracer mapped: the tail is
    /// checkpointed at its configured size, or later when the trace is
    /// large).
    pub capacity: u32,
    /// The run (see [`RankMeta::run`]).
    pub run: u64,
    /// How the rank records call times: the per-call times this asks for
    /// are in the open blocks and the tail's blocks (in the tail's call
    /// records before version 7).
    pub timing: Timing,
    /// Nanoseconds per clock tick, measured when the journal opened: what
    /// a rank killed before its first checkpoint has to convert its times.
    pub ns_per_tick: f64,
}

impl JournalHeader {
    /// The header of a new journal, up to its open blocks (the tail
    /// follows them, at the offset it names): no ending, generation 0, an
    /// empty tail.
    pub fn encode(&self) -> Vec<u8> {
        let mut identity = Vec::new();
        identity.put_str(&self.host);
        identity.put_str(&self.mpi_library);
        identity.put_u64(self.run);
        self.timing.encode(&mut identity);
        identity.put_u64(self.ns_per_tick.to_bits());
        let open_at = (FIXED_LEN + identity.len()).next_multiple_of(64);
        let tail_at = open_at + open_blocks_bytes(&self.timing);
        let mut out = Vec::with_capacity(open_at);
        out.extend_from_slice(&MAGIC);
        for v in [
            VERSION,
            tail_at as u32,
            self.rank,
            self.world_size,
            self.pid,
            identity.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.start_ns.to_le_bytes());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        let checksum = hash(hash(HASH_SEED, &out), &identity);
        out.extend_from_slice(&checksum.to_le_bytes());
        out.extend_from_slice(&ending_word(NO_ENDING).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&tail_word(0, EMPTY_TAIL).to_le_bytes());
        out.extend_from_slice(&[0; FIXED_LEN - IN_CALL_AT]);
        out.extend_from_slice(&identity);
        out.resize(open_at, 0);
        out
    }
}

/// A journal as read back.
struct Journal {
    header: JournalHeader,
    ending: Ending,
    lost: Lost,
    /// The call the rank was inside when the journal ended.
    in_call: Option<FuncId>,
    generation: u64,
    /// Signatures first recorded in the tail, in terminal order.
    signatures: Vec<Vec<u8>>,
    /// Terminals of the tail's call records.
    calls: Vec<u32>,
    /// The tail's repeated calls, each after the call records before it
    /// (`calls[..at]`), in order.
    repeats: Vec<(usize, Repeat)>,
    /// The journal's version: whose records hold per-call times (2 to 6)
    /// and where the others are (7 on, the open blocks).
    version: u32,
    /// Per-call times of the tail's calls in its call records (versions 2
    /// to 6), as the header's timing says: lossy codes' numbers, exact
    /// times' numbers, stored as they are read (so a long tail takes the
    /// memory of its compressed times).
    lossy: ColumnWriter,
    exact: ColumnWriter,
    /// The tail's finished blocks of per-call times (version 7 on), of
    /// lossy timing and of lossless timing, as stored.
    blocks: [Vec<u8>; 2],
    /// Per-call times of the tail's calls, as stored (empty for a mode
    /// the rank did not record).
    times: CallTimes,
    comms: Vec<CommEntry>,
}

/// Calls that each repeat the call `period` calls before them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Repeat {
    period: u64,
    calls: u64,
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

impl Journal {
    fn read(path: &Path) -> Result<Journal, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::journal(path, e))?;
        Journal::parse(&bytes).map_err(|m| Error::journal(path, m))
    }

    fn parse(bytes: &[u8]) -> Result<Journal, String> {
        if bytes.len() < FIXED_LEN_2 || bytes[..8] != MAGIC {
            return Err(if bytes.starts_with(&MAGIC) || bytes.is_empty() {
                format!(
                    "truncated: {} bytes, less than a journal header",
                    bytes.len()
                )
            } else {
                "not an mpigram crash journal".into()
            });
        }
        let version = u32_at(bytes, 8);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(format!(
                "journal version {version}, this mpigram reads versions {OLDEST_VERSION} to {VERSION}"
            ));
        }
        let tail_at = u32_at(bytes, 12) as usize;
        let identity_len = u32_at(bytes, 28) as usize;
        let capacity = u32_at(bytes, 40);
        let identity_at = match version {
            6.. => FIXED_LEN,
            4 | 5 => FIXED_LEN_5,
            3 => FIXED_LEN_3,
            _ => FIXED_LEN_2,
        };
        let identity_end = identity_at.saturating_add(identity_len);
        // Where the open blocks are (version 7 on), else the tail; which
        // of the two is checked once the identity names the timing.
        let open_at = identity_end.next_multiple_of(64);
        if tail_at < open_at || version < 7 && tail_at != open_at {
            return Err(format!("damaged header: tail at {tail_at}"));
        }
        if bytes.len() < tail_at {
            return Err(format!(
                "truncated: {} bytes, the header says {tail_at}",
                bytes.len()
            ));
        }
        let identity = &bytes[identity_at..identity_end];
        if hash(hash(HASH_SEED, &bytes[..CHECKED_LEN]), identity) != u32_at(bytes, CHECKED_LEN) {
            return Err("damaged header (checksum)".into());
        }
        let mut r = ByteReader::new(identity);
        let host = r.str().map_err(|e| format!("identity: {e}"))?.to_owned();
        let mpi_library = r.str().map_err(|e| format!("identity: {e}"))?.to_owned();
        let identity_error = |e| format!("identity: {e}");
        let (mut run, mut timing, mut ns_per_tick) = (0, Timing::default(), 1.0);
        if !r.is_empty() {
            run = r.u64().map_err(identity_error)?;
        }
        if !r.is_empty() {
            timing = Timing::decode(&mut r).map_err(identity_error)?;
            ns_per_tick = f64::from_bits(r.u64().map_err(identity_error)?);
            if !(ns_per_tick.is_finite() && ns_per_tick > 0.0) {
                return Err(format!("identity: {ns_per_tick} ns per tick"));
            }
        }
        r.finish().map_err(identity_error)?;
        if version >= 7 && tail_at != open_at + open_blocks_bytes_of(version, &timing) {
            return Err(format!("damaged header: tail at {tail_at}"));
        }
        let header = JournalHeader {
            rank: u32_at(bytes, 16),
            world_size: u32_at(bytes, 20),
            pid: u32_at(bytes, 24),
            start_ns: u64_at(bytes, 32),
            host,
            mpi_library,
            capacity,
            run,
            timing,
            ns_per_tick,
        };
        let ending = ending_of_word(u32_at(bytes, ENDING_AT))?;
        let lost = lost_of_word(u32_at(bytes, LOST_AT))?;
        if version >= 6
            && (version >= 7 || !header.timing.per_call())
            && u64_at(bytes, COUNTED_TIMES_AT) != 0
        {
            return Err("damaged header: counted times without their per-call timing".into());
        }
        let in_call = match version {
            3.. if u32_at(bytes, IN_CALL_AT + 4) != 0 => {
                return Err("damaged header: reserved bytes 76-79 are not 0".into());
            }
            3.. => in_call_of_word(u32_at(bytes, IN_CALL_AT))?,
            _ => None,
        };
        let generation = u64_at(bytes, GENERATION_AT);
        let word = u64_at(bytes, TAIL_WORD_AT);
        let (len, checksum) = (word as u32, (word >> 32) as u32);
        if len > capacity {
            return Err(format!(
                "damaged header: a tail of {len} bytes in {capacity}"
            ));
        }
        let end = tail_at + len as usize;
        if bytes.len() < end {
            return Err(format!(
                "truncated: {} bytes, the tail ends at {end}",
                bytes.len()
            ));
        }
        let tail = &bytes[tail_at..tail_at + len as usize];
        if tail_checksum_of(version, tail) != checksum {
            return Err(format!("the tail's {len} bytes are damaged (checksum)"));
        }
        let pending = match version {
            4.. => repeated_of_words(
                u64_at(bytes, REPETITION_AT),
                u64_at(bytes, REPEATED_AT),
                len,
            )?,
            _ => None,
        };
        let mut journal = Journal {
            header,
            ending,
            lost,
            in_call,
            generation,
            signatures: Vec::new(),
            calls: Vec::new(),
            repeats: Vec::new(),
            version,
            lossy: ColumnWriter::default(),
            exact: ColumnWriter::default(),
            blocks: Default::default(),
            times: CallTimes::default(),
            comms: Vec::new(),
        };
        journal
            .read_records(tail)
            .map_err(|e| format!("tail: {e}"))?;
        if let Some(repeat) = pending {
            if journal.times_in_tail() {
                if version < 6 {
                    return Err("tail: repeated calls without their per-call times".into());
                }
                // Their times: after the tail and the room for their
                // record's head.
                let word = u64_at(bytes, COUNTED_TIMES_AT);
                let (counted, crc) = (word as u32 as usize, (word >> 32) as u32);
                let at = end + TIMED_REPEAT_HEAD;
                let times = bytes.get(at..at.saturating_add(counted)).ok_or_else(|| {
                    format!("truncated: the counted calls' {counted} bytes of times")
                })?;
                if tail_checksum(EMPTY_TAIL, times) != crc {
                    return Err(format!(
                        "the counted calls' {counted} bytes of times are damaged (checksum)"
                    ));
                }
                let mut r = ByteReader::new(times);
                for _ in 0..repeat.calls {
                    journal
                        .read_times(&mut r)
                        .map_err(|e| format!("the counted calls' times: {e}"))?;
                }
            }
            journal.repeats.push((journal.calls.len(), repeat));
        }
        journal.times = if version >= 7 {
            journal.open_blocks_times(&bytes[open_at..tail_at])?
        } else {
            let h = &journal.header.timing;
            CallTimes {
                lossy: h
                    .lossy
                    .as_ref()
                    .map_or_else(Vec::new, |_| journal.lossy.bytes()),
                exact: if h.lossless {
                    journal.exact.bytes()
                } else {
                    Vec::new()
                },
            }
        };
        crate::rank::check_signatures(&journal.signatures).map_err(|m| format!("tail: {m}"))?;
        Ok(journal)
    }

    /// Whether the tail's records hold per-call times (versions 2 to 6,
    /// where the rank records them; version 1 had none in its header).
    fn times_in_tail(&self) -> bool {
        self.version < 7 && self.header.timing.per_call()
    }

    /// The per-call times of the tail's calls, from version 7 on: the
    /// blocks of its records, then the rest of its calls' from the open
    /// blocks (`open`) (see "Per-call times" in the module's doc).
    fn open_blocks_times(&mut self, open: &[u8]) -> Result<CallTimes, String> {
        let timing = &self.header.timing;
        let tail_calls = self.tail_calls();
        let mut times = CallTimes::default();
        let mut columns = open.chunks_exact(OPEN_COLUMN_BYTES);
        for (which, recorded, stored) in [
            (LOSSY_BLOCK, timing.lossy.is_some(), &mut times.lossy),
            (EXACT_BLOCK, timing.lossless, &mut times.exact),
        ] {
            let blocks = std::mem::take(&mut self.blocks[usize::from(which)]);
            if !recorded {
                continue;
            }
            let mode = if which == LOSSY_BLOCK {
                "lossy"
            } else {
                "lossless"
            };
            let held = crate::timing::calls_in(&blocks)
                .map_err(|e| format!("tail: a block of {mode} times: {e}"))?;
            let in_open = tail_calls
                .checked_sub(held)
                .filter(|&n| n <= BLOCK_CALLS.into())
                .ok_or_else(|| {
                    format!("tail: {tail_calls} calls, but its blocks of {mode} times hold {held}")
                })?;
            // Version 7's open blocks have no tokens: every call escaped.
            let tokens = match self.version {
                8.. => columns.next(),
                _ => Some(&ALL_ESCAPED[..]),
            };
            let (Some(tokens), Some(first), Some(second)) =
                (tokens, columns.next(), columns.next())
            else {
                return Err("truncated: the open blocks".into());
            };
            let (mut first, mut second) = (ByteReader::new(first), ByteReader::new(second));
            let mut pairs = Vec::new();
            PairTable::default()
                .decode(
                    &tokens[..in_open as usize],
                    &mut first,
                    &mut second,
                    &mut pairs,
                )
                .map_err(|e| format!("the open block of {mode} times: {e}"))?;
            let mut open = ColumnWriter::default();
            for (a, b) in pairs {
                open.push(a, b);
            }
            *stored = blocks;
            stored.extend_from_slice(&open.bytes());
        }
        Ok(times)
    }

    /// The tail's calls: its call records and its repeated calls.
    fn tail_calls(&self) -> u64 {
        let repeated: u64 = self.repeats.iter().map(|(_, r)| r.calls).sum();
        self.calls.len() as u64 + repeated
    }

    fn read_records(&mut self, tail: &[u8]) -> Result<(), mpigram_varint::DecodeError> {
        let mut r = ByteReader::new(tail);
        while !r.is_empty() {
            let at = r.position();
            match r.u64()? {
                SIGNATURE_RECORD => self.signatures.push(r.blob()?.to_vec()),
                COMM_RECORD => self.comms.push(CommEntry::decode(&mut r)?),
                // Repeated calls have per-call times, in a timed record,
                // exactly when the tail holds the rank's per-call times.
                REPEAT_RECORD if !self.times_in_tail() => {
                    let at = r.position();
                    let (period, calls) = (r.u64()?, r.u64()?);
                    self.repeat(at, period, calls)?;
                }
                v if v == u64::from(TIMED_REPEAT_RECORD) && self.times_in_tail() => {
                    let at = r.position();
                    let head = r.bytes(TIMED_REPEAT_HEAD - 1)?;
                    let (period, calls) = (u32_at(head, 0), u32_at(head, 4));
                    self.repeat(at, period.into(), calls.into())?;
                    for _ in 0..calls {
                        self.read_times(&mut r)?;
                    }
                }
                TIMES_BLOCK_RECORD if self.version >= 7 && self.header.timing.per_call() => {
                    let at = r.position();
                    let which = r.u64()?;
                    let recorded = match which {
                        0 => self.header.timing.lossy.is_some(),
                        1 => self.header.timing.lossless,
                        _ => false,
                    };
                    if !recorded {
                        return Err(out_of_range(at, which));
                    }
                    self.blocks[which as usize].extend_from_slice(r.blob()?);
                }
                v if v & 1 == 0 => {
                    let terminal = u32::try_from(v >> 1).map_err(|_| out_of_range(at, v))?;
                    self.calls.push(terminal);
                    if self.version < 7 {
                        self.read_times(&mut r)?;
                    }
                }
                v => return Err(out_of_range(at, v)),
            }
        }
        Ok(())
    }

    /// `calls` calls after the call records so far, each repeating the
    /// call `period` calls before it (their record's numbers at `at`).
    fn repeat(
        &mut self,
        at: usize,
        period: u64,
        calls: u64,
    ) -> Result<(), mpigram_varint::DecodeError> {
        if !(1..=MAX_PERIOD).contains(&period) || !(1..=u64::from(u32::MAX)).contains(&calls) {
            return Err(out_of_range(at, period.max(calls)));
        }
        self.repeats
            .push((self.calls.len(), Repeat { period, calls }));
        Ok(())
    }

    /// One call's per-call times, as the header's timing mode says.
    fn read_times(&mut self, r: &mut ByteReader) -> Result<(), mpigram_varint::DecodeError> {
        if self.header.timing.lossy.is_some() {
            let (interval, duration) = (r.u64()?, r.u64()?);
            self.lossy.push(interval, duration);
        }
        if self.header.timing.lossless {
            let (interval, duration) = (r.u64()?, r.u64()?);
            self.exact.push(interval, duration);
        }
        Ok(())
    }
}

fn out_of_range(offset: usize, value: u64) -> mpigram_varint::DecodeError {
    mpigram_varint::DecodeError {
        offset,
        kind: mpigram_varint::DecodeErrorKind::OutOfRange {
            value,
            target: "journal record",
        },
    }
}

/// Ranks of `dir` that have a crash journal (or checkpoint) but no
/// `rank<N>.mgr`: ranks that were killed before they wrote their trace.
/// A rank that wrote its file is read from it, whatever else is there.
pub fn recoverable_ranks(dir: &Path) -> Result<Vec<u32>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::dir(dir, e))?;
    let mut ranks = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::dir(dir, e))?;
        let name = entry.file_name();
        let name = name.to_str().unwrap_or("");
        let rank = rank_in_file_name(name, JOURNAL_SUFFIX)
            .or_else(|| rank_in_file_name(name, CHECKPOINT_SUFFIX));
        if let Some(rank) = rank.filter(|&r| !dir.join(rank_file_name(r)).exists()) {
            ranks.push(rank);
        }
    }
    ranks.sort_unstable();
    ranks.dedup();
    Ok(ranks)
}

/// Rebuilds rank `rank`'s trace from its crash journal in `dir`: the
/// checkpoint's calls, then the tail's. Its ending is what the journal
/// noted (a fatal signal, or an ending whose rank file could not be
/// written), else [`Ending::Killed`].
///
/// The tail's calls have their per-call times (from journals of version
/// 2 on), but no aggregated timing: a call from the tail is counted in its
/// signature's [`CallStats::count`] but adds nothing to its durations (a
/// signature first seen in the tail has total, min and max 0), and
/// `end_ns` is the last checkpoint's (else the start).
///
/// Every part is checked: a damaged, truncated or foreign journal, or a
/// checkpoint of another process or generation, is an error naming the
/// file. A record the rank was killed in the middle of writing was never
/// published, and is not read.
pub fn recover_rank(dir: &Path, rank: u32) -> Result<RankTrace, Error> {
    let journal_path = dir.join(journal_file_name(rank));
    let checkpoint_path = dir.join(checkpoint_file_name(rank));
    let checkpoint = if checkpoint_path.exists() {
        let c = RankTrace::read(&checkpoint_path)?;
        if c.meta.rank != rank {
            return Err(Error::journal(
                &checkpoint_path,
                format!("holds rank {}", c.meta.rank),
            ));
        }
        Some(c)
    } else {
        None
    };
    if !journal_path.exists() {
        // Only if the journal was removed by hand: the tracer creates it
        // before the first checkpoint.
        return checkpoint.ok_or_else(|| {
            Error::journal(&journal_path, "no journal and no checkpoint for this rank")
        });
    }
    let journal = Journal::read(&journal_path)?;
    let h = &journal.header;
    if h.rank != rank {
        return Err(Error::journal(
            &journal_path,
            format!("holds rank {}", h.rank),
        ));
    }
    let tail_calls = journal.tail_calls();
    let base = match checkpoint {
        None if journal.generation == 0 => None,
        None => {
            return Err(Error::journal(
                &journal_path,
                format!(
                    "continues a checkpoint of {} calls, but {} is missing",
                    journal.generation,
                    checkpoint_file_name(rank)
                ),
            ));
        }
        Some(c) if c.meta.pid != h.pid || c.meta.start_ns != h.start_ns => {
            return Err(Error::journal(
                &checkpoint_path,
                format!(
                    "belongs to another run (process {}, the journal's is {})",
                    c.meta.pid, h.pid
                ),
            ));
        }
        Some(c) if c.meta.calls == journal.generation => Some((c, true)),
        // Killed while checkpointing: after the rename, before (or
        // while) the tail was emptied. The checkpoint holds every call.
        Some(c)
            if c.meta.calls > journal.generation
                && (tail_calls == 0 || c.meta.calls == journal.generation + tail_calls) =>
        {
            Some((c, false))
        }
        Some(c) => {
            return Err(Error::journal(
                &checkpoint_path,
                format!(
                    "holds {} calls, but the journal continues a checkpoint of {}",
                    c.meta.calls, journal.generation
                ),
            ));
        }
    };
    let (base, with_tail) = match base {
        Some((c, with_tail)) => (Some(c), with_tail),
        None => (None, true),
    };
    if with_tail {
        let known = base.as_ref().map_or(0, |c| c.signatures.len()) + journal.signatures.len();
        if let Some(t) = journal.calls.iter().find(|&&t| t as usize >= known) {
            return Err(Error::journal(
                &journal_path,
                format!("a call of signature {t}, but {known} are known"),
            ));
        }
    }
    let trace = rebuild(base, &journal, with_tail)
        .and_then(|trace| trace.check().map(|()| trace))
        .map_err(|m| Error::journal(&journal_path, m))?;
    Ok(trace)
}

/// The checkpoint's record followed by the tail's (if `with_tail`; its
/// terminals are known to be in the table).
fn rebuild(
    base: Option<RankTrace>,
    journal: &Journal,
    with_tail: bool,
) -> Result<RankTrace, String> {
    let h = &journal.header;
    let mut grammar = Sequitur::new();
    let mut base_calls = 0;
    // Per-call times, and the clock they need, are the checkpoint's, then
    // the tail's (a journal of version 1 has none in its tail).
    let mut timing = (
        h.timing.clone(),
        CallTimes::default(),
        h.ns_per_tick,
        Vec::new(),
    );
    // The checkpoint's gaps by place (the tail's calls add to the gaps per
    // signature only, which their readers allow for).
    let mut gaps = Default::default();
    let (mut signatures, mut stats, mut comms, end_ns, allocations) = match base {
        Some(c) => {
            c.grammar
                .expand(c.meta.rank)
                .into_iter()
                .flatten()
                .for_each(|t| grammar.push(t));
            base_calls = c.meta.calls;
            let m = c.meta;
            if !h.timing.per_call() {
                timing.0 = m.timing;
            }
            timing = (timing.0, c.times, m.ns_per_tick, m.clock_sync);
            gaps = c.gaps;
            (
                c.signatures,
                c.stats,
                c.comms,
                m.end_ns,
                m.recorder_allocations,
            )
        }
        None => (Vec::new(), Vec::new(), Vec::new(), h.start_ns, 0),
    };
    let mut calls = base_calls;
    if with_tail {
        signatures.extend(journal.signatures.iter().cloned());
        stats.resize(signatures.len(), CallStats::default());
        comms.extend_from_slice(&journal.comms);
        let mut call = |t: u32, grammar: &mut Sequitur| {
            stats[t as usize].count += 1;
            grammar.push(t);
        };
        let mut repeats = journal.repeats.iter().peekable();
        for at in 0..=journal.calls.len() {
            while let Some((_, r)) = repeats.next_if(|(before, _)| *before == at) {
                for _ in 0..r.calls {
                    let t = grammar.recent(r.period).ok_or_else(|| {
                        format!(
                            "tail: calls repeating the call {} before them, after {} calls",
                            r.period,
                            grammar.len()
                        )
                    })?;
                    call(t, &mut grammar);
                }
            }
            if let Some(&t) = journal.calls.get(at) {
                call(t, &mut grammar);
            }
        }
        calls += journal.tail_calls();
        let times = &mut timing.1;
        times.lossy.extend_from_slice(&journal.times.lossy);
        times.exact.extend_from_slice(&journal.times.exact);
    }
    Ok(RankTrace {
        meta: RankMeta {
            rank: h.rank,
            world_size: h.world_size,
            pid: h.pid,
            host: h.host.clone(),
            mpi_library: h.mpi_library.clone(),
            timing: timing.0,
            calls,
            start_ns: h.start_ns,
            end_ns,
            ending: journal.ending,
            recorder_allocations: allocations,
            ns_per_tick: timing.2,
            // Measured as the rank ends, which a killed rank does not.
            cpus: 0,
            cpu_share: None,
            clock_sync: timing.3,
            run: h.run,
            lost: journal.lost,
            ended_in: journal.in_call,
        },
        signatures,
        grammar: grammar.grammar(h.rank),
        stats,
        gaps,
        comms,
        times: timing.1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ending_words_round_trip_and_catch_flips() {
        for e in [
            Ending::Killed,
            Ending::Finalized,
            Ending::ExitWithoutFinalize,
            Ending::Abort,
            Ending::Signal(11),
            Ending::Signal(2),
        ] {
            let word = ending_word_of(e);
            assert_eq!(ending_of_word(word), Ok(e));
            for bit in 0..32 {
                assert!(ending_of_word(word ^ 1 << bit).is_err(), "{e:?} bit {bit}");
            }
        }
        assert_eq!(
            ending_word(SIGNAL_ENDING | 15),
            ending_word_of(Ending::Signal(15))
        );
    }

    #[test]
    fn lost_words_round_trip_and_catch_flips() {
        for lost in [
            Lost::Unknown,
            Lost::Calls(1),
            Lost::Calls(12345),
            Lost::Calls(LOST_MAX.into()),
        ] {
            let word = lost_word(lost);
            assert_eq!(lost_of_word(word), Ok(lost));
            for bit in 0..32 {
                assert!(lost_of_word(word ^ 1 << bit).is_err(), "{lost:?} bit {bit}");
            }
        }
        assert_eq!(lost_word(Lost::None), 0);
        assert_eq!(
            lost_of_word(lost_word(Lost::Calls(1 << 40))),
            Ok(Lost::Calls(LOST_MAX.into()))
        );
        for bit in 0..32 {
            assert!(lost_of_word(1 << bit).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn records_read_back() {
        let mut tail = Vec::new();
        put_signature(&mut tail, b"sig");
        put_call(&mut tail, 0, &[]);
        put_call(&mut tail, 300, &[]);
        let entry = CommEntry {
            seq: 7,
            comm: 1,
            rank: 2,
            size: 4,
            remote_size: 0,
            inter: false,
            leader: 0,
            instance: 0,
        };
        put_comm(&mut tail, &entry);
        assert_eq!(tail[5], 0, "a call of terminal 0 is one byte");
        let mut j = Journal {
            header: JournalHeader {
                rank: 0,
                world_size: 1,
                pid: 1,
                start_ns: 0,
                host: String::new(),
                mpi_library: String::new(),
                capacity: 0,
                run: 0,
                timing: Timing::default(),
                ns_per_tick: 1.0,
            },
            ending: Ending::Killed,
            lost: Lost::None,
            in_call: None,
            generation: 0,
            signatures: Vec::new(),
            calls: Vec::new(),
            repeats: Vec::new(),
            version: 6,
            lossy: ColumnWriter::default(),
            exact: ColumnWriter::default(),
            blocks: Default::default(),
            times: CallTimes::default(),
            comms: Vec::new(),
        };
        j.read_records(&tail).unwrap();
        assert_eq!(j.signatures, [b"sig".to_vec()]);
        assert_eq!(j.calls, [0, 300]);
        assert_eq!(j.comms, [entry]);
        assert!(j.read_records(&[5]).is_err(), "record kind 5 is unknown");

        // With both timings, each call record carries four numbers.
        j.header.timing = Timing::parse("lossy,lossless", None).unwrap();
        j.calls.clear();
        let mut tail = Vec::new();
        put_call(&mut tail, 2, &[3, 4, 500, 6]);
        put_call(&mut tail, 1, &[0, 0, 7, 8]);
        j.read_records(&tail).unwrap();
        assert_eq!(j.calls, [2, 1]);
        let columns = |w: &ColumnWriter| crate::timing::decode_columns(&w.bytes()).unwrap();
        assert_eq!(columns(&j.lossy), [(3, 4), (0, 0)]);
        assert_eq!(columns(&j.exact), [(500, 6), (7, 8)]);
        assert!(
            j.read_records(&tail[..tail.len() - 1]).is_err(),
            "a call record without its times"
        );

        // From version 7 on, call records carry no times; blocks of times
        // are records of their own, of a mode the rank records.
        j.version = 7;
        j.calls.clear();
        let mut tail = Vec::new();
        put_call(&mut tail, 2, &[]);
        put_times_block(&mut tail, EXACT_BLOCK, b"exact");
        put_call(&mut tail, 1, &[]);
        put_times_block(&mut tail, LOSSY_BLOCK, b"lossy");
        put_times_block(&mut tail, EXACT_BLOCK, b" more");
        j.read_records(&tail).unwrap();
        assert_eq!(j.calls, [2, 1]);
        assert_eq!(j.blocks, [b"lossy".to_vec(), b"exact more".to_vec()]);
        j.header.timing = Timing::parse("lossless", None).unwrap();
        let mut lossy = Vec::new();
        put_times_block(&mut lossy, LOSSY_BLOCK, b"lossy");
        assert!(j.read_records(&lossy).is_err(), "lossy times, not recorded");
        let mut other = Vec::new();
        put_times_block(&mut other, 2, b"");
        assert!(j.read_records(&other).is_err(), "no third mode");
    }
}
