//! One rank's trace file: what the tracer writes when a rank cannot take
//! part in the merge at MPI_Finalize, and what the merge starts from.

use crate::{
    Error, FILE_KIND_RANK, Gaps, RANK_FILE_SUFFIX, RankMeta, Timing, rank_file_name,
    rank_in_file_name, section,
};
use mpigram_format::{Codec, NewSection, TraceFile, flags, write_file};
use mpigram_grammar::{Grammar, Symbol};
use mpigram_mpispec::FUNCS;
use mpigram_varint::{ByteReader, DecodeError, DecodeErrorKind, PutVarint, unzigzag};
use std::path::{Path, PathBuf};

/// Aggregated timing of one call signature on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    /// Calls timed.
    pub count: u64,
    /// Time in the calls.
    pub total_ns: u64,
    /// Shortest and longest call.
    pub min_ns: u64,
    pub max_ns: u64,
    /// Time before the calls: from the end of the rank's previous call to
    /// the start of each, summed (the computation that precedes them).
    pub gap_ns: u64,
}

impl CallStats {
    /// Mean time in a call, in nanoseconds (0 without calls).
    pub fn mean_ns(&self) -> f64 {
        self.total_ns as f64 / self.count.max(1) as f64
    }

    /// Mean gap before a call (the computation before it), in nanoseconds.
    pub fn mean_gap_ns(&self) -> f64 {
        self.gap_ns as f64 / self.count.max(1) as f64
    }
}

/// The caller's place in a user communicator, from the call during which
/// the tracer learnt it: relative ranks in that communicator are decoded
/// against `rank`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommEntry {
    /// Index of the call (in the rank's stream).
    pub seq: u64,
    /// The communicator's symbolic (user) id.
    pub comm: u64,
    pub rank: u32,
    pub size: u32,
    /// Size of the remote group of an inter-communicator, else 0.
    pub remote_size: u32,
    pub inter: bool,
    /// MPI_COMM_WORLD rank of the first member of the caller's group
    /// ([`NO_RANK`] if unknown or not in the world).
    pub leader: u32,
    /// Which creation made the communicator: equal on every member (of
    /// both groups of an inter-communicator) and different for every
    /// creation; 0 if its members did not agree on it (MPI_Comm_spawn,
    /// connect/accept, or communicators the tracer first saw in use). With
    /// `leader`, it tells which ranks are the communicator's members.
    pub instance: u64,
}

/// A world rank that is not known (see [`CommEntry::leader`]).
pub const NO_RANK: u32 = u32::MAX;

impl CommEntry {
    /// Appends the entry as the COMMS section (and a crash journal) hold it.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.seq);
        out.put_u64(self.comm);
        out.put_u32(self.rank);
        out.put_u32(self.size);
        out.put_u32(self.remote_size);
        out.put_u32(u32::from(self.inter));
        out.put_u32(self.leader);
        out.put_u64(self.instance);
    }

    pub(crate) fn decode(r: &mut ByteReader<'_>) -> Result<CommEntry, mpigram_varint::DecodeError> {
        Ok(CommEntry {
            seq: r.u64()?,
            comm: r.u64()?,
            rank: r.u32()?,
            size: r.u32()?,
            remote_size: r.u32()?,
            inter: r.u32()? != 0,
            leader: r.u32()?,
            instance: r.u64()?,
        })
    }
}

/// Everything one rank recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct RankTrace {
    pub meta: RankMeta,
    /// Call-signature table: terminal `t` of the grammar is `signatures[t]`.
    pub signatures: Vec<Vec<u8>>,
    /// The rank's calls as a grammar over signature terminals; its one
    /// stream is the rank.
    pub grammar: Grammar,
    /// Aggregated timing per terminal.
    pub stats: Vec<CallStats>,
    /// Where the computation before its calls was (empty where not
    /// recorded).
    pub gaps: Gaps,
    /// The rank's place in its communicators, in call order.
    pub comms: Vec<CommEntry>,
    /// Per-call timing, when recorded (`meta.timing` says which).
    pub times: CallTimes,
}

/// Per-call timing of one rank, as stored (see [`crate::timing`]): the
/// blocks of lossy codes and of exact times, each empty if not recorded.
/// Each covers the first calls of the rank: all of them, unless the rank
/// was rebuilt from a crash journal of version 1, which kept no times
/// after its last checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallTimes {
    pub lossy: Vec<u8>,
    pub exact: Vec<u8>,
}

