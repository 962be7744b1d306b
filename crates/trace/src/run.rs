//! The trace of a whole run: one call-signature table and one grammar for
//! all ranks, plus what is particular to each rank (its metadata, timing
//! and communicator log).
//!
//! At MPI_Finalize the ranks merge their traces pairwise in log2(P) rounds
//! ([`Trace::absorb`]): signature tables are united and the absorbed part's
//! terminals renumbered; grammars are united with an identity check
//! (identical grammars stored once) and shared rules; a final pass
//! ([`Trace::share`]) finds sequences repeated across ranks. The result is
//! one file, `trace.mgr` ([`FILE_KIND_RUN`]). Tools open a directory with
//! [`Trace::open`], which also absorbs per-rank files (ranks that did not
//! reach MPI_Finalize, or runs with the merge turned off).

use crate::rank::{decode_comms, decode_stats, encode_comms, encode_stats};
use crate::{CallStats, CommEntry, Error, RankMeta, RankTrace, section};
use mpigram_format::{Codec, NewSection, TraceFile, flags};
use mpigram_grammar::{Grammar, StreamId, Symbol, share_across_streams, union};
use mpigram_varint::{ByteReader, PutVarint};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// File kind of a whole-run trace file.
pub const FILE_KIND_RUN: u32 = 2;

/// File name of the whole-run trace in a trace directory.
pub const RUN_FILE_NAME: &str = "trace.mgr";

/// What is particular to one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPart {
    pub meta: RankMeta,
    /// Timing of each signature the rank called: (terminal, stats), by
    /// terminal.
    pub stats: Vec<(u32, CallStats)>,
    /// The rank's place in its communicators, in call order.
    pub comms: Vec<CommEntry>,
}

/// The trace of a run (or of the ranks merged so far).
#[derive(Clone)]
pub struct Trace {
    /// The directory it was read from (empty if built in memory).
    pub dir: PathBuf,
    /// Call-signature table: terminal `t` is `signatures[t]`.
    pub signatures: Vec<Vec<u8>>,
    /// Every rank's calls; stream `r` is rank `r`.
    pub grammar: Grammar,
    /// Ranks in rank order.
    pub ranks: Vec<RankPart>,
}

impl Trace {
    /// A one-rank trace.
    pub fn from_rank(rank: RankTrace) -> Trace {
        let stats = rank
            .stats
            .iter()
            .enumerate()
            .filter(|(_, s)| s.count > 0)
            .map(|(t, s)| (t as u32, *s))
            .collect();
        Trace {
            dir: PathBuf::new(),
            signatures: rank.signatures,
            grammar: rank.grammar,
            ranks: vec![RankPart {
                meta: rank.meta,
                stats,
                comms: rank.comms,
            }],
        }
    }

    /// Takes in `other`'s ranks (none of which may be here already): its
    /// signatures are added to the table, its terminals renumbered, its
    /// grammar united with this one (identical rank grammars stored once).
    pub fn absorb(&mut self, other: Trace) -> Result<(), String> {
        if let Some(r) = other
            .ranks
            .iter()
            .find(|r| self.rank(r.meta.rank).is_some())
        {
            return Err(format!("rank {} is in the trace twice", r.meta.rank));
        }
        let mut index: FxHashMap<&[u8], u32> = self
            .signatures
            .iter()
            .enumerate()
            .map(|(t, s)| (s.as_slice(), t as u32))
            .collect();
        let mut added = Vec::new();
        let renumber: Vec<u32> = other
            .signatures
            .iter()
            .map(|s| {
                *index.entry(s).or_insert_with(|| {
                    added.push(s.clone());
                    (self.signatures.len() + added.len() - 1) as u32
                })
            })
            .collect();
        drop(index);
        self.signatures.extend(added);
        let theirs = other
            .grammar
            .with_terminals(|t| renumber[t as usize])
            .map_err(|e| e.to_string())?;
        let ours = std::mem::replace(&mut self.grammar, Grammar::empty());
        self.grammar = union(&[ours, theirs]).map_err(|e| e.to_string())?;
        for mut part in other.ranks {
            for (t, _) in &mut part.stats {
                *t = renumber[*t as usize];
            }
            part.stats.sort_unstable_by_key(|&(t, _)| t);
            self.ranks.push(part);
        }
        self.ranks.sort_by_key(|r| r.meta.rank);
        Ok(())
    }

