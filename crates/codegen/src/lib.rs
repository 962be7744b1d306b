//! Benchmark generation: an mpigram trace becomes a readable C/MPI program
//! that makes the same MPI calls with the same arguments, on the same
//! number of ranks, with the recorded computation between them as
//! busy-waits (ScalaTrace's benchmark generation, on mpigram's grammar).
//!
//! The grammar gives the program its shape: one C function per rule the
//! ranks reach, a `for` loop for each run repeated more than once, so the
//! source grows with the trace's distinct behaviour, not with its calls.
//! Signatures are rank-independent (ranks relative to the caller, objects
//! by symbolic id, buffers as memory segments), so one signature is one
//! piece of C that is right on every rank that makes it, and rules shared
//! by ranks are shared C; `main` picks each rank's start rule by rank
//! conditions. See `docs/gen-bench.md`.

pub mod buffers;
pub mod callbacks;
pub mod calls;
pub mod emit;
pub mod extrapolate;
mod files;
pub mod peers;
pub mod protos;
pub mod render;
pub mod threads;
pub mod timing;
pub mod unify;
pub mod wildcard;

pub use timing::Compute;

pub use mpigram_analysis::timeline::Source;
use mpigram_grammar::{Grammar, RuleId, Symbol};
use mpigram_mpispec::{FUNCS, Signature, decode_signature};
use mpigram_trace::Trace;
use render::{Context, Rendered};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    pub compute: Compute,
    /// Multiplies every computation time.
    pub scale: f64,
    /// The trace's name, for the header comment.
    pub trace_name: String,
    /// Where the benchmark opens and deletes files (see `files.rs`).
    pub io_dir: Option<std::path::PathBuf>,
    /// A benchmark for this many ranks instead of the traced number
    /// (see `extrapolate.rs`).
    pub ranks: Option<u32>,
    /// Which recorded per-call times the computation is taken from (a trace
    /// recorded with both lossy and lossless timing has two).
    pub times: Source,
    /// Waits burn CPU time on ranks whose host had more ranks than
    /// processors: the recorded gap times the rank's measured share of a
    /// processor (`timing::processor_shares`).
    pub cpu_time: bool,
    /// Generate a benchmark of a trace whose threads called MPI at once
    /// (which it makes one after another, and may deadlock: `threads.rs`).
    pub serial_threads: bool,
}

/// A generated benchmark.
#[derive(Debug)]
pub struct Benchmark {
    /// The C source.
    pub source: String,
    pub ranks: u32,
    /// Calls in the trace, all ranks.
    pub calls: u64,
    /// Grammar rules that became C functions.
    pub functions: usize,
    /// Calls not reproduced, by reason: (reason, calls in the trace).
    pub skipped: Vec<(String, u64)>,
    /// Things the user should know (timing fallbacks).
    pub notes: Vec<String>,
}

/// Why no benchmark can be generated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the trace has no ranks")]
    Empty,
    #[error("{0}")]
    Files(String),
    #[error("the trace lacks rank {0} of {1}: the benchmark must run every rank of the traced run")]
    MissingRank(u32, u32),
    #[error("bad signature {terminal}: {message}")]
    BadSignature { terminal: u32, message: String },
    #[error(
        "no rank calls MPI_Init or MPI_Init_thread: traces of programs that use only sessions are not supported"
    )]
    NoInit,
    #[error("{0}")]
    Model(String),
    #[error("{0} is beyond what a generated program holds in a table (a corrupt trace?)")]
    TooLarge(String),
    #[error("{0}; give --serial-threads to generate it anyway")]
    ThreadsAtOnce(threads::Overlap),
    #[error("cannot generate a benchmark for {0} ranks from this trace: {1}")]
    NotRegular(u32, String),
    #[error("rank {rank} has no {which} timing (it has {has}): record it with MPIGRAM_TIMING")]
    NoTimes {
        rank: u32,
        which: &'static str,
        has: String,
    },
}

