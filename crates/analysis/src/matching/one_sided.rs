//! One-sided synchronisation epochs, besides fences (which are collectives
//! over the window, see [`super::collectives`]).
//!
//! General active target: an origin's access epoch (MPI_Win_start(group) …
//! MPI_Win_complete) pairs with the target's exposure epoch
//! (MPI_Win_post(group) … MPI_Win_wait, or an MPI_Win_test that returned
//! true). For one origin and one target on one window, the k-th start
//! naming the target pairs with the k-th post naming the origin. Groups
//! are followed from MPI_Comm_group and MPI_Win_get_group through
//! MPI_Group_incl and MPI_Group_excl; an epoch whose group was built
//! otherwise is reported unmatched.
//!
//! Passive target: each MPI_Win_lock pairs with the next MPI_Win_unlock of
//! the same target on the same window (MPI_Win_lock_all with
//! MPI_Win_unlock_all).

use super::collectives::{CollectiveCall, Context};
use super::operations::{flag, items, name};
use super::{Comm, WorldRanks};
use crate::decode::DecodedCall;
use rustc_hash::FxHashMap;
use serde_json::Value as Json;
use std::collections::VecDeque;
use std::fmt;

/// How a group was made, in terms of the rank's communicators and windows.
#[derive(Clone, Debug, PartialEq, Eq)]
enum GroupDef {
    Comm {
        comm: Comm,
        seq: u64,
    },
    /// The group of the window created by collective call `created`.
    Window {
        created: usize,
    },
    Incl {
        parent: Box<GroupDef>,
        ranks: Vec<u32>,
    },
    Excl {
        parent: Box<GroupDef>,
        ranks: Vec<u32>,
    },
    /// Built by a call this module does not follow.
    Unknown(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum EpochCall {
    Post(GroupDef),
    Start(GroupDef),
    Complete,
    /// MPI_Win_wait, or MPI_Win_test that returned true.
    Wait,
    /// A rank in the window's communicator.
    Lock {
        target: Option<u32>,
        exclusive: bool,
    },
    LockAll,
    Unlock {
        target: Option<u32>,
    },
    UnlockAll,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct WindowEvent {
    seq: u64,
    func: &'static str,
    /// The collective call that created the window; None if not seen.
    window: Option<usize>,
    call: EpochCall,
}

/// One rank's groups and window synchronisation calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OneSidedLog {
    groups: FxHashMap<String, GroupDef>,
    events: Vec<WindowEvent>,
}

impl OneSidedLog {
    /// `windows`: each live window's creating collective call.
    pub(super) fn record(
        &mut self,
        call: &DecodedCall,
        func: &str,
        windows: &FxHashMap<String, usize>,
    ) {
        let a = &call.args;
        let group = |key: &str| {
            name(a.get(key))
                .map(|g| {
                    self.groups
                        .get(g)
                        .cloned()
                        .unwrap_or_else(|| GroupDef::Unknown(g.to_owned()))
                })
                .unwrap_or_else(|| GroupDef::Unknown("MPI_GROUP_NULL".into()))
        };
        let ranks = |key: &str| -> Vec<u32> {
            items(a.get(key))
                .iter()
                .filter_map(|r| r.as_u64().and_then(|r| u32::try_from(r).ok()))
                .collect()
        };
        let window = name(a.get("win")).and_then(|w| windows.get(w).copied());
        let new_group = match func {
            "MPI_Comm_group" => Some(GroupDef::Comm {
                comm: Comm::from_name(a.get("comm").and_then(Json::as_str).unwrap_or("none")),
                seq: call.seq,
            }),
            "MPI_Win_get_group" => Some(match window {
                Some(created) => GroupDef::Window { created },
                None => GroupDef::Unknown(func.to_owned()),
            }),
            "MPI_Group_incl" => Some(GroupDef::Incl {
                parent: Box::new(group("group")),
                ranks: ranks("ranks"),
            }),
            "MPI_Group_excl" => Some(GroupDef::Excl {
                parent: Box::new(group("group")),
                ranks: ranks("ranks"),
            }),
            "MPI_Group_free" => None,
            f if f.starts_with("MPI_Group_") || f == "MPI_Comm_remote_group" => {
                Some(GroupDef::Unknown(f.to_owned()))
            }
            _ => None,
        };
        if let Some(def) = new_group {
            let key = if func.starts_with("MPI_Group_") {
                "newgroup"
            } else {
                "group"
            };
            // Queries (MPI_Group_size) make no group.
            if let Some(g) = name(a.get(key)) {
                self.groups.insert(g.to_owned(), def);
            }
            return;
        }
        let target = || {
            a.get("rank")
                .and_then(Json::as_u64)
                .and_then(|r| u32::try_from(r).ok())
        };
        let epoch = match func {
            "MPI_Win_post" => EpochCall::Post(group("group")),
            "MPI_Win_start" => EpochCall::Start(group("group")),
            "MPI_Win_complete" => EpochCall::Complete,
            "MPI_Win_wait" => EpochCall::Wait,
            "MPI_Win_test" if flag(a.get("flag")) => EpochCall::Wait,
            "MPI_Win_lock" => EpochCall::Lock {
                target: target(),
                exclusive: a.get("lock_type").and_then(Json::as_str) == Some("MPI_LOCK_EXCLUSIVE"),
            },
            "MPI_Win_unlock" => EpochCall::Unlock { target: target() },
            "MPI_Win_lock_all" => EpochCall::LockAll,
            "MPI_Win_unlock_all" => EpochCall::UnlockAll,
            _ => return,
        };
        self.events.push(WindowEvent {
            seq: call.seq,
            func: call.func,
            window,
            call: epoch,
        });
    }
}

/// A matched pair of general-active-target epochs between one origin and one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exposure {
    /// The window: the index in [`super::Collectives::instances`] of its creation.
    pub window: usize,
    /// World ranks.
    pub origin: u32,
    pub target: u32,
    /// The origin's MPI_Win_start and MPI_Win_complete (None: not seen).
    pub start: u64,
    pub complete: Option<u64>,
    /// The target's MPI_Win_post and the MPI_Win_wait/test that closed it.
    pub post: u64,
    pub wait: Option<u64>,
}

/// A passive-target epoch of one origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockEpoch {
    pub window: usize,
    pub origin: u32,
    /// World rank of the target; None for MPI_Win_lock_all.
    pub target: Option<u32>,
    pub exclusive: bool,
    pub lock: u64,
    pub unlock: u64,
}

