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

use super::instances::WindowState;
use super::operations::{flag, items, name};
use super::{CallAt, Comm, WorldRanks};
use crate::decode::DecodedCall;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::VecDeque;
use std::fmt;

/// How a group was made, in terms of the rank's communicators and windows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum GroupDef {
    Comm {
        comm: Comm,
        seq: u64,
    },
    /// The group of a window: the communicator it was created over.
    Window {
        comm: Comm,
        seq: u64,
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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// A window as a rank's calls know it: the collective call that created
/// it (its index among the rank's collective calls), over which
/// communicator (as named at call `seq`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WindowRef {
    pub(crate) created: usize,
    pub(crate) comm: Comm,
    pub(crate) seq: u64,
}

/// A window synchronisation call of one rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WindowEvent {
    seq: u64,
    #[serde(with = "crate::parallel::func_name")]
    func: crate::parallel::FuncName,
    at: CallAt,
    /// The window; None if its creation was not seen.
    window: Option<WindowRef>,
    call: EpochCall,
}

impl WindowEvent {
    /// What the call is to the graph of the critical path: (it opens
    /// exposures, it closes epochs).
    pub(crate) fn opens_closes(&self) -> (bool, bool) {
        match self.call {
            EpochCall::Post(_) => (true, false),
            EpochCall::Complete | EpochCall::Wait => (false, true),
            _ => (false, false),
        }
    }

    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    pub(crate) fn at(&self) -> CallAt {
        self.at
    }
}

/// One rank's groups, for the window synchronisation calls that name them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OneSidedLog {
    groups: FxHashMap<String, GroupDef>,
}