impl CallTimes {
    /// Appends the blocks of `later`, the times of the calls after these.
    pub fn append(&mut self, later: &CallTimes) {
        self.lossy.extend_from_slice(&later.lossy);
        self.exact.extend_from_slice(&later.exact);
    }
}

impl RankTrace {
    /// Writes `dir/rank<N>.mgr` atomically; a rank that did not end with
    /// MPI_Finalize is marked partial.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, mpigram_format::Error> {
        let path = dir.join(rank_file_name(self.meta.rank));
        self.write_to(&path)?;
        Ok(path)
    }

    /// Writes the rank file to `path` atomically (a crash journal's
    /// checkpoint is a rank file under another name).
    pub fn write_to(&self, path: &Path) -> Result<(), mpigram_format::Error> {
        self.write_with_signatures(&self.signatures, path)
    }

    /// [`write_to`](RankTrace::write_to), with `signatures` as the table in
    /// place of `self.signatures` (which is not read): for a writer that
    /// keeps its table packed (the tracer), without a copy of each.
    pub fn write_with_signatures<S: AsRef<[u8]>>(
        &self,
        signatures: &[S],
        path: &Path,
    ) -> Result<(), mpigram_format::Error> {
        let meta = self.meta.encode();
        let funcs = encode_funcs(signatures);
        let table = encode_signature_deltas(signatures);
        let grammar = self.grammar.encode();
        let stats = encode_stats_columns(&self.stats);
        let mut comms = Vec::new();
        encode_comms(&mut comms, &self.comms);
        let mut sections = vec![
            NewSection::from((section::META, 0, meta.as_slice(), Codec::Raw)),
            (section::FUNCS, 0, funcs.as_slice(), Codec::Raw).into(),
            (section::SIGNATURE_DELTAS, 0, table.as_slice(), Codec::Zstd).into(),
            (section::GRAMMAR, 0, grammar.as_slice(), Codec::Zstd).into(),
            (section::STATS_COLUMNS, 0, stats.as_slice(), Codec::Zstd).into(),
            (section::COMMS, 0, comms.as_slice(), Codec::Zstd).into(),
        ];
        let mut gaps = Vec::new();
        let kept = self.gaps.trimmed(|t| {
            let s = self.stats.get(t as usize)?;
            Some((s.count, s.gap_ns))
        });
        if !kept.is_empty() {
            kept.encode(&mut gaps);
            sections.push((section::GAPS, 0, gaps.as_slice(), Codec::Zstd).into());
        }
        let timing = &self.meta.timing;
        for (recorded, kind, bytes) in [
            (
                timing.lossy.is_some(),
                section::LOSSY_TIMES,
                &self.times.lossy,
            ),
            (timing.lossless, section::EXACT_TIMES, &self.times.exact),
        ] {
            if recorded {
                sections.push((kind, 0, bytes.as_slice(), Codec::Raw).into());
            }
        }
        let file_flags = if self.meta.is_complete() {
            0
        } else {
            flags::PARTIAL
        };
        write_file(path, FILE_KIND_RANK, file_flags, &sections)
    }

    /// Reads and checks one rank's file.
    pub fn read(path: &Path) -> Result<RankTrace, Error> {
        let file = TraceFile::open(path)?;
        let name = checked_name(&file, FILE_KIND_RANK, "a rank trace")?;
        let bad = |section| bad_section(&name, section);
        let meta =
            RankMeta::decode(&file.section(section::META, 0)?).map_err(bad(section::META))?;
        // Files written before 2026-11-29 hold the plain table (SIGNATURES).
        let table = held_kind(&file, 0, section::SIGNATURE_DELTAS, section::SIGNATURES);
        let bytes = file.section(table, 0)?;
        let signatures = match table {
            section::SIGNATURES => decode_signatures(&bytes),
            _ => decode_signature_deltas(&bytes),
        }
        .map_err(bad(table))?;
        let funcs = file.section(section::FUNCS, 0)?;
        let mut r = ByteReader::new(&funcs);
        let checksum = r.u32().map_err(bad(section::FUNCS))?;
        r.finish().map_err(bad(section::FUNCS))?;
        check_funcs(checksum, &signatures).map_err(|m| Error::payload(&name, section::FUNCS, m))?;
        check_signatures(&signatures).map_err(|m| Error::payload(&name, table, m))?;
        // One stream, the rank's: more is refused before it takes memory.
        let grammar = Grammar::decode_streams(&file.section(section::GRAMMAR, 0)?, 1)
            .map_err(|e| Error::payload(&name, section::GRAMMAR, e))?;
        // Files written before 2026-11-30 hold rows (CALL_STATS).
        let kind = held_kind(&file, 0, section::STATS_COLUMNS, section::CALL_STATS);
        let bytes = file.section(kind, 0)?;
        let stats = match kind {
            section::CALL_STATS => decode_stats_rows(&bytes),
            _ => decode_stats_columns(&bytes),
        }
        .map_err(bad(kind))?;
        let bytes = file.section(section::COMMS, 0)?;
        let mut r = ByteReader::new(&bytes);
        let comms = decode_comms(&mut r).map_err(bad(section::COMMS))?;
        r.finish().map_err(bad(section::COMMS))?;
        let times = read_times(&file, &meta.timing)?;
        // Absent where the rank recorded none (and in older files).
        let gaps = match file.find(section::GAPS, 0) {
            Some(_) => {
                let bytes = file.section(section::GAPS, 0)?;
                let mut r = ByteReader::new(&bytes);
                let gaps = Gaps::decode(&mut r).map_err(bad(section::GAPS))?;
                r.finish().map_err(bad(section::GAPS))?;
                gaps
            }
            None => Gaps::default(),
        };
        let trace = RankTrace {
            meta,
            signatures,
            grammar,
            stats,
            gaps,
            comms,
            times,
        };
        trace
            .check()
            .map_err(|m| Error::payload(&name, section::GRAMMAR, m))?;
        Ok(trace)
    }

    /// The parts must agree: one stream (this rank), terminals within the
    /// signature table, one timing entry per signature.
    pub(crate) fn check(&self) -> Result<(), String> {
        let streams = self.grammar.streams();
        if streams.len() != 1 || streams[0].0 != self.meta.rank {
            return Err(format!("expected one stream for rank {}", self.meta.rank));
        }
        let n = self.signatures.len();
        check_terminals(&self.grammar, n)?;
        if self.stats.len() != n {
            return Err(format!(
                "{} timing entries for {n} signatures",
                self.stats.len()
            ));
        }
        self.gaps.check(n)
    }

    /// The rank's calls, as signature bytes, in order.
    pub fn calls(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.grammar
            .expand(self.meta.rank)
            .into_iter()
            .flatten()
            .map(|t| self.signatures[t as usize].as_slice())
    }
}