/// A window synchronisation call that pairs with nothing, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmatchedEpoch {
    pub rank: u32,
    pub func: &'static str,
    pub seq: u64,
    pub reason: EpochReason,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EpochReason {
    /// The window's creation was not matched (or not traced).
    UnknownWindow,
    /// The group's world ranks are not known (built by this call).
    UnknownGroup(String),
    /// The target rank of a lock is not known.
    UnknownTarget,
    /// A start naming a target that posted no matching exposure (or the reverse).
    NoPartner {
        peer: u32,
    },
    /// An epoch that was opened and never closed, or closed and never opened.
    NotClosed,
    NotOpened,
}

impl fmt::Display for EpochReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EpochReason::UnknownWindow => f.write_str("the window's creation is not known"),
            EpochReason::UnknownGroup(how) => write!(f, "the group's ranks are not known ({how})"),
            EpochReason::UnknownTarget => f.write_str("the target rank is not known"),
            EpochReason::NoPartner { peer } => write!(f, "rank {peer} has no matching epoch"),
            EpochReason::NotClosed => f.write_str("the epoch is never closed"),
            EpochReason::NotOpened => f.write_str("no open epoch to close"),
        }
    }
}

/// The one-sided synchronisation of a run (fences are collectives).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OneSided {
    pub exposures: Vec<Exposure>,
    pub locks: Vec<LockEpoch>,
    pub unmatched: Vec<UnmatchedEpoch>,
}

