//! Reading a killed rank back from its crash journal: the tail alone, a
//! checkpoint and its tail, a rank killed while checkpointing; and every
//! way a journal can be wrong gives a one-line error naming the file,
//! never a panic.

mod common;

use common::one_line_naming;
use mpigram_grammar::Sequitur;
use mpigram_mpispec::encoding::{put_handle, put_rank};
use mpigram_mpispec::{HandleRef, Rank, func, put_signature_head};
use mpigram_trace::journal::{
    COUNTED_TIMES_AT, EMPTY_TAIL, ENDING_AT, EXACT_BLOCK, GENERATION_AT, HASH_SEED, IN_CALL_AT,
    JournalHeader, LOSSY_BLOCK, REPEATED_AT, REPEATED_STEP, REPETITION_AT, TAIL_WORD_AT,
    TIMED_REPEAT_HEAD, counted_times_word, ending_word_of, hash, in_call_word, open_blocks_bytes,
    put_call, put_comm, put_repeat, put_signature, put_timed_repeat, put_times_block,
    repeated_word, repetition_word, tail_checksum, tail_word, timed_repeat_head,
};
use mpigram_trace::timing::{
    BLOCK_CALLS, ColumnWriter, ESCAPE, OPEN_COLUMN_BYTES, PairTable, decode_columns, decode_exact,
};
use mpigram_trace::{
    CallStats, CommEntry, Ending, RankMeta, RankTrace, Timing, Trace, checkpoint_file_name,
    journal_file_name, recover_rank, recoverable_ranks,
};
use mpigram_varint::PutVarint;
use proptest::prelude::*;

/// Offset of a journal's identity (versions 6 and 7).
const IDENTITY_AT: usize = 104;

/// `trace` is exactly the one rank `rank`.
fn assert_same(trace: &Trace, rank: &RankTrace) {
    let one = Trace::from_rank(rank.clone());
    assert_eq!(trace.ranks, one.ranks);
    assert_eq!(trace.signatures, one.signatures);
    assert!(trace.calls(rank.meta.rank).eq(rank.calls()));
}
use std::path::{Path, PathBuf};

const PID: u32 = 4242;
const START_NS: u64 = 1_000;

/// MPI_Comm_rank(comm, rank): a real signature.
fn signature(comm: u32) -> Vec<u8> {
    let mut b = Vec::new();
    put_signature_head(&mut b, func::MPI_Comm_rank, 0);
    put_handle(&mut b, HandleRef::Predefined(comm));
    put_rank(&mut b, Rank::Relative(0));
    b
}

fn entry(seq: u64) -> CommEntry {
    CommEntry {
        seq,
        comm: 0,
        rank: 1,
        size: 2,
        remote_size: 0,
        inter: false,
        leader: 0,
        instance: 0,
    }
}

fn header(rank: u32) -> JournalHeader {
    JournalHeader {
        rank,
        world_size: 2,
        pid: PID,
        start_ns: START_NS,
        host: "node".into(),
        mpi_library: "MPICH".into(),
        capacity: 4096,
        run: 0,
        timing: Timing::default(),
        ns_per_tick: 0.5,
    }
}

/// A journal file as the tracer leaves it: `tail` published, `unpublished`
/// after it (a record it was killed writing).
struct Image {
    bytes: Vec<u8>,
    /// Where the open blocks are (version 7, with per-call times).
    open_at: usize,
    tail_at: usize,
    identity_end: usize,
    published: usize,
}

impl Image {
    fn new(rank: u32, generation: u64, ending: Ending, tail: &[u8], unpublished: &[u8]) -> Image {
        Image::with_header(&header(rank), generation, ending, tail, unpublished)
    }

    fn with_header(
        h: &JournalHeader,
        generation: u64,
        ending: Ending,
        tail: &[u8],
        unpublished: &[u8],
    ) -> Image {
        let mut bytes = h.encode();
        let open_at = bytes.len();
        let tail_at = open_at + open_blocks_bytes(&h.timing);
        bytes.resize(tail_at, 0);
        let identity_end =
            IDENTITY_AT + u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
        bytes[ENDING_AT..ENDING_AT + 4].copy_from_slice(&ending_word_of(ending).to_le_bytes());
        bytes[GENERATION_AT..GENERATION_AT + 8].copy_from_slice(&generation.to_le_bytes());
        let word = tail_word(tail.len() as u32, tail_checksum(EMPTY_TAIL, tail));
        bytes[TAIL_WORD_AT..TAIL_WORD_AT + 8].copy_from_slice(&word.to_le_bytes());
        bytes.extend_from_slice(tail);
        bytes.extend_from_slice(unpublished);
        bytes.resize(tail_at + 4096.max(tail.len() + unpublished.len()), 0);
        Image {
            bytes,
            open_at,
            tail_at,
            identity_end,
            published: tail_at + tail.len(),
        }
    }

    /// Writes the open block of the `m`-th mode the rank records (lossy
    /// timing's, then lossless timing's): its tokens, then its two columns'
    /// numbers (a varint each), each followed by `after` (an older block's
    /// bytes).
    fn set_open_block(&mut self, m: usize, tokens: &[u8], numbers: [&[u64]; 2], after: &[u8]) {
        let mut columns = vec![tokens.to_vec()];
        for numbers in numbers {
            let mut column = Vec::new();
            numbers.iter().for_each(|&v| column.put_u64(v));
            columns.push(column);
        }
        for (k, mut column) in columns.into_iter().enumerate() {
            column.extend_from_slice(after);
            let at = self.open_at + (3 * m + k) * OPEN_COLUMN_BYTES;
            self.bytes[at..at + column.len()].copy_from_slice(&column);
        }
    }

