//! Usage patterns with a better MPI idiom: one-at-a-time completions,
//! repeated non-blocking calls that could be persistent, wildcard
//! receives that always match one sender (storms of small messages are
//! in [`super::storms`]).

use super::walk::RankWalk;
use super::{ANY_SOURCE_RECEIVES, Finding, Kind, PERSISTENT_CALLS};
use crate::matching::p2p::OpKey;
use crate::matching::{Direction, Operation, Peer};
use crate::sites::{CallSite, Sites};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Runs of two or more MPI_Wait calls one right after the other (no other
/// call between them, and with per-call timing less than [`WAIT_GAP_NS`]
/// apart): one MPI_Waitall would complete them at once. Runs are grouped
/// by the place of their first MPI_Wait in the grammar of call shapes (a
/// loop's iterations wait on requests the tracer numbers differently);
/// the finding names the trace's call site of the first run.
pub(super) fn waits_one_at_a_time(rank: u32, walk: &RankWalk, sites: &Sites) -> Vec<Finding> {
    let shape_sites = Sites::new(&walk.shapes.grammar);
    // By shape site: (first call, runs, waits in them).
    let mut runs: BTreeMap<Option<CallSite>, (u64, u64, u64)> = BTreeMap::new();
    for (first, n) in walk.wait_runs.iter() {
        let e = runs
            .entry(shape_sites.of(0, first))
            .or_insert((first, 0, 0));
        e.1 += 1;
        e.2 += n;
    }
    runs.into_values()
        .map(|(first, n, waits)| {
            Finding::on(
                Kind::OneAtATimeCompletion,
                rank,
                "MPI_Wait",
                sites.of(rank, first),
                n,
                format!(
                    "{waits} MPI_Wait calls, in runs of two or more one right after the other ({n} runs), complete one request each: complete each run with one MPI_Waitall"
                ),
            )
        })
        .collect()
}

/// The persistent form of a non-blocking call (`MPI_Isend` ->
/// `MPI_Send_init`, `MPI_Iallreduce` -> `MPI_Allreduce_init`); None for
/// calls that have none.
fn persistent_form(func: &str) -> Option<String> {
    let (func, large) = match func.strip_suffix("_c") {
        Some(f) => (f, "_c"),
        None => (func, ""),
    };
    let blocking = mpigram_mpispec::blocking_operation(func.strip_prefix("MPI_")?)?;
    let p2p = ["Send", "Bsend", "Ssend", "Rsend", "Recv"];
    let name = blocking.as_str();
    // Every collective has a persistent form, MPI_Barrier's too.
    let collective = crate::stats::traffic::is_collective(name);
    (p2p.contains(&name) || collective).then(|| format!("MPI_{name}_init{large}"))
}

/// Non-blocking calls made at least [`PERSISTENT_CALLS`] times with the
/// same arguments (one call shape; the request each returns aside),
/// counted on the grammar of call shapes without expanding it. The
/// finding names the trace's call site of the first such call.
pub(super) fn persistent_candidates(rank: u32, walk: &RankWalk, sites: &Sites) -> Vec<Finding> {
    let shapes = &walk.shapes;
    shapes
        .counts()
        .into_iter()
        .filter_map(|(shape, n)| {
            let &(func, first) = shapes.first.get(shape as usize)?;
            let persistent = persistent_form(func)?;
            (n >= PERSISTENT_CALLS).then(|| {
                Finding::on(
                    Kind::PersistentCandidate,
                    rank,
                    func,
                    sites.of(rank, first),
                    n,
                    format!(
                        "the same {func} runs {n} times: set it up once with {persistent} and post it with MPI_Start"
                    ),
                )
            })
        })
        .collect()
}

/// MPI_ANY_SOURCE receives by call site and the senders of their
/// messages, fed as the run is matched: call sites of at least
/// [`ANY_SOURCE_RECEIVES`] such receives, all of which got their message
/// from the same sender, are findings (naming it spares MPI the wildcard
/// search and makes the program's order explicit).
#[derive(Default)]
pub(super) struct WildcardSenders {
    /// By (rank, site, func): the receives and their one sender so far.
    by_site: BTreeMap<SiteKey, Senders>,
    /// Receives whose sender is not known yet, and their site.
    undecided: FxHashMap<OpKey, SiteKey>,
}

type SiteKey = (u32, Option<CallSite>, &'static str);

/// Wildcard receives at one call site.
#[derive(Default)]
struct Senders {
    receives: u64,
    /// None: none decided yet; Some(None): not all from one sender (or
    /// one matched nothing).
    sender: Option<Option<u32>>,
}

impl WildcardSenders {
    /// Operation `key` is posted: a wildcard receive counts at its site.
    pub(super) fn post(&mut self, key: OpKey, op: &Operation, sites: &Sites) {
        if op.direction == Direction::Recv && op.peer == Peer::Any {
            let site = (op.rank, sites.of(op.rank, op.post), op.func);
            self.by_site.entry(site).or_default().receives += 1;
            self.undecided.insert(key, site);
        }
    }

    /// Receive `recv` got its message from `sender` (None: from no send).
    pub(super) fn decided(&mut self, recv: OpKey, sender: Option<u32>) {
        if let Some(site) = self.undecided.remove(&recv) {
            let senders = self.by_site.entry(site).or_default();
            senders.sender = match senders.sender {
                None => Some(sender),
                Some(one) if one == sender => Some(one),
                Some(_) => Some(None),
            };
        }
    }

    pub(super) fn finish(mut self) -> Vec<Finding> {
        // What was never decided got no message.
        let undecided: Vec<OpKey> = self.undecided.keys().copied().collect();
        for key in undecided {
            self.decided(key, None);
        }
        self.by_site
            .into_iter()
            .filter_map(|((rank, site, func), senders)| {
                let first = senders.sender.flatten()?;
                let n = senders.receives;
                (n >= ANY_SOURCE_RECEIVES).then(|| {
                    Finding::on(
                        Kind::AnySourceOneSender,
                        rank,
                        func,
                        site,
                        n,
                        format!(
                            "every MPI_ANY_SOURCE receive here got its message from world rank {first}: name that source instead of the wildcard"
                        ),
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::persistent_form;

    #[test]
    fn non_blocking_calls_name_their_persistent_form() {
        for (func, persistent) in [
            ("MPI_Isend", "MPI_Send_init"),
            ("MPI_Irecv_c", "MPI_Recv_init_c"),
            ("MPI_Iallreduce", "MPI_Allreduce_init"),
            ("MPI_Ineighbor_alltoallw", "MPI_Neighbor_alltoallw_init"),
            ("MPI_Ibarrier", "MPI_Barrier_init"),
            ("MPI_Iscatterv", "MPI_Scatterv_init"),
        ] {
            assert_eq!(persistent_form(func).as_deref(), Some(persistent), "{func}");
        }
        for none in [
            "MPI_Imrecv",
            "MPI_Iprobe",
            "MPI_Improbe",
            "MPI_Isendrecv",
            "MPI_Send",
        ] {
            assert_eq!(persistent_form(none), None, "{none}");
        }
    }
}