/// Reads the per-call timing sections that `timing` says the file has
/// (index 0).
pub(crate) fn read_times(file: &TraceFile, timing: &Timing) -> Result<CallTimes, Error> {
    let mut times = CallTimes::default();
    let read = |kind| {
        let bytes = file.section(kind, 0)?.into_owned();
        check_times(file.name(), kind, &bytes)?;
        Ok::<_, Error>(bytes)
    };
    if timing.lossy.is_some() {
        times.lossy = read(section::LOSSY_TIMES)?;
    }
    if timing.lossless {
        times.exact = read(section::EXACT_TIMES)?;
    }
    Ok(times)
}

/// Stored per-call times (of section `kind` of file `name`) must at least
/// be whole blocks: their headers are read now, so that a damaged section
/// is named when the file is opened (the blocks are decompressed later,
/// as the tools need them).
pub(crate) fn check_times(name: &str, kind: u32, stored: &[u8]) -> Result<(), Error> {
    crate::timing::calls_in(stored)
        .map(drop)
        .map_err(|e| Error::payload(name, kind, e))
}

/// The file's name, if it is of kind `kind` (`what` names the kind in the
/// error).
pub(crate) fn checked_name(file: &TraceFile, kind: u32, what: &str) -> Result<String, Error> {
    let name = file.name().to_owned();
    if file.kind() != kind {
        let message = format!("file kind {} is not {what}", file.kind());
        return Err(Error::header(&name, message));
    }
    Ok(name)
}