    /// Makes the journal one of version 7, whose open blocks have no
    /// tokens: each mode's two columns of numbers, then the tail, moved to
    /// where version 7 puts them, and the header's checksum matching.
    fn as_version_7(&mut self) {
        let modes = (self.tail_at - self.open_at) / (3 * OPEN_COLUMN_BYTES);
        let mut b = self.bytes[..self.open_at].to_vec();
        for m in 0..modes {
            let at = self.open_at + (3 * m + 1) * OPEN_COLUMN_BYTES;
            b.extend_from_slice(&self.bytes[at..at + 2 * OPEN_COLUMN_BYTES]);
        }
        let tail_at = b.len();
        b.extend_from_slice(&self.bytes[self.tail_at..]);
        b[8..12].copy_from_slice(&7u32.to_le_bytes());
        b[12..16].copy_from_slice(&(tail_at as u32).to_le_bytes());
        let checksum = hash(
            hash(HASH_SEED, &b[..44]),
            &b[IDENTITY_AT..self.identity_end],
        );
        b[44..48].copy_from_slice(&checksum.to_le_bytes());
        self.published = tail_at + (self.published - self.tail_at);
        self.tail_at = tail_at;
        self.bytes = b;
    }

    /// The header's words for `calls` calls after the published tail, each
    /// repeating the call `period` calls before it, counted since the tail
    /// was `since` bytes long (the published length: they count; else
    /// they are a finished count's, and ignored).
    fn count_repeated(&mut self, period: u32, calls: u32, since: usize) {
        let repetition = repetition_word(period, since as u32);
        let mut repeated = repeated_word(repetition, 1);
        for _ in 1..calls {
            repeated = repeated.wrapping_add(REPEATED_STEP);
        }
        assert_eq!(
            repeated,
            repeated_word(repetition, calls),
            "one step a call"
        );
        self.set_word(REPETITION_AT, repetition);
        self.set_word(REPEATED_AT, repeated);
    }

    /// Makes the journal one of version `version`, whose identity
    /// (`identity`) starts at `identity_at`: the tail moved to where that
    /// layout puts it, under that version's checksum, and the header's
    /// under a matching checksum.
    fn as_version(&mut self, version: u32, identity_at: usize, identity: &[u8]) {
        assert!(version < 7, "older versions than this one's");
        let tail_at = (identity_at + identity.len()).next_multiple_of(64);
        let published = self.published - self.tail_at;
        let mut b = self.bytes[..identity_at].to_vec();
        b.extend_from_slice(identity);
        b.resize(tail_at, 0);
        b.extend_from_slice(&self.bytes[self.tail_at..]);
        b[8..12].copy_from_slice(&version.to_le_bytes());
        b[12..16].copy_from_slice(&(tail_at as u32).to_le_bytes());
        b[28..32].copy_from_slice(&(identity.len() as u32).to_le_bytes());
        let checksum = hash(hash(HASH_SEED, &b[..44]), identity);
        b[44..48].copy_from_slice(&checksum.to_le_bytes());
        let tail = &b[tail_at..tail_at + published];
        let tail_checksum = match version {
            5 | 6 => tail_checksum(EMPTY_TAIL, tail),
            _ => hash(HASH_SEED, tail),
        };
        let word = tail_word(published as u32, tail_checksum);
        b[TAIL_WORD_AT..TAIL_WORD_AT + 8].copy_from_slice(&word.to_le_bytes());
        *self = Image {
            bytes: b,
            open_at: tail_at,
            tail_at,
            identity_end: identity_at + identity.len(),
            published: tail_at + published,
        };
    }

    fn set_word(&mut self, at: usize, word: u64) {
        self.bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
    }

    fn write(&self, dir: &Path, rank: u32) -> PathBuf {
        let path = dir.join(journal_file_name(rank));
        std::fs::write(&path, &self.bytes).unwrap();
        path
    }
}

/// A tail: two new signatures, calls 0 1 0 0 1, a communicator entry.
fn small_tail() -> Vec<u8> {
    let mut t = Vec::new();
    put_signature(&mut t, &signature(0));
    put_call(&mut t, 0, &[]);
    put_signature(&mut t, &signature(1));
    put_comm(&mut t, &entry(1));
    put_call(&mut t, 1, &[]);
    for c in [0, 0, 1] {
        put_call(&mut t, c, &[]);
    }
    t
}

/// A checkpoint of rank `rank`: 100 calls alternating two signatures.
fn checkpoint(rank: u32, pid: u32) -> RankTrace {
    let mut s = Sequitur::new();
    for _ in 0..50 {
        s.push(0);
        s.push(1);
    }
    RankTrace {
        meta: RankMeta {
            rank,
            world_size: 2,
            pid,
            host: "node".into(),
            mpi_library: "MPICH".into(),
            timing: Timing::default(),
            calls: 100,
            start_ns: START_NS,
            end_ns: 5_000,
            ending: Ending::Killed,
            recorder_allocations: 7,
            ns_per_tick: 1.0,
            cpus: 0,
            cpu_share: None,
            clock_sync: Vec::new(),
            run: 0,
            lost: mpigram_trace::Lost::None,
            ended_in: None,
        },
        signatures: vec![signature(0), signature(1)],
        grammar: s.grammar(rank),
        stats: vec![
            CallStats {
                count: 50,
                total_ns: 500,
                min_ns: 9,
                max_ns: 11,
                gap_ns: 70
            };
            2
        ],
        gaps: Default::default(),
        comms: vec![entry(0)],
        times: Default::default(),
    }
}

fn write_checkpoint(dir: &Path, trace: &RankTrace) -> PathBuf {
    let path = dir.join(checkpoint_file_name(trace.meta.rank));
    trace.write_to(&path).unwrap();
    path
}

fn calls(t: &RankTrace) -> Vec<Vec<u8>> {
    t.calls().map(<[u8]>::to_vec).collect()
}

#[test]
fn a_journal_alone_holds_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    Image::new(1, 0, Ending::Killed, &small_tail(), &[]).write(dir.path(), 1);
    assert_eq!(recoverable_ranks(dir.path()).unwrap(), [1]);
    let t = recover_rank(dir.path(), 1).unwrap();
    let (a, b) = (signature(0), signature(1));
    assert_eq!(calls(&t), [&a, &b, &a, &a, &b].map(|s| s.clone()).to_vec());
    assert_eq!(t.meta.ending, Ending::Killed);
    assert_eq!(
        (t.meta.rank, t.meta.world_size, t.meta.pid, t.meta.calls),
        (1, 2, PID, 5)
    );
    assert_eq!(
        (t.meta.host.as_str(), t.meta.mpi_library.as_str()),
        ("node", "MPICH")
    );
    assert_eq!(t.stats.iter().map(|s| s.count).collect::<Vec<_>>(), [3, 2]);
    assert_eq!(t.stats[0].total_ns, 0, "no aggregated timing in the tail");
    assert_eq!(t.meta.ns_per_tick, 0.5, "the journal's clock");
    assert_eq!(t.comms, [entry(1)]);
    let trace = Trace::open(dir.path()).unwrap();
    assert_same(&trace, &t);
    assert!(!trace.is_complete());
}

