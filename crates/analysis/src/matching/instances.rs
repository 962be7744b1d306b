//! Collective instances found as calls are read, holding only the
//! instances whose members are not all there (or not all complete) yet.
//!
//! The k-th collective call of each member on one communicator instance
//! (window, persistent collective) is one instance. An instance is
//! *formed* when its last member posts: from then on the calls' order of
//! completion is all that is left to learn. It is *settled* when every
//! member's call completed, or is known never to: then it is reported
//! whole.

use super::collectives::{
    CollectiveCall, CollectiveInstance, CollectiveKind, CollectiveReason, Context, Participant,
    UnmatchedCollective, world_root,
};
use super::{Comm, WorldRanks};
use crate::members::CommId;
use rustc_hash::FxHashMap;

/// A collective call: its rank and its index among the rank's collective calls.
pub(crate) type CallKey = (u32, usize);

/// What the k-th call is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Parent {
    Comm(CommId),
    /// Calls on the window created by slot `.0`.
    Window(u64),
    /// Starts of the persistent collective set up by slot `.0`.
    Started(u64),
}

struct Member {
    key: CallKey,
    call: CollectiveCall,
    root: Option<u32>,
    settled: bool,
}

struct Slot {
    expected: u32,
    comm: CommId,
    members: Vec<Member>,
    /// Formed: Ok if an instance, Err why not.
    formed: Option<Result<(), CollectiveReason>>,
    /// A window's creation or a persistent setup, which later calls name.
    referenced: bool,
}

/// What a window's creation or a persistent setup became, for the calls
/// that name it.
#[derive(Clone, Copy)]
struct Referenced {
    /// None: the call was in no slot.
    slot: Option<u64>,
    post: u64,
    expected: u32,
    comm: CommId,
    root: Option<u32>,
}

/// What this part of the matcher tells its user.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    /// Every member of instance `slot` posted its call (completions may
    /// be missing yet); `calls` names each participant's call.
    Formed {
        slot: u64,
        instance: CollectiveInstance,
        calls: Vec<CallKey>,
    },
    /// Every member's call completed, or never will.
    Settled {
        slot: u64,
        instance: CollectiveInstance,
        calls: Vec<CallKey>,
    },
    Unmatched {
        call: CallKey,
        unmatched: UnmatchedCollective,
    },
}

/// Whether a window's creation made an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowState {
    /// Not all members created it yet.
    Pending,
    Instance(u64),
    Unknown,
}

#[derive(Default)]
pub(crate) struct Instances {
    /// Slots still missing members, by (parent, k).
    open: FxHashMap<(Parent, u64), u64>,
    slots: FxHashMap<u64, Slot>,
    next: u64,
    counters: FxHashMap<(u32, Parent), u64>,
    referenced: FxHashMap<CallKey, Referenced>,
    /// Referenced slots once formed: an instance or not.
    resolved: FxHashMap<u64, bool>,
    /// The slot of each call whose completion is still to come.
    waiting: FxHashMap<CallKey, u64>,
}

