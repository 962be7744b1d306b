//! The point-to-point operations of one rank, read from its decoded calls:
//! each send or receive with the call that posted it and the call that
//! completed it, followed through requests (Wait/Test families),
//! persistent requests (Start/Startall) and matched probes (Mprobe/Mrecv).

use super::collectives::{self, CollectiveCall, CollectiveKind, Context};
use super::one_sided::{OneSidedLog, WindowEvent, WindowRef};
use super::{CallAt, Comm, Direction, Envelope, Operation, Peer};
use crate::decode::{DecodedCall, field};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// MPICH's MPI_UNDEFINED, the index Waitany/Testany return when no request
/// was active.
const MPI_UNDEFINED: i64 = -32766;

/// What one rank's calls say about its operations, in call order. The
/// n-th `Post` is the rank's operation n, the n-th `Collective` its
/// collective call n.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum RankEvent {
    /// A point-to-point operation is posted (a blocking one completes with it).
    Post(Operation),
    /// Operation `op` completed at call `seq` (at `at`), with `status` if recorded.
    Complete {
        op: usize,
        seq: u64,
        at: CallAt,
        status: Option<Envelope>,
    },
    /// Operation `op` will have no traced completion (its request was
    /// freed or forgotten, or the rank ended).
    Abandon(usize),
    Collective(CollectiveCall),
    CollectiveComplete {
        call: usize,
        seq: u64,
        at: CallAt,
    },
    /// Collective call `call` will have no traced completion.
    CollectiveAbandon(usize),
    /// A window synchronisation call (MPI_Win_post, _start, _lock, ...).
    Epoch(WindowEvent),
}

/// Reads one rank's calls, in order, into events ([`RankEvent`]),
/// keeping only what is in flight: live requests, probed messages,
/// windows and groups.
pub(crate) struct OperationLog {
    rank: u32,
    events: Vec<RankEvent>,
    /// Operations and collective calls posted so far.
    operations: usize,
    collectives: usize,
    /// Live requests by their decoded name (`req5`). A name is reused only
    /// once the tracer saw its request freed.
    requests: FxHashMap<String, Request>,
    /// Messages taken by MPI_Mprobe/MPI_Improbe, by handle name (`msg0`),
    /// waiting for their MPI_Mrecv/MPI_Imrecv: the receive operation.
    messages: FxHashMap<String, usize>,
    /// Windows by name: the collective call that created each live one.
    windows: FxHashMap<String, WindowRef>,
    one_sided: OneSidedLog,
}

/// What a request's completion completes, and whether it did already
/// (MPI_Request_get_status completes without freeing).
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// An operation's index.
    Operation(usize, bool),
    /// A collective call's index.
    Collective(usize, bool),
}

impl Pending {
    fn done(self) -> bool {
        match self {
            Pending::Operation(_, done) | Pending::Collective(_, done) => done,
        }
    }
}

#[derive(Default)]
struct Request {
    /// What the request's completion completes (two operations for
    /// MPI_Isendrecv).
    active: Vec<Pending>,
    /// For a persistent request: what each MPI_Start posts.
    persistent: Option<Persistent>,
}

enum Persistent {
    Operation(Box<Operation>),
    /// The MPI_*_init call (and its index), and what each start runs.
    Collective(Box<CollectiveCall>, usize, CollectiveKind),
}

/// One rank's operations, read from its calls: its events in call order.
pub struct RankOperations {
    pub(super) events: Vec<RankEvent>,
}

impl OperationLog {
    pub(crate) fn new(rank: u32) -> OperationLog {
        OperationLog {
            rank,
            events: Vec::new(),
            operations: 0,
            collectives: 0,
            requests: FxHashMap::default(),
            messages: FxHashMap::default(),
            windows: FxHashMap::default(),
            one_sided: OneSidedLog::default(),
        }
    }

    /// The events of the calls recorded since the last take.
    pub(crate) fn take_events(&mut self) -> Vec<RankEvent> {
        std::mem::take(&mut self.events)
    }

    /// Moves the events of the calls recorded since the last take to the
    /// end of `into` (this log's list is kept, not allocated anew).
    pub(crate) fn move_events(&mut self, into: &mut Vec<RankEvent>) {
        into.append(&mut self.events);
    }

