//! What one call moves, on the rank that made it: bytes its buffers send
//! and receive, the point-to-point messages it sends (to which world rank),
//! and its collective operations.
//!
//! Bytes are those of the caller's buffers as the call's counts and
//! datatypes describe them (`count × MPI_Type_size`): a broadcast's root
//! sends its buffer once, an all-to-all sends `n × sendcount` elements. A
//! receive that records its status counts the status's byte count; other
//! receives count the posted buffer (`count × size`). `MPI_IN_PLACE` stands
//! for the data it replaces. Bytes that cannot be known (an unsized
//! datatype, a neighbourhood collective's degree, an unknown communicator)
//! are `None`, never guessed.

use super::call::Call;
use super::datatype::DatatypeSizes;
use crate::decode::handle_name;
use crate::members::Members;
use mpigram_mpispec::{HandleKind, HandleRef, Rank, RequestRef, Value, predefined};
use mpigram_trace::CommEntry;
use rustc_hash::FxHashMap;

/// One point-to-point message sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Message {
    /// The receiver's rank in MPI_COMM_WORLD, if it can be told.
    pub to: Option<u32>,
    pub bytes: Option<u64>,
}

/// What one call moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub sent: Option<u64>,
    pub received: Option<u64>,
    pub messages: Vec<Message>,
    /// Each collective operation's size: the larger of what the caller
    /// sends and receives.
    pub collectives: Vec<Option<u64>>,
}

impl Traffic {
    /// Nothing moved.
    pub fn none() -> Traffic {
        Traffic {
            sent: Some(0),
            received: Some(0),
            messages: Vec::new(),
            collectives: Vec::new(),
        }
    }

    /// Something moved, nobody knows how much.
    fn unknown() -> Traffic {
        Traffic {
            sent: None,
            received: None,
            ..Traffic::none()
        }
    }

    fn bytes(sent: Option<u64>, received: Option<u64>) -> Traffic {
        Traffic {
            sent,
            received,
            ..Traffic::none()
        }
    }

    fn collective(sent: Option<u64>, received: Option<u64>) -> Traffic {
        let size = sent.zip(received).map(|(s, r)| s.max(r));
        Traffic {
            collectives: vec![size],
            ..Traffic::bytes(sent, received)
        }
    }

    /// Both calls' traffic (a start of several requests).
    fn add(&mut self, other: &Traffic) {
        self.sent = add(self.sent, other.sent);
        self.received = add(self.received, other.received);
        self.messages.extend_from_slice(&other.messages);
        self.collectives.extend_from_slice(&other.collectives);
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a?.checked_add(b?)
}

fn mul(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a?.checked_mul(b?)
}

/// The caller's place in a communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub rank: u32,
    pub size: u32,
    /// Size of the remote group of an inter-communicator.
    pub remote_size: u32,
    pub inter: bool,
}

impl Place {
    /// Processes the call's data comes from or goes to: the group, or the
    /// remote group of an inter-communicator.
    fn peers(self) -> u64 {
        u64::from(if self.inter {
            self.remote_size
        } else {
            self.size
        })
    }
}

/// A rooted collective's part for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Root,
    NonRoot,
    /// MPI_PROC_NULL in an inter-communicator's root group: no part.
    Idle,
}

/// What a rank's calls refer to at some point of its run: the sizes of its
/// datatypes, its place in its communicators, its persistent requests.
#[derive(Clone, Debug)]
pub(crate) struct RankContext<'m> {
    /// Who is in which communicator, over the whole trace.
    members: &'m Members,
    pub rank: u32,
    pub world_size: u32,
    pub types: DatatypeSizes,
    /// The caller's place in each user communicator, by id.
    pub comms: FxHashMap<u64, CommEntry>,
    /// What starting each persistent request moves, by (pool, index).
    pub requests: FxHashMap<(u64, u64), Traffic>,
}

/// Base name of an operation and whether the call only creates a
/// persistent request for it (`Send_init` -> (`Send`, true)).
pub(crate) fn operation(call: &Call<'_>) -> (&'static str, bool) {
    let base = call.base_name();
    match base.strip_suffix("_init") {
        Some(op) => (op, true),
        None => (base, false),
    }
}

const COLLECTIVES: &[&str] = &[
    "Allgather",
    "Allgatherv",
    "Allreduce",
    "Alltoall",
    "Alltoallv",
    "Alltoallw",
    "Bcast",
    "Exscan",
    "Gather",
    "Gatherv",
    "Neighbor_allgather",
    "Neighbor_allgatherv",
    "Neighbor_alltoall",
    "Neighbor_alltoallv",
    "Neighbor_alltoallw",
    "Reduce",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Scatter",
    "Scatterv",
];

