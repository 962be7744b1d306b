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

use crate::{
    CallStats, CallTimes, CommEntry, Error, FILE_KIND_RUN, Gaps, RankClock, RankMeta, RankTrace,
    section,
};
use mpigram_format::{Codec, NewSection, TraceFile, flags};
use mpigram_grammar::{Grammar, share_across_streams, union};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// File name of the whole-run trace in a trace directory.
pub const RUN_FILE_NAME: &str = "trace.mgr";

/// What is particular to one rank.
#[derive(Clone, Debug, PartialEq)]
pub struct RankPart {
    pub meta: RankMeta,
    /// Timing of each signature the rank called: (terminal, stats), by
    /// terminal.
    pub stats: Vec<(u32, CallStats)>,
    /// Where the computation before its calls was.
    pub gaps: Gaps,
    /// The rank's place in its communicators, in call order.
    pub comms: Vec<CommEntry>,
    /// Its per-call times, as stored (empty where not recorded).
    pub times: CallTimes,
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
    /// The run's start, when the ranks here do not tell it: one rank read
    /// from a whole-run file (see [`Trace::run_start_ns`]).
    pub run_start_ns: Option<f64>,
    /// How the ranks' aggregated timing is kept in the whole-run file:
    /// what [`Trace::write`] writes, and what a file read held (with
    /// [`RankStats::Summary`], [`RankPart::stats`] are as the summary gives
    /// them, within its bounds).
    pub rank_stats: RankStats,
    /// Ranks left out because their crash journals could not be read: one
    /// line each, naming the file and what is wrong.
    pub skipped: Vec<String>,
    /// What the reader noticed and ignored in the directory (a temporary
    /// file an interrupted write left): one line each.
    pub notes: Vec<String>,
}

/// What of the ranks' aggregated timing the sections hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Summarised across ranks where it can be ([`RankStats::Summary`]).
    Summary,
    /// Every rank's own ([`RankStats::Exact`]), its gaps as far as they
    /// add to the gaps per signature ([`Gaps::trimmed`]).
    EveryRanksOwn,
    /// Every rank's own with all its gaps: what ranks send each other
    /// while merging, for the summary at the end.
    AllForTheMerge,
}

/// How a whole-run file keeps the ranks' aggregated timing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RankStats {
    /// Summarised across ranks (the default): per signature, the ranks
    /// that stand out named, the others as their mean, lowest and highest
    /// ([`crate::summary`]); metadata rounded as `docs/format.md` says.
    /// Traces with per-call times are kept exact whatever this says.
    #[default]
    Summary,
    /// Every rank's own, exactly (`MPIGRAM_RANK_STATS=exact`).
    Exact,
}

impl RankStats {
    /// Reads `MPIGRAM_RANK_STATS`: `summary` (or empty) or `exact`.
    pub fn parse(s: &str) -> Result<RankStats, String> {
        match s.trim() {
            "" | "summary" => Ok(RankStats::Summary),
            "exact" => Ok(RankStats::Exact),
            other => Err(format!("rank stats {other:?} is neither summary nor exact")),
        }
    }
}