    /// The rank's calls are over: what is still pending never completes.
    pub(crate) fn end(&mut self) {
        let mut requests: Vec<(String, Request)> = self.requests.drain().collect();
        requests.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, r) in requests {
            self.abandon(r.active);
        }
        let mut messages: Vec<usize> = self.messages.drain().map(|(_, op)| op).collect();
        messages.sort_unstable();
        for op in messages {
            self.events.push(RankEvent::Abandon(op));
        }
    }

    /// Every event of the rank's calls, ended.
    pub(super) fn finish(mut self) -> RankOperations {
        self.end();
        RankOperations {
            events: self.events,
        }
    }

    /// Records one call, which ran `at`.
    pub(crate) fn record(&mut self, call: &DecodedCall, at: CallAt) {
        let seq = call.seq;
        // Large-count variants (MPI_Isend_c) take the same arguments.
        let func = call.func.strip_suffix("_c").unwrap_or(call.func);
        match func {
            "MPI_Send" | "MPI_Bsend" | "MPI_Ssend" | "MPI_Rsend" => {
                let op = self.send(call, at, "dest", "tag", "count", "datatype");
                self.post(op, Some((seq, at)));
            }
            "MPI_Isend" | "MPI_Ibsend" | "MPI_Issend" | "MPI_Irsend" => {
                let op = self.send(call, at, "dest", "tag", "count", "datatype");
                let i = self.post(op, None);
                self.start_request(call.arg("request"), vec![Pending::Operation(i, false)]);
            }
            "MPI_Recv" => {
                let mut op = self.recv(call, at, "source", "tag");
                op.status = envelope(call.arg("status"));
                self.post(op, Some((seq, at)));
            }
            "MPI_Irecv" => {
                let op = self.recv(call, at, "source", "tag");
                let i = self.post(op, None);
                self.start_request(call.arg("request"), vec![Pending::Operation(i, false)]);
            }
            "MPI_Sendrecv" | "MPI_Sendrecv_replace" => {
                let (count, datatype) = send_count_keys(func);
                let send = self.send(call, at, "dest", "sendtag", count, datatype);
                let mut recv = self.recv(call, at, "source", "recvtag");
                recv.status = envelope(call.arg("status"));
                self.post(send, Some((seq, at)));
                self.post(recv, Some((seq, at)));
            }
            "MPI_Isendrecv" | "MPI_Isendrecv_replace" => {
                let (count, datatype) = send_count_keys(func);
                let send = self.send(call, at, "dest", "sendtag", count, datatype);
                let recv = self.recv(call, at, "source", "recvtag");
                let i = self.post(send, None);
                let j = self.post(recv, None);
                let both = vec![Pending::Operation(i, false), Pending::Operation(j, false)];
                self.start_request(call.arg("request"), both);
            }
            "MPI_Send_init" | "MPI_Bsend_init" | "MPI_Ssend_init" | "MPI_Rsend_init" => {
                let op = self.send(call, at, "dest", "tag", "count", "datatype");
                self.persistent_request(call.arg("request"), Persistent::Operation(Box::new(op)));
            }
            "MPI_Recv_init" => {
                let op = self.recv(call, at, "source", "tag");
                self.persistent_request(call.arg("request"), Persistent::Operation(Box::new(op)));
            }
            "MPI_Start" => self.start(call.arg("request"), call, at),
            "MPI_Startall" => {
                for request in items(call.arg("array_of_requests")) {
                    self.start(Some(request), call, at);
                }
            }
            "MPI_Mprobe" => self.take_message(call, at),
            "MPI_Improbe" if flag(call.arg("flag")) => self.take_message(call, at),
            "MPI_Mrecv" => {
                if let Some(i) = name(call.arg("message")).and_then(|m| self.messages.remove(m)) {
                    self.complete_operation(i, seq, at, call.arg("status"));
                }
            }
            "MPI_Imrecv" => {
                if let Some(i) = name(call.arg("message")).and_then(|m| self.messages.remove(m)) {
                    self.start_request(call.arg("request"), vec![Pending::Operation(i, false)]);
                }
            }
            "MPI_Wait" => self.complete(call.arg("request"), seq, at, call.arg("status"), true),
            "MPI_Test" if flag(call.arg("flag")) => {
                self.complete(call.arg("request"), seq, at, call.arg("status"), true)
            }
            // The request stays allocated: a later Wait or Test frees it.
            "MPI_Request_get_status" if flag(call.arg("flag")) => {
                self.complete(call.arg("request"), seq, at, call.arg("status"), false)
            }
            "MPI_Waitall" => self.complete_all(call, at),
            "MPI_Testall" if flag(call.arg("flag")) => self.complete_all(call, at),
            "MPI_Waitany" => self.complete_any(call, at),
            "MPI_Testany" if flag(call.arg("flag")) => self.complete_any(call, at),
            "MPI_Waitsome" | "MPI_Testsome" => self.complete_some(call, at),
            "MPI_Request_free" => self.free(call.arg("request")),
            _ => {
                self.record_collective(call, func, at);
                if let Some(event) = self.one_sided.record(call, func, at, &self.windows) {
                    self.events.push(RankEvent::Epoch(event));
                }
            }
        }
    }

    /// A collective call: blocking ones complete at once, non-blocking
    /// ones at their request's completion, persistent ones (`MPI_*_init`)
    /// are posted by each MPI_Start.
    fn record_collective(&mut self, call: &DecodedCall, func: &str, at: CallAt) {
        let Some(op) = collectives::classify(func) else {
            return;
        };
        let comm = || Comm::from_name(call.arg("comm").and_then(Json::as_str).unwrap_or("none"));
        let context = match name(call.arg("win")) {
            Some(win) if !collectives::creates_window(func) => match self.windows.get(win) {
                Some(w) => Context::Window { created: w.created },
                None => Context::UnknownWindow(win.to_owned()),
            },
            _ => Context::Comm {
                comm: comm(),
                seq: call.seq,
            },
        };
        let i = self.collectives;
        // An MPI_*_init call returns set up; each start completes at its Wait.
        let completion = (op.start != collectives::Start::Request).then_some(call.seq);
        let collective = CollectiveCall {
            rank: self.rank,
            func: call.func,
            operation: call.func,
            kind: match op.start {
                collectives::Start::Persistent => CollectiveKind::Setup,
                _ => op.kind,
            },
            post: call.seq,
            completion,
            context,
            root: collectives::root_arg(call.arg("root")),
            post_at: at,
            completion_at: completion.map(|_| at),
        };
        if let Some(win) = name(call.arg("win")) {
            match func {
                "MPI_Win_free" => {
                    self.windows.remove(win);
                }
                _ if collectives::creates_window(func) => {
                    let window = WindowRef {
                        created: i,
                        comm: comm(),
                        seq: call.seq,
                    };
                    self.windows.insert(win.to_owned(), window);
                }
                _ => {}
            }
        }
        let persistent = (op.start == collectives::Start::Persistent).then(|| collective.clone());
        self.collectives += 1;
        self.events.push(RankEvent::Collective(collective));
        match op.start {
            collectives::Start::Blocking => {}
            collectives::Start::Request => {
                self.start_request(call.arg("request"), vec![Pending::Collective(i, false)])
            }
            collectives::Start::Persistent => {
                let init = Box::new(persistent.expect("a persistent call"));
                self.persistent_request(
                    call.arg("request"),
                    Persistent::Collective(init, i, op.kind),
                )
            }
        }
    }

    fn operation(&self, call: &DecodedCall, at: CallAt, direction: Direction) -> Operation {
        Operation {
            rank: self.rank,
            direction,
            func: call.func,
            post: call.seq,
            completion: None,
            comm: call
                .args
                .get("comm")
                .and_then(Json::as_str)
                .map(Comm::from_name),
            peer: Peer::Unknown(String::new()),
            tag: None,
            status: None,
            bytes: None,
            cancelled: false,
            post_at: at,
            completion_at: None,
        }
    }

    fn send(
        &self,
        call: &DecodedCall,
        at: CallAt,
        dest: &str,
        tag: &str,
        count: &str,
        datatype: &str,
    ) -> Operation {
        let mut op = self.operation(call, at, Direction::Send);
        op.peer = peer(call.arg(dest));
        op.tag = call.arg(tag).and_then(Json::as_i64);
        let count = call.arg(count).and_then(Json::as_u64);
        let size = call
            .arg(datatype)
            .and_then(Json::as_str)
            .and_then(predefined_size);
        op.bytes = count.zip(size).map(|(n, size)| n * size);
        op
    }

    fn recv(&self, call: &DecodedCall, at: CallAt, source: &str, tag: &str) -> Operation {
        let mut op = self.operation(call, at, Direction::Recv);
        op.peer = peer(call.arg(source));
        op.tag = call.arg(tag).and_then(Json::as_i64);
        op
    }

    /// Adds a posted operation, completed at `completion` if blocking.
    fn post(&mut self, mut op: Operation, completion: Option<(u64, CallAt)>) -> usize {
        op.completion = completion.map(|c| c.0);
        op.completion_at = completion.map(|c| c.1);
        self.events.push(RankEvent::Post(op));
        self.operations += 1;
        self.operations - 1
    }

    /// What `active` stands for will not complete where a trace shows it.
    fn abandon(&mut self, active: Vec<Pending>) {
        for pending in active {
            match pending {
                Pending::Operation(i, false) => self.events.push(RankEvent::Abandon(i)),
                Pending::Collective(i, false) => self.events.push(RankEvent::CollectiveAbandon(i)),
                _ => {}
            }
        }
    }

    /// A new request now stands for `active`.
    fn start_request(&mut self, request: Option<&Json>, active: Vec<Pending>) {
        let Some(name) = name(request) else {
            self.abandon(active);
            return;
        };
        // A live name again means its last completion was not traced (or
        // not understood): that operation's completion stays unknown.
        let old = self.requests.insert(
            name.to_owned(),
            Request {
                active,
                persistent: None,
            },
        );
        if let Some(old) = old {
            self.abandon(old.active);
        }
    }

    fn persistent_request(&mut self, request: Option<&Json>, op: Persistent) {
        let Some(name) = name(request) else { return };
        let old = self.requests.insert(
            name.to_owned(),
            Request {
                active: Vec::new(),
                persistent: Some(op),
            },
        );
        if let Some(old) = old {
            self.abandon(old.active);
        }
    }

    /// MPI_Start: a persistent request posts its operation again.
    fn start(&mut self, request: Option<&Json>, call: &DecodedCall, at: CallAt) {
        let Some(r) = name(request).and_then(|n| self.requests.get(n)) else {
            return;
        };
        let pending = match &r.persistent {
            Some(Persistent::Operation(template)) => {
                let op = Operation {
                    func: call.func,
                    post: call.seq,
                    post_at: at,
                    ..(**template).clone()
                };
                Pending::Operation(self.post(op, None), false)
            }
            Some(Persistent::Collective(init_call, init, kind)) => {
                let started = CollectiveCall {
                    func: call.func,
                    kind: *kind,
                    post: call.seq,
                    completion: None,
                    context: Context::Persistent { init: *init },
                    post_at: at,
                    completion_at: None,
                    ..(**init_call).clone()
                };
                self.events.push(RankEvent::Collective(started));
                self.collectives += 1;
                Pending::Collective(self.collectives - 1, false)
            }
            None => return,
        };
        let Some(r) = name(request).and_then(|n| self.requests.get_mut(n)) else {
            return;
        };
        let old = std::mem::replace(&mut r.active, vec![pending]);
        self.abandon(old);
    }

    /// MPI_Mprobe (or a successful MPI_Improbe): the message is matched
    /// here; its receive completes at MPI_Mrecv or MPI_Imrecv's request.
    fn take_message(&mut self, call: &DecodedCall, at: CallAt) {
        let Some(message) = name(call.arg("message")) else {
            return; // MPI_MESSAGE_NO_PROC: a probe of MPI_PROC_NULL
        };
        let mut op = self.recv(call, at, "source", "tag");
        op.status = envelope(call.arg("status"));
        let i = self.post(op, None);
        if let Some(old) = self.messages.insert(message.to_owned(), i) {
            self.events.push(RankEvent::Abandon(old));
        }
    }

    /// The operations of `request` completed at call `seq` with `status`;
    /// `free`: the request is deallocated (or made inactive) by the call.
    fn complete(
        &mut self,
        request: Option<&Json>,
        seq: u64,
        at: CallAt,
        status: Option<&Json>,
        free: bool,
    ) {
        let Some(name) = name(request) else { return };
        let Some(r) = self.requests.get_mut(name) else {
            return; // not a point-to-point request
        };
        let active = if free {
            std::mem::take(&mut r.active)
        } else {
            // Seen complete now: a later completion of the same is no news.
            let active = r.active.clone();
            for p in &mut r.active {
                *p = match *p {
                    Pending::Operation(i, _) => Pending::Operation(i, true),
                    Pending::Collective(i, _) => Pending::Collective(i, true),
                };
            }
            active
        };
        if free && r.persistent.is_none() {
            self.requests.remove(name);
        }
        for pending in active.into_iter().filter(|p| !p.done()) {
            match pending {
                Pending::Operation(i, _) => self.complete_operation(i, seq, at, status),
                Pending::Collective(call, _) => {
                    self.events
                        .push(RankEvent::CollectiveComplete { call, seq, at })
                }
            }
        }
    }

    fn complete_operation(&mut self, op: usize, seq: u64, at: CallAt, status: Option<&Json>) {
        self.events.push(RankEvent::Complete {
            op,
            seq,
            at,
            status: envelope(status),
        });
    }

    /// MPI_Waitall, or MPI_Testall that returned true: status `i` belongs
    /// to request `i`.
    fn complete_all(&mut self, call: &DecodedCall, at: CallAt) {
        let statuses = items(call.arg("array_of_statuses"));
        for (i, request) in items(call.arg("array_of_requests")).iter().enumerate() {
            self.complete(Some(request), call.seq, at, statuses.get(i), true);
        }
    }

    /// MPI_Waitany, or MPI_Testany that returned true: request `index`.
    fn complete_any(&mut self, call: &DecodedCall, at: CallAt) {
        let Some(index) = call.arg("index").and_then(Json::as_i64) else {
            return;
        };
        if index == MPI_UNDEFINED {
            return;
        }
        let requests = items(call.arg("array_of_requests"));
        if let Some(request) = usize::try_from(index).ok().and_then(|i| requests.get(i)) {
            self.complete(Some(request), call.seq, at, call.arg("status"), true);
        }
    }

    /// MPI_Waitsome/MPI_Testsome: status `k` belongs to request `indices[k]`.
    fn complete_some(&mut self, call: &DecodedCall, at: CallAt) {
        let requests = items(call.arg("array_of_requests"));
        let statuses = items(call.arg("array_of_statuses"));
        for (k, index) in items(call.arg("array_of_indices")).iter().enumerate() {
            let request = index
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| requests.get(i));
            if let Some(request) = request {
                self.complete(Some(request), call.seq, at, statuses.get(k), true);
            }
        }
    }

    /// MPI_Request_free: an active operation completes at a time no call
    /// shows; its completion stays unknown.
    fn free(&mut self, request: Option<&Json>) {
        if let Some(r) = name(request).and_then(|name| self.requests.remove(name)) {
            self.abandon(r.active);
        }
    }
}

