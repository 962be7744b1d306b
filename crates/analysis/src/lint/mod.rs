//! `mpigram lint`: MPI usage findings from a trace — what the record of
//! every call with every argument shows that a profile cannot.
//!
//! - `objects`: objects still allocated at MPI_Finalize (communicators,
//!   groups, datatypes, ops, info, error handlers, windows, files,
//!   sessions, persistent requests), non-blocking requests never
//!   completed, and objects created inside a loop and never freed (the
//!   loop found as a repeated rule of the rank's calls, counted per
//!   iteration);
//! - `patterns`: one-at-a-time completions where one MPI_Waitall would
//!   do, repeated identical non-blocking calls that could be persistent
//!   (counted on the grammar without expanding it), MPI_ANY_SOURCE
//!   receives that always get their message from the same sender;
//! - `storms`: storms of small messages to one peer;
//! - `deadlock`: blocking sends whose order deadlocks without eager
//!   buffering (the run replayed with every standard send synchronous).
//!
//! Each rank's calls are walked once for the checks of one rank
//! (`walk`); the checks that follow messages read the ranks side by
//! side as they are matched (`messages`). Neither holds the calls or
//! the messages: memory grows with the grammar and with what was in
//! flight in the run.
//!
//! Thresholds are constants of this module, documented in `docs/lint.md`.
//! A finding is never made from what the trace does not show: a rank
//! killed before MPI_Finalize has no leaks, a completion the decoder does
//! not understand counts as a free, not a leak.

mod deadlock;
mod messages;
mod objects;
mod patterns;
mod storms;
#[cfg(test)]
mod tests;
mod walk;

use crate::decode::DecodeError;
use crate::replay::ReplayError;
use crate::sites::{CallSite, Sites};
use crate::timeline::{self, Source, TimelineError};
use mpigram_trace::Trace;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::fmt;

/// A message of at most this many bytes is small.
pub const SMALL_MESSAGE_BYTES: u64 = 64;
/// At least this many small messages in a row to one peer make a storm.
pub const STORM_MESSAGES: u64 = 16;
/// A call site whose non-blocking call runs at least this many times with
/// the same arguments is a persistent-request candidate.
pub const PERSISTENT_CALLS: u64 = 16;
/// At least this many MPI_ANY_SOURCE receives at one call site, all from
/// one sender, make a finding.
pub const ANY_SOURCE_RECEIVES: u64 = 8;
/// Two MPI_Wait calls less than this far apart (with per-call timing) are
/// one after the other; further apart, the program computes between them.
pub const WAIT_GAP_NS: i64 = 10_000;

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An object still allocated at MPI_Finalize.
    LeakedObject,
    /// A non-blocking request never completed (nor freed).
    RequestNeverCompleted,
    /// Objects created in a loop, one or more per iteration, never freed.
    LeakedInLoop,
    /// Standard-mode sends in an order that deadlocks without buffering.
    SendCycle,
    /// Requests completed one MPI_Wait at a time, one after the other.
    OneAtATimeCompletion,
    /// A non-blocking call repeated with the same arguments.
    PersistentCandidate,
    /// Many small messages in a row to one peer.
    SmallMessageStorm,
    /// MPI_ANY_SOURCE receives that always got their message from one sender.
    AnySourceOneSender,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::LeakedObject => "leaked-object",
            Kind::RequestNeverCompleted => "request-never-completed",
            Kind::LeakedInLoop => "leaked-in-loop",
            Kind::SendCycle => "send-cycle",
            Kind::OneAtATimeCompletion => "one-at-a-time-completion",
            Kind::PersistentCandidate => "persistent-candidate",
            Kind::SmallMessageStorm => "small-message-storm",
            Kind::AnySourceOneSender => "any-source-one-sender",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One finding: what, on which ranks, at which call, how often, and the advice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    /// World ranks, ascending.
    pub ranks: Vec<u32>,
    /// The MPI function of the call site.
    pub func: &'static str,
    /// The call site (`R3:2`, grammar rule and position), where it has one.
    pub site: Option<String>,
    /// How many objects, calls or messages, over all `ranks`.
    pub count: u64,
    /// One line: what was seen and what to do.
    pub message: String,
}