/// Refuses a request for lossy or lossless times where a rank has none (the
/// default, [`Source::Best`], takes whatever the trace has).
fn check_times(trace: &Trace, times: Source) -> Result<(), Error> {
    for part in &trace.ranks {
        let timing = &part.meta.timing;
        let which = match times {
            Source::Best => return Ok(()),
            Source::Lossy if timing.lossy.is_none() => "lossy",
            Source::Lossless if !timing.lossless => "lossless",
            _ => continue,
        };
        return Err(Error::NoTimes {
            rank: part.meta.rank,
            which,
            has: timing.describe(),
        });
    }
    Ok(())
}

/// Generates the benchmark of `trace`.
pub fn generate(trace: &Trace, options: &Options) -> Result<Benchmark, Error> {
    protos::prototypes().map_err(Error::Model)?;
    let first = trace.ranks.first().ok_or(Error::Empty)?;
    let world_size = first.meta.world_size.max(trace.ranks.len() as u32);
    let mut starts: Vec<RuleId> = Vec::with_capacity(world_size as usize);
    for rank in 0..world_size {
        match (trace.rank(rank), trace.grammar.start(rank)) {
            (Some(_), Some(start)) => starts.push(start),
            _ => return Err(Error::MissingRank(rank, world_size)),
        }
    }
    let mut sigs: Vec<Signature> = trace
        .signatures
        .iter()
        .enumerate()
        .map(|(t, bytes)| {
            decode_signature(bytes).map_err(|e| Error::BadSignature {
                terminal: t as u32,
                message: e.to_string(),
            })
        })
        .collect::<Result<_, _>>()?;
    files::map_file_names(&mut sigs, options.io_dir.as_deref()).map_err(Error::Files)?;

    if !has_init(&sigs) {
        return Err(Error::NoInit);
    }
    let mut notes = Vec::new();
    match threads::threads(trace, &sigs).map_err(Error::Model)? {
        threads::Threads::OneAtATime => {}
        threads::Threads::AtOnce(overlap) if !options.serial_threads => {
            return Err(Error::ThreadsAtOnce(overlap));
        }
        threads::Threads::AtOnce(overlap) => {
            notes.push(format!(
                "{overlap} (--serial-threads: generated all the same)"
            ));
        }
        threads::Threads::Untold => notes.push(
            "the traced run was given MPI_THREAD_MULTIPLE and its times cannot tell whether its \
             threads called MPI at once: where they did, the benchmark, which makes a rank's \
             calls one after another on one thread, can deadlock (gen-bench checks traces \
             recorded with lossless timing)"
                .into(),
        ),
    }
    if options.compute != Compute::None {
        check_times(trace, options.times)?;
    }
    let delays = timing::delays(trace, options, &inits(&sigs));
    let extrapolated = match options.ranks {
        Some(n) => Some(
            extrapolate::extrapolate(trace, &sigs, world_size, n, &delays)
                .map_err(|e| Error::NotRegular(n, e))?,
        ),
        None => None,
    };
    let traced_size = world_size;
    let mut ctx = Context::default();
    let (grammar, starts, sigs, delays, world_size) = match &extrapolated {
        Some(e) => {
            ctx.arg_exprs = e.args.clone();
            (
                &e.grammar,
                e.starts.clone(),
                &e.sigs,
                &e.delays,
                e.starts.len() as u32,
            )
        }
        None => {
            ctx.bindings = wildcard::bind(trace, &sigs);
            (&trace.grammar, starts, &sigs, &delays, world_size)
        }
    };
    ctx.learn(sigs);
    if let Some((kind, n)) = ctx.handles.iter().find(|(_, n)| **n > MAX_TABLE) {
        return Err(Error::TooLarge(format!("{} id {}", kind.prefix(), n - 1)));
    }
    if ctx.requests.len() as u64 > MAX_TABLE {
        return Err(Error::TooLarge(format!("{} requests", ctx.requests.len())));
    }
    if let Some(id) = max_segment(sigs).filter(|id| *id >= MAX_TABLE) {
        return Err(Error::TooLarge(format!("memory segment id {id}")));
    }
    ctx.after_finalize = after_finalize(grammar, &starts, sigs);
    let refs: Vec<&Signature> = sigs.iter().collect();
    let extents = buffers::Extents::of(&refs);
    let segment_bytes = buffers::segment_sizes(&refs, &extents, u64::from(world_size));

    // Render every terminal the ranks reach, and count what is skipped.
    let mut calls: FxHashMap<u32, Rendered> = FxHashMap::default();
    let mut total = 0u64;
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    let mut counts: FxHashMap<u32, u64> = FxHashMap::default();
    let mut ranks_of_start: BTreeMap<RuleId, u64> = BTreeMap::new();
    for &start in &starts {
        *ranks_of_start.entry(start).or_insert(0) += 1;
    }
    for (&start, &ranks) in &ranks_of_start {
        for (t, n) in grammar.terminal_counts(start) {
            let n = n.saturating_mul(ranks);
            let c = counts.entry(t).or_insert(0);
            *c = c.saturating_add(n);
            total = total.saturating_add(n);
        }
    }
    let mut terminals: Vec<u32> = counts.keys().copied().collect();
    terminals.sort_unstable();
    for t in terminals {
        let sig = sigs.get(t as usize).ok_or(Error::BadSignature {
            terminal: t,
            message: "not in the signature table".into(),
        })?;
        let rendered = ctx.render(t, sig);
        if let Rendered::Skip(why) = &rendered {
            let reported = !calls::is_empty_poll(sig) && !ctx.after_finalize.contains(&t);
            if reported {
                *skipped.entry(why.clone()).or_insert(0) += counts[&t];
            }
        }
        calls.insert(t, rendered);
    }

    let distinct: std::collections::BTreeSet<RuleId> = starts.iter().copied().collect();
    let mut header = vec![
        format!(
            "Generated by `mpigram gen-bench` from the trace {}.",
            options.trace_name
        ),
        format!(
            "{world_size} ranks ({} distinct behaviours), {total} MPI calls, {} call signatures, {} grammar rules.",
            distinct.len(),
            sigs.len(),
            grammar.num_rules()
        ),
        format!("Build: mpicc -O1 -o bench bench.c     Run: mpiexec -n {world_size} ./bench"),
        format!("Computation between calls: {}.", delays.description),
        "Each rule_N function is grammar rule N; loops are its repetition counts.".into(),
    ];
    if let Some(e) = &extrapolated {
        header.insert(
            1,
            format!(
                "Extrapolated from the traced {traced_size} ranks to {world_size}: {}.",
                e.classes.join("; ")
            ),
        );
    }
    let program = emit::Program {
        grammar,
        starts,
        world_size,
        calls: &calls,
        ctx: &ctx,
        delays,
        segment_bytes: &segment_bytes,
        header,
    };
    let source = program.text();
    let functions = source.matches("static void rule_").count();
    Ok(Benchmark {
        source,
        ranks: world_size,
        calls: total,
        functions,
        skipped: skipped.into_iter().collect(),
        notes: notes
            .into_iter()
            .chain(delays.note.iter().cloned())
            .collect(),
    })
}