/// The point-to-point functions [`OperationLog::record`] reads (without
/// a large-count `_c` suffix).
const POINT_TO_POINT: &[&str] = &[
    "MPI_Send",
    "MPI_Bsend",
    "MPI_Ssend",
    "MPI_Rsend",
    "MPI_Isend",
    "MPI_Ibsend",
    "MPI_Issend",
    "MPI_Irsend",
    "MPI_Recv",
    "MPI_Irecv",
    "MPI_Sendrecv",
    "MPI_Sendrecv_replace",
    "MPI_Isendrecv",
    "MPI_Isendrecv_replace",
    "MPI_Send_init",
    "MPI_Bsend_init",
    "MPI_Ssend_init",
    "MPI_Rsend_init",
    "MPI_Recv_init",
    "MPI_Start",
    "MPI_Startall",
    "MPI_Mprobe",
    "MPI_Improbe",
    "MPI_Mrecv",
    "MPI_Imrecv",
    "MPI_Wait",
    "MPI_Test",
    "MPI_Request_get_status",
    "MPI_Waitall",
    "MPI_Testall",
    "MPI_Waitany",
    "MPI_Testany",
    "MPI_Waitsome",
    "MPI_Testsome",
    "MPI_Request_free",
];

/// Whether [`OperationLog::record`] reads anything from calls of `func`:
/// the calls of other functions need not be decoded.
pub(crate) fn handles(func: &str) -> bool {
    let func = func.strip_suffix("_c").unwrap_or(func);
    POINT_TO_POINT.contains(&func)
        || collectives::classify(func).is_some()
        || func.starts_with("MPI_Win_")
        || func.starts_with("MPI_Group_")
        || matches!(func, "MPI_Comm_group" | "MPI_Comm_remote_group")
}

