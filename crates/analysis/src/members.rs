//! Who the members of each communicator are: ranks in a communicator
//! translated to MPI_COMM_WORLD ranks, for matching messages across ranks
//! and for the communication matrix.
//!
//! Every rank logs its place in each communicator it joins (its rank, and
//! the instance its members agreed on at creation, see
//! [`CommEntry::instance`]). The members of one instance are the ranks
//! whose logs name it, each at its rank in it.

use mpigram_trace::{CommEntry, NO_RANK, Trace};
use rustc_hash::FxHashMap;

/// One group of a communicator instance: the world rank at each rank.
#[derive(Debug, Default)]
struct Group {
    world: Vec<u32>,
    /// Two world ranks claimed the same rank: the logs contradict each
    /// other, and nothing is translated through this group.
    conflict: bool,
}

/// Which communicator a call's communicator is, across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CommId {
    World,
    /// MPI_COMM_SELF of a world rank.
    SelfOf(u32),
    /// A created communicator: its instance, and the world rank of the first
    /// member of its group ([`NO_RANK`] for an inter-communicator, whose two
    /// groups are one instance).
    Created {
        instance: u64,
        leader: u32,
    },
}

/// A communicator instance as one member sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommInstance {
    pub id: CommId,
    /// Size of the caller's group.
    pub size: u32,
    /// Size of the remote group of an inter-communicator, else 0.
    pub remote_size: u32,
}

impl CommInstance {
    /// How many processes take part in a collective on it.
    pub fn processes(&self) -> u32 {
        self.size + self.remote_size
    }
}

/// Communicator membership of a whole trace.
#[derive(Debug, Default)]
pub struct Members {
    world_size: u32,
    /// Groups by (instance, world rank of their first member).
    groups: FxHashMap<(u64, u32), Group>,
    /// The first members of each instance's groups (two for an
    /// inter-communicator).
    leaders: FxHashMap<u64, Vec<u32>>,
    /// Each rank's log entries by communicator id, in call order.
    logs: FxHashMap<u32, FxHashMap<u64, Vec<CommEntry>>>,
}

impl Members {
    pub fn of(trace: &Trace) -> Members {
        let mut m = Members {
            world_size: trace
                .ranks
                .iter()
                .map(|r| r.meta.world_size)
                .max()
                .unwrap_or(0),
            ..Members::default()
        };
        for part in &trace.ranks {
            let me = part.meta.rank;
            let log = m.logs.entry(me).or_default();
            for e in &part.comms {
                log.entry(e.comm).or_default().push(*e);
                if e.instance == 0 || e.leader == NO_RANK {
                    continue;
                }
                let leaders = m.leaders.entry(e.instance).or_default();
                if !leaders.contains(&e.leader) {
                    leaders.push(e.leader);
                }
                let group = m.groups.entry((e.instance, e.leader)).or_default();
                let at = e.rank as usize;
                if at >= e.size as usize {
                    group.conflict = true;
                    continue;
                }
                if group.world.len() < e.size as usize {
                    group.world.resize(e.size as usize, NO_RANK);
                }
                match group.world[at] {
                    NO_RANK => group.world[at] = me,
                    w if w == me => {}
                    _ => group.conflict = true,
                }
            }
        }
        m
    }

    /// The world rank of `rank_in_comm` in the communicator named `comm`
    /// (as the decoder names it: `MPI_COMM_WORLD`, `MPI_COMM_SELF`,
    /// `comm3`) at call `seq` of world rank `rank`. In an
    /// inter-communicator, `rank_in_comm` is a rank of the remote group,
    /// as in its point-to-point calls. `None` when the trace cannot say
    /// (a communicator with processes outside the world, or one the
    /// tracer did not see created).
    pub fn world_rank(&self, rank: u32, seq: u64, comm: &str, rank_in_comm: u32) -> Option<u32> {
        match comm {
            "MPI_COMM_WORLD" => (rank_in_comm < self.world_size).then_some(rank_in_comm),
            "MPI_COMM_SELF" => (rank_in_comm == 0).then_some(rank),
            name => {
                let id: u64 = name.strip_prefix("comm")?.parse().ok()?;
                self.user_world_rank(rank, seq, id, rank_in_comm)
            }
        }
    }

    /// The communicator instance that `comm` names at call `seq` of world
    /// rank `rank`: two communicators with one id at different times are
    /// different instances. `None` when the trace cannot say.
    pub fn instance(&self, rank: u32, seq: u64, comm: &str) -> Option<CommInstance> {
        match comm {
            "MPI_COMM_WORLD" => Some(CommInstance {
                id: CommId::World,
                size: self.world_size,
                remote_size: 0,
            }),
            "MPI_COMM_SELF" => Some(CommInstance {
                id: CommId::SelfOf(rank),
                size: 1,
                remote_size: 0,
            }),
            name => {
                let id: u64 = name.strip_prefix("comm")?.parse().ok()?;
                let entry = self.entry(rank, seq, id)?;
                if entry.instance == 0 || entry.leader == NO_RANK {
                    return None;
                }
                Some(CommInstance {
                    // Both groups of an inter-communicator share its instance.
                    id: CommId::Created {
                        instance: entry.instance,
                        leader: if entry.inter { NO_RANK } else { entry.leader },
                    },
                    size: entry.size,
                    remote_size: if entry.inter { entry.remote_size } else { 0 },
                })
            }
        }
    }