/// The in-call word names the call the rank was killed in: read back from
/// the journal, kept through the rank's own file (META) and the whole-run
/// file (PARTS); a damaged word is refused by name.
#[test]
fn the_call_a_rank_was_killed_in_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut image = Image::new(1, 0, Ending::Killed, &small_tail(), &[]);
    let word = in_call_word(func::MPI_Recv);
    image.bytes[IN_CALL_AT..IN_CALL_AT + 4].copy_from_slice(&word.to_le_bytes());
    let path = image.write(dir.path(), 1);
    let t = recover_rank(dir.path(), 1).unwrap();
    assert_eq!(t.meta.ended_in, Some(func::MPI_Recv));
    assert_eq!(t.meta.calls, 5, "the calls before it");
    assert!(t.meta.describe_end().contains("inside MPI_Recv"));
    let rank_file = tempfile::tempdir().unwrap();
    let read = RankTrace::read(&t.write(rank_file.path()).unwrap()).unwrap();
    assert_eq!(read.meta.ended_in, Some(func::MPI_Recv), "in META");
    let run = Trace::from_rank(t);
    let run_file = tempfile::tempdir().unwrap();
    run.write(run_file.path()).unwrap();
    let read = Trace::open(run_file.path()).unwrap();
    assert_eq!(
        read.ranks[0].meta.ended_in,
        Some(func::MPI_Recv),
        "in PARTS"
    );

    // One bit flipped: not a word the tracer writes.
    image.bytes[IN_CALL_AT] ^= 4;
    std::fs::write(&path, &image.bytes).unwrap();
    let e = recover_rank(dir.path(), 1).unwrap_err();
    one_line_naming(&e, &path);
    assert!(e.to_string().contains("in-call word"), "{e}");
}

/// A write killed midway (rank 0's `trace.mgr` at MPI_Finalize, a rank's
/// own file) leaves a hidden temporary file: the readers ignore it, with
/// a one-line note, and read the ranks from their journals, every call.
/// A temporary file whose writer still runs is a write in progress: no note.
#[test]
fn a_temporary_file_of_an_interrupted_write_is_noted_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    for rank in [0, 1] {
        Image::new(rank, 0, Ending::Killed, &small_tail(), &[]).write(dir.path(), rank);
    }
    let whole = Trace::open(dir.path()).unwrap();
    assert!(whole.notes.is_empty(), "{:?}", whole.notes);
    // What the killed writers had written: the start of the whole-run
    // file (its header comes last, so it is zeros).
    let elsewhere = tempfile::tempdir().unwrap();
    let run_file = std::fs::read(whole.write(elsewhere.path()).unwrap()).unwrap();
    let mut partial = run_file[..run_file.len() / 2].to_vec();
    let header = partial.len().min(64);
    partial[..header].fill(0);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let gone = child.id();
    let left = [
        format!(".rank1.mgr.tmp-{gone}-4"),
        format!(".trace.mgr.tmp-{gone}-0"),
    ];
    for name in &left {
        std::fs::write(dir.path().join(name), &partial).unwrap();
    }
    let live = format!(".trace.mgr.tmp-{}-1", std::process::id());
    std::fs::write(dir.path().join(&live), &partial).unwrap();

    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.ranks, whole.ranks, "the journals were read, whole");
    for r in [0, 1] {
        assert!(trace.calls(r).eq(whole.calls(r)), "rank {r}'s calls");
    }
    assert_eq!(trace.notes.len(), 2, "{:?}", trace.notes);
    for (note, name) in trace.notes.iter().zip(&left) {
        assert!(!note.contains('\n'));
        assert!(
            note.starts_with(&format!("{name}: left by a write of ")),
            "{note}"
        );
        assert!(
            note.ends_with(&format!(
                "that was interrupted (process {gone} is gone); ignored; ranks 0-1 read from their crash journals"
            )),
            "{note}"
        );
    }
    assert!(
        left.iter()
            .chain([&live])
            .all(|n| dir.path().join(n).exists()),
        "readers change nothing in the directory"
    );
}

#[test]
fn a_checkpoint_and_its_tail_are_joined() {
    let dir = tempfile::tempdir().unwrap();
    let base = checkpoint(0, PID);
    write_checkpoint(dir.path(), &base);
    let mut tail = Vec::new();
    put_signature(&mut tail, &signature(2));
    put_call(&mut tail, 2, &[]);
    put_comm(&mut tail, &entry(101));
    put_call(&mut tail, 0, &[]);
    Image::new(0, 100, Ending::Signal(11), &tail, &[]).write(dir.path(), 0);
    let t = recover_rank(dir.path(), 0).unwrap();
    let mut expected = calls(&base);
    expected.extend([signature(2), signature(0)]);
    assert_eq!(calls(&t), expected);
    assert_eq!(t.meta.calls, 102);
    assert_eq!(t.meta.ending, Ending::Signal(11));
    assert_eq!(t.meta.end_ns, 5_000, "the checkpoint's");
    assert_eq!(t.meta.recorder_allocations, 7);
    let counts: Vec<u64> = t.stats.iter().map(|s| s.count).collect();
    assert_eq!(counts, [51, 50, 1]);
    assert_eq!(t.stats[0].total_ns, 500, "the checkpoint's timing stays");
    assert_eq!(t.comms, [entry(0), entry(101)]);
}