    /// Drops `rank`'s part, if it has one.
    fn remove_rank(&mut self, rank: u32) -> Result<(), String> {
        let Ok(i) = self.ranks.binary_search_by_key(&rank, |r| r.meta.rank) else {
            return Ok(());
        };
        self.ranks.remove(i);
        let grammar = std::mem::replace(&mut self.grammar, Grammar::empty());
        self.grammar = grammar
            .without_streams(|s| s == rank)
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The final pass of a merge: sequences repeated across ranks' start
    /// rules become shared rules.
    pub fn share(&mut self) -> Result<(), String> {
        let grammar = std::mem::replace(&mut self.grammar, Grammar::empty());
        self.grammar = share_across_streams(grammar).map_err(|e| e.to_string())?;
        Ok(())
    }

    pub fn rank(&self, rank: u32) -> Option<&RankPart> {
        self.ranks
            .binary_search_by_key(&rank, |r| r.meta.rank)
            .ok()
            .map(|i| &self.ranks[i])
    }

    /// A rank's calls, as signature bytes, in order.
    pub fn calls(&self, rank: u32) -> impl Iterator<Item = &[u8]> + '_ {
        self.grammar
            .expand(rank)
            .into_iter()
            .flatten()
            .map(|t| self.signatures[t as usize].as_slice())
    }

    /// Whether every rank ended with MPI_Finalize.
    pub fn is_complete(&self) -> bool {
        self.ranks.iter().all(|r| r.meta.ending.is_complete())
    }

    /// The trace as the bytes of a whole-run file.
    pub fn to_bytes(&self, codec: Codec) -> Result<Vec<u8>, mpigram_format::Error> {
        let sections = self.sections();
        let sections: Vec<NewSection<'_>> = sections
            .iter()
            .map(|(kind, data)| NewSection::from((*kind, 0, data.as_slice(), codec)))
            .collect();
        mpigram_format::to_bytes(FILE_KIND_RUN, self.file_flags(), &sections)
    }