impl Instances {
    pub(crate) fn post(
        &mut self,
        key: CallKey,
        call: CollectiveCall,
        ranks: &dyn WorldRanks,
        out: &mut Vec<Found>,
    ) {
        let names =
            call.kind == CollectiveKind::Setup || super::collectives::creates_window(call.func);
        let unknown = |reason| (Err(reason), 0, CommId::World, None);
        let (parent, expected, comm, root) = match &call.context {
            Context::Comm { comm, seq } => match ranks.comm_instance(call.rank, *seq, comm) {
                Some(c) => {
                    let root = world_root(ranks, &call, comm, *seq);
                    (Ok(Parent::Comm(c.id)), c.processes(), c.id, root)
                }
                None => unknown(CollectiveReason::UnknownComm(comm.clone())),
            },
            Context::Window { created } => match self.referenced.get(&(key.0, *created)) {
                Some(Referenced {
                    slot: Some(s),
                    expected,
                    comm,
                    ..
                }) => (Ok(Parent::Window(*s)), *expected, *comm, None),
                r => unknown(CollectiveReason::UnknownWindow(format!(
                    "of call {}",
                    r.map_or(0, |r| r.post)
                ))),
            },
            Context::UnknownWindow(w) => unknown(CollectiveReason::UnknownWindow(w.clone())),
            Context::Persistent { init } => match self.referenced.get(&(key.0, *init)) {
                Some(Referenced {
                    slot: Some(s),
                    expected,
                    comm,
                    root,
                    ..
                }) => (Ok(Parent::Started(*s)), *expected, *comm, *root),
                r => unknown(CollectiveReason::UnknownComm(Comm::Other(format!(
                    "of call {}",
                    r.map_or(0, |r| r.post)
                )))),
            },
        };
        let parent = match parent {
            Ok(p) => p,
            Err(reason) => {
                if names {
                    let post = call.post;
                    self.referenced.insert(
                        key,
                        Referenced {
                            slot: None,
                            post,
                            expected,
                            comm,
                            root,
                        },
                    );
                }
                out.push(unmatched(key, &call, reason));
                return;
            }
        };
        let k = self.counters.entry((call.rank, parent)).or_default();
        let at = (parent, *k);
        *k += 1;
        let s = *self.open.entry(at).or_insert_with(|| {
            self.next += 1;
            self.slots.insert(
                self.next,
                Slot {
                    expected,
                    comm,
                    members: Vec::new(),
                    formed: None,
                    referenced: false,
                },
            );
            self.next
        });
        if names {
            self.referenced.insert(
                key,
                Referenced {
                    slot: Some(s),
                    post: call.post,
                    expected,
                    comm,
                    root,
                },
            );
        }
        let settled = call.completion.is_some();
        if !settled {
            self.waiting.insert(key, s);
        }
        let slot = self.slots.get_mut(&s).expect("an open slot");
        slot.referenced |= names;
        slot.members.push(Member {
            key,
            call,
            root,
            settled,
        });
        if slot.members.len() as u32 == slot.expected {
            self.open.remove(&at);
            self.form(s, out);
        }
    }

    /// Call `key` completed at call `seq` (None: never will).
    pub(crate) fn settle(
        &mut self,
        key: CallKey,
        completion: Option<(u64, super::CallAt)>,
        out: &mut Vec<Found>,
    ) {
        let Some(s) = self.waiting.remove(&key) else {
            return;
        };
        let Some(slot) = self.slots.get_mut(&s) else {
            return;
        };
        if let Some(m) = slot.members.iter_mut().find(|m| m.key == key) {
            m.settled = true;
            if let Some((seq, at)) = completion {
                m.call.completion = Some(seq);
                m.call.completion_at = Some(at);
            }
        }
        self.release(s, out);
    }

    /// Whether the window created by call `created` of `rank` is an instance.
    pub(crate) fn window(&self, rank: u32, created: usize) -> WindowState {
        match self.referenced.get(&(rank, created)) {
            Some(Referenced { slot: Some(s), .. }) => match self.resolved.get(s) {
                Some(true) => WindowState::Instance(*s),
                Some(false) => WindowState::Unknown,
                None => WindowState::Pending,
            },
            _ => WindowState::Unknown,
        }
    }

