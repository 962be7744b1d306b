//! The point-to-point operations of one rank, read from its decoded calls:
//! each send or receive with the call that posted it and the call that
//! completed it, followed through requests (Wait/Test families),
//! persistent requests (Start/Startall) and matched probes (Mprobe/Mrecv).

use super::collectives::{self, CollectiveCall, CollectiveKind, Context};
use super::one_sided::OneSidedLog;
use super::{Comm, Direction, Envelope, Operation, Peer};
use crate::decode::DecodedCall;
use rustc_hash::FxHashMap;
use serde_json::Value as Json;

/// MPICH's MPI_UNDEFINED, the index Waitany/Testany return when no request
/// was active.
const MPI_UNDEFINED: i64 = -32766;

/// Reads one rank's calls, in order, into its operations.
pub(super) struct OperationLog {
    rank: u32,
    operations: Vec<Operation>,
    /// Live requests by their decoded name (`req5`). A name is reused only
    /// once the tracer saw its request freed.
    requests: FxHashMap<String, Request>,
    /// Messages taken by MPI_Mprobe/MPI_Improbe, by handle name (`msg0`),
    /// waiting for their MPI_Mrecv/MPI_Imrecv: the receive operation.
    messages: FxHashMap<String, usize>,
    /// Collective calls (blocking, non-blocking, persistent starts), in posting order.
    collectives: Vec<CollectiveCall>,
    /// Windows by name: the collective call that created each live one.
    windows: FxHashMap<String, usize>,
    one_sided: OneSidedLog,
}

/// What a request's completion completes.
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// An index into `operations`.
    Operation(usize),
    /// An index into `collectives`.
    Collective(usize),
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
    Operation(Operation),
    /// The index in `collectives` of the MPI_*_init call, and what each start runs.
    Collective(usize, CollectiveKind),
}

/// One rank's operations, read from its calls.
pub struct RankOperations {
    pub(super) point_to_point: Vec<Operation>,
    pub(super) collectives: Vec<CollectiveCall>,
    pub(super) one_sided: OneSidedLog,
}

impl OperationLog {
    pub(super) fn new(rank: u32) -> OperationLog {
        OperationLog {
            rank,
            operations: Vec::new(),
            requests: FxHashMap::default(),
            messages: FxHashMap::default(),
            collectives: Vec::new(),
            windows: FxHashMap::default(),
            one_sided: OneSidedLog::default(),
        }
    }

    /// The operations in posting order (a call's send before its receive).
    pub(super) fn finish(self) -> RankOperations {
        RankOperations {
            point_to_point: self.operations,
            collectives: self.collectives,
            one_sided: self.one_sided,
        }
    }