/// Largest object id, request count or segment id a benchmark's tables hold.
const MAX_TABLE: u64 = 1 << 24;

/// The largest memory segment id any call names.
fn max_segment(sigs: &[Signature]) -> Option<u64> {
    fn of(v: &mpigram_mpispec::Value) -> Option<u64> {
        use mpigram_mpispec::{BufferRef, Value};
        match v {
            Value::Buffer(BufferRef::Segment { id, .. }) => Some(*id),
            Value::Array(Some(items)) => items.iter().filter_map(of).max(),
            _ => None,
        }
    }
    sigs.iter().flat_map(|s| s.args.iter().filter_map(of)).max()
}

/// Whether some rank calls MPI_Init or MPI_Init_thread (where the
/// benchmark sets itself up).
fn has_init(sigs: &[Signature]) -> bool {
    !inits(sigs).is_empty()
}

/// The terminals of MPI_Init and MPI_Init_thread.
fn inits(sigs: &[Signature]) -> FxHashSet<u32> {
    sigs.iter()
        .enumerate()
        .filter(|(_, s)| matches!(FUNCS[s.func as usize].name, "MPI_Init" | "MPI_Init_thread"))
        .map(|(t, _)| t as u32)
        .collect()
}

/// Terminals that every rank calls only after its MPI_Finalize: the MPI
/// library's own clean-up (ROMIO frees its keyvals and ops there), which
/// the benchmark's MPI_Finalize makes again. Worked out on the grammar: in
/// each start rule, the runs before the one that holds the first
/// MPI_Finalize come before it, the runs after it (and its repetitions
/// after the first) come after, and the run itself is split the same way
/// one rule down.
fn after_finalize(g: &Grammar, starts: &[RuleId], sigs: &[Signature]) -> FxHashSet<u32> {
    let finalize = mpigram_mpispec::func_by_name("MPI_Finalize").map(|(id, _)| id);
    let is_finalize = |t: u32| sigs.get(t as usize).map(|s| Some(s.func)) == Some(finalize);
    // Whether each rule's expansion holds an MPI_Finalize (rules refer
    // only to rules numbered below them).
    let mut holds: Vec<bool> = Vec::with_capacity(g.num_rules());
    for body in g.rules() {
        let h = body.iter().any(|run| match run.symbol {
            Symbol::Terminal(t) => is_finalize(t),
            Symbol::Rule(r) => holds[r as usize],
        });
        holds.push(h);
    }
    let symbol_holds = |s: Symbol| match s {
        Symbol::Terminal(t) => is_finalize(t),
        Symbol::Rule(r) => holds[r as usize],
    };
    let mut before = Terminals::new(g);
    let mut after = Terminals::new(g);
    let distinct: std::collections::BTreeSet<RuleId> = starts.iter().copied().collect();
    for start in distinct {
        let mut rule = start;
        loop {
            let runs = g.rule(rule);
            let Some(p) = runs.iter().position(|run| symbol_holds(run.symbol)) else {
                runs.iter().for_each(|run| before.add(run.symbol));
                break;
            };
            runs[..p].iter().for_each(|run| before.add(run.symbol));
            runs[p + 1..].iter().for_each(|run| after.add(run.symbol));
            if runs[p].count > 1 {
                after.add(runs[p].symbol);
            }
            match runs[p].symbol {
                Symbol::Terminal(t) => {
                    before.add(Symbol::Terminal(t));
                    break;
                }
                Symbol::Rule(child) => rule = child,
            }
        }
    }
    // What an application may call after MPI_Finalize is its own call.
    let allowed = [
        "MPI_Finalized",
        "MPI_Initialized",
        "MPI_Get_version",
        "MPI_Get_library_version",
    ];
    let mut out = after.terminals;
    out.retain(|t| {
        !before.terminals.contains(t)
            && !sigs
                .get(*t as usize)
                .is_some_and(|s| allowed.contains(&FUNCS[s.func as usize].name))
    });
    out
}

/// The terminals some symbols expand to, each rule visited once.
struct Terminals<'g> {
    grammar: &'g mpigram_grammar::Grammar,
    visited: Vec<bool>,
    terminals: FxHashSet<u32>,
}

impl<'g> Terminals<'g> {
    fn new(grammar: &'g mpigram_grammar::Grammar) -> Terminals<'g> {
        Terminals {
            grammar,
            visited: vec![false; grammar.num_rules()],
            terminals: FxHashSet::default(),
        }
    }

    fn add(&mut self, symbol: Symbol) {
        let mut stack = vec![symbol];
        while let Some(s) = stack.pop() {
            match s {
                Symbol::Terminal(t) => {
                    self.terminals.insert(t);
                }
                Symbol::Rule(r) if !self.visited[r as usize] => {
                    self.visited[r as usize] = true;
                    stack.extend(self.grammar.rule(r).iter().map(|run| run.symbol));
                }
                Symbol::Rule(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
