//! Usage patterns with a better MPI idiom: one-at-a-time completions,
//! repeated non-blocking calls that could be persistent, storms of small
//! messages, wildcard receives that always match one sender.

use super::walk::RankWalk;
use super::{
    ANY_SOURCE_RECEIVES, Finding, Kind, PERSISTENT_CALLS, SMALL_MESSAGE_BYTES, STORM_MESSAGES,
};
use crate::matching::{Comm, Direction, Matching, Peer};
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
    for &(first, n) in &walk.wait_runs {
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
    let base = func.strip_prefix("MPI_I")?;
    let p2p = ["send", "bsend", "ssend", "rsend", "recv"];
    let collectives = [
        "barrier",
        "bcast",
        "gather",
        "gatherv",
        "scatter",
        "scatterv",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "reduce",
        "allreduce",
        "reduce_scatter",
        "reduce_scatter_block",
        "scan",
        "exscan",
        "neighbor_allgather",
        "neighbor_allgatherv",
        "neighbor_alltoall",
        "neighbor_alltoallv",
        "neighbor_alltoallw",
    ];
    let (name, large) = match base.strip_suffix("_c") {
        Some(b) => (b, "_c"),
        None => (base, ""),
    };
    (p2p.contains(&name) || collectives.contains(&name))
        .then(|| format!("MPI_{}{}_init{large}", name[..1].to_uppercase(), &name[1..]))
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

/// Runs of at least [`STORM_MESSAGES`] sends of at most
/// [`SMALL_MESSAGE_BYTES`] from one rank to one peer on one communicator,
/// with no receive from that peer nor collective call of the sender in
/// between: one larger message would carry them.
pub(super) fn storms(matching: &Matching, sites: &Sites) -> Vec<Finding> {
    // Each rank's collective calls, in order: they end every run.
    let mut collective_posts: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
    for instance in &matching.collectives.instances {
        for p in &instance.participants {
            collective_posts.entry(p.rank).or_default().push(p.post);
        }
    }
    collective_posts
        .values_mut()
        .for_each(|v| v.sort_unstable());
    let barrier_between = |rank: u32, a: u64, b: u64| {
        collective_posts.get(&rank).is_some_and(|posts| {
            let i = posts.partition_point(|&p| p <= a);
            posts.get(i).is_some_and(|&p| p < b)
        })
    };

    /// A run in progress to one (communicator, peer).
    struct Run {
        first: u64,
        last: u64,
        messages: u64,
        bytes: u64,
    }
    // Finished storms by (rank, site of the first send, peer): (storms, messages, bytes, longest).
    let mut found: BTreeMap<(u32, Option<CallSite>, String), Storms> = BTreeMap::new();
    let mut finish = |rank: u32, (comm, peer): (Option<Comm>, u32), run: Run| {
        if run.messages >= STORM_MESSAGES {
            let to = match comm {
                Some(comm) => format!("rank {peer} of {comm}"),
                None => format!("rank {peer}"),
            };
            let e = found
                .entry((rank, sites.of(rank, run.first), to))
                .or_default();
            e.runs += 1;
            e.messages += run.messages;
            e.bytes += run.bytes;
            e.longest = e.longest.max(run.messages);
        }
    };
    // Runs in progress by (communicator, peer), of the rank being read.
    let mut open: FxHashMap<(Option<Comm>, u32), Run> = FxHashMap::default();
    let mut rank = None;
    for op in &matching.operations {
        if rank != Some(op.rank) {
            for (key, run) in open.drain() {
                finish(rank.unwrap_or(0), key, run);
            }
            rank = Some(op.rank);
        }
        match (op.direction, &op.peer) {
            (Direction::Recv, Peer::Rank(_) | Peer::Any) => {
                // A receive from the peer (or from anyone) ends its runs.
                let ended: Vec<_> = open
                    .keys()
                    .filter(|(c, p)| {
                        *c == op.comm && (op.peer == Peer::Any || op.peer == Peer::Rank(*p))
                    })
                    .cloned()
                    .collect();
                for k in ended {
                    let run = open.remove(&k).expect("a key of open");
                    finish(op.rank, k, run);
                }
            }
            (Direction::Send, &Peer::Rank(peer)) => {
                let key = (op.comm.clone(), peer);
                let small = op.bytes.filter(|&b| b <= SMALL_MESSAGE_BYTES);
                match (open.get_mut(&key), small) {
                    (Some(run), Some(b)) if !barrier_between(op.rank, run.last, op.post) => {
                        run.last = op.post;
                        run.messages += 1;
                        run.bytes += b;
                        continue;
                    }
                    _ => {}
                }
                if let Some(run) = open.remove(&key) {
                    finish(op.rank, key.clone(), run);
                }
                if let Some(b) = small {
                    let run = Run {
                        first: op.post,
                        last: op.post,
                        messages: 1,
                        bytes: b,
                    };
                    open.insert(key, run);
                }
            }
            _ => {}
        }
    }
    for (key, run) in open.drain() {
        finish(rank.unwrap_or(0), key, run);
    }
    found
        .into_iter()
        .map(|((rank, site, peer), storms)| {
            let Storms {
                runs,
                messages,
                bytes,
                longest,
            } = storms;
            let func = first_func(matching, rank, site, sites);
            Finding::on(
                Kind::SmallMessageStorm,
                rank,
                func,
                site,
                messages,
                format!(
                    "messages of {:.0} bytes on average to {peer}, in {runs} run(s) of up to {longest} with nothing received from it in between: send each run as one message",
                    bytes as f64 / messages as f64
                ),
            )
        })
        .collect()
}

/// The storms from one rank to one peer at one call site.
#[derive(Default)]
struct Storms {
    runs: u64,
    messages: u64,
    bytes: u64,
    longest: u64,
}

/// The function of the first operation of `rank` posted at `site`.
fn first_func(
    matching: &Matching,
    rank: u32,
    site: Option<CallSite>,
    sites: &Sites,
) -> &'static str {
    matching
        .operations
        .iter()
        .find(|op| op.rank == rank && sites.of(rank, op.post) == site)
        .map_or("MPI_Send", |op| op.func)
}