#[test]
fn a_rank_killed_while_checkpointing_is_read_from_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let base = checkpoint(0, PID);
    write_checkpoint(dir.path(), &base);
    let mut two = Vec::new();
    put_call(&mut two, 0, &[]);
    put_call(&mut two, 1, &[]);
    // Renamed, tail not yet emptied: the checkpoint holds the tail's calls.
    Image::new(0, 98, Ending::Killed, &two, &[]).write(dir.path(), 0);
    assert_eq!(calls(&recover_rank(dir.path(), 0).unwrap()), calls(&base));
    // Tail emptied, generation not yet stored.
    Image::new(0, 60, Ending::Killed, &[], &[]).write(dir.path(), 0);
    assert_eq!(calls(&recover_rank(dir.path(), 0).unwrap()), calls(&base));
    // A tail that neither continues nor is held by the checkpoint.
    let path = Image::new(0, 60, Ending::Killed, &two, &[]).write(dir.path(), 0);
    let e = recover_rank(dir.path(), 0).unwrap_err();
    one_line_naming(&e, &dir.path().join(checkpoint_file_name(0)));
    assert!(
        e.to_string().contains("continues a checkpoint of 60"),
        "{e}"
    );
    // A journal that continues a checkpoint that is not there.
    std::fs::remove_file(dir.path().join(checkpoint_file_name(0))).unwrap();
    one_line_naming(&recover_rank(dir.path(), 0).unwrap_err(), &path);
}

#[test]
fn a_checkpoint_of_another_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_checkpoint(dir.path(), &checkpoint(0, PID + 1));
    Image::new(0, 100, Ending::Killed, &[], &[]).write(dir.path(), 0);
    let e = Trace::open(dir.path()).err().unwrap();
    one_line_naming(&e, &path);
    assert!(e.to_string().contains("another run"), "{e}");
}

#[test]
fn a_record_the_rank_was_killed_writing_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut half = Vec::new();
    put_signature(&mut half, &signature(3));
    half.truncate(4);
    Image::new(1, 0, Ending::Killed, &small_tail(), &half).write(dir.path(), 1);
    assert_eq!(recover_rank(dir.path(), 1).unwrap().meta.calls, 5);
}

#[test]
fn a_rank_file_wins_over_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let mut finished = checkpoint(0, PID);
    finished.meta.ending = Ending::Finalized;
    finished.write(dir.path()).unwrap();
    Image::new(0, 0, Ending::Killed, &small_tail(), &[]).write(dir.path(), 0);
    assert!(recoverable_ranks(dir.path()).unwrap().is_empty());
    let trace = Trace::open(dir.path()).unwrap();
    assert_same(&trace, &finished);
}

#[test]
fn empty_foreign_and_newer_journals_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(journal_file_name(0));
    let mut newer = Image::new(0, 0, Ending::Killed, &[], &[]).bytes;
    let version = mpigram_trace::journal::VERSION + 1;
    newer[8..12].copy_from_slice(&version.to_le_bytes());
    for (bytes, says) in [
        (Vec::new(), "truncated"),
        (
            b"#!/bin/sh\necho not a journal\n".repeat(4),
            "not an mpigram crash journal",
        ),
        (newer, &format!("journal version {version}")),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        let e = Trace::open(dir.path()).err().unwrap();
        one_line_naming(&e, &path);
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[test]
fn a_tail_naming_an_unknown_signature_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut tail = small_tail();
    put_call(&mut tail, 2, &[]);
    let path = Image::new(0, 0, Ending::Killed, &tail, &[]).write(dir.path(), 0);
    let e = recover_rank(dir.path(), 0).unwrap_err();
    one_line_naming(&e, &path);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// One damaged byte, or a truncation, anywhere: an error naming the
    /// file if it is in what the journal holds (header, identity,
    /// published tail), else the same rank; never a panic.
    #[test]
    fn damaged_journals_are_refused(at in any::<prop::sample::Index>(), mask in 1u8.., cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let mut half = Vec::new();
        put_call(&mut half, 1, &[]);
        let tail = small_tail();
        let mut image = Image::new(1, 0, Ending::Killed, &tail, &half);
        // Calls counted as repeated: the header's two words are in use
        // (a flip in either is noticed).
        image.count_repeated(3, 4, tail.len());
        let good = {
            let path = image.write(dir.path(), 1);
            let t = recover_rank(dir.path(), 1).unwrap();
            std::fs::remove_file(path).unwrap();
            t
        };
        let mut bytes = image.bytes.clone();
        let i = at.index(bytes.len());
        let damaged = if truncate {
            bytes.truncate(cut.index(bytes.len()));
            bytes.len() < image.published
        } else {
            bytes[i] ^= mask;
            i < image.identity_end || (image.tail_at..image.published).contains(&i)
        };
        let path = dir.path().join(journal_file_name(1));
        std::fs::write(&path, &bytes).unwrap();
        match Trace::open(dir.path()) {
            Ok(trace) => {
                prop_assert!(!damaged, "damage at {} accepted", i);
                let one = Trace::from_rank(good.clone());
                prop_assert_eq!(&trace.ranks, &one.ranks);
                prop_assert_eq!(&trace.signatures, &one.signatures);
                prop_assert!(trace.calls(1).eq(good.calls()));
            }
            Err(e) => {
                prop_assert!(damaged, "undamaged journal refused: {}", e);
                one_line_naming(&e, &path);
            }
        }
    }

    /// The same with per-call times in the tail and calls counted after
    /// it (version 6): a damaged byte of the counted times or of their
    /// word is noticed too (not in the room left for their record's head,
    /// which the tracer writes when the run ends).
    #[test]
    fn damaged_timed_journals_are_refused(at in any::<prop::sample::Index>(), mask in 1u8..) {
        let dir = tempfile::tempdir().unwrap();
        let mut h = header(1);
        h.timing = Timing::parse("lossless", None).unwrap();
        let mut tail = Vec::new();
        put_signature(&mut tail, &signature(0));
        put_call(&mut tail, 0, &[3, 4]);
        put_timed_repeat(&mut tail, 1, 2, &[3, 4, 200, 4]);
        let times = [3u8, 4, 3, 5, 130, 1, 4];
        let mut unpublished = vec![0; TIMED_REPEAT_HEAD];
        unpublished.extend(times);
        let mut image = Image::with_header(&h, 0, Ending::Killed, &tail, &unpublished);
        image.count_repeated(1, 3, tail.len());
        let word = counted_times_word(times.len() as u32, tail_checksum(EMPTY_TAIL, &times));
        image.set_word(COUNTED_TIMES_AT, word);
        let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
        image.as_version(6, IDENTITY_AT, &identity);
        let good = {
            let path = image.write(dir.path(), 1);
            let t = recover_rank(dir.path(), 1).unwrap();
            std::fs::remove_file(path).unwrap();
            t
        };
        prop_assert_eq!(good.meta.calls, 6);
        let mut bytes = image.bytes.clone();
        let i = at.index(bytes.len());
        bytes[i] ^= mask;
        let counted = image.published + TIMED_REPEAT_HEAD..image.published + TIMED_REPEAT_HEAD + times.len();
        let damaged = i < image.identity_end
            || (image.tail_at..image.published).contains(&i)
            || counted.contains(&i);
        let path = dir.path().join(journal_file_name(1));
        std::fs::write(&path, &bytes).unwrap();
        match recover_rank(dir.path(), 1) {
            Ok(trace) => {
                prop_assert!(!damaged, "damage at {} accepted", i);
                prop_assert_eq!(trace, good);
            }
            Err(e) => {
                prop_assert!(damaged, "undamaged journal refused: {}", e);
                one_line_naming(&e, &path);
            }
        }
    }

    /// Damage to a checkpoint and its journal together: an error naming
    /// one of them, or a rank that reads back whole; never a panic.
    #[test]
    fn damaged_checkpoints_never_panic(flips in prop::collection::vec((any::<bool>(), any::<prop::sample::Index>(), 1u8..), 1..4)) {
        let dir = tempfile::tempdir().unwrap();
        let checkpoint_path = write_checkpoint(dir.path(), &checkpoint(0, PID));
        let mut tail = Vec::new();
        put_call(&mut tail, 1, &[]);
        let journal_path = Image::new(0, 100, Ending::Killed, &tail, &[]).write(dir.path(), 0);
        for (in_checkpoint, at, mask) in flips {
            let path = if in_checkpoint { &checkpoint_path } else { &journal_path };
            let mut bytes = std::fs::read(path).unwrap();
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
            std::fs::write(path, bytes).unwrap();
        }
        match Trace::open(dir.path()) {
            Ok(trace) => {
                let t = &trace.ranks[0];
                prop_assert_eq!(trace.calls(t.meta.rank).count() as u64, t.meta.calls);
            }
            Err(e) => {
                let text = e.to_string();
                prop_assert_eq!(text.lines().count(), 1);
                prop_assert!(text.contains("rank0.journal") || text.contains("rank0.checkpoint"), "{}", text);
            }
        }
    }
}