    pub(super) fn record(&mut self, call: &DecodedCall) {
        let a = &call.args;
        let seq = call.seq;
        // Large-count variants (MPI_Isend_c) take the same arguments.
        let func = call.func.strip_suffix("_c").unwrap_or(call.func);
        match func {
            "MPI_Send" | "MPI_Bsend" | "MPI_Ssend" | "MPI_Rsend" => {
                let op = self.send(call, "dest", "tag", "count", "datatype");
                self.post(op, Some(seq));
            }
            "MPI_Isend" | "MPI_Ibsend" | "MPI_Issend" | "MPI_Irsend" => {
                let op = self.send(call, "dest", "tag", "count", "datatype");
                let i = self.post(op, None);
                self.start_request(a.get("request"), vec![Pending::Operation(i)]);
            }
            "MPI_Recv" => {
                let mut op = self.recv(call, "source", "tag");
                op.status = envelope(a.get("status"));
                self.post(op, Some(seq));
            }
            "MPI_Irecv" => {
                let op = self.recv(call, "source", "tag");
                let i = self.post(op, None);
                self.start_request(a.get("request"), vec![Pending::Operation(i)]);
            }
            "MPI_Sendrecv" | "MPI_Sendrecv_replace" => {
                let (count, datatype) = send_count_keys(func);
                let send = self.send(call, "dest", "sendtag", count, datatype);
                let mut recv = self.recv(call, "source", "recvtag");
                recv.status = envelope(a.get("status"));
                self.post(send, Some(seq));
                self.post(recv, Some(seq));
            }
            "MPI_Isendrecv" | "MPI_Isendrecv_replace" => {
                let (count, datatype) = send_count_keys(func);
                let send = self.send(call, "dest", "sendtag", count, datatype);
                let recv = self.recv(call, "source", "recvtag");
                let i = self.post(send, None);
                let j = self.post(recv, None);
                let both = vec![Pending::Operation(i), Pending::Operation(j)];
                self.start_request(a.get("request"), both);
            }
            "MPI_Send_init" | "MPI_Bsend_init" | "MPI_Ssend_init" | "MPI_Rsend_init" => {
                let op = self.send(call, "dest", "tag", "count", "datatype");
                self.persistent_request(a.get("request"), Persistent::Operation(op));
            }
            "MPI_Recv_init" => {
                let op = self.recv(call, "source", "tag");
                self.persistent_request(a.get("request"), Persistent::Operation(op));
            }
            "MPI_Start" => self.start(a.get("request"), call),
            "MPI_Startall" => {
                for request in items(a.get("array_of_requests")) {
                    self.start(Some(request), call);
                }
            }
            "MPI_Mprobe" => self.take_message(call),
            "MPI_Improbe" if flag(a.get("flag")) => self.take_message(call),
            "MPI_Mrecv" => {
                if let Some(i) = name(a.get("message")).and_then(|m| self.messages.remove(m)) {
                    self.complete_operation(i, seq, a.get("status"));
                }
            }
            "MPI_Imrecv" => {
                if let Some(i) = name(a.get("message")).and_then(|m| self.messages.remove(m)) {
                    self.start_request(a.get("request"), vec![Pending::Operation(i)]);
                }
            }
            "MPI_Wait" => self.complete(a.get("request"), seq, a.get("status"), true),
            "MPI_Test" if flag(a.get("flag")) => {
                self.complete(a.get("request"), seq, a.get("status"), true)
            }
            // The request stays allocated: a later Wait or Test frees it.
            "MPI_Request_get_status" if flag(a.get("flag")) => {
                self.complete(a.get("request"), seq, a.get("status"), false)
            }
            "MPI_Waitall" => self.complete_all(call),
            "MPI_Testall" if flag(a.get("flag")) => self.complete_all(call),
            "MPI_Waitany" => self.complete_any(call),
            "MPI_Testany" if flag(a.get("flag")) => self.complete_any(call),
            "MPI_Waitsome" | "MPI_Testsome" => self.complete_some(call),
            "MPI_Request_free" => self.free(a.get("request")),
            _ => {
                self.record_collective(call, func);
                self.one_sided.record(call, func, &self.windows);
            }
        }
    }

    /// A collective call: blocking ones complete at once, non-blocking
    /// ones at their request's completion, persistent ones (`MPI_*_init`)
    /// are posted by each MPI_Start.
    fn record_collective(&mut self, call: &DecodedCall, func: &str) {
        let Some(op) = collectives::classify(func) else {
            return;
        };
        let a = &call.args;
        let context = match name(a.get("win")) {
            Some(win) if !collectives::creates_window(func) => match self.windows.get(win) {
                Some(&created) => Context::Window { created },
                None => Context::UnknownWindow(win.to_owned()),
            },
            _ => Context::Comm {
                comm: Comm::from_name(a.get("comm").and_then(Json::as_str).unwrap_or("none")),
                seq: call.seq,
            },
        };
        let i = self.collectives.len();
        self.collectives.push(CollectiveCall {
            rank: self.rank,
            func: call.func,
            operation: call.func,
            kind: match op.start {
                collectives::Start::Persistent => CollectiveKind::Setup,
                _ => op.kind,
            },
            post: call.seq,
            // An MPI_*_init call returns set up; each start completes at its Wait.
            completion: (op.start != collectives::Start::Request).then_some(call.seq),
            context,
            root: collectives::root_arg(a.get("root")),
        });
        if let Some(win) = name(a.get("win")) {
            match func {
                "MPI_Win_free" => {
                    self.windows.remove(win);
                }
                _ if collectives::creates_window(func) => {
                    self.windows.insert(win.to_owned(), i);
                }
                _ => {}
            }
        }
        match op.start {
            collectives::Start::Blocking => {}
            collectives::Start::Request => {
                self.start_request(a.get("request"), vec![Pending::Collective(i)])
            }
            collectives::Start::Persistent => {
                self.persistent_request(a.get("request"), Persistent::Collective(i, op.kind))
            }
        }
    }