/// An epoch of one rank, half of a pair.
struct Half {
    rank: u32,
    func: &'static str,
    open: u64,
    close: Option<u64>,
}

/// Pairs the epochs of every rank's log. `collectives[r]` and
/// `instance_of[r]`: rank r's collective calls and their instances.
pub(super) fn match_epochs(
    logs: &[(u32, OneSidedLog)],
    collectives: &[Vec<CollectiveCall>],
    instance_of: &[Vec<Option<usize>>],
    ranks: &dyn WorldRanks,
) -> OneSided {
    let mut out = OneSided::default();
    let mut starts: FxHashMap<(usize, u32, u32), VecDeque<usize>> = FxHashMap::default();
    let mut posts: FxHashMap<(usize, u32, u32), VecDeque<usize>> = FxHashMap::default();
    let mut halves: Vec<Half> = Vec::new();
    for (r, (rank, log)) in logs.iter().enumerate() {
        let rank = *rank;
        let calls = &collectives[r];
        // The window's communicator as named at its creation.
        let window_comm = |created: usize| match &calls[created].context {
            Context::Comm { comm, seq } => Some((comm.clone(), *seq)),
            _ => None,
        };
        let unmatched = |e: &WindowEvent, reason| UnmatchedEpoch {
            rank,
            func: e.func,
            seq: e.seq,
            reason,
        };
        // Open epochs by window: access (start), exposure (post), locks by target.
        let mut access: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
        let mut exposure: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
        let mut locks: FxHashMap<(usize, Option<u32>), (u64, bool, &'static str)> =
            FxHashMap::default();
        for e in &log.events {
            let Some(created) = e.window else {
                out.unmatched.push(unmatched(e, EpochReason::UnknownWindow));
                continue;
            };
            let Some(window) = instance_of[r][created] else {
                out.unmatched.push(unmatched(e, EpochReason::UnknownWindow));
                continue;
            };
            match &e.call {
                EpochCall::Post(group) | EpochCall::Start(group) => {
                    let peers = match world_group(group, rank, calls, ranks) {
                        Ok(p) => p,
                        Err(how) => {
                            out.unmatched
                                .push(unmatched(e, EpochReason::UnknownGroup(how)));
                            continue;
                        }
                    };
                    let is_post = matches!(e.call, EpochCall::Post(_));
                    let open = if is_post { &mut exposure } else { &mut access };
                    let mut mine = Vec::new();
                    for peer in peers {
                        let h = halves.len();
                        halves.push(Half {
                            rank,
                            func: e.func,
                            open: e.seq,
                            close: None,
                        });
                        mine.push(h);
                        if is_post {
                            posts.entry((window, peer, rank)).or_default().push_back(h);
                        } else {
                            starts.entry((window, rank, peer)).or_default().push_back(h);
                        }
                    }
                    open.insert(window, mine);
                }
                EpochCall::Complete | EpochCall::Wait => {
                    let open = if e.call == EpochCall::Wait {
                        &mut exposure
                    } else {
                        &mut access
                    };
                    match open.remove(&window) {
                        Some(mine) => {
                            for h in mine {
                                halves[h].close = Some(e.seq);
                            }
                        }
                        None => out.unmatched.push(unmatched(e, EpochReason::NotOpened)),
                    }
                }
                EpochCall::Lock { .. }
                | EpochCall::LockAll
                | EpochCall::Unlock { .. }
                | EpochCall::UnlockAll => {
                    let target = match &e.call {
                        EpochCall::Lock { target, .. } | EpochCall::Unlock { target } => {
                            let world = target
                                .zip(window_comm(created))
                                .and_then(|(t, (comm, seq))| ranks.world_rank(rank, seq, &comm, t));
                            if world.is_none() {
                                out.unmatched.push(unmatched(e, EpochReason::UnknownTarget));
                                continue;
                            }
                            world
                        }
                        _ => None,
                    };
                    match &e.call {
                        EpochCall::Lock { exclusive, .. } => {
                            locks.insert((window, target), (e.seq, *exclusive, e.func));
                        }
                        EpochCall::LockAll => {
                            locks.insert((window, None), (e.seq, false, e.func));
                        }
                        _ => match locks.remove(&(window, target)) {
                            Some((lock, exclusive, _)) => out.locks.push(LockEpoch {
                                window,
                                origin: rank,
                                target,
                                exclusive,
                                lock,
                                unlock: e.seq,
                            }),
                            None => out.unmatched.push(unmatched(e, EpochReason::NotOpened)),
                        },
                    }
                }
            }
        }
        let mut open_locks: Vec<_> = locks.into_values().collect();
        open_locks.sort_unstable();
        for (seq, _, func) in open_locks {
            out.unmatched.push(UnmatchedEpoch {
                rank,
                func,
                seq,
                reason: EpochReason::NotClosed,
            });
        }
    }
    let mut keys: Vec<_> = starts.keys().chain(posts.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let (window, origin, target) = key;
        let mut s = starts.remove(&key).unwrap_or_default();
        let mut p = posts.remove(&key).unwrap_or_default();
        loop {
            match (s.pop_front(), p.pop_front()) {
                (Some(a), Some(b)) => out.exposures.push(Exposure {
                    window,
                    origin,
                    target,
                    start: halves[a].open,
                    complete: halves[a].close,
                    post: halves[b].open,
                    wait: halves[b].close,
                }),
                (Some(h), None) | (None, Some(h)) => {
                    let half = &halves[h];
                    let peer = if half.rank == origin { target } else { origin };
                    out.unmatched.push(UnmatchedEpoch {
                        rank: half.rank,
                        func: half.func,
                        seq: half.open,
                        reason: EpochReason::NoPartner { peer },
                    });
                }
                (None, None) => break,
            }
        }
    }
    out.unmatched.sort_by_key(|u| (u.rank, u.seq));
    out
}

/// The world ranks of a group; Err says how it was built when not known.
fn world_group(
    group: &GroupDef,
    rank: u32,
    calls: &[CollectiveCall],
    ranks: &dyn WorldRanks,
) -> Result<Vec<u32>, String> {
    let of_comm = |comm: &Comm, seq: u64| -> Result<Vec<u32>, String> {
        let c = ranks
            .comm_instance(rank, seq, comm)
            .ok_or_else(|| format!("{comm} is not known"))?;
        (0..c.size)
            .map(|i| {
                ranks
                    .world_rank(rank, seq, comm, i)
                    .ok_or_else(|| format!("rank {i} of {comm} is not known"))
            })
            .collect()
    };
    match group {
        GroupDef::Comm { comm, seq } => of_comm(comm, *seq),
        GroupDef::Window { created } => match &calls[*created].context {
            Context::Comm { comm, seq } => of_comm(comm, *seq),
            _ => Err("the window's communicator is not known".into()),
        },
        GroupDef::Incl {
            parent,
            ranks: picked,
        } => {
            let parent = world_group(parent, rank, calls, ranks)?;
            picked
                .iter()
                .map(|&i| {
                    parent
                        .get(i as usize)
                        .copied()
                        .ok_or_else(|| format!("rank {i} is outside the group"))
                })
                .collect()
        }
        GroupDef::Excl {
            parent,
            ranks: left_out,
        } => {
            let parent = world_group(parent, rank, calls, ranks)?;
            Ok(parent
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !left_out.contains(&(*i as u32)))
                .map(|(_, w)| w)
                .collect())
        }
        GroupDef::Unknown(how) => Err(how.clone()),
    }
}