    /// The latest entry of `rank`'s log for communicator `comm` at or before call `seq`.
    fn entry(&self, rank: u32, seq: u64, comm: u64) -> Option<&CommEntry> {
        let entries = self.logs.get(&rank)?.get(&comm)?;
        let after = entries.partition_point(|e| e.seq <= seq);
        entries[..after].last()
    }

    pub(crate) fn user_world_rank(
        &self,
        rank: u32,
        seq: u64,
        comm: u64,
        rank_in_comm: u32,
    ) -> Option<u32> {
        let entry = self.entry(rank, seq, comm)?;
        if entry.instance == 0 || entry.leader == NO_RANK {
            return None;
        }
        let leader = if entry.inter {
            *self
                .leaders
                .get(&entry.instance)?
                .iter()
                .find(|&&l| l != entry.leader)?
        } else {
            entry.leader
        };
        let group = self.groups.get(&(entry.instance, leader))?;
        if group.conflict {
            return None;
        }
        group
            .world
            .get(rank_in_comm as usize)
            .copied()
            .filter(|&w| w != NO_RANK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_grammar::Grammar;
    use mpigram_trace::{Ending, RankMeta, RankPart, Timing};

    fn part(rank: u32, comms: Vec<CommEntry>) -> RankPart {
        RankPart {
            meta: RankMeta {
                rank,
                world_size: 4,
                pid: 1,
                host: String::new(),
                mpi_library: String::new(),
                timing: Timing::default(),
                calls: 0,
                start_ns: 0,
                end_ns: 0,
                ending: Ending::Finalized,
                recorder_allocations: 0,
                ns_per_tick: 1.0,
                cpus: 0,
                cpu_share: None,
                clock_sync: Vec::new(),
                run: 0,
                lost: mpigram_trace::Lost::None,
                ended_in: None,
            },
            stats: Vec::new(),
            gaps: Default::default(),
            comms,
            times: Default::default(),
        }
    }

    fn entry(seq: u64, comm: u64, rank: u32, size: u32, leader: u32, instance: u64) -> CommEntry {
        CommEntry {
            seq,
            comm,
            rank,
            size,
            remote_size: 0,
            inter: false,
            leader,
            instance,
        }
    }

    fn trace(ranks: Vec<RankPart>) -> Trace {
        Trace {
            dir: Default::default(),
            signatures: Vec::new(),
            grammar: Grammar::empty(),
            ranks,
            run_start_ns: None,
            rank_stats: Default::default(),
            skipped: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// World {0,1,2,3} split into {0,2} and {1,3}, both named comm1 (ids
    /// are agreed per communicator); later rank 0 and 3 share a new comm1.
    #[test]
    fn ranks_in_split_communicators_translate_to_their_world_ranks() {
        let a = 1 << 32;
        let b = 2 << 32;
        let c = (1 << 32) | 1;
        let t = trace(vec![
            part(0, vec![entry(5, 1, 0, 2, 0, a), entry(9, 1, 0, 2, 0, c)]),
            part(1, vec![entry(5, 1, 0, 2, 1, b)]),
            part(2, vec![entry(5, 1, 1, 2, 0, a)]),
            part(3, vec![entry(5, 1, 1, 2, 1, b), entry(9, 1, 1, 2, 0, c)]),
        ]);
        let m = Members::of(&t);
        assert_eq!(m.world_rank(0, 6, "comm1", 1), Some(2));
        assert_eq!(m.world_rank(2, 6, "comm1", 0), Some(0));
        assert_eq!(m.world_rank(1, 6, "comm1", 1), Some(3));
        assert_eq!(m.world_rank(3, 7, "comm1", 0), Some(1));
        // After the second creation, rank 0's comm1 is {0, 3}.
        assert_eq!(m.world_rank(0, 9, "comm1", 1), Some(3));
        assert_eq!(m.world_rank(3, 10, "comm1", 0), Some(0));
        // Before any creation, and outside the communicator, nothing.
        assert_eq!(m.world_rank(0, 4, "comm1", 1), None);
        assert_eq!(m.world_rank(0, 6, "comm1", 2), None);
        assert_eq!(m.world_rank(0, 6, "comm7", 0), None);
        assert_eq!(m.world_rank(2, 1, "MPI_COMM_WORLD", 3), Some(3));
        assert_eq!(m.world_rank(2, 1, "MPI_COMM_WORLD", 4), None);
        assert_eq!(m.world_rank(2, 1, "MPI_COMM_SELF", 0), Some(2));
    }

    #[test]
    fn an_inter_communicator_translates_to_the_remote_group() {
        let i = (3 << 32) | 4;
        let inter = |rank, leader| CommEntry {
            inter: true,
            remote_size: 2,
            ..entry(2, 4, rank, 2, leader, i)
        };
        let t = trace(vec![
            part(0, vec![inter(0, 0)]),
            part(1, vec![inter(1, 0)]),
            part(2, vec![inter(0, 2)]),
            part(3, vec![inter(1, 2)]),
        ]);
        let m = Members::of(&t);
        assert_eq!(m.world_rank(0, 3, "comm4", 1), Some(3));
        assert_eq!(m.world_rank(3, 3, "comm4", 0), Some(0));
    }

    #[test]
    fn contradicting_logs_translate_nothing() {
        let a = 1 << 32;
        let t = trace(vec![
            part(0, vec![entry(1, 1, 0, 2, 0, a)]),
            part(1, vec![entry(1, 1, 1, 2, 0, a)]),
            part(2, vec![entry(1, 1, 1, 2, 0, a)]),
        ]);
        let m = Members::of(&t);
        assert_eq!(m.world_rank(0, 1, "comm1", 1), None);
    }
}