/// One damaged journal does not keep the other ranks from being read: its
/// rank is left out, with the error naming the journal.
#[test]
fn a_damaged_journal_leaves_out_its_rank_only() {
    let dir = tempfile::tempdir().unwrap();
    Image::new(0, 0, Ending::Killed, &small_tail(), &[]).write(dir.path(), 0);
    let mut bytes = Image::new(1, 0, Ending::Killed, &small_tail(), &[]).bytes;
    bytes[20] ^= 1; // the world size, under the header's checksum
    let damaged = dir.path().join(journal_file_name(1));
    std::fs::write(&damaged, &bytes).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.ranks.len(), 1);
    assert_eq!(trace.ranks[0].meta.rank, 0);
    let [skipped] = &trace.skipped[..] else {
        panic!("{:?}", trace.skipped)
    };
    assert!(skipped.contains("rank1.journal"), "{skipped}");
    assert_eq!(skipped.lines().count(), 1);
}

/// A checkpoint of rank 0 with lossless timing: 100 calls, the k-th from
/// tick 10k to 10k + 3.
fn lossless_checkpoint() -> RankTrace {
    let mut base = checkpoint(0, PID);
    base.meta.timing = Timing::parse("lossless", None).unwrap();
    let mut exact = mpigram_trace::timing::ExactWriter::default();
    for k in 0..100 {
        exact.push(10 * k, 10 * k + 3);
    }
    base.times.exact = exact.bytes();
    base
}

/// The times of two calls, lossy codes (5, 7) and (0, 0), and lossless
/// (10, 4) and (6, 8) stored: the header's mode.
fn assert_two_timed_calls(t: &RankTrace, h: &JournalHeader) {
    assert_eq!(t.meta.timing, h.timing, "the header's timing");
    assert_eq!(decode_columns(&t.times.lossy).unwrap(), [(5, 7), (0, 0)]);
    // Zig-zagged intervals and durations: 5 ticks after the origin for 2,
    // then 3 ticks after that for 4.
    assert_eq!(decode_exact(&t.times.exact).unwrap(), [(5, 7), (10, 14)]);
}

/// Rank 0's header with lossless timing, its checkpoint of 100 timed
/// calls written to `dir`.
fn after_lossless_checkpoint(dir: &Path) -> JournalHeader {
    let mut h = header(0);
    h.timing = Timing::parse("lossless", None).unwrap();
    write_checkpoint(dir, &lossless_checkpoint());
    h
}

