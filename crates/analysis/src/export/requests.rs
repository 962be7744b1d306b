//! A rank's non-blocking operations (and messages taken by MPI_Mprobe),
//! followed from post to completion as its calls are read, each shown as
//! a slice when the call that completed it is read. Requests in flight at
//! once overlap without nesting, so each goes to a lane of its own: the
//! lowest lane free since its post. Memory holds what is in flight.

use crate::decode::{Args, DecodedCall};
use crate::matching::{CallAt, Direction, Operation, OperationLog, Peer, RankEvent};
use crate::timeline::Span;
use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json, json};
use std::sync::Arc;

/// An operation posted and not completed yet.
struct Posted {
    operation: Operation,
    start_ns: u64,
    /// Whether the window shows its posting call (if not, neither it).
    shown: bool,
}

/// An operation completed by a later call than the one that posted it.
pub(super) struct RequestSlice {
    pub(super) func: &'static str,
    pub(super) lane: usize,
    /// The lane is new: no slice of the rank was on it before.
    pub(super) new_lane: bool,
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) args: Args,
}

pub(super) struct RankRequests {
    log: OperationLog,
    /// Operations posted so far (the next one's number).
    posted: usize,
    in_flight: FxHashMap<usize, Posted>,
    /// Each lane's end: of the slices on it, the latest.
    lanes: Vec<u64>,
}

impl RankRequests {
    pub(super) fn new(rank: u32) -> RankRequests {
        RankRequests {
            log: OperationLog::new(rank),
            posted: 0,
            in_flight: FxHashMap::default(),
            lanes: Vec::new(),
        }
    }

    /// Reads the rank's next call, which ran `[start_ns, end_ns]` and is
    /// `shown` or not; the slices of the operations it completed go to `out`.
    pub(super) fn call(
        &mut self,
        call: &DecodedCall,
        (start_ns, end_ns): (u64, u64),
        shown: bool,
        out: &mut Vec<RequestSlice>,
    ) {
        let span = Span {
            start_ns: start_ns as i64,
            end_ns: end_ns as i64,
        };
        self.log.record(
            call,
            CallAt {
                span: Some(span),
                ..CallAt::default()
            },
        );
        for event in self.log.take_events() {
            match event {
                RankEvent::Post(operation) => {
                    let n = self.posted;
                    self.posted += 1;
                    if operation.completion.is_none() {
                        let posted = Posted {
                            operation,
                            start_ns,
                            shown,
                        };
                        self.in_flight.insert(n, posted);
                    }
                }
                RankEvent::Complete { op, seq, .. } => {
                    let Some(p) = self.in_flight.remove(&op) else {
                        continue;
                    };
                    if !p.shown || seq == p.operation.post {
                        continue;
                    }
                    let end_ns = end_ns.max(p.start_ns);
                    let lane = self.lanes.iter().position(|&busy| busy <= p.start_ns);
                    let new_lane = lane.is_none();
                    let lane = lane.unwrap_or_else(|| {
                        self.lanes.push(0);
                        self.lanes.len() - 1
                    });
                    self.lanes[lane] = self.lanes[lane].max(end_ns);
                    out.push(RequestSlice {
                        func: p.operation.func,
                        lane,
                        new_lane,
                        start_ns: p.start_ns,
                        end_ns,
                        args: Arc::new(request_args(&p.operation)),
                    });
                }
                RankEvent::Abandon(op) => {
                    self.in_flight.remove(&op);
                }
                _ => {}
            }
        }
    }
}

/// What a request's slice says: its peer, tag and communicator (it runs
/// from the call that posted it to the one that completed it).
fn request_args(op: &Operation) -> Map<String, Json> {
    let mut args = Map::new();
    let (peer, tag) = match op.direction {
        Direction::Send => ("dest", "tag"),
        Direction::Recv => ("source", "tag"),
    };
    args.insert(
        peer.into(),
        match &op.peer {
            Peer::Rank(r) => json!(r),
            Peer::Any => json!("MPI_ANY_SOURCE"),
            Peer::ProcNull => json!("MPI_PROC_NULL"),
            Peer::Unknown(text) => json!(text),
        },
    );
    args.insert(
        tag.into(),
        op.tag.map_or(json!("MPI_ANY_TAG"), |t| json!(t)),
    );
    if let Some(comm) = &op.comm {
        args.insert("comm".into(), json!(comm.to_string()));
    }
    args
}