/// The kind of section `index` of `file` holds: `newer` if it has it,
/// else `older` (what files written before `newer` hold in its place).
pub(crate) fn held_kind(file: &TraceFile, index: u32, newer: u32, older: u32) -> u32 {
    match file.find(newer, index) {
        Some(_) => newer,
        None => older,
    }
}

/// Turns a payload decoding error of `section` into one naming the file.
pub(crate) fn bad_section(name: &str, kind: u32) -> impl Fn(DecodeError) -> Error {
    let name = name.to_owned();
    move |e| Error::payload(&name, kind, e)
}

/// Every terminal of `grammar` names one of the `n` signatures.
pub(crate) fn check_terminals(grammar: &Grammar, n: usize) -> Result<(), String> {
    for body in grammar.rules() {
        if let Some(run) = body
            .iter()
            .find(|r| matches!(r.symbol, Symbol::Terminal(t) if t as usize >= n))
        {
            return Err(format!(
                "call {:?} is not in the signature table ({n} entries)",
                run.symbol
            ));
        }
    }
    Ok(())
}

/// The FUNCS payload: a CRC-32 of the id and name of every function the
/// signatures use (and of the revision of its arguments' encoding, where
/// it changed), so that a reader built with another function table
/// notices instead of misreading.
pub(crate) fn encode_funcs<S: AsRef<[u8]>>(signatures: &[S]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32(funcs_checksum(signatures));
    out
}

fn funcs_checksum<S: AsRef<[u8]>>(signatures: &[S]) -> u32 {
    // Each function once, with no sort of a table's every signature.
    let mut seen = [0u64; 64];
    let mut ids: Vec<u64> = signatures
        .iter()
        .filter_map(|s| ByteReader::new(s.as_ref()).u64().ok())
        .filter(|&id| {
            let Some(word) = seen.get_mut(id as usize / 64) else {
                return true;
            };
            let bit = 1 << (id % 64);
            let new = *word & bit == 0;
            *word |= bit;
            new
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut h = crc32fast::Hasher::new();
    for id in ids {
        h.update(&id.to_le_bytes());
        let name = FUNCS.get(id as usize).map_or("", |f| f.name);
        h.update(name.as_bytes());
        h.update(encoding_revision(name).as_bytes());
        h.update(&[0]);
    }
    h.finalize()
}

/// What distinguishes a function's arguments' encoding from the first
/// one's, in the FUNCS checksum: a trace that recorded the function before
/// its encoding changed is refused, not misread. MPI_Comm_split's colour
/// and key and MPI_Comm_split_type's key record the caller's own rank as
/// such since format 2.0 (`Enc::OwnRank`); since the compact summary (rank timing 3) only where it is the
/// caller's rank on every rank, which reads alike and needs no revision.
fn encoding_revision(name: &str) -> &'static str {
    match name {
        "MPI_Comm_split" | "MPI_Comm_split_type" => "/own-rank",
        _ => "",
    }
}

/// Whether `checksum` (FUNCS) is that of these signatures' functions here.
pub(crate) fn check_funcs(checksum: u32, signatures: &[Vec<u8>]) -> Result<(), String> {
    if checksum != funcs_checksum(signatures) {
        return Err(
            "the MPI function numbers of this trace are not this mpigram's: written by another version"
                .into(),
        );
    }
    Ok(())
}

/// Every signature decodes (function, return code, arguments): a damaged
/// one is named with its file and section when the file is read, not by a
/// tool that meets it later.
pub(crate) fn check_signatures(signatures: &[Vec<u8>]) -> Result<(), String> {
    for (terminal, s) in signatures.iter().enumerate() {
        mpigram_mpispec::decode_signature(s).map_err(|e| format!("signature {terminal}: {e}"))?;
    }
    Ok(())
}

/// The call-signature table as SIGNATURE_DELTAS stores it: the count, then
/// per signature a varint `v` and bytes. `v = 0`: the signature is as long
/// as the one before it, and its bytes are XORed with that one's. Else its
/// length is `v - 1`, and its bytes follow as they are. The new signatures
/// of a program differ from the one before in a few arguments (a tag, a
/// count, a displacement), so the table becomes runs of zeros, which zstd
/// takes many times faster than the signatures themselves (a part's
/// 125,000 MPI_Sendrecv signatures, 3.7 MB: 9 ms of zstd as they are,
/// under 1 ms as deltas). The output of a decode is never longer than its
/// input: an XORed signature's bytes are all in it.
pub fn encode_signature_deltas<S: AsRef<[u8]>>(signatures: &[S]) -> Vec<u8> {
    let bytes = signatures.iter().map(|s| s.as_ref().len() + 2);
    let mut table = Vec::with_capacity(bytes.sum::<usize>() + 10);
    table.put_u64(signatures.len() as u64);
    let mut previous: &[u8] = &[];
    for s in signatures {
        let s = s.as_ref();
        if !previous.is_empty() && s.len() == previous.len() {
            table.put_u64(0);
            // Copied, then XORed in place: a loop over two slices of one
            // length, which the compiler vectorises (an iterator pushed
            // byte by byte took 44 instructions more for a signature of
            // about 30 bytes).
            let at = table.len();
            table.extend_from_slice(s);
            for (byte, before) in table[at..].iter_mut().zip(previous) {
                *byte ^= before;
            }
        } else {
            table.put_u64(s.len() as u64 + 1);
            table.extend_from_slice(s);
        }
        previous = s;
    }
    table
}

/// Reads what [`encode_signature_deltas`] wrote.
pub fn decode_signature_deltas(bytes: &[u8]) -> Result<Vec<Vec<u8>>, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let count = r.count()?;
    let mut signatures: Vec<Vec<u8>> = Vec::with_capacity(count);
    for _ in 0..count {
        let at = r.position();
        let signature = match (r.u64()?, signatures.last()) {
            (0, Some(previous)) if !previous.is_empty() => {
                let xor = r.bytes(previous.len())?;
                xor.iter().zip(previous).map(|(a, b)| a ^ b).collect()
            }
            (0, _) => {
                return Err(DecodeError {
                    offset: at,
                    kind: DecodeErrorKind::OutOfRange {
                        value: 0,
                        target: "a signature's length (no signature before it)",
                    },
                });
            }
            (v, _) => {
                let len = usize::try_from(v - 1).unwrap_or(usize::MAX);
                r.bytes(len)?.to_vec()
            }
        };
        signatures.push(signature);
    }
    r.finish()?;
    Ok(signatures)
}