/// Per-call times in a journal of version 6 (in its call records): a rank
/// killed before its first checkpoint has every journaled call's times,
/// in the mode its journal's header names; one killed after it has the
/// checkpoint's times, then the tail's.
#[test]
fn a_version_6_tail_holds_every_calls_times() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = header(1);
    h.timing = Timing::parse("lossy,lossless", None).unwrap();
    let mut tail = Vec::new();
    put_signature(&mut tail, &signature(0));
    put_call(&mut tail, 0, &[5, 7, 10, 4]);
    put_call(&mut tail, 0, &[0, 0, 6, 8]);
    let mut image = Image::with_header(&h, 0, Ending::Killed, &tail, &[]);
    let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
    image.as_version(6, IDENTITY_AT, &identity);
    image.write(dir.path(), 1);
    let t = recover_rank(dir.path(), 1).unwrap();
    assert_two_timed_calls(&t, &h);
    assert_eq!(t.meta.ns_per_tick, 0.5);

    // A checkpoint of 100 timed calls, and two calls in the tail.
    let dir = tempfile::tempdir().unwrap();
    let h = after_lossless_checkpoint(dir.path());
    let mut tail = Vec::new();
    put_call(&mut tail, 1, &[14, 2]);
    put_call(&mut tail, 0, &[2, 4]);
    let mut image = Image::with_header(&h, 100, Ending::Killed, &tail, &[]);
    let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
    image.as_version(6, IDENTITY_AT, &identity);
    image.write(dir.path(), 0);
    let t = recover_rank(dir.path(), 0).unwrap();
    let times = decode_exact(&t.times.exact).unwrap();
    assert_eq!(times.len(), 102, "a time for every call");
    assert_eq!(times[99], (990, 993));
    assert_eq!(&times[100..], [(1000, 1001), (1002, 1004)]);
    assert_eq!(t.meta.ns_per_tick, 1.0, "the checkpoint's clock");
}

/// Per-call times (version 7 on): the tail's calls have the times of the
/// tail's blocks, then the open blocks' first numbers, as many as the
/// blocks leave (the bytes after them, an older block's, are not read);
/// after a checkpoint, the checkpoint's times come first. The rank's
/// timing mode says which columns there are.
#[test]
fn every_calls_times_are_read_from_the_tails_and_the_open_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = header(1);
    h.timing = Timing::parse("lossy,lossless", None).unwrap();
    let mut tail = Vec::new();
    put_signature(&mut tail, &signature(0));
    put_call(&mut tail, 0, &[]);
    put_call(&mut tail, 0, &[]);
    let mut image = Image::with_header(&h, 0, Ending::Killed, &tail, &[]);
    let older = [0x85, 0x03, 0x7f, 0x7f];
    // Lossy timing's second pair, (0, 0), is in the empty table: a token.
    let lossy_tokens = [ESCAPE, PairTable::slot(0, 0)];
    image.set_open_block(0, &lossy_tokens, [&[5], &[7]], &older);
    image.set_open_block(1, &[ESCAPE; 2], [&[10, 6], &[4, 8]], &older);
    image.write(dir.path(), 1);
    assert_two_timed_calls(&recover_rank(dir.path(), 1).unwrap(), &h);

    // Version 7: no tokens, every call's numbers in the columns.
    let mut image = Image::with_header(&h, 0, Ending::Killed, &tail, &[]);
    image.set_open_block(0, &[], [&[5, 0], &[7, 0]], &older);
    image.set_open_block(1, &[], [&[10, 6], &[4, 8]], &older);
    image.as_version_7();
    image.write(dir.path(), 1);
    assert_two_timed_calls(&recover_rank(dir.path(), 1).unwrap(), &h);

    // A checkpoint of 100 timed calls; in the tail a block's calls and
    // three more, counted as repeated calls.
    let dir = tempfile::tempdir().unwrap();
    let h = after_lossless_checkpoint(dir.path());
    let mut block = ColumnWriter::default();
    let pair = |i: u64| (2 * (i % 5), 2 * (i % 300));
    for i in 0..u64::from(BLOCK_CALLS) {
        let (a, b) = pair(i);
        block.push(a, b);
    }
    let mut tail = Vec::new();
    put_repeat(&mut tail, 2, u64::from(BLOCK_CALLS));
    put_times_block(&mut tail, EXACT_BLOCK, block.last_block());
    put_repeat(&mut tail, 2, 3);
    let mut image = Image::with_header(&h, 100, Ending::Killed, &tail, &[]);
    image.set_open_block(0, &[ESCAPE; 3], [&[2, 4, 6], &[8, 10, 12]], &older);
    image.write(dir.path(), 0);
    let t = recover_rank(dir.path(), 0).unwrap();
    assert_eq!(t.meta.calls, 100 + u64::from(BLOCK_CALLS) + 3);
    let times = decode_columns(&t.times.exact).unwrap();
    assert_eq!(times.len() as u64, t.meta.calls, "a time for every call");
    assert_eq!(times[100..105], [0, 1, 2, 3, 4].map(pair));
    assert_eq!(
        times[times.len() - 4..],
        [pair(65535), (2, 8), (4, 10), (6, 12)]
    );
    assert_eq!(decode_exact(&t.times.exact).unwrap()[99], (990, 993));

    // Wrong: a block of lossy times in a rank that records none; more
    // calls in the blocks than in the tail; more calls in the tail than
    // the blocks and an open block hold; an open block whose numbers
    // are not varints. Each is refused, naming the journal.
    let refused = |image: &Image, says: &str| {
        let path = image.write(dir.path(), 0);
        let e = recover_rank(dir.path(), 0).unwrap_err();
        one_line_naming(&e, &path);
        assert!(e.to_string().contains(says), "{e}");
    };
    let mut lossy = tail.clone();
    put_times_block(&mut lossy, LOSSY_BLOCK, block.last_block());
    refused(
        &Image::with_header(&h, 100, Ending::Killed, &lossy, &[]),
        "journal record",
    );
    let mut few = Vec::new();
    put_repeat(&mut few, 2, 10);
    put_times_block(&mut few, EXACT_BLOCK, block.last_block());
    refused(
        &Image::with_header(&h, 100, Ending::Killed, &few, &[]),
        "blocks of lossless times hold 65536",
    );
    let mut many = Vec::new();
    put_repeat(&mut many, 2, u64::from(BLOCK_CALLS) + 1);
    refused(
        &Image::with_header(&h, 100, Ending::Killed, &many, &[]),
        "blocks of lossless times hold 0",
    );
    let mut damaged = Image::with_header(&h, 100, Ending::Killed, &tail, &[]);
    damaged.set_open_block(0, &[ESCAPE; 3], [&[], &[]], &[0xff; 11]);
    refused(&damaged, "the open block of lossless times");
}

