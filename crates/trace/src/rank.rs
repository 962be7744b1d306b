//! One rank's trace file, and a trace directory of them.

use crate::{Error, FILE_KIND_RANK, RankMeta, rank_file_name, section};
use mpigram_format::{Codec, NewSection, TraceFile, flags, write_file};
use mpigram_grammar::{Grammar, Symbol};
use mpigram_mpispec::FUNCS;
use mpigram_varint::{ByteReader, PutVarint};
use std::path::{Path, PathBuf};

/// Aggregated timing of one call signature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    pub count: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
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
}

/// Everything one rank recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankTrace {
    pub meta: RankMeta,
    /// Call-signature table: terminal `t` of the grammar is `signatures[t]`.
    pub signatures: Vec<Vec<u8>>,
    /// The rank's calls as a grammar over signature terminals; its one
    /// stream is the rank.
    pub grammar: Grammar,
    /// Aggregated timing per terminal.
    pub stats: Vec<CallStats>,
    /// The rank's place in its communicators, in call order.
    pub comms: Vec<CommEntry>,
}

impl RankTrace {
    /// Writes `dir/rank<N>.mgr` atomically; a rank that did not end with
    /// MPI_Finalize is marked partial.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, mpigram_format::Error> {
        let path = dir.join(rank_file_name(self.meta.rank));
        let meta = self.meta.encode();
        let funcs = self.encode_funcs();
        let mut signatures = Vec::new();
        signatures.put_u64(self.signatures.len() as u64);
        self.signatures.iter().for_each(|s| signatures.put_blob(s));
        let grammar = self.grammar.encode();
        let mut stats = Vec::new();
        stats.put_u64(self.stats.len() as u64);
        for s in &self.stats {
            for v in [s.count, s.total_ns, s.min_ns, s.max_ns] {
                stats.put_u64(v);
            }
        }
        let mut comms = Vec::new();
        comms.put_u64(self.comms.len() as u64);
        for c in &self.comms {
            comms.put_u64(c.seq);
            comms.put_u64(c.comm);
            comms.put_u32(c.rank);
            comms.put_u32(c.size);
            comms.put_u32(c.remote_size);
            comms.put_u32(u32::from(c.inter));
        }
        let sections = [
            NewSection::from((section::META, 0, meta.as_slice(), Codec::Raw)),
            (section::FUNCS, 0, funcs.as_slice(), Codec::Raw).into(),
            (section::SIGNATURES, 0, signatures.as_slice(), Codec::Zstd).into(),
            (section::GRAMMAR, 0, grammar.as_slice(), Codec::Zstd).into(),
            (section::CALL_STATS, 0, stats.as_slice(), Codec::Zstd).into(),
            (section::COMMS, 0, comms.as_slice(), Codec::Zstd).into(),
        ];
        let file_flags = if self.meta.ending.is_complete() {
            0
        } else {
            flags::PARTIAL
        };
        write_file(&path, FILE_KIND_RANK, file_flags, &sections)?;
        Ok(path)
    }

    /// Names of the functions the signatures use, by id: a reader built
    /// with another function table notices instead of misreading.
    fn encode_funcs(&self) -> Vec<u8> {
        let mut ids: Vec<u64> = self
            .signatures
            .iter()
            .filter_map(|s| ByteReader::new(s).u64().ok())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::new();
        out.put_u64(ids.len() as u64);
        for id in ids {
            out.put_u64(id);
            out.put_str(FUNCS.get(id as usize).map_or("", |f| f.name));
        }
        out
    }

    /// Reads and checks one rank's file.
    pub fn read(path: &Path) -> Result<RankTrace, Error> {
        let file = TraceFile::open(path)?;
        let name = file.name().to_owned();
        if file.kind() != FILE_KIND_RANK {
            return Err(Error::payload(
                &name,
                "header",
                format!("file kind {} is not a rank trace", file.kind()),
            ));
        }
        let bad = |section: &'static str| {
            let name = name.clone();
            move |e: mpigram_varint::DecodeError| Error::payload(&name, section, e)
        };
        let meta = RankMeta::decode(&file.section(section::META, 0)?).map_err(bad("META"))?;
        check_funcs(&file.section(section::FUNCS, 0)?)
            .map_err(|m| Error::payload(&name, "FUNCS", m))?;
        let bytes = file.section(section::SIGNATURES, 0)?;
        let mut r = ByteReader::new(&bytes);
        let signatures = (0..r.count().map_err(bad("SIGNATURES"))?)
            .map(|_| r.blob().map(<[u8]>::to_vec))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad("SIGNATURES"))?;
        r.finish().map_err(bad("SIGNATURES"))?;
        // One stream, the rank's: more is refused before it takes memory.
        let grammar = Grammar::decode_streams(&file.section(section::GRAMMAR, 0)?, 1)
            .map_err(|e| Error::payload(&name, "GRAMMAR", e))?;
        let bytes = file.section(section::CALL_STATS, 0)?;
        let mut r = ByteReader::new(&bytes);
        let n = r.count().map_err(bad("CALL_STATS"))?;
        // `count` only promises a byte per element; an entry is 4 varints
        // read into 32 bytes, so a forged count must not size the vector.
        let mut stats = Vec::with_capacity(n.min(r.remaining() / 4));
        for _ in 0..n {
            let mut v = [0u64; 4];
            for x in &mut v {
                *x = r.u64().map_err(bad("CALL_STATS"))?;
            }
            stats.push(CallStats {
                count: v[0],
                total_ns: v[1],
                min_ns: v[2],
                max_ns: v[3],
            });
        }
        r.finish().map_err(bad("CALL_STATS"))?;
        let bytes = file.section(section::COMMS, 0)?;
        let mut r = ByteReader::new(&bytes);
        let n = r.count().map_err(bad("COMMS"))?;
        let mut comms = Vec::with_capacity(n.min(r.remaining() / 6)); // 6 varints each
        for _ in 0..n {
            let mut entry = || -> Result<CommEntry, mpigram_varint::DecodeError> {
                Ok(CommEntry {
                    seq: r.u64()?,
                    comm: r.u64()?,
                    rank: r.u32()?,
                    size: r.u32()?,
                    remote_size: r.u32()?,
                    inter: r.u32()? != 0,
                })
            };
            comms.push(entry().map_err(bad("COMMS"))?);
        }
        r.finish().map_err(bad("COMMS"))?;
        let trace = RankTrace {
            meta,
            signatures,
            grammar,
            stats,
            comms,
        };
        trace
            .check()
            .map_err(|m| Error::payload(&name, "GRAMMAR", m))?;
        Ok(trace)
    }

    /// The parts must agree: one stream (this rank), terminals within the
    /// signature table, one timing entry per signature.
    fn check(&self) -> Result<(), String> {
        let streams = self.grammar.streams();
        if streams.len() != 1 || streams[0].0 != self.meta.rank {
            return Err(format!("expected one stream for rank {}", self.meta.rank));
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
        if self.stats.len() != n {
            return Err(format!(
                "{} timing entries for {n} signatures",
                self.stats.len()
            ));
        }
        Ok(())
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

fn check_funcs(bytes: &[u8]) -> Result<(), String> {
    let mut r = ByteReader::new(bytes);
    let n = r.count().map_err(|e| e.to_string())?;
    for _ in 0..n {
        let id = r.u64().map_err(|e| e.to_string())?;
        let name = r.str().map_err(|e| e.to_string())?;
        if FUNCS.get(id as usize).map(|f| f.name) != Some(name) {
            return Err(format!(
                // Quoted: a damaged name may hold a newline.
                "function {id} is {name:?} in this trace but not in this mpigram: written by another version"
            ));
        }
    }
    r.finish().map_err(|e| e.to_string())
}

/// A trace directory: every rank's file.
pub struct Trace {
    pub dir: PathBuf,
    /// Ranks in rank order.
    pub ranks: Vec<RankTrace>,
}

impl Trace {
    pub fn open(dir: &Path) -> Result<Trace, Error> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::dir(dir, e))?;
        let mut ranks = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| Error::dir(dir, e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let is_rank_file = name
                .strip_prefix("rank")
                .and_then(|n| n.strip_suffix(".mgr"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if is_rank_file {
                ranks.push(RankTrace::read(&path)?);
            }
        }
        if ranks.is_empty() {
            return Err(Error::dir(
                dir,
                "no mpigram trace here (no rank*.mgr files)",
            ));
        }
        ranks.sort_by_key(|r| r.meta.rank);
        if let Some(w) = ranks.windows(2).find(|w| w[0].meta.rank == w[1].meta.rank) {
            return Err(Error::dir(
                dir,
                format!("two files for rank {}", w[0].meta.rank),
            ));
        }
        Ok(Trace {
            dir: dir.to_owned(),
            ranks,
        })
    }

    /// Whether every rank ended with MPI_Finalize.
    pub fn is_complete(&self) -> bool {
        self.ranks.iter().all(|r| r.meta.ending.is_complete())
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