    /// Every rank's calls have been read: slots missing members are no
    /// instances; formed ones settle with the completions they have.
    pub(crate) fn finish(&mut self, out: &mut Vec<Found>) {
        let mut open: Vec<u64> = self.open.drain().map(|(_, s)| s).collect();
        open.sort_unstable();
        for s in open {
            let slot = self.slots.get_mut(&s).expect("an open slot");
            let reason = CollectiveReason::MissingMembers {
                expected: slot.expected,
                found: slot.members.len() as u32,
            };
            slot.formed = Some(Err(reason.clone()));
            for m in &slot.members {
                out.push(unmatched(m.key, &m.call, reason.clone()));
            }
            if slot.referenced {
                self.resolved.insert(s, false);
            }
            self.slots.remove(&s);
        }
        self.waiting.clear();
        let mut formed: Vec<u64> = self.slots.keys().copied().collect();
        formed.sort_unstable();
        for s in formed {
            if let Some(slot) = self.slots.get_mut(&s) {
                slot.members.iter_mut().for_each(|m| m.settled = true);
            }
            self.release(s, out);
        }
    }

    /// All members are there: is it one instance?
    fn form(&mut self, s: u64, out: &mut Vec<Found>) {
        let slot = self.slots.get_mut(&s).expect("a slot");
        slot.members.sort_by_key(|m| m.key.0);
        let first = &slot.members[0].call;
        let mut roots = slot.members.iter().filter_map(|m| m.root);
        let root = roots.next();
        let rooted = matches!(
            first.kind,
            CollectiveKind::RootToAll | CollectiveKind::AllToRoot
        );
        let reason = if slot.members.iter().any(|m| {
            let c = &m.call;
            c.kind != first.kind || (c.func != first.func && !c.func.starts_with("MPI_Start"))
        }) {
            Some(CollectiveReason::Mismatch)
        } else if roots.any(|r| Some(r) != root) || (rooted && root.is_none()) {
            Some(CollectiveReason::Root)
        } else {
            None
        };
        if slot.referenced {
            self.resolved.insert(s, reason.is_none());
        }
        match reason {
            Some(reason) => {
                for m in &slot.members {
                    out.push(unmatched(m.key, &m.call, reason.clone()));
                }
                slot.formed = Some(Err(reason));
                for m in &slot.members {
                    self.waiting.remove(&m.key);
                }
                self.slots.remove(&s);
            }
            None => {
                slot.formed = Some(Ok(()));
                let instance = instance(slot, if rooted { root } else { None });
                let calls = slot.members.iter().map(|m| m.key).collect();
                out.push(Found::Formed {
                    slot: s,
                    instance,
                    calls,
                });
                self.release(s, out);
            }
        }
    }

    /// Reports and forgets a formed instance whose members all settled.
    fn release(&mut self, s: u64, out: &mut Vec<Found>) {
        let Some(slot) = self.slots.get(&s) else {
            return;
        };
        if slot.formed.is_none() || !slot.members.iter().all(|m| m.settled) {
            return;
        }
        let slot = self.slots.remove(&s).expect("present");
        if slot.formed == Some(Ok(())) {
            let first = &slot.members[0].call;
            let rooted = matches!(
                first.kind,
                CollectiveKind::RootToAll | CollectiveKind::AllToRoot
            );
            let root = slot.members.iter().find_map(|m| m.root);
            out.push(Found::Settled {
                slot: s,
                instance: instance(&slot, if rooted { root } else { None }),
                calls: slot.members.iter().map(|m| m.key).collect(),
            });
        }
    }
}

fn instance(slot: &Slot, root: Option<u32>) -> CollectiveInstance {
    let first = &slot.members[0].call;
    CollectiveInstance {
        comm: slot.comm,
        func: first.func,
        operation: first.operation,
        kind: first.kind,
        root,
        participants: slot
            .members
            .iter()
            .map(|m| Participant {
                rank: m.call.rank,
                post: m.call.post,
                completion: m.call.completion,
                post_at: m.call.post_at,
                completion_at: m.call.completion_at,
            })
            .collect(),
    }
}

fn unmatched(key: CallKey, call: &CollectiveCall, reason: CollectiveReason) -> Found {
    Found::Unmatched {
        call: key,
        unmatched: UnmatchedCollective {
            rank: call.rank,
            func: call.func,
            post: call.post,
            reason,
        },
    }
}