/// A journal of version 1 (no timing in its header, no times in its
/// tail) is still read: the checkpoint's mode and times, the tail's calls
/// without times.
#[test]
fn a_version_1_journal_is_read_with_its_tail_untimed() {
    use mpigram_trace::timing::calls_in;
    let dir = tempfile::tempdir().unwrap();
    let base = lossless_checkpoint();
    write_checkpoint(dir.path(), &base);
    let mut tail = Vec::new();
    put_call(&mut tail, 1, &[]);
    put_call(&mut tail, 0, &[]);
    let mut image = Image::new(0, 100, Ending::Killed, &tail, &[]);
    // Version 1: the identity ends after the run id; the header's checksum
    // covers it.
    let mut identity = Vec::new();
    for s in ["node", "MPICH"] {
        identity.push(s.len() as u8);
        identity.extend_from_slice(s.as_bytes());
    }
    identity.push(0);
    image.as_version(1, 72, &identity);
    image.write(dir.path(), 0);
    let t = recover_rank(dir.path(), 0).unwrap();
    assert_eq!(t.meta.calls, 102);
    assert_eq!(t.meta.timing, base.meta.timing, "the checkpoint's mode");
    assert_eq!(calls_in(&t.times.exact).unwrap(), 100, "the tail untimed");
}

/// Repeated calls: a record of them in the tail, and a count in the
/// header after the published tail, each call the signature of the call a
/// period before it, reaching back into the checkpoint's calls.
#[test]
fn repeated_calls_are_read_back_from_their_record_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let base = checkpoint(0, PID); // calls 0 1 0 1 ... 0 1
    write_checkpoint(dir.path(), &base);
    let mut tail = Vec::new();
    // Three more of the checkpoint's loop (period 2): 0 1 0.
    put_repeat(&mut tail, 2, 3);
    put_signature(&mut tail, &signature(2));
    put_call(&mut tail, 2, &[]);
    put_call(&mut tail, 0, &[]);
    // 2 0 2 0 2, then counted in the header: 0 2 0 2.
    put_repeat(&mut tail, 2, 5);
    let mut image = Image::new(0, 100, Ending::Killed, &tail, &[]);
    image.count_repeated(2, 4, tail.len());
    image.write(dir.path(), 0);
    let t = recover_rank(dir.path(), 0).unwrap();
    let s = |c: u32| signature(c);
    let mut expected = calls(&base);
    expected.extend([0, 1, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2].map(s));
    assert_eq!(calls(&t), expected);
    assert_eq!(t.meta.calls, 114);
    let counts: Vec<u64> = t.stats.iter().map(|s| s.count).collect();
    assert_eq!(counts, [50 + 7, 50 + 1, 6]);

    // A finished count (its words name an earlier tail length) is in the
    // tail already: not counted again.
    image.count_repeated(2, 4, tail.len() - 3);
    image.write(dir.path(), 0);
    assert_eq!(recover_rank(dir.path(), 0).unwrap().meta.calls, 110);
}

/// Every way the repeated calls can be wrong is refused, naming the
/// journal: a count that does not match its repetition word (a flipped
/// bit in either), a period longer than the calls before it or than the
/// grammar's history, repeated calls in a journal with per-call times.
#[test]
fn damaged_repeated_calls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |image: &Image, says: &str| {
        let path = image.write(dir.path(), 1);
        let e = recover_rank(dir.path(), 1).unwrap_err();
        one_line_naming(&e, &path);
        assert!(e.to_string().contains(says), "{e}");
    };
    let tail = small_tail(); // 5 calls
    let mut image = Image::new(1, 0, Ending::Killed, &tail, &[]);
    image.count_repeated(5, 7, tail.len());
    image.write(dir.path(), 1);
    assert_eq!(recover_rank(dir.path(), 1).unwrap().meta.calls, 12);
    for (at, bit) in [
        (REPEATED_AT, 0),
        (REPEATED_AT, 40),
        (REPETITION_AT, 1),
        (REPETITION_AT, 33),
    ] {
        let mut flipped = Image::new(1, 0, Ending::Killed, &tail, &[]);
        flipped.count_repeated(5, 7, tail.len());
        flipped.bytes[at + bit / 8] ^= 1 << (bit % 8);
        refused(&flipped, "damaged header");
    }
    image.count_repeated(6, 1, tail.len());
    refused(&image, "repeating the call 6 before them, after 5 calls");
    let mut long = tail.clone();
    put_repeat(&mut long, (1 << 16) + 1, 1);
    refused(
        &Image::new(1, 0, Ending::Killed, &long, &[]),
        "journal record",
    );
    // With per-call times in the tail (version 6): counted calls whose
    // times are not there, an untimed record of repeated calls, counted
    // calls in a journal before version 6 (which had no place for their
    // times).
    let mut timed = header(1);
    timed.timing = Timing::parse("lossless", None).unwrap();
    let mut image = Image::with_header(&timed, 0, Ending::Killed, &[], &[]);
    let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
    image.count_repeated(1, 1, 0);
    let mut version_6 = Image::with_header(&timed, 0, Ending::Killed, &[], &[]);
    version_6.count_repeated(1, 1, 0);
    version_6.as_version(6, IDENTITY_AT, &identity);
    refused(&version_6, "the counted calls' times");
    let mut untimed = Vec::new();
    put_signature(&mut untimed, &signature(0));
    put_call(&mut untimed, 0, &[3, 4]);
    put_repeat(&mut untimed, 1, 2);
    let mut version_6 = Image::with_header(&timed, 0, Ending::Killed, &untimed, &[]);
    version_6.as_version(6, IDENTITY_AT, &identity);
    refused(&version_6, "journal record");
    image.as_version(5, 96, &identity);
    refused(&image, "without their per-call times");
}