/// The count and datatype argument names of a send half.
fn send_count_keys(func: &str) -> (&'static str, &'static str) {
    if func.ends_with("_replace") {
        ("count", "datatype")
    } else {
        ("sendcount", "sendtype")
    }
}

/// A handle's name, or None for a null handle (`MPI_REQUEST_NULL`,
/// `MPI_MESSAGE_NULL`, `MPI_MESSAGE_NO_PROC`).
pub(super) fn name(v: Option<&Json>) -> Option<&str> {
    v.and_then(Json::as_str).filter(|s| !s.starts_with("MPI_"))
}

pub(super) fn items(v: Option<&Json>) -> &[Json] {
    v.and_then(Json::as_array).map_or(&[], Vec::as_slice)
}

pub(super) fn flag(v: Option<&Json>) -> bool {
    v.and_then(Json::as_i64).is_some_and(|f| f != 0)
}

fn peer(v: Option<&Json>) -> Peer {
    match v {
        Some(Json::Number(n)) => match n.as_u64().and_then(|r| u32::try_from(r).ok()) {
            Some(r) => Peer::Rank(r),
            None => Peer::Unknown(n.to_string()),
        },
        Some(Json::String(s)) if s == "MPI_PROC_NULL" => Peer::ProcNull,
        Some(Json::String(s)) if s == "MPI_ANY_SOURCE" => Peer::Any,
        Some(other) => Peer::Unknown(other.to_string()),
        None => Peer::Unknown("none".into()),
    }
}