/// Call sites of MPI_ANY_SOURCE receives, at least
/// [`ANY_SOURCE_RECEIVES`] of them, that all got their message from the
/// same sender: naming it spares MPI the wildcard search and makes the
/// program's order explicit.
pub(super) fn any_source_one_sender(matching: &Matching, sites: &Sites) -> Vec<Finding> {
    let mut sender_of: Vec<Option<u32>> = vec![None; matching.operations.len()];
    for m in &matching.matches {
        sender_of[m.recv] = Some(matching.operations[m.send].rank);
    }
    // By (rank, site, func): the senders seen (None: unmatched).
    type Key = (u32, Option<CallSite>, &'static str);
    let mut by_site: BTreeMap<Key, Vec<Option<u32>>> = BTreeMap::new();
    for (i, op) in matching.operations.iter().enumerate() {
        if op.direction == Direction::Recv && op.peer == Peer::Any {
            by_site
                .entry((op.rank, sites.of(op.rank, op.post), op.func))
                .or_default()
                .push(sender_of[i]);
        }
    }
    by_site
        .into_iter()
        .filter_map(|((rank, site, func), senders)| {
            let first = senders.first().copied().flatten()?;
            let one = senders.iter().all(|&s| s == Some(first));
            (one && senders.len() as u64 >= ANY_SOURCE_RECEIVES).then(|| {
                Finding::on(
                    Kind::AnySourceOneSender,
                    rank,
                    func,
                    site,
                    senders.len() as u64,
                    format!(
                        "every MPI_ANY_SOURCE receive here got its message from world rank {first}: name that source instead of the wildcard"
                    ),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::persistent_form;

    #[test]
    fn non_blocking_calls_name_their_persistent_form() {
        assert_eq!(
            persistent_form("MPI_Isend").as_deref(),
            Some("MPI_Send_init")
        );
        assert_eq!(
            persistent_form("MPI_Irecv_c").as_deref(),
            Some("MPI_Recv_init_c")
        );
        assert_eq!(
            persistent_form("MPI_Iallreduce").as_deref(),
            Some("MPI_Allreduce_init")
        );
        assert_eq!(
            persistent_form("MPI_Ineighbor_alltoallw").as_deref(),
            Some("MPI_Neighbor_alltoallw_init")
        );
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