/// Repeated calls with per-call times (journal version 6): a record of
/// them in the tail, and calls counted after it, their times after the
/// published tail and the room left for their record's head. Only the
/// counted calls' times are read: a rank killed between storing a call's
/// times and counting it leaves them unread.
#[test]
fn timed_repeated_calls_are_read_back_with_their_times() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = header(1);
    h.timing = Timing::parse("lossy,lossless", None).unwrap();
    let mut tail = Vec::new();
    put_signature(&mut tail, &signature(0));
    put_signature(&mut tail, &signature(1));
    put_call(&mut tail, 0, &[1, 2, 2, 4]);
    put_call(&mut tail, 1, &[1, 3, 2, 6]);
    // 0 1 0 1, repeating the call 2 before each.
    put_timed_repeat(
        &mut tail,
        2,
        4,
        &[1, 2, 2, 4, 1, 3, 2, 6, 1, 2, 200, 4, 1, 3, 2, 6],
    );
    put_call(&mut tail, 1, &[1, 3, 2, 6]);
    // Counted after the tail: 1 1 (period 1), then the times of a third
    // call, written (and under the counted times' word) but not counted.
    let mut times: Vec<u8> = [5, 3, 10, 6, 1, 3, 100, 6].to_vec();
    times.extend([130, 1, 3, 2, 6]); // 130 (two bytes), 3, 2, 6
    let mut unpublished = vec![0; TIMED_REPEAT_HEAD];
    unpublished.extend(&times);
    let mut image = Image::with_header(&h, 0, Ending::Killed, &tail, &unpublished);
    image.count_repeated(1, 2, tail.len());
    let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
    image.as_version(6, IDENTITY_AT, &identity);
    let set_word = |image: &mut Image, len: u32, crc: u32| {
        image.set_word(COUNTED_TIMES_AT, counted_times_word(len, crc));
    };
    let crc_of = |n: usize| tail_checksum(EMPTY_TAIL, &times[..n]);
    set_word(&mut image, 13, crc_of(13));
    image.write(dir.path(), 1);
    let t = recover_rank(dir.path(), 1).unwrap();
    let s = |c: u32| signature(c);
    let expected: Vec<Vec<u8>> = [0, 1, 0, 1, 0, 1, 1, 1, 1].map(s).to_vec();
    assert_eq!(calls(&t), expected);
    let lossy = decode_columns(&t.times.lossy).unwrap();
    assert_eq!(
        lossy,
        [
            (1, 2),
            (1, 3),
            (1, 2),
            (1, 3),
            (1, 2),
            (1, 3),
            (1, 3),
            (5, 3),
            (1, 3)
        ]
    );
    let exact = decode_columns(&t.times.exact).unwrap();
    assert_eq!(exact.len(), 9, "a time for every call, and no more");
    assert_eq!(exact[4], (200, 4));
    assert_eq!(&exact[7..], [(10, 6), (100, 6)]);
    assert_eq!(decode_exact(&t.times.exact).unwrap().len(), 9);
    // Killed as the run ended: its record's head written into the room
    // left for it, the tail not yet published. The same calls.
    let room = image.published;
    image.bytes[room..room + TIMED_REPEAT_HEAD].copy_from_slice(&timed_repeat_head(1, 2));
    image.write(dir.path(), 1);
    assert_eq!(recover_rank(dir.path(), 1).unwrap(), t);

    // Every way the counted times can be wrong is refused, naming the
    // journal: more bytes than the file holds, a damaged byte, fewer bytes
    // than the counted calls' times.
    let refused = |image: &Image, says: &str| {
        let path = image.write(dir.path(), 1);
        let e = recover_rank(dir.path(), 1).unwrap_err();
        one_line_naming(&e, &path);
        assert!(e.to_string().contains(says), "{e}");
    };
    set_word(&mut image, 1 << 20, crc_of(13));
    refused(&image, "truncated");
    set_word(&mut image, 13, crc_of(13));
    let times_at = image.published + TIMED_REPEAT_HEAD;
    image.bytes[times_at + 2] ^= 4;
    refused(&image, "damaged (checksum)");
    image.bytes[times_at + 2] ^= 4;
    set_word(&mut image, 5, crc_of(5));
    refused(&image, "the counted calls' times");
}

/// A rank killed as it emptied its tail after a checkpoint, with calls
/// counted since an empty tail: the checkpoint holds them, and is read
/// alone.
#[test]
fn repeated_calls_of_a_tail_being_emptied_are_the_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let base = checkpoint(0, PID); // 100 calls
    write_checkpoint(dir.path(), &base);
    // The old tail was the 4 repeated calls after a checkpoint of 96.
    let mut image = Image::new(0, 96, Ending::Killed, &[], &[]);
    image.count_repeated(2, 4, 0);
    image.write(dir.path(), 0);
    assert_eq!(calls(&recover_rank(dir.path(), 0).unwrap()), calls(&base));
}

/// A journal of version 3 (no repeated calls: the identity at byte 80) is
/// still read.
#[test]
fn a_version_3_journal_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut image = Image::new(1, 0, Ending::Killed, &small_tail(), &[]);
    let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
    image.as_version(3, 80, &identity);
    image.write(dir.path(), 1);
    let t = recover_rank(dir.path(), 1).unwrap();
    assert_eq!(t.meta.calls, 5);
    assert_eq!((t.meta.host.as_str(), t.meta.ns_per_tick), ("node", 0.5));
}

/// A journal of version 4 (its tail's checksum `hash`, not CRC-32C) is
/// still read, and a damaged byte of its tail refused.
#[test]
fn a_version_4_journal_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut image = Image::new(1, 0, Ending::Killed, &small_tail(), &[]);
    let identity = image.bytes[IDENTITY_AT..image.identity_end].to_vec();
    image.as_version(4, 96, &identity);
    image.write(dir.path(), 1);
    assert_eq!(recover_rank(dir.path(), 1).unwrap().meta.calls, 5);
    // The same tail under the version 5 checksum is refused as version 4.
    let mut crc = Image::new(1, 0, Ending::Killed, &small_tail(), &[]);
    crc.as_version(5, 96, &identity);
    crc.bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
    let checksum = hash(hash(HASH_SEED, &crc.bytes[..44]), &identity);
    crc.bytes[44..48].copy_from_slice(&checksum.to_le_bytes());
    let path = crc.write(dir.path(), 1);
    let e = recover_rank(dir.path(), 1).unwrap_err();
    one_line_naming(&e, &path);
    assert!(e.to_string().contains("damaged (checksum)"), "{e}");
    image.bytes[image.tail_at] ^= 0x10;
    image.write(dir.path(), 1);
    assert!(recover_rank(dir.path(), 1).is_err(), "a damaged tail read");
}