impl Finding {
    /// A finding on one rank at `site` (merged with the same finding of
    /// other ranks by [`Report::new`]).
    fn on(
        kind: Kind,
        rank: u32,
        func: &'static str,
        site: Option<CallSite>,
        count: u64,
        message: String,
    ) -> Finding {
        Finding {
            kind,
            ranks: vec![rank],
            func,
            site: site.map(|s| s.to_string()),
            count,
            message,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranks = rank_ranges(&self.ranks);
        let label = if self.ranks.len() == 1 {
            "rank"
        } else {
            "ranks"
        };
        write!(f, "{}: {}", self.kind, self.func)?;
        if let Some(site) = &self.site {
            write!(f, " at {site}")?;
        }
        write!(f, " on {label} {ranks} ({}×): {}", self.count, self.message)
    }
}

/// `0-3, 5, 7-8`.
fn rank_ranges(ranks: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", ranks[i], ranks[j])
        } else {
            ranks[i].to_string()
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// Every finding of a trace, the same finding of several ranks merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// By kind, then call site and function.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Merges findings that differ only in rank and count.
    fn new(findings: Vec<Finding>) -> Report {
        let mut merged: BTreeMap<(Kind, Option<String>, &'static str, String), Finding> =
            BTreeMap::new();
        for f in findings {
            let key = (f.kind, f.site.clone(), f.func, f.message.clone());
            match merged.get_mut(&key) {
                Some(m) => {
                    m.ranks.extend(&f.ranks);
                    m.count += f.count;
                }
                None => {
                    merged.insert(key, f);
                }
            }
        }
        let findings = merged
            .into_values()
            .map(|mut f| {
                f.ranks.sort_unstable();
                f.ranks.dedup();
                f
            })
            .collect();
        Report { findings }
    }

    pub fn to_json(&self) -> Json {
        json!({ "findings": self.findings })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error(transparent)]
    Read(#[from] ReplayError),
    #[error(transparent)]
    Times(#[from] TimelineError),
    #[error("bad signature {0}: {1}")]
    Signature(u32, String),
    #[error("{0}")]
    Model(String),
}

/// The findings of `trace`.
pub fn lint(trace: &Trace) -> Result<Report, LintError> {
    let funcs = objects::signature_funcs(trace)?;
    let sites = Sites::new(&trace.grammar);
    let origin = trace.run_start_ns();
    let per_rank: Vec<(Vec<Finding>, Option<u32>)> = trace
        .ranks
        .par_iter()
        .map(|part| -> Result<(Vec<Finding>, Option<u32>), LintError> {
            let rank = part.meta.rank;
            let spans = timeline::rank_spans(trace, part, Source::Best, origin).ok();
            let walk = match walk::walk(trace, part, spans) {
                // Times that do not decode are no times.
                Err(LintError::Times(_)) => walk::walk(trace, part, None),
                walk => walk,
            }?;
            let mut found = objects::rank_findings(rank, &walk, &sites);
            found.extend(patterns::waits_one_at_a_time(rank, &walk, &sites));
            found.extend(patterns::persistent_candidates(rank, &walk, &sites));
            Ok((found, walk.threads.then_some(rank)))
        })
        .collect::<Result<_, _>>()?;
    let threaded: Vec<u32> = per_rank.iter().filter_map(|(_, t)| *t).collect();
    let mut findings: Vec<Finding> = per_rank.into_iter().flat_map(|(f, _)| f).collect();
    findings.extend(messages::findings(trace, &sites, &funcs, &threaded)?);
    Ok(Report::new(findings))
}