impl RankPart {
    /// The timing of signature `terminal` on the rank, if it called it.
    pub fn stats_of(&self, terminal: u32) -> Option<CallStats> {
        crate::value_of(&self.stats, &terminal)
    }
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
                gaps: rank.gaps,
                comms: rank.comms,
                times: rank.times,
            }],
            run_start_ns: None,
            rank_stats: RankStats::default(),
            skipped: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A whole-run trace built from calls, for tests and tools that make
    /// traces without a run: rank i (world rank i) made the calls of
    /// `ranks[i].0`, each a signature's bytes, with communicator log
    /// `ranks[i].1`. Each call counts 1 µs in the aggregated timing; the
    /// run lasts `wall_ns`. The grammar is built and shared across ranks as
    /// the tracer does. Panics on no ranks.
    pub fn of_calls(ranks: Vec<(Vec<Vec<u8>>, Vec<CommEntry>)>, wall_ns: u64) -> Trace {
        let world_size = ranks.len() as u32;
        let mut parts = ranks.into_iter().enumerate().map(|(r, (calls, comms))| {
            let mut signatures: Vec<Vec<u8>> = Vec::new();
            let mut stats: Vec<CallStats> = Vec::new();
            let mut grammar = mpigram_grammar::Sequitur::new();
            for bytes in &calls {
                let t = match signatures.iter().position(|b| b == bytes) {
                    Some(t) => t,
                    None => {
                        signatures.push(bytes.clone());
                        stats.push(CallStats::default());
                        signatures.len() - 1
                    }
                };
                let st = &mut stats[t];
                st.count += 1;
                st.total_ns += 1000;
                st.min_ns = 1000;
                st.max_ns = 1000;
                grammar.push(t as u32);
            }
            Trace::from_rank(RankTrace {
                meta: RankMeta {
                    rank: r as u32,
                    world_size,
                    pid: 1,
                    host: "test".into(),
                    mpi_library: "MPICH".into(),
                    timing: crate::Timing::default(),
                    calls: calls.len() as u64,
                    start_ns: 0,
                    end_ns: wall_ns,
                    ending: crate::Ending::Finalized,
                    recorder_allocations: 0,
                    ns_per_tick: 1.0,
                    cpus: 0,
                    cpu_share: None,
                    clock_sync: Vec::new(),
                    run: 0,
                    lost: crate::Lost::None,
                    ended_in: None,
                },
                signatures,
                grammar: grammar.grammar(r as u32),
                stats,
                gaps: Gaps::default(),
                comms,
                times: CallTimes::default(),
            })
        });
        let mut all = parts.next().expect("a trace of calls has ranks");
        for part in parts {
            all.absorb(part).expect("ranks of distinct numbers");
        }
        all.share().expect("a valid grammar");
        all
    }

    /// One past the highest rank here: the length of a table by rank.
    pub fn rank_slots(&self) -> usize {
        self.ranks
            .iter()
            .map(|r| r.meta.rank as usize + 1)
            .max()
            .unwrap_or(0)
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
            part.gaps.renumber(|t| renumber[t as usize]);
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

    /// The run's start on rank 0's clock (nanoseconds of its
    /// CLOCK_MONOTONIC): the earliest origin of any rank, what per-call
    /// times are counted from. A whole-run file stores it, so that one rank
    /// read alone has the same times as in the whole run.
    pub fn run_start_ns(&self) -> f64 {
        let here = self
            .ranks
            .iter()
            .map(|r| RankClock::of(&r.meta).global_ns(0))
            .fold(f64::INFINITY, f64::min);
        match self.run_start_ns {
            Some(stored) => stored.min(here),
            None => here,
        }
    }

    /// Whether every rank here holds every call up to MPI_Finalize.
    pub fn is_complete(&self) -> bool {
        self.ranks.iter().all(|r| r.meta.is_complete())
    }

    /// The trace as the bytes of a whole-run file, with every rank's own
    /// timing (what the ranks send each other while merging).
    pub fn to_bytes(&self, codec: Codec) -> Result<Vec<u8>, mpigram_format::Error> {
        self.encoded(codec, Keep::AllForTheMerge, |flags, sections| {
            mpigram_format::to_bytes(FILE_KIND_RUN, flags, sections)
        })
    }

    /// Writes `dir/trace.mgr` atomically.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, mpigram_format::Error> {
        let path = dir.join(RUN_FILE_NAME);
        let keep = match self.rank_stats {
            RankStats::Exact => Keep::EveryRanksOwn,
            RankStats::Summary => Keep::Summary,
        };
        self.encoded(Codec::Zstd, keep, |flags, sections| {
            mpigram_format::write_file(&path, FILE_KIND_RUN, flags, sections)
        })?;
        Ok(path)
    }

    /// Hands the file's flags and sections, each stored with `codec`, to
    /// `out`, with the ranks' timing as `keep` says.
    fn encoded<R>(
        &self,
        codec: Codec,
        keep: Keep,
        out: impl FnOnce(u32, &[NewSection<'_>]) -> R,
    ) -> R {
        let sections = self.sections(keep);
        let sections: Vec<NewSection<'_>> = sections
            .iter()
            .map(|(kind, index, data)| {
                let codec = match codec {
                    Codec::Zstd => Codec::suited_to(data),
                    other => other,
                };
                NewSection::from((*kind, *index, data.as_slice(), codec))
            })
            .collect();
        out(self.file_flags(), &sections)
    }

    fn file_flags(&self) -> u32 {
        if self.is_complete() {
            0
        } else {
            flags::PARTIAL
        }
    }

    /// Reads a whole-run file from its bytes; `name` names it in errors.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Trace, Error> {
        let file = TraceFile::from_bytes(name, bytes)?;
        Ok(Trace::read_file(&file, None)?.expect("every rank was asked for"))
    }

    /// Opens a trace directory: the whole-run file if there is one, and
    /// every per-rank file (ranks that did not take part in the merge).
    pub fn open(dir: &Path) -> Result<Trace, Error> {
        if dir.is_file() {
            return Err(Error::dir(
                dir,
                "is a file, not a trace directory: give the directory that holds trace.mgr",
            ));
        }
        let entries = std::fs::read_dir(dir).map_err(|e| Error::dir(dir, e))?;
        let mut run = None;
        let mut rank_files = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| Error::dir(dir, e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == RUN_FILE_NAME {
                run = Trace::read_file(&TraceFile::open(&path)?, None)?;
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
        // crash journals. One that cannot be read is left out (and said),
        // not a reason to read none.
        let mut skipped = Vec::new();
        let mut from_journals = Vec::new();
        for rank in crate::recoverable_ranks(dir)? {
            if run.as_ref().is_none_or(|t| t.rank(rank).is_none()) {
                let path = dir.join(crate::journal_file_name(rank));
                match crate::recover_rank(dir, rank) {
                    Ok(trace) => {
                        ranks.push((path, trace));
                        from_journals.push(rank);
                    }
                    Err(e) => skipped.push(e),
                }
            }
        }
        let run_file = dir.join(RUN_FILE_NAME);
        let mut sources: Vec<crate::one_run::Source<'_>> = run
            .iter()
            .flat_map(|t| &t.ranks)
            .map(|r| crate::one_run::Source {
                file: &run_file,
                named: None,
                meta: &r.meta,
            })
            .collect();
        sources.extend(ranks.iter().map(|(path, rank)| {
            crate::one_run::Source {
                file: path,
                named: path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(crate::rank::rank_of_file_name),
                meta: &rank.meta,
            }
        }));
        crate::one_run::check(dir, &sources)?;
        drop(sources);
        let mut trace = match run {
            Some(t) => t,
            None if ranks.is_empty() => {
                return Err(skipped.into_iter().next().unwrap_or_else(|| {
                    Error::dir(
                        dir,
                        "no mpigram trace here (no trace.mgr or rank*.mgr files)",
                    )
                }));
            }
            None => Trace::from_rank(ranks.remove(0).1),
        };
        let files: Vec<(u32, String)> = ranks
            .iter()
            .filter_map(|(path, rank)| {
                Some((rank.meta.rank, path.file_name()?.to_str()?.to_owned()))
            })
            .collect();
        for (path, rank) in ranks {
            // A rank that called MPI after MPI_Finalize (MPI_Finalized, say)
            // wrote its whole trace again at exit: that file replaces its
            // part of the merged trace.
            trace
                .remove_rank(rank.meta.rank)
                .and_then(|()| trace.absorb(Trace::from_rank(rank)))
                .map_err(|m| Error::dir(&path, m))?;
        }
        crate::spilled::join_parts(dir, &mut trace, &|r| origin(&files, r))?;
        trace.dir = dir.to_owned();
        trace.skipped = skipped.iter().map(Error::to_string).collect();
        from_journals.sort_unstable();
        trace.notes = crate::one_run::interrupted_writes(dir, &from_journals);
        Ok(trace)
    }

    /// Stored bytes of each kind of section of the directory's whole-run
    /// file, by name (what the size of a trace is made of).
    pub fn section_sizes(&self) -> Result<Vec<(&'static str, u64)>, Error> {
        let path = self.dir.join(RUN_FILE_NAME);
        if !path.exists() {
            return Ok(Vec::new());
        }
        let file = TraceFile::open(&path)?;
        let mut sizes: Vec<(&'static str, u64)> = Vec::new();
        for s in file.sections() {
            let name = section::name(s.kind);
            match sizes.iter_mut().find(|(n, _)| *n == name) {
                Some((_, bytes)) => *bytes += s.stored_len,
                None => sizes.push((name, s.stored_len)),
            }
        }
        Ok(sizes)
    }

    /// Opens only what rank `rank`'s calls need: from a whole-run file, the
    /// rank's chunk of per-rank data, the signature table and the grammar
    /// (its time does not grow with the other ranks' metadata and timing).
    /// Ranks with files of their own, or recovered from crash journals,
    /// are read as [`Trace::open`] reads them. The trace may hold other
    /// ranks too.
    pub fn open_rank(dir: &Path, rank: u32) -> Result<Trace, Error> {
        let run = dir.join(RUN_FILE_NAME);
        let own_file = dir.join(crate::rank_file_name(rank)).exists()
            || dir.join(crate::journal_file_name(rank)).exists()
            || dir.join(crate::checkpoint_file_name(rank)).exists();
        if run.is_file() && !own_file {
            if let Some(mut trace) = Trace::read_file(&TraceFile::open(&run)?, Some(rank))? {
                crate::spilled::join_parts(dir, &mut trace, &|_| RUN_FILE_NAME.into())?;
                trace.dir = dir.to_owned();
                return Ok(trace);
            }
        }
        Trace::open(dir)
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

/// The file rank `rank` was read from: its own (`files`: rank files and
/// crash journals, by rank), else the whole-run file.
fn origin(files: &[(u32, String)], rank: u32) -> String {
    files
        .iter()
        .find(|(r, _)| *r == rank)
        .map_or_else(|| RUN_FILE_NAME.into(), |(_, name)| name.clone())
}