    fn operation(&self, call: &DecodedCall, direction: Direction) -> Operation {
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
        }
    }

    fn send(
        &self,
        call: &DecodedCall,
        dest: &str,
        tag: &str,
        count: &str,
        datatype: &str,
    ) -> Operation {
        let a = &call.args;
        let mut op = self.operation(call, Direction::Send);
        op.peer = peer(a.get(dest));
        op.tag = a.get(tag).and_then(Json::as_i64);
        let count = a.get(count).and_then(Json::as_u64);
        let size = a
            .get(datatype)
            .and_then(Json::as_str)
            .and_then(predefined_size);
        op.bytes = count.zip(size).map(|(n, size)| n * size);
        op
    }

    fn recv(&self, call: &DecodedCall, source: &str, tag: &str) -> Operation {
        let mut op = self.operation(call, Direction::Recv);
        op.peer = peer(call.args.get(source));
        op.tag = call.args.get(tag).and_then(Json::as_i64);
        op
    }

    /// Adds a posted operation, completed at `completion` if blocking.
    fn post(&mut self, mut op: Operation, completion: Option<u64>) -> usize {
        op.completion = completion;
        self.operations.push(op);
        self.operations.len() - 1
    }

    /// A new request now stands for `active`.
    fn start_request(&mut self, request: Option<&Json>, active: Vec<Pending>) {
        let Some(name) = name(request) else { return };
        // A live name again means its last completion was not traced (or
        // not understood): that operation's completion stays unknown.
        self.requests.insert(
            name.to_owned(),
            Request {
                active,
                persistent: None,
            },
        );
    }

    fn persistent_request(&mut self, request: Option<&Json>, op: Persistent) {
        let Some(name) = name(request) else { return };
        self.requests.insert(
            name.to_owned(),
            Request {
                active: Vec::new(),
                persistent: Some(op),
            },
        );
    }

    /// MPI_Start: a persistent request posts its operation again.
    fn start(&mut self, request: Option<&Json>, call: &DecodedCall) {
        let Some(r) = name(request).and_then(|n| self.requests.get(n)) else {
            return;
        };
        let pending = match &r.persistent {
            Some(Persistent::Operation(template)) => {
                let op = Operation {
                    func: call.func,
                    post: call.seq,
                    ..template.clone()
                };
                Pending::Operation(self.post(op, None))
            }
            Some(Persistent::Collective(init, kind)) => {
                let (init, kind) = (*init, *kind);
                let started = CollectiveCall {
                    func: call.func,
                    kind,
                    post: call.seq,
                    completion: None,
                    context: Context::Persistent { init },
                    ..self.collectives[init].clone()
                };
                self.collectives.push(started);
                Pending::Collective(self.collectives.len() - 1)
            }
            None => return,
        };
        if let Some(r) = name(request).and_then(|n| self.requests.get_mut(n)) {
            r.active = vec![pending];
        }
    }

    /// MPI_Mprobe (or a successful MPI_Improbe): the message is matched
    /// here; its receive completes at MPI_Mrecv or MPI_Imrecv's request.
    fn take_message(&mut self, call: &DecodedCall) {
        let Some(message) = name(call.args.get("message")) else {
            return; // MPI_MESSAGE_NO_PROC: a probe of MPI_PROC_NULL
        };
        let mut op = self.recv(call, "source", "tag");
        op.status = envelope(call.args.get("status"));
        let i = self.post(op, None);
        self.messages.insert(message.to_owned(), i);
    }

    /// The operations of `request` completed at call `seq` with `status`;
    /// `free`: the request is deallocated (or made inactive) by the call.
    fn complete(&mut self, request: Option<&Json>, seq: u64, status: Option<&Json>, free: bool) {
        let Some(name) = name(request) else { return };
        let Some(r) = self.requests.get_mut(name) else {
            return; // not a point-to-point request
        };
        let active = if free {
            std::mem::take(&mut r.active)
        } else {
            r.active.clone()
        };
        if free && r.persistent.is_none() {
            self.requests.remove(name);
        }
        for pending in active {
            match pending {
                Pending::Operation(i) => self.complete_operation(i, seq, status),
                Pending::Collective(i) => {
                    let c = &mut self.collectives[i];
                    c.completion = c.completion.or(Some(seq));
                }
            }
        }
    }

    fn complete_operation(&mut self, i: usize, seq: u64, status: Option<&Json>) {
        let op = &mut self.operations[i];
        if op.completion.is_some() {
            return; // seen complete earlier (MPI_Request_get_status)
        }
        op.completion = Some(seq);
        if op.direction == Direction::Recv {
            if let Some(envelope) = envelope(status) {
                op.cancelled = envelope.cancelled;
                // A matched probe's status already named the message.
                op.status = Some(Envelope {
                    bytes: envelope.bytes.or(op.status.as_ref().and_then(|s| s.bytes)),
                    ..envelope
                });
            }
        }
    }

    /// MPI_Waitall, or MPI_Testall that returned true: status `i` belongs
    /// to request `i`.
    fn complete_all(&mut self, call: &DecodedCall) {
        let a = &call.args;
        let statuses = items(a.get("array_of_statuses"));
        for (i, request) in items(a.get("array_of_requests")).iter().enumerate() {
            self.complete(Some(request), call.seq, statuses.get(i), true);
        }
    }

    /// MPI_Waitany, or MPI_Testany that returned true: request `index`.
    fn complete_any(&mut self, call: &DecodedCall) {
        let a = &call.args;
        let Some(index) = a.get("index").and_then(Json::as_i64) else {
            return;
        };
        if index == MPI_UNDEFINED {
            return;
        }
        let requests = items(a.get("array_of_requests"));
        if let Some(request) = usize::try_from(index).ok().and_then(|i| requests.get(i)) {
            self.complete(Some(request), call.seq, a.get("status"), true);
        }
    }

    /// MPI_Waitsome/MPI_Testsome: status `k` belongs to request `indices[k]`.
    fn complete_some(&mut self, call: &DecodedCall) {
        let a = &call.args;
        let requests = items(a.get("array_of_requests"));
        let statuses = items(a.get("array_of_statuses"));
        for (k, index) in items(a.get("array_of_indices")).iter().enumerate() {
            let request = index
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| requests.get(i));
            if let Some(request) = request {
                self.complete(Some(request), call.seq, statuses.get(k), true);
            }
        }
    }

    /// MPI_Request_free: an active operation completes at a time no call
    /// shows; its completion stays unknown.
    fn free(&mut self, request: Option<&Json>) {
        if let Some(name) = name(request) {
            self.requests.remove(name);
        }
    }
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
fn envelope(status: Option<&Json>) -> Option<Envelope> {
    let s = status?.as_object()?;
    Some(Envelope {
        source: peer(s.get("MPI_SOURCE")),
        tag: s.get("MPI_TAG").and_then(Json::as_i64),
        bytes: s.get("count").and_then(Json::as_u64),
        cancelled: s.get("cancelled").and_then(Json::as_bool).unwrap_or(false),
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