/// The blocking collective a (non-blocking) collective's name names.
fn collective(op: &str) -> Option<&'static str> {
    let find = |name: &str| COLLECTIVES.iter().copied().find(|c| *c == name);
    find(op).or_else(|| op.strip_prefix('I').and_then(find))
}

/// The operations that move data, by what their arguments mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transfer {
    Send,
    /// A partitioned send: `partitions × count` elements.
    Psend,
    Recv,
    Precv,
    Sendrecv,
    SendrecvReplace,
    Put,
    Get,
    GetAccumulate,
    FetchAndOp,
    CompareAndSwap,
    /// A collective, by its blocking name.
    Collective(&'static str),
}

/// The data-moving operation an operation name (see [`operation`]) names.
fn op(name: &str) -> Option<Transfer> {
    Some(match name {
        "Send" | "Bsend" | "Ssend" | "Rsend" | "Isend" | "Ibsend" | "Issend" | "Irsend" => {
            Transfer::Send
        }
        "Psend" => Transfer::Psend,
        "Recv" | "Irecv" | "Mrecv" | "Imrecv" => Transfer::Recv,
        "Precv" => Transfer::Precv,
        "Sendrecv" | "Isendrecv" => Transfer::Sendrecv,
        "Sendrecv_replace" | "Isendrecv_replace" => Transfer::SendrecvReplace,
        "Put" | "Rput" | "Accumulate" | "Raccumulate" => Transfer::Put,
        "Get" | "Rget" => Transfer::Get,
        "Get_accumulate" | "Rget_accumulate" => Transfer::GetAccumulate,
        "Fetch_and_op" => Transfer::FetchAndOp,
        "Compare_and_swap" => Transfer::CompareAndSwap,
        _ => Transfer::Collective(collective(name)?),
    })
}

/// Whether the call may move data when it is made (a data-moving
/// operation, or the start of persistent requests).
pub(crate) fn moves_data(call: &Call<'_>) -> bool {
    match call.base_name() {
        "Start" | "Startall" => true,
        _ => matches!(operation(call), (name, false) if op(name).is_some()),
    }
}