impl OneSidedLog {
    /// The event of a window synchronisation call (None for other calls,
    /// of which group constructors are remembered). `windows`: each live
    /// window by name.
    pub(super) fn record(
        &mut self,
        call: &DecodedCall,
        func: &str,
        at: CallAt,
        windows: &FxHashMap<String, WindowRef>,
    ) -> Option<WindowEvent> {
        let group = |key: &str| {
            name(call.arg(key))
                .map(|g| {
                    self.groups
                        .get(g)
                        .cloned()
                        .unwrap_or_else(|| GroupDef::Unknown(g.to_owned()))
                })
                .unwrap_or_else(|| GroupDef::Unknown("MPI_GROUP_NULL".into()))
        };
        let ranks = |key: &str| -> Vec<u32> {
            items(call.arg(key))
                .iter()
                .filter_map(|r| r.as_u64().and_then(|r| u32::try_from(r).ok()))
                .collect()
        };
        let window = name(call.arg("win")).and_then(|w| windows.get(w).cloned());
        let new_group = match func {
            "MPI_Comm_group" => Some(GroupDef::Comm {
                comm: Comm::from_name(call.arg("comm").and_then(Json::as_str).unwrap_or("none")),
                seq: call.seq,
            }),
            "MPI_Win_get_group" => Some(match &window {
                Some(w) => GroupDef::Window {
                    comm: w.comm.clone(),
                    seq: w.seq,
                },
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
            if let Some(g) = name(call.arg(key)) {
                self.groups.insert(g.to_owned(), def);
            }
            return None;
        }
        let target = || {
            call.arg("rank")
                .and_then(Json::as_u64)
                .and_then(|r| u32::try_from(r).ok())
        };
        let epoch = match func {
            "MPI_Win_post" => EpochCall::Post(group("group")),
            "MPI_Win_start" => EpochCall::Start(group("group")),
            "MPI_Win_complete" => EpochCall::Complete,
            "MPI_Win_wait" => EpochCall::Wait,
            "MPI_Win_test" if flag(call.arg("flag")) => EpochCall::Wait,
            "MPI_Win_lock" => EpochCall::Lock {
                target: target(),
                exclusive: call.arg("lock_type").and_then(Json::as_str)
                    == Some("MPI_LOCK_EXCLUSIVE"),
            },
            "MPI_Win_unlock" => EpochCall::Unlock { target: target() },
            "MPI_Win_lock_all" => EpochCall::LockAll,
            "MPI_Win_unlock_all" => EpochCall::UnlockAll,
            _ => return None,
        };
        Some(WindowEvent {
            seq: call.seq,
            func: call.func,
            at,
            window,
            call: epoch,
        })
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
    /// When and where those four calls ran (when read from a trace).
    pub start_at: CallAt,
    pub complete_at: Option<CallAt>,
    pub post_at: CallAt,
    pub wait_at: Option<CallAt>,
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
    open_at: CallAt,
    close: Option<(u64, CallAt)>,
    /// Closed, or its rank ended.
    settled: bool,
    /// The half it pairs with.
    partner: Option<u64>,
    /// (window, origin, target).
    key: (u64, u32, u32),
}

/// What this part of the matcher tells its user.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    /// MPI_Win_post of `rank` at `seq` opens these halves (exposures).
    Opening {
        rank: u32,
        seq: u64,
        halves: Vec<u64>,
    },
    /// A window synchronisation call of `rank` at `seq` closes these
    /// halves: access epochs (MPI_Win_complete) or exposures.
    Closing {
        rank: u32,
        seq: u64,
        access: bool,
        halves: Vec<u64>,
    },
    /// Two halves paired, both closed (or never to be).
    Exposure {
        exposure: Exposure,
        /// The origin's half and the target's.
        halves: (u64, u64),
    },
    /// A half that pairs with nothing.
    Unpaired {
        half: u64,
        unmatched: UnmatchedEpoch,
    },
    Lock(LockEpoch),
    Unmatched(UnmatchedEpoch),
}

/// One rank's open epochs.
#[derive(Default)]
struct RankEpochs {
    /// Events waiting for their window's creation to be matched, in order.
    waiting: VecDeque<WindowEvent>,
    /// Open access (start) and exposure (post) epochs by window: their halves.
    access: FxHashMap<u64, Vec<u64>>,
    exposure: FxHashMap<u64, Vec<u64>>,
    locks: FxHashMap<(u64, Option<u32>), (u64, bool, &'static str)>,
    /// Every call of the rank has been read; and its open epochs closed out.
    ending: bool,
    ended: bool,
}

/// Pairs the epochs of every rank as their calls are read.
#[derive(Default)]
pub(crate) struct Epochs {
    ranks: FxHashMap<u32, RankEpochs>,
    halves: FxHashMap<u64, Half>,
    next: u64,
    /// Unpaired starts and posts by (window, origin, target), in order.
    starts: FxHashMap<(u64, u32, u32), VecDeque<u64>>,
    posts: FxHashMap<(u64, u32, u32), VecDeque<u64>>,
}

impl Epochs {
    /// A window synchronisation call of `rank`. `window` tells whether a
    /// window's creation is an instance.
    pub(crate) fn record(
        &mut self,
        rank: u32,
        event: WindowEvent,
        ranks: &dyn WorldRanks,
        window: &dyn Fn(u32, usize) -> WindowState,
        out: &mut Vec<Found>,
    ) {
        self.ranks.entry(rank).or_default().waiting.push_back(event);
        self.advance(rank, ranks, window, out);
    }

    /// Window creations may have been matched: events waiting for them go on.
    pub(crate) fn windows_known(
        &mut self,
        ranks: &dyn WorldRanks,
        window: &dyn Fn(u32, usize) -> WindowState,
        out: &mut Vec<Found>,
    ) {
        let mut waiting: Vec<u32> = self
            .ranks
            .iter()
            .filter(|(_, e)| !e.waiting.is_empty())
            .map(|(r, _)| *r)
            .collect();
        waiting.sort_unstable();
        for rank in waiting {
            self.advance(rank, ranks, window, out);
        }
    }

    /// Handles the waiting events of `rank` whose windows are known.
    fn advance(
        &mut self,
        rank: u32,
        ranks: &dyn WorldRanks,
        window: &dyn Fn(u32, usize) -> WindowState,
        out: &mut Vec<Found>,
    ) {
        loop {
            let Some(e) = self.ranks.get(&rank).and_then(|r| r.waiting.front()) else {
                self.close_if_ended(rank, out);
                return;
            };
            let state = match &e.window {
                None => WindowState::Unknown,
                Some(w) => window(rank, w.created),
            };
            let e = match state {
                WindowState::Pending => return,
                _ => self
                    .ranks
                    .get_mut(&rank)
                    .and_then(|r| r.waiting.pop_front())
                    .expect("a waiting event"),
            };
            match state {
                WindowState::Instance(w) => self.event(rank, w, e, ranks, out),
                _ => out.push(Found::Unmatched(unmatched(
                    rank,
                    &e,
                    EpochReason::UnknownWindow,
                ))),
            }
        }
    }

    fn event(
        &mut self,
        rank: u32,
        window: u64,
        e: WindowEvent,
        ranks: &dyn WorldRanks,
        out: &mut Vec<Found>,
    ) {
        match &e.call {
            EpochCall::Post(group) | EpochCall::Start(group) => {
                let peers = match world_group(group, rank, ranks) {
                    Ok(p) => p,
                    Err(how) => {
                        out.push(Found::Unmatched(unmatched(
                            rank,
                            &e,
                            EpochReason::UnknownGroup(how),
                        )));
                        return;
                    }
                };
                let is_post = matches!(e.call, EpochCall::Post(_));
                let mut mine = Vec::new();
                for peer in peers {
                    let key = if is_post {
                        (window, peer, rank)
                    } else {
                        (window, rank, peer)
                    };
                    self.next += 1;
                    let h = self.next;
                    self.halves.insert(
                        h,
                        Half {
                            rank,
                            func: e.func,
                            open: e.seq,
                            open_at: e.at,
                            close: None,
                            settled: false,
                            partner: None,
                            key,
                        },
                    );
                    mine.push(h);
                    let (queue, other) = if is_post {
                        (&mut self.posts, &mut self.starts)
                    } else {
                        (&mut self.starts, &mut self.posts)
                    };
                    match other.get_mut(&key).and_then(VecDeque::pop_front) {
                        Some(partner) => {
                            self.halves.get_mut(&h).expect("inserted").partner = Some(partner);
                            if let Some(p) = self.halves.get_mut(&partner) {
                                p.partner = Some(h);
                            }
                        }
                        None => queue.entry(key).or_default().push_back(h),
                    }
                }
                if is_post {
                    out.push(Found::Opening {
                        rank,
                        seq: e.seq,
                        halves: mine.clone(),
                    });
                }
                let epochs = self.ranks.entry(rank).or_default();
                let open = if is_post {
                    &mut epochs.exposure
                } else {
                    &mut epochs.access
                };
                open.insert(window, mine);
            }
            EpochCall::Complete | EpochCall::Wait => {
                let epochs = self.ranks.entry(rank).or_default();
                let open = if e.call == EpochCall::Wait {
                    &mut epochs.exposure
                } else {
                    &mut epochs.access
                };
                match open.remove(&window) {
                    Some(mine) => {
                        for &h in &mine {
                            if let Some(half) = self.halves.get_mut(&h) {
                                half.close = Some((e.seq, e.at));
                                half.settled = true;
                            }
                        }
                        out.push(Found::Closing {
                            rank,
                            seq: e.seq,
                            access: e.call == EpochCall::Complete,
                            halves: mine.clone(),
                        });
                        for h in mine {
                            self.release(h, out);
                        }
                    }
                    None => out.push(Found::Unmatched(unmatched(
                        rank,
                        &e,
                        EpochReason::NotOpened,
                    ))),
                }
            }
            EpochCall::Lock { .. }
            | EpochCall::LockAll
            | EpochCall::Unlock { .. }
            | EpochCall::UnlockAll => {
                let target = match &e.call {
                    EpochCall::Lock { target, .. } | EpochCall::Unlock { target } => {
                        let world = target
                            .zip(e.window.as_ref())
                            .and_then(|(t, w)| ranks.world_rank(rank, w.seq, &w.comm, t));
                        if world.is_none() {
                            out.push(Found::Unmatched(unmatched(
                                rank,
                                &e,
                                EpochReason::UnknownTarget,
                            )));
                            return;
                        }
                        world
                    }
                    _ => None,
                };
                let locks = &mut self.ranks.entry(rank).or_default().locks;
                match &e.call {
                    EpochCall::Lock { exclusive, .. } => {
                        locks.insert((window, target), (e.seq, *exclusive, e.func));
                    }
                    EpochCall::LockAll => {
                        locks.insert((window, None), (e.seq, false, e.func));
                    }
                    _ => match locks.remove(&(window, target)) {
                        Some((lock, exclusive, _)) => out.push(Found::Lock(LockEpoch {
                            window: window as usize,
                            origin: rank,
                            target,
                            exclusive,
                            lock,
                            unlock: e.seq,
                        })),
                        None => out.push(Found::Unmatched(unmatched(
                            rank,
                            &e,
                            EpochReason::NotOpened,
                        ))),
                    },
                }
            }
        }
    }

    /// Every call of `rank` has been read: its open epochs never close
    /// (once its events waiting for their windows are handled).
    pub(crate) fn end_rank(&mut self, rank: u32, out: &mut Vec<Found>) {
        self.ranks.entry(rank).or_default().ending = true;
        self.close_if_ended(rank, out);
    }

    fn close_if_ended(&mut self, rank: u32, out: &mut Vec<Found>) {
        let Some(epochs) = self.ranks.get_mut(&rank) else {
            return;
        };
        if !epochs.ending || epochs.ended || !epochs.waiting.is_empty() {
            return;
        }
        epochs.ended = true;
        let mut open_locks: Vec<_> = epochs.locks.drain().map(|(_, l)| l).collect();
        open_locks.sort_unstable();
        for (seq, _, func) in open_locks {
            out.push(Found::Unmatched(UnmatchedEpoch {
                rank,
                func,
                seq,
                reason: EpochReason::NotClosed,
            }));
        }
        let open: Vec<u64> = epochs
            .access
            .drain()
            .chain(epochs.exposure.drain())
            .flat_map(|(_, h)| h)
            .collect();
        for h in open {
            if let Some(half) = self.halves.get_mut(&h) {
                half.settled = true;
            }
            self.release(h, out);
        }
    }

    /// Every rank's calls have been read: halves without partners have none.
    pub(crate) fn finish(&mut self, out: &mut Vec<Found>) {
        let mut ranks: Vec<u32> = self.ranks.keys().copied().collect();
        ranks.sort_unstable();
        for rank in ranks {
            let left: Vec<WindowEvent> = self
                .ranks
                .get_mut(&rank)
                .map(|r| r.waiting.drain(..).collect())
                .unwrap_or_default();
            for e in left {
                out.push(Found::Unmatched(unmatched(
                    rank,
                    &e,
                    EpochReason::UnknownWindow,
                )));
            }
            self.end_rank(rank, out);
        }
        let mut unpaired: Vec<u64> = self
            .starts
            .drain()
            .chain(self.posts.drain())
            .flat_map(|(_, q)| q)
            .collect();
        unpaired.sort_unstable();
        for h in unpaired {
            if let Some(half) = self.halves.remove(&h) {
                let (_, origin, target) = half.key;
                let peer = if half.rank == origin { target } else { origin };
                out.push(Found::Unpaired {
                    half: h,
                    unmatched: UnmatchedEpoch {
                        rank: half.rank,
                        func: half.func,
                        seq: half.open,
                        reason: EpochReason::NoPartner { peer },
                    },
                });
            }
        }
    }

    /// Reports a pair whose halves both settled.
    fn release(&mut self, h: u64, out: &mut Vec<Found>) {
        let Some(half) = self.halves.get(&h) else {
            return;
        };
        let Some(partner) = half.partner else {
            return;
        };
        if !half.settled || !self.halves.get(&partner).is_some_and(|p| p.settled) {
            return;
        }
        let a = self.halves.remove(&h).expect("present");
        let b = self.halves.remove(&partner).expect("present");
        let (window, origin, target) = a.key;
        let ((s, sh), (p, ph)) = if a.func.starts_with("MPI_Win_start") {
            ((a, h), (b, partner))
        } else {
            ((b, partner), (a, h))
        };
        out.push(Found::Exposure {
            exposure: Exposure {
                window: window as usize,
                origin,
                target,
                start: s.open,
                complete: s.close.map(|c| c.0),
                post: p.open,
                wait: p.close.map(|c| c.0),
                start_at: s.open_at,
                complete_at: s.close.map(|c| c.1),
                post_at: p.open_at,
                wait_at: p.close.map(|c| c.1),
            },
            halves: (sh, ph),
        });
    }
}

fn unmatched(rank: u32, e: &WindowEvent, reason: EpochReason) -> UnmatchedEpoch {
    UnmatchedEpoch {
        rank,
        func: e.func,
        seq: e.seq,
        reason,
    }
}

/// The world ranks of a group; Err says how it was built when not known.
fn world_group(group: &GroupDef, rank: u32, ranks: &dyn WorldRanks) -> Result<Vec<u32>, String> {
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
        GroupDef::Window { comm, seq } => of_comm(comm, *seq),
        GroupDef::Incl {
            parent,
            ranks: picked,
        } => {
            let parent = world_group(parent, rank, ranks)?;
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
            let parent = world_group(parent, rank, ranks)?;
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
