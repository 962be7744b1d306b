//! Collective matching: which calls of the member ranks make up each
//! collective operation.
//!
//! MPI has every member of a communicator call its collectives in one
//! order, so the k-th collective call on a communicator instance on each
//! member is one operation (an instance). Blocking calls complete where
//! they are posted; non-blocking ones (`MPI_Iallreduce`) at the Wait/Test
//! that completed their request; a persistent collective (`MPI_Bcast_init`,
//! itself a collective call) makes one instance per MPI_Start, the j-th
//! start on each member being one. Window synchronisation is collective
//! over the window: its creation on the communicator, then each
//! MPI_Win_fence and MPI_Win_free in order. Calls that creates
//! communicators (dup, split, create) are collectives on the parent.

use super::{CallAt, Comm, WorldRanks};
use crate::members::CommId;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::fmt;

/// How the processes of a collective depend on each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CollectiveKind {
    /// N×N: every process ends after every process started (Barrier,
    /// Allreduce, Allgather, Alltoall, Reduce_scatter, communicator and
    /// window creation, fence).
    AllToAll,
    /// 1→N: every process ends after the root started (Bcast, Scatter).
    RootToAll,
    /// N→1: the root ends after every process started (Reduce, Gather).
    AllToRoot,
    /// Process i ends after processes 0..=i started (Scan).
    Scan,
    /// Process i ends after processes 0..i started (Exscan).
    ExclusiveScan,
    /// Neighbourhood collectives: each process depends on its topology
    /// neighbours only, which the trace does not give.
    Neighborhood,
    /// A persistent collective's initialisation (`MPI_*_init`): no data
    /// moves; each MPI_Start of it makes an instance.
    Setup,
}

/// How a collective call is posted and completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    Blocking,
    /// Completes at its request's Wait/Test.
    Request,
    /// `MPI_*_init`: each MPI_Start posts it.
    Persistent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Classified {
    pub(crate) kind: CollectiveKind,
    pub(super) start: Start,
}

/// The root argument of a rooted collective.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum RootArg {
    None,
    /// A rank in the communicator (for an inter-communicator: in the remote group).
    Rank(u32),
    /// MPI_ROOT: the caller is the root (inter-communicators).
    Root,
    /// MPI_PROC_NULL: the caller's group has the root, the caller is not it.
    ProcNull,
    Unknown(String),
}

pub(super) fn root_arg(v: Option<&Json>) -> RootArg {
    match v {
        None => RootArg::None,
        Some(Json::Number(n)) => match n.as_u64().and_then(|r| u32::try_from(r).ok()) {
            Some(r) => RootArg::Rank(r),
            None => RootArg::Unknown(n.to_string()),
        },
        Some(Json::String(s)) if s == "MPI_ROOT" => RootArg::Root,
        Some(Json::String(s)) if s == "MPI_PROC_NULL" => RootArg::ProcNull,
        Some(other) => RootArg::Unknown(other.to_string()),
    }
}

/// Where a collective call's instance is counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Context {
    /// A communicator as named at call `seq`.
    Comm { comm: Comm, seq: u64 },
    /// A window: the index (in the rank's collective calls) of the call that created it.
    Window { created: usize },
    /// A window the rank's calls never showed created.
    UnknownWindow(String),
    /// An MPI_Start of the persistent collective initialised by call `init`.
    Persistent { init: usize },
}

/// One rank's collective call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveCall {
    pub(crate) rank: u32,
    #[serde(with = "crate::parallel::func_name")]
    pub(crate) func: crate::parallel::FuncName,
    /// The collective operation: `func`, or for an MPI_Start the
    /// function that set the persistent collective up.
    #[serde(with = "crate::parallel::func_name")]
    pub(crate) operation: crate::parallel::FuncName,
    pub(crate) kind: CollectiveKind,
    pub(crate) post: u64,
    pub(crate) completion: Option<u64>,
    pub(super) context: Context,
    pub(super) root: RootArg,
    /// When and where the posting and the completing call ran.
    pub(crate) post_at: CallAt,
    pub(crate) completion_at: Option<CallAt>,
}

/// The communicator instance whose collectives `call` is counted among
/// (None for a window's or a persistent collective's calls, and for a
/// communicator not known).
pub(crate) fn comm_of(
    call: &CollectiveCall,
    ranks: &dyn super::WorldRanks,
) -> Option<crate::members::CommId> {
    match &call.context {
        Context::Comm { comm, seq } => ranks.comm_instance(call.rank, *seq, comm).map(|c| c.id),
        _ => None,
    }
}

/// Whether calls of `func` take part in one-sided epochs or persistent
/// collectives (whose matching refers to earlier instances: windows,
/// persistent set-ups).
pub(crate) fn refers_to_instances(func: &mpigram_mpispec::Func) -> bool {
    func.params.iter().any(|p| p.name == "win")
        || classify(func.name).is_some_and(|c| c.start == Start::Persistent)
}

/// Does `func` create a window (a collective over its communicator)?
pub(super) fn creates_window(func: &str) -> bool {
    func.starts_with("MPI_Win_create") || func.starts_with("MPI_Win_allocate")
}