    /// Writes `dir/trace.mgr` atomically.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, mpigram_format::Error> {
        let path = dir.join(RUN_FILE_NAME);
        let sections = self.sections();
        let sections: Vec<NewSection<'_>> = sections
            .iter()
            .map(|(kind, data)| NewSection::from((*kind, 0, data.as_slice(), Codec::Zstd)))
            .collect();
        mpigram_format::write_file(&path, FILE_KIND_RUN, self.file_flags(), &sections)?;
        Ok(path)
    }

    fn file_flags(&self) -> u32 {
        if self.is_complete() {
            0
        } else {
            flags::PARTIAL
        }
    }

    fn sections(&self) -> [(u32, Vec<u8>); 6] {
        let mut ranks = Vec::new();
        ranks.put_u64(self.ranks.len() as u64);
        for r in &self.ranks {
            ranks.put_blob(&r.meta.encode());
        }
        let mut signatures = Vec::new();
        signatures.put_u64(self.signatures.len() as u64);
        self.signatures.iter().for_each(|s| signatures.put_blob(s));
        let mut stats = Vec::new();
        let mut comms = Vec::new();
        for r in &self.ranks {
            let mut last = 0;
            stats.put_u64(r.stats.len() as u64);
            for &(t, s) in &r.stats {
                stats.put_u32(t - last);
                last = t;
                encode_stats(&mut stats, &s);
            }
            encode_comms(&mut comms, &r.comms);
        }
        [
            (section::META, ranks),
            (section::FUNCS, crate::rank::encode_funcs(&self.signatures)),
            (section::SIGNATURES, signatures),
            (section::GRAMMAR, self.grammar.encode()),
            (section::CALL_STATS, stats),
            (section::COMMS, comms),
        ]
    }

    /// Reads a whole-run file from its bytes; `name` names it in errors.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Trace, Error> {
        Trace::read_file(TraceFile::from_bytes(name, bytes)?)
    }

    fn read_file(file: TraceFile) -> Result<Trace, Error> {
        let name = crate::rank::checked_name(&file, FILE_KIND_RUN, "a whole-run trace")?;
        let bad = |section| crate::rank::bad_section(&name, section);
        let bytes = file.section(section::META, 0)?;
        let mut r = ByteReader::new(&bytes);
        let n = r.count().map_err(bad("META"))?;
        let mut metas = Vec::with_capacity(n);
        for _ in 0..n {
            let blob = r.blob().map_err(bad("META"))?;
            metas.push(RankMeta::decode(blob).map_err(bad("META"))?);
        }
        r.finish().map_err(bad("META"))?;
        crate::rank::check_funcs(&file.section(section::FUNCS, 0)?)
            .map_err(|m| Error::payload(&name, "FUNCS", m))?;
        let signatures = crate::rank::decode_signatures(&file.section(section::SIGNATURES, 0)?)
            .map_err(bad("SIGNATURES"))?;
        // One stream per rank: more is refused before it takes memory.
        let grammar = Grammar::decode_streams(&file.section(section::GRAMMAR, 0)?, metas.len())
            .map_err(|e| Error::payload(&name, "GRAMMAR", e))?;
        let stats_bytes = file.section(section::CALL_STATS, 0)?;
        let mut stats = ByteReader::new(&stats_bytes);
        let comms_bytes = file.section(section::COMMS, 0)?;
        let mut comms = ByteReader::new(&comms_bytes);
        let mut ranks = Vec::with_capacity(metas.len());
        for meta in metas {
            let n = stats.count().map_err(bad("CALL_STATS"))?;
            // 5 varints an entry: a forged count must not size the vector.
            let mut rank_stats = Vec::with_capacity(n.min(stats.remaining() / 5));
            let mut t = 0u32;
            for _ in 0..n {
                let at = stats.position();
                t = t
                    .checked_add(stats.u32().map_err(bad("CALL_STATS"))?)
                    .ok_or_else(|| {
                        Error::payload(
                            &name,
                            "CALL_STATS",
                            format!("byte {at}: terminal out of range"),
                        )
                    })?;
                rank_stats.push((t, decode_stats(&mut stats).map_err(bad("CALL_STATS"))?));
            }
            ranks.push(RankPart {
                meta,
                stats: rank_stats,
                comms: decode_comms(&mut comms).map_err(bad("COMMS"))?,
            });
        }
        stats.finish().map_err(bad("CALL_STATS"))?;
        comms.finish().map_err(bad("COMMS"))?;
        let trace = Trace {
            dir: PathBuf::new(),
            signatures,
            grammar,
            ranks,
        };
        trace
            .check()
            .map_err(|m| Error::payload(&name, "GRAMMAR", m))?;
        Ok(trace)
    }

    /// The parts must agree: one stream per rank, ranks distinct and in
    /// order, terminals within the signature table.
    fn check(&self) -> Result<(), String> {
        if let Some(w) = self
            .ranks
            .windows(2)
            .find(|w| w[0].meta.rank >= w[1].meta.rank)
        {
            return Err(format!(
                "ranks out of order or repeated: {} then {}",
                w[0].meta.rank, w[1].meta.rank
            ));
        }
        let streams: Vec<StreamId> = self.grammar.streams().iter().map(|&(s, _)| s).collect();
        let ranks: Vec<StreamId> = self.ranks.iter().map(|r| r.meta.rank).collect();
        if streams != ranks {
            return Err(format!(
                "{} streams for {} ranks, or not the same ranks",
                streams.len(),
                ranks.len()
            ));
        }
        let n = self.signatures.len();
        for body in self.grammar.rules() {
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
        if let Some(r) = self
            .ranks
            .iter()
            .find(|r| r.stats.last().is_some_and(|&(t, _)| t as usize >= n))
        {
            return Err(format!(
                "rank {}: timing of a call not in the signature table",
                r.meta.rank
            ));
        }
        Ok(())
    }

    /// Opens a trace directory: the whole-run file if there is one, and
    /// every per-rank file (ranks that did not take part in the merge).
    pub fn open(dir: &Path) -> Result<Trace, Error> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::dir(dir, e))?;
        let mut run = None;
        let mut rank_files = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| Error::dir(dir, e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == RUN_FILE_NAME {
                run = Some(Trace::read_file(TraceFile::open(&path)?)?);
            } else if crate::rank::is_rank_file_name(name) {
                rank_files.push(path);
            }
        }
        rank_files.sort();
        let mut ranks = rank_files
            .iter()
            .map(|path| Ok((path.clone(), RankTrace::read(path)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        // Ranks killed before their calls reached a trace file: from their
        // crash journals.
        for rank in crate::recoverable_ranks(dir)? {
            if run.as_ref().is_none_or(|t| t.rank(rank).is_none()) {
                let path = dir.join(crate::journal_file_name(rank));
                ranks.push((path, crate::recover_rank(dir, rank)?));
            }
        }
        let mut trace = match run {
            Some(t) => t,
            None if ranks.is_empty() => {
                return Err(Error::dir(
                    dir,
                    "no mpigram trace here (no trace.mgr or rank*.mgr files)",
                ));
            }
            None => Trace::from_rank(ranks.remove(0).1),
        };
        for (path, rank) in ranks {
            // A rank that called MPI after MPI_Finalize (MPI_Finalized, say)
            // wrote its whole trace again at exit: that file replaces its
            // part of the merged trace.
            trace
                .remove_rank(rank.meta.rank)
                .and_then(|()| trace.absorb(Trace::from_rank(rank)))
                .map_err(|m| Error::dir(&path, m))?;
        }
        trace.dir = dir.to_owned();
        Ok(trace)
    }

    /// Stored bytes of each section of the directory's whole-run file, by
    /// section name (what the size of a trace is made of).
    pub fn section_sizes(&self) -> Result<Vec<(&'static str, u64)>, Error> {
        let path = self.dir.join(RUN_FILE_NAME);
        if !path.exists() {
            return Ok(Vec::new());
        }
        let file = TraceFile::open(&path)?;
        Ok(file
            .sections()
            .iter()
            .map(|s| (section::name(s.kind), s.stored_len))
            .collect())
    }

    /// Total bytes of the files in the trace directory.
    pub fn bytes(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }
}