impl<'m> RankContext<'m> {
    pub fn new(members: &'m Members, rank: u32, world_size: u32) -> RankContext<'m> {
        RankContext {
            members,
            rank,
            world_size,
            types: DatatypeSizes::default(),
            comms: FxHashMap::default(),
            requests: FxHashMap::default(),
        }
    }

    /// What the call moves when it is made.
    pub fn traffic(&self, call: &Call<'_>) -> Traffic {
        match call.base_name() {
            "Start" => self.started(call.value("request")),
            "Startall" => match call.value("array_of_requests") {
                Some(Value::Array(Some(requests))) => {
                    let mut total = Traffic::none();
                    for r in requests {
                        total.add(&self.started(Some(r)));
                    }
                    total
                }
                _ => Traffic::unknown(),
            },
            _ => match operation(call) {
                (_, true) => Traffic::none(), // moves data when started
                (name, false) => match op(name) {
                    Some(op) => self.op_traffic(call, op),
                    None => Traffic::none(),
                },
            },
        }
    }

    /// A persistent request the call creates, and what starting it moves.
    pub fn persistent_request(&self, call: &Call<'_>) -> Option<((u64, u64), Traffic)> {
        let (name, true) = operation(call) else {
            return None;
        };
        let traffic = op(name).map_or_else(Traffic::none, |op| self.op_traffic(call, op));
        match call.value("request")? {
            Value::Request(RequestRef::Pooled { pool, index }) => Some(((*pool, *index), traffic)),
            _ => None,
        }
    }

    fn started(&self, request: Option<&Value>) -> Traffic {
        match request {
            Some(Value::Request(RequestRef::Null)) => Traffic::none(),
            Some(Value::Request(RequestRef::Pooled { pool, index })) => self
                .requests
                .get(&(*pool, *index))
                .cloned()
                .unwrap_or_else(Traffic::unknown),
            _ => Traffic::unknown(),
        }
    }

    /// What operation `op` of the call moves.
    fn op_traffic(&self, call: &Call<'_>, op: Transfer) -> Traffic {
        let size = |name: &str| call.handle(name).and_then(|h| self.types.size(h));
        let count = |name: &str| call.int(name).and_then(|c| u64::try_from(c).ok());
        let elements = |c: &str, t: &str| mul(count(c), size(t));
        let partitioned = || mul(count("partitions"), elements("count", "datatype"));
        match op {
            Transfer::Send => self.send(call, elements("count", "datatype")),
            Transfer::Psend => self.send(call, partitioned()),
            Transfer::Recv => Traffic::bytes(
                Some(0),
                self.received(call, "source", elements("count", "datatype")),
            ),
            Transfer::Precv => {
                Traffic::bytes(Some(0), self.received(call, "source", partitioned()))
            }
            Transfer::Sendrecv => {
                let mut t = self.send(call, elements("sendcount", "sendtype"));
                t.received = self.received(call, "source", elements("recvcount", "recvtype"));
                t
            }
            Transfer::SendrecvReplace => {
                let mut t = self.send(call, elements("count", "datatype"));
                t.received = self.received(call, "source", elements("count", "datatype"));
                t
            }
            Transfer::Put => {
                self.one_sided(call, elements("origin_count", "origin_datatype"), Some(0))
            }
            Transfer::Get => {
                self.one_sided(call, Some(0), elements("origin_count", "origin_datatype"))
            }
            Transfer::GetAccumulate => self.one_sided(
                call,
                elements("origin_count", "origin_datatype"),
                elements("result_count", "result_datatype"),
            ),
            Transfer::FetchAndOp => self.one_sided(call, size("datatype"), size("datatype")),
            // The origin and the compare value go, the old value comes back.
            Transfer::CompareAndSwap => {
                self.one_sided(call, mul(Some(2), size("datatype")), size("datatype"))
            }
            Transfer::Collective(c) => self.collective(call, c),
        }
    }

    fn send(&self, call: &Call<'_>, bytes: Option<u64>) -> Traffic {
        let to = match call.rank("dest") {
            Some(Rank::ProcNull) => return Traffic::none(),
            Some(dest) => self.destination(call.handle("comm"), dest),
            None => None,
        };
        Traffic {
            messages: vec![Message { to, bytes }],
            ..Traffic::bytes(bytes, Some(0))
        }
    }

    /// A receive's bytes: its status's count if it recorded one, else the
    /// posted size; nothing from MPI_PROC_NULL.
    fn received(&self, call: &Call<'_>, source: &str, posted: Option<u64>) -> Option<u64> {
        if call.rank(source) == Some(Rank::ProcNull) {
            return Some(0);
        }
        if let Some(HandleRef::Predefined(id)) = call.handle("message") {
            if predefined(HandleKind::Message).get(id as usize) == Some(&"MPI_MESSAGE_NO_PROC") {
                return Some(0);
            }
        }
        match call.value("status") {
            Some(Value::Status(Some(s))) if s.source == Rank::ProcNull => Some(0),
            Some(Value::Status(Some(s))) => Some(s.count),
            _ => posted,
        }
    }

    fn one_sided(&self, call: &Call<'_>, sent: Option<u64>, received: Option<u64>) -> Traffic {
        if call.rank("target_rank") == Some(Rank::ProcNull) {
            return Traffic::none();
        }
        Traffic::bytes(sent, received)
    }

    /// Bytes of a collective operation (see the module's documentation).
    fn collective(&self, call: &Call<'_>, op: &str) -> Traffic {
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

    /// The caller's place in a communicator, where the trace says it.
    pub fn place(&self, comm: Option<HandleRef>) -> Option<Place> {
        match comm? {
            HandleRef::Predefined(id) => match *predefined(HandleKind::Comm).get(id as usize)? {
                "MPI_COMM_WORLD" => Some(Place {
                    rank: self.rank,
                    size: self.world_size,
                    remote_size: 0,
                    inter: false,
                }),
                "MPI_COMM_SELF" => Some(Place {
                    rank: 0,
                    size: 1,
                    remote_size: 0,
                    inter: false,
                }),
                _ => None,
            },
            HandleRef::User(id) => self.comms.get(&id).map(|e| Place {
                rank: e.rank,
                size: e.size,
                remote_size: e.remote_size,
                inter: e.inter,
            }),
            HandleRef::Null => None,
        }
    }

    /// The world rank a message to `dest` in `comm` goes to, if it can be
    /// told (in an inter-communicator, `dest` is in the remote group).
    fn destination(&self, comm: Option<HandleRef>, dest: Rank) -> Option<u32> {
        let comm = comm?;
        let place = self.place(Some(comm))?;
        let rank = match dest {
            Rank::Relative(d) if !place.inter => i64::from(place.rank).checked_add(d)?,
            Rank::Absolute(r) => r,
            _ => return None,
        };
        let rank = u32::try_from(rank)
            .ok()
            .filter(|&r| u64::from(r) < place.peers())?;
        self.world_rank(comm, rank)
    }

    /// Rank `rank` of `comm` in MPI_COMM_WORLD: the one place that
    /// translates ranks, through the trace's communicator membership as of
    /// the communicator's log entry in force.
    fn world_rank(&self, comm: HandleRef, rank: u32) -> Option<u32> {
        let seq = match comm {
            HandleRef::User(id) => self.comms.get(&id)?.seq,
            _ => 0,
        };
        let name = handle_name(HandleKind::Comm, comm);
        self.members.world_rank(self.rank, seq, &name, rank)
    }
}