/// The table as SIGNATURES stores it (files before 2026-11-29): the count,
/// then each signature as a blob.
pub(crate) fn decode_signatures(bytes: &[u8]) -> Result<Vec<Vec<u8>>, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let signatures = read_signatures(&mut r)?;
    r.finish()?;
    Ok(signatures)
}

/// Reads a plain table (the count, then each signature as a blob) where
/// `r` is: SIGNATURES, and the RUN section of whole-run files (all of
/// them before 2026-11-30; since, those of fewer than 256 signatures).
pub(crate) fn read_signatures(r: &mut ByteReader<'_>) -> Result<Vec<Vec<u8>>, DecodeError> {
    (0..r.count()?)
        .map(|_| r.blob().map(<[u8]>::to_vec))
        .collect()
}

/// A rank file's aggregated timing as STATS_COLUMNS stores it: the count
/// `n`, then `n` varints each of the counts, the minimums, the spreads
/// (maximum less minimum) and the excesses (total less count times
/// minimum), both zigzagged differences modulo 2^64, and the gaps. A
/// signature called once (every one of a program that never repeats)
/// has a spread and an excess of 0, where rows repeated its duration
/// three times: zstd takes such a part's statistics to 114 KB where it
/// took rows to 156 (125,000 MPI_Sendrecv signatures). The differences
/// wrap, so any numbers come back exactly (a rank recovered from its
/// journal counts calls whose durations it does not have).
pub fn encode_stats_columns(stats: &[CallStats]) -> Vec<u8> {
    let mut out = Vec::with_capacity(stats.len() * 8 + 10);
    out.put_u64(stats.len() as u64);
    put_stats_columns(&mut out, stats);
    out
}