/// The kind of collective `func` is (a large-count `_c` suffix removed),
/// and how it completes; None for other calls.
pub(super) fn classify(func: &str) -> Option<Classified> {
    use CollectiveKind::*;
    let blocking = |kind| {
        Some(Classified {
            kind,
            start: Start::Blocking,
        })
    };
    match func {
        "MPI_Comm_dup"
        | "MPI_Comm_dup_with_info"
        | "MPI_Comm_split"
        | "MPI_Comm_split_type"
        | "MPI_Comm_create" => return blocking(AllToAll),
        "MPI_Comm_idup" | "MPI_Comm_idup_with_info" => {
            return Some(Classified {
                kind: AllToAll,
                start: Start::Request,
            });
        }
        f if creates_window(f) => return blocking(AllToAll),
        "MPI_Win_fence" | "MPI_Win_free" => return blocking(AllToAll),
        _ => {}
    }
    let (op, start) = if let Some(op) = func.strip_suffix("_init") {
        (op.strip_prefix("MPI_")?.to_owned(), Start::Persistent)
    } else if let Some(op) = mpigram_mpispec::blocking_operation(func.strip_prefix("MPI_")?) {
        // MPI_Ibarrier → Barrier
        (op, Start::Request)
    } else {
        (func.strip_prefix("MPI_")?.to_owned(), Start::Blocking)
    };
    let kind = match op.as_str() {
        "Barrier"
        | "Allgather"
        | "Allgatherv"
        | "Alltoall"
        | "Alltoallv"
        | "Alltoallw"
        | "Allreduce"
        | "Reduce_scatter"
        | "Reduce_scatter_block" => AllToAll,
        "Bcast" | "Scatter" | "Scatterv" => RootToAll,
        "Reduce" | "Gather" | "Gatherv" => AllToRoot,
        "Scan" => Scan,
        "Exscan" => ExclusiveScan,
        "Neighbor_allgather"
        | "Neighbor_allgatherv"
        | "Neighbor_alltoall"
        | "Neighbor_alltoallv"
        | "Neighbor_alltoallw" => Neighborhood,
        _ => return None,
    };
    Some(Classified { kind, start })
}

/// One process's part in a collective instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Participant {
    /// World rank.
    pub rank: u32,
    /// The call that posted it (the collective, or MPI_Start).
    pub post: u64,
    /// The call that completed it: `post` for blocking calls, a Wait or
    /// Test for requests; None when no traced call shows it.
    pub completion: Option<u64>,
    /// When and where those calls ran (when read from a trace).
    pub post_at: CallAt,
    pub completion_at: Option<CallAt>,
}

/// One collective operation: the k-th collective call of each member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveInstance {
    /// The communicator (for window calls: the window's).
    pub comm: CommId,
    /// The function the first participant called (`MPI_Allreduce`,
    /// `MPI_Start` for a started persistent collective).
    pub func: &'static str,
    /// The operation as the first participant posted it: `func`, or for a
    /// started persistent collective its `MPI_*_init` function.
    pub operation: &'static str,
    /// For a started persistent collective, what the start runs.
    pub kind: CollectiveKind,
    /// World rank of the root of a rooted collective.
    pub root: Option<u32>,
    /// By world rank.
    pub participants: Vec<Participant>,
}

/// A collective call that is in no instance, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmatchedCollective {
    /// World rank of the caller.
    pub rank: u32,
    pub func: &'static str,
    pub post: u64,
    pub reason: CollectiveReason,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CollectiveReason {
    /// The communicator's instance is not known (not created in the trace).
    UnknownComm(Comm),
    /// The window was not created by a matched collective.
    UnknownWindow(String),
    /// Not every member made this collective call (a killed rank, or ranks
    /// that were not traced).
    MissingMembers { expected: u32, found: u32 },
    /// Members named different roots, or a root no member could place.
    Root,
    /// Members made different collective calls.
    Mismatch,
}

impl fmt::Display for CollectiveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveReason::UnknownComm(c) => write!(f, "communicator {c} is not known"),
            CollectiveReason::UnknownWindow(w) => write!(f, "window {w} is not known"),
            CollectiveReason::MissingMembers { expected, found } => {
                write!(f, "{found} of {expected} members made this call")
            }
            CollectiveReason::Root => f.write_str("the members do not agree on the root"),
            CollectiveReason::Mismatch => {
                f.write_str("the members made different collective calls")
            }
        }
    }
}

/// The collective operations of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collectives {
    /// In the order their first participant (lowest rank) posted them.
    pub instances: Vec<CollectiveInstance>,
    /// By rank, each rank's in posting order.
    pub unmatched: Vec<UnmatchedCollective>,
}

/// The world rank of the root `call` names, if it names one.
pub(super) fn world_root(
    ranks: &dyn WorldRanks,
    call: &CollectiveCall,
    comm: &Comm,
    seq: u64,
) -> Option<u32> {
    match call.root {
        RootArg::Rank(r) => ranks.world_rank(call.rank, seq, comm, r),
        RootArg::Root => Some(call.rank),
        RootArg::None | RootArg::ProcNull | RootArg::Unknown(_) => None,
    }
}
