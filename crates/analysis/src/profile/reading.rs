//! Reading what the wait-state analysis needs from every rank, in
//! parallel: the blocking collective calls (from each signature, decoded
//! once) and the point-to-point operations, decoded rank by rank on as
//! many threads as rayon has and matched in one pass.

use super::waits::{CollectiveCall, Pattern, pattern, point_to_point};
use crate::decode::{DecodeError, DecodedCall, RankDecoder, handle_name};
use crate::matching::{Matching, match_calls};
use crate::members::Members;
use mpigram_mpispec::{FUNCS, HandleKind, HandleRef, Rank, Value, decode_signature};
use mpigram_trace::{RankPart, Trace};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::Scope;

/// What a call of a signature is to the analysis.
#[derive(Clone, Debug)]
enum CallKind {
    Other,
    Collective {
        func: &'static str,
        pattern: Pattern,
        comm: HandleRef,
        /// The communicator's name (`MPI_COMM_WORLD`, `comm3`).
        name: String,
        root: Option<Rank>,
    },
}

fn call_kinds(trace: &Trace) -> Vec<CallKind> {
    trace
        .signatures
        .iter()
        .map(|bytes| {
            let Ok(sig) = decode_signature(bytes) else {
                return CallKind::Other;
            };
            let Some(f) = FUNCS.get(sig.func as usize) else {
                return CallKind::Other;
            };
            let Some(pattern) = pattern(f.name) else {
                return CallKind::Other;
            };
            let arg = |name: &str| {
                f.params
                    .iter()
                    .position(|p| p.name == name)
                    .and_then(|i| sig.args.get(i))
            };
            let Some(&Value::Handle(HandleKind::Comm, comm)) = arg("comm") else {
                return CallKind::Other;
            };
            let root = match arg("root") {
                Some(Value::Rank(r)) => Some(*r),
                _ => None,
            };
            CallKind::Collective {
                func: f.name,
                pattern,
                comm,
                name: handle_name(HandleKind::Comm, comm),
                root,
            }
        })
        .collect()
}

/// The blocking collective calls of one rank, with their communicators.
fn rank_collectives(
    trace: &Trace,
    part: &RankPart,
    kinds: &[CallKind],
    members: &Members,
) -> Vec<(HandleRef, CollectiveCall)> {
    let rank = part.meta.rank;
    let mut out = Vec::new();
    // The rank's place in each user communicator, as of the call.
    let mut my_rank: FxHashMap<u64, u32> = FxHashMap::default();
    let mut next_comm = 0;
    let calls = trace.grammar.expand(rank).into_iter().flatten();
    for (seq, terminal) in calls.enumerate() {
        let seq = seq as u64;
        let Some(CallKind::Collective {
            func,
            pattern,
            comm,
            name,
            root,
        }) = kinds.get(terminal as usize)
        else {
            continue;
        };
        while let Some(e) = part.comms.get(next_comm).filter(|e| e.seq <= seq) {
            my_rank.insert(e.comm, e.rank);
            next_comm += 1;
        }
        let me = match comm {
            HandleRef::User(id) => my_rank.get(id).copied(),
            _ if name == "MPI_COMM_WORLD" => Some(rank),
            _ => None,
        };
        let in_comm = match root {
            Some(Rank::Absolute(a)) => u32::try_from(*a).ok(),
            Some(Rank::Relative(d)) => me
                .and_then(|me| i64::from(me).checked_add(*d))
                .and_then(|r| u32::try_from(r).ok()),
            _ => None,
        };
        let root = in_comm.and_then(|r| members.world_rank(rank, seq, name, r));
        out.push((
            *comm,
            CollectiveCall {
                rank,
                seq,
                func,
                pattern: *pattern,
                root,
            },
        ));
    }
    out
}

/// Instances of blocking collectives: the k-th call on a communicator of
/// each of its members.
pub(crate) fn collective_instances(trace: &Trace, members: &Members) -> Vec<Vec<CollectiveCall>> {
    let kinds = call_kinds(trace);
    let per_rank: Vec<Vec<(HandleRef, CollectiveCall)>> = trace
        .ranks
        .par_iter()
        .map(|part| rank_collectives(trace, part, &kinds, members))
        .collect();
    // Per communicator, its instances in order.
    let mut by_comm: FxHashMap<HandleRef, Vec<Vec<CollectiveCall>>> = FxHashMap::default();
    for calls in per_rank {
        let mut count: FxHashMap<HandleRef, usize> = FxHashMap::default();
        for (comm, call) in calls {
            let k = count.entry(comm).or_insert(0);
            let instances = by_comm.entry(comm).or_default();
            if instances.len() == *k {
                instances.push(Vec::with_capacity(2));
            }
            instances[*k].push(call);
            *k += 1;
        }
    }
    by_comm.into_values().flatten().collect()
}

/// Calls decoded per batch sent from a rank's thread.
const BATCH: usize = 4096;

type Batch = Vec<Result<DecodedCall, DecodeError>>;

/// The point-to-point calls of every rank, decoded on several threads and
/// handed out interleaved (each rank's in order).
struct Interleaved<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    trace: &'env Trace,
    pending: std::slice::Chunks<'env, RankPart>,
    live: Vec<Receiver<Batch>>,
    next: usize,
    batch: std::vec::IntoIter<Result<DecodedCall, DecodeError>>,
}

impl<'scope, 'env> Interleaved<'scope, 'env> {
    fn start_chunk(&mut self) -> bool {
        let Some(parts) = self.pending.next() else {
            return false;
        };
        for part in parts {
            let (tx, rx) = sync_channel::<Batch>(4);
            let trace = self.trace;
            self.scope.spawn(move || {
                let mut batch = Vec::with_capacity(BATCH);
                for call in RankDecoder::new(trace, part).only(point_to_point) {
                    let failed = call.is_err();
                    batch.push(call);
                    let full = batch.len() == BATCH || failed;
                    if full && (tx.send(std::mem::take(&mut batch)).is_err() || failed) {
                        return;
                    }
                }
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
            });
            self.live.push(rx);
        }
        true
    }
}

impl Iterator for Interleaved<'_, '_> {
    type Item = Result<DecodedCall, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(call) = self.batch.next() {
                return Some(call);
            }
            if self.live.is_empty() && !self.start_chunk() {
                return None;
            }
            let i = self.next % self.live.len();
            match self.live[i].recv() {
                Ok(batch) => {
                    self.batch = batch.into_iter();
                    self.next = i + 1;
                }
                Err(_) => {
                    self.live.remove(i);
                }
            }
        }
    }
}

/// Matches the point-to-point operations of every rank.
pub(crate) fn match_point_to_point(
    trace: &Trace,
    members: &Members,
) -> Result<Matching, DecodeError> {
    let threads = rayon::current_num_threads().max(1);
    let mut error = None;
    let matching = std::thread::scope(|scope| {
        let calls = Interleaved {
            scope,
            trace,
            pending: trace.ranks.chunks(threads),
            live: Vec::new(),
            next: 0,
            batch: Vec::new().into_iter(),
        };
        let error = &mut error;
        // The receivers are dropped with the iterator, which stops the threads.
        match_calls(
            calls.map_while(|call| match call {
                Ok(call) => Some(call),
                Err(e) => {
                    *error = Some(e);
                    None
                }
            }),
            members,
        )
    });
    match error {
        Some(e) => Err(e),
        None => Ok(matching),
    }
}
