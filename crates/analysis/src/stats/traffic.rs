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

use super::datatype::DatatypeSizes;
use crate::decode::handle_name;
use crate::members::Members;
use mpigram_mpispec::Args as Call;
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

    pub(super) fn collective(sent: Option<u64>, received: Option<u64>) -> Traffic {
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

pub(super) fn mul(a: Option<u64>, b: Option<u64>) -> Option<u64> {
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
    pub(super) fn peers(self) -> u64 {
        u64::from(if self.inter {
            self.remote_size
        } else {
            self.size
        })
    }
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
    let base = call.operation();
    match base.strip_suffix("_init") {
        Some(op) => (op, true),
        None => (base, false),
    }
}

/// The collective operations that move data, by their blocking names.
pub(crate) const COLLECTIVES: &[&str] = &[
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

/// Whether `op`, a blocking operation's name (`Allreduce`), is a collective
/// one: one of [`COLLECTIVES`], or MPI_Barrier, which moves no data.
pub(crate) fn is_collective(op: &str) -> bool {
    op == "Barrier" || COLLECTIVES.contains(&op)
}

/// The blocking collective a (non-blocking) collective's name names.
fn collective(op: &str) -> Option<&'static str> {
    let find = |name: &str| COLLECTIVES.iter().copied().find(|c| *c == name);
    find(op).or_else(|| find(&mpigram_mpispec::blocking_operation(op)?))
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
    match call.operation() {
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
        match call.operation() {
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