/// The columns of [`encode_stats_columns`], without their count (a
/// whole-run file's STATS_COLUMNS holds them per rank, after its
/// terminals).
pub(crate) fn put_stats_columns(out: &mut Vec<u8>, stats: &[CallStats]) {
    let spread = |s: &CallStats| s.max_ns.wrapping_sub(s.min_ns) as i64;
    let excess = |s: &CallStats| s.total_ns.wrapping_sub(s.count.wrapping_mul(s.min_ns)) as i64;
    stats.iter().for_each(|s| out.put_u64(s.count));
    stats.iter().for_each(|s| out.put_u64(s.min_ns));
    stats.iter().for_each(|s| out.put_i64(spread(s)));
    stats.iter().for_each(|s| out.put_i64(excess(s)));
    stats.iter().for_each(|s| out.put_u64(s.gap_ns));
}

/// Reads what [`encode_stats_columns`] wrote.
pub fn decode_stats_columns(bytes: &[u8]) -> Result<Vec<CallStats>, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let n = r.count()?;
    let stats = read_stats_columns(&mut r, n)?;
    r.finish()?;
    Ok(stats)
}

/// Reads the columns [`put_stats_columns`] wrote of `n` signatures.
pub(crate) fn read_stats_columns(
    r: &mut ByteReader<'_>,
    n: usize,
) -> Result<Vec<CallStats>, DecodeError> {
    // A count only promises a byte per element; a signature's numbers are
    // 5 varints read into 40 bytes, so a forged count must not size them.
    let column = |r: &mut ByteReader<'_>| -> Result<Vec<u64>, DecodeError> {
        let mut values = Vec::with_capacity(n.min(r.remaining()));
        for _ in 0..n {
            values.push(r.u64()?);
        }
        Ok(values)
    };
    let (counts, mins) = (column(r)?, column(r)?);
    let (spreads, excesses) = (column(r)?, column(r)?);
    let gaps = column(r)?;
    let stats = (0..n).map(|i| {
        let (count, min_ns) = (counts[i], mins[i]);
        CallStats {
            count,
            total_ns: count
                .wrapping_mul(min_ns)
                .wrapping_add(unzigzag(excesses[i]) as u64),
            min_ns,
            max_ns: min_ns.wrapping_add(unzigzag(spreads[i]) as u64),
            gap_ns: gaps[i],
        }
    });
    Ok(stats.collect())
}

/// Aggregated timing as CALL_STATS stores it in rank files written before
/// 2026-11-30: the count, then each signature's numbers
/// ([`decode_stats`]).
fn decode_stats_rows(bytes: &[u8]) -> Result<Vec<CallStats>, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let n = r.count()?;
    // As in `decode_stats_columns`.
    let mut stats = Vec::with_capacity(n.min(r.remaining() / 5));
    for _ in 0..n {
        stats.push(decode_stats(&mut r)?);
    }
    r.finish()?;
    Ok(stats)
}

/// One signature's aggregated timing as a row of CALL_STATS (files
/// written before 2026-11-30): count, total, minimum, maximum, gap.
pub(crate) fn decode_stats(r: &mut ByteReader<'_>) -> Result<CallStats, DecodeError> {
    Ok(CallStats {
        count: r.u64()?,
        total_ns: r.u64()?,
        min_ns: r.u64()?,
        max_ns: r.u64()?,
        gap_ns: r.u64()?,
    })
}

/// A communicator log: its length, then each entry.
pub(crate) fn encode_comms(out: &mut Vec<u8>, comms: &[CommEntry]) {
    out.put_u64(comms.len() as u64);
    comms.iter().for_each(|c| c.encode(out));
}

pub(crate) fn decode_comms(r: &mut ByteReader<'_>) -> Result<Vec<CommEntry>, DecodeError> {
    let n = r.count()?;
    let mut comms = Vec::with_capacity(n.min(r.remaining() / 6)); // 6 varints each
    for _ in 0..n {
        comms.push(CommEntry::decode(r)?);
    }
    Ok(comms)
}

/// Whether `name` is a per-rank file's name, `rank<N>.mgr`.
pub(crate) fn is_rank_file_name(name: &str) -> bool {
    rank_of_file_name(name).is_some()
}

