//! Bytes of collective operations on the calling rank (see
//! [`super::traffic`] for what the bytes are): the send and receive
//! buffers as the call's counts and datatypes describe them, by the
//! caller's part (root or not) and the communicator's size.

use super::traffic::{Place, RankContext, Traffic, mul};
use mpigram_mpispec::Args as Call;
use mpigram_mpispec::Rank;

/// A rooted collective's part for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Root,
    NonRoot,
    /// MPI_PROC_NULL in an inter-communicator's root group: no part.
    Idle,
}

impl RankContext<'_> {
    /// Bytes of a collective operation (see the module's documentation).
    pub(super) fn collective(&self, call: &Call<'_>, op: &str) -> Traffic {
        let size = |name: &str| call.handle(name).and_then(|h| self.types.size(h));
        let count = |name: &str| call.int(name).and_then(|c| u64::try_from(c).ok());
        let elements = |c: &str, t: &str| mul(count(c), size(t));
        // Σ counts[i] × size(type)
        let sum = |c: &str, t: &str| -> Option<u64> {
            let counts = call.ints(c)?;
            counts.iter().try_fold(0u64, |acc, &n| {
                acc.checked_add(u64::try_from(n).ok()?.checked_mul(size(t)?)?)
            })
        };
        // Σ counts[i] × size(types[i])
        let sum_w = |c: &str, t: &str| -> Option<u64> {
            let (counts, types) = (call.ints(c)?, call.handles(t)?);
            if counts.len() != types.len() {
                return None;
            }
            counts.iter().zip(types).try_fold(0u64, |acc, (&n, h)| {
                acc.checked_add(u64::try_from(n).ok()?.checked_mul(self.types.size(h)?)?)
            })
        };
        let place = self.place(call.handle("comm"));
        let inter = place.map(|p| p.inter);
        let peers = place.map(Place::peers);
        let me = place.filter(|p| !p.inter).map(|p| p.rank as usize);
        // counts[me] × size(type), for the caller's own block
        let mine = |c: &str, t: &str| -> Option<u64> {
            let n = *call.ints(c)?.get(me?)?;
            u64::try_from(n).ok()?.checked_mul(size(t)?)
        };
        let role = self.role(call.rank("root"), place);
        let in_place = call.in_place("sendbuf");
        let (sent, received) = match op {
            "Bcast" => match role {
                Some(Role::Root) => (elements("count", "datatype"), Some(0)),
                Some(Role::NonRoot) => (Some(0), elements("count", "datatype")),
                Some(Role::Idle) => (Some(0), Some(0)),
                None => (None, None),
            },
            "Reduce" => match (role, inter) {
                (Some(Role::Root), Some(true)) => (Some(0), elements("count", "datatype")),
                (Some(Role::Root), _) => {
                    (elements("count", "datatype"), elements("count", "datatype"))
                }
                (Some(Role::NonRoot), _) => (elements("count", "datatype"), Some(0)),
                (Some(Role::Idle), _) => (Some(0), Some(0)),
                (None, _) => (None, None),
            },
            "Allreduce" => (elements("count", "datatype"), elements("count", "datatype")),
            "Scan" | "Exscan" if inter == Some(false) => {
                let s = elements("count", "datatype");
                let first = op == "Exscan" && me == Some(0);
                (s, if first { Some(0) } else { s })
            }
            "Reduce_scatter_block" if inter == Some(false) => (
                mul(peers, elements("recvcount", "datatype")),
                elements("recvcount", "datatype"),
            ),
            "Reduce_scatter" if inter == Some(false) => (
                sum("recvcounts", "datatype"),
                mine("recvcounts", "datatype"),
            ),
            "Gather" => {
                let block = elements("recvcount", "recvtype");
                match (role, inter) {
                    (Some(Role::Root), Some(true)) => (Some(0), mul(peers, block)),
                    (Some(Role::Root), _) if in_place => (block, mul(peers, block)),
                    (Some(Role::Root), _) => (elements("sendcount", "sendtype"), mul(peers, block)),
                    (Some(Role::NonRoot), _) => (elements("sendcount", "sendtype"), Some(0)),
                    (Some(Role::Idle), _) => (Some(0), Some(0)),
                    (None, _) => (None, None),
                }
            }
            "Gatherv" => {
                let all = sum("recvcounts", "recvtype");
                match (role, inter) {
                    (Some(Role::Root), Some(true)) => (Some(0), all),
                    (Some(Role::Root), _) if in_place => (mine("recvcounts", "recvtype"), all),
                    (Some(Role::Root), _) => (elements("sendcount", "sendtype"), all),
                    (Some(Role::NonRoot), _) => (elements("sendcount", "sendtype"), Some(0)),
                    (Some(Role::Idle), _) => (Some(0), Some(0)),
                    (None, _) => (None, None),
                }
            }
            "Scatter" => {
                let block = elements("sendcount", "sendtype");
                let in_place = call.in_place("recvbuf");
                match (role, inter) {
                    (Some(Role::Root), Some(true)) => (mul(peers, block), Some(0)),
                    (Some(Role::Root), _) if in_place => (mul(peers, block), block),
                    (Some(Role::Root), _) => (mul(peers, block), elements("recvcount", "recvtype")),
                    (Some(Role::NonRoot), _) => (Some(0), elements("recvcount", "recvtype")),
                    (Some(Role::Idle), _) => (Some(0), Some(0)),
                    (None, _) => (None, None),
                }
            }
            "Scatterv" => {
                let all = sum("sendcounts", "sendtype");
                let in_place = call.in_place("recvbuf");
                match (role, inter) {
                    (Some(Role::Root), Some(true)) => (all, Some(0)),
                    (Some(Role::Root), _) if in_place => (all, mine("sendcounts", "sendtype")),
                    (Some(Role::Root), _) => (all, elements("recvcount", "recvtype")),
                    (Some(Role::NonRoot), _) => (Some(0), elements("recvcount", "recvtype")),
                    (Some(Role::Idle), _) => (Some(0), Some(0)),
                    (None, _) => (None, None),
                }
            }
            "Allgather" => {
                let block = elements("recvcount", "recvtype");
                let own = if in_place {
                    block
                } else {
                    elements("sendcount", "sendtype")
                };
                (own, mul(peers, block))
            }
            "Allgatherv" => {
                let own = if in_place {
                    mine("recvcounts", "recvtype")
                } else {
                    elements("sendcount", "sendtype")
                };
                (own, sum("recvcounts", "recvtype"))
            }
            "Alltoall" => {
                let received = mul(peers, elements("recvcount", "recvtype"));
                let sent = if in_place {
                    received
                } else {
                    mul(peers, elements("sendcount", "sendtype"))
                };
                (sent, received)
            }
            "Alltoallv" | "Neighbor_alltoallv" => {
                let received = sum("recvcounts", "recvtype");
                let sent = if in_place {
                    received
                } else {
                    sum("sendcounts", "sendtype")
                };
                (sent, received)
            }
            "Alltoallw" | "Neighbor_alltoallw" => {
                let received = sum_w("recvcounts", "recvtypes");
                let sent = if in_place {
                    received
                } else {
                    sum_w("sendcounts", "sendtypes")
                };
                (sent, received)
            }
            // The topology's degrees are not in the call.
            "Neighbor_allgather" => (elements("sendcount", "sendtype"), None),
            "Neighbor_allgatherv" => (
                elements("sendcount", "sendtype"),
                sum("recvcounts", "recvtype"),
            ),
            _ => (None, None),
        };
        Traffic::collective(sent, received)
    }

    /// The caller's part in a rooted collective.
    fn role(&self, root: Option<Rank>, place: Option<Place>) -> Option<Role> {
        Some(match root? {
            Rank::Root => Role::Root,
            Rank::ProcNull => Role::Idle,
            Rank::AnySource => return None,
            Rank::Relative(0) => Role::Root,
            Rank::Relative(_) => Role::NonRoot,
            Rank::Absolute(r) => {
                let place = place?;
                if !place.inter && i64::from(place.rank) == r {
                    Role::Root
                } else {
                    Role::NonRoot
                }
            }
        })
    }
}