/// What a receive's recorded status says, if it was recorded.
pub(super) fn envelope(status: Option<&Json>) -> Option<Envelope> {
    let s = status?.as_object()?;
    Some(Envelope {
        source: peer(field(s, "MPI_SOURCE")),
        tag: field(s, "MPI_TAG").and_then(Json::as_i64),
        bytes: field(s, "count").and_then(Json::as_u64),
        cancelled: field(s, "cancelled")
            .and_then(Json::as_bool)
            .unwrap_or(false),
    })
}

/// Size in bytes of a predefined datatype of fixed size (LP64).
fn predefined_size(datatype: &str) -> Option<u64> {
    Some(match datatype {
        "MPI_BYTE" | "MPI_CHAR" | "MPI_SIGNED_CHAR" | "MPI_UNSIGNED_CHAR" | "MPI_INT8_T"
        | "MPI_UINT8_T" | "MPI_C_BOOL" | "MPI_CXX_BOOL" | "MPI_CHARACTER" | "MPI_INTEGER1" => 1,
        "MPI_SHORT" | "MPI_UNSIGNED_SHORT" | "MPI_INT16_T" | "MPI_UINT16_T" | "MPI_INTEGER2"
        | "MPIX_C_FLOAT16" => 2,
        "MPI_INT" | "MPI_UNSIGNED" | "MPI_FLOAT" | "MPI_INT32_T" | "MPI_UINT32_T" | "MPI_WCHAR"
        | "MPI_INTEGER" | "MPI_INTEGER4" | "MPI_REAL" | "MPI_REAL4" | "MPI_LOGICAL" => 4,
        "MPI_LONG"
        | "MPI_UNSIGNED_LONG"
        | "MPI_LONG_LONG_INT"
        | "MPI_UNSIGNED_LONG_LONG"
        | "MPI_DOUBLE"
        | "MPI_INT64_T"
        | "MPI_UINT64_T"
        | "MPI_AINT"
        | "MPI_OFFSET"
        | "MPI_COUNT"
        | "MPI_INTEGER8"
        | "MPI_REAL8"
        | "MPI_DOUBLE_PRECISION"
        | "MPI_2INT"
        | "MPI_C_FLOAT_COMPLEX"
        | "MPI_CXX_FLOAT_COMPLEX"
        | "MPI_COMPLEX"
        | "MPI_COMPLEX8"
        | "MPI_2REAL"
        | "MPI_2INTEGER" => 8,
        "MPI_LONG_DOUBLE"
        | "MPI_C_DOUBLE_COMPLEX"
        | "MPI_DOUBLE_COMPLEX"
        | "MPI_COMPLEX16"
        | "MPI_REAL16"
        | "MPI_2DOUBLE_PRECISION"
        | "MPI_CXX_DOUBLE_COMPLEX" => 16,
        "MPI_C_LONG_DOUBLE_COMPLEX" | "MPI_COMPLEX32" | "MPI_CXX_LONG_DOUBLE_COMPLEX" => 32,
        _ => return None,
    })
}