/// The rank of a per-rank file's name, `rank<N>.mgr`.
pub(crate) fn rank_of_file_name(name: &str) -> Option<u32> {
    rank_in_file_name(name, RANK_FILE_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_mpispec::func;

    /// The checksum of the first encoding: ids (ascending) and names only.
    fn first_checksum(ids: &[u64]) -> u32 {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        let mut h = crc32fast::Hasher::new();
        for id in ids {
            h.update(&id.to_le_bytes());
            h.update(FUNCS[id as usize].name.as_bytes());
            h.update(&[0]);
        }
        h.finalize()
    }

    /// A trace that recorded MPI_Comm_split before its colour and key could
    /// be "the caller's rank" is refused; one without it reads as before.
    #[test]
    fn the_first_encoding_of_comm_split_is_refused_not_misread() {
        let signature = |id: u16| {
            let mut s = Vec::new();
            s.put_u64(u64::from(id));
            s
        };
        let (barrier, split) = (func::MPI_Barrier, func::MPI_Comm_split);
        let old = [signature(barrier)];
        assert!(check_funcs(first_checksum(&[barrier.into()]), &old).is_ok());
        let old = [signature(barrier), signature(split)];
        let ids = [u64::from(barrier), u64::from(split)];
        assert!(check_funcs(first_checksum(&ids), &old).is_err());
        assert!(check_funcs(funcs_checksum(&old), &old).is_ok());
    }
}

#[cfg(test)]
mod signature_deltas {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_signature_as_long_as_the_one_before_is_stored_as_their_xor() {
        let table = [
            &[1u8, 2, 3][..],
            &[1, 2, 4],
            &[9],
            &[1, 2, 3, 4],
            &[1, 2, 3, 5],
        ];
        let bytes = encode_signature_deltas(&table);
        assert_eq!(
            bytes,
            [
                5, 4, 1, 2, 3, 0, 0, 0, 7, 2, 9, 5, 1, 2, 3, 4, 0, 0, 0, 0, 1
            ]
        );
        assert_eq!(decode_signature_deltas(&bytes).unwrap(), table);
    }

    #[test]
    fn a_delta_with_no_signature_before_it_is_refused() {
        let e = decode_signature_deltas(&[1, 0, 5]).unwrap_err();
        assert_eq!(e.offset, 1);
        assert!(e.to_string().contains("no signature before it"), "{e}");
        assert!(decode_signature_deltas(&[2, 3, 1, 2, 0, 7]).is_err());
    }

    proptest! {
        #[test]
        fn tables_read_back(table in prop::collection::vec(
            prop::collection::vec(any::<u8>(), 1..6), 0..40)) {
            let bytes = encode_signature_deltas(&table);
            prop_assert_eq!(decode_signature_deltas(&bytes).unwrap(), table);
        }
    }
}

#[cfg(test)]
mod stats_columns {
    use super::*;
    use proptest::prelude::*;

    fn stats(count: u64, total_ns: u64, min_ns: u64, max_ns: u64, gap_ns: u64) -> CallStats {
        CallStats {
            count,
            total_ns,
            min_ns,
            max_ns,
            gap_ns,
        }
    }

    /// A signature called once has a spread and an excess of 0; one
    /// called three times those of its calls.
    #[test]
    fn a_signature_called_once_has_nothing_beyond_its_minimum() {
        let table = [stats(1, 200, 200, 200, 7), stats(3, 70, 20, 30, 5)];
        let bytes = encode_stats_columns(&table);
        // n; counts; minimums; spreads 0 and 10 (20 zigzagged); excesses
        // 0 and 10; gaps.
        assert_eq!(bytes, [2, 1, 3, 200, 1, 20, 0, 20, 0, 20, 7, 5]);
        assert_eq!(decode_stats_columns(&bytes).unwrap(), table);
    }

    #[test]
    fn a_table_cut_short_or_too_long_is_refused() {
        let bytes = encode_stats_columns(&[stats(1, 2, 2, 2, 1)]);
        assert!(decode_stats_columns(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode_stats_columns(&[bytes.as_slice(), &[0]].concat()).is_err());
        assert!(decode_stats_columns(&[0xff, 0xff, 0xff, 0x0f]).is_err());
    }

    proptest! {
        /// Any numbers come back, the minimum above the maximum or the
        /// total below count times minimum included (a journal's calls
        /// are counted without their durations).
        #[test]
        fn tables_read_back(table in prop::collection::vec(
            (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>())
                .prop_map(|(c, t, lo, hi, g)| stats(c, t, lo, hi, g)), 0..40)) {
            let bytes = encode_stats_columns(&table);
            prop_assert_eq!(decode_stats_columns(&bytes).unwrap(), table);
        }
    }
}
