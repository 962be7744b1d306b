//! Objects never freed: what each rank still holds at MPI_Finalize, and
//! which of it was created in a loop.
//!
//! Which call creates and which frees an object comes from the same
//! model of the MPI functions the tracer's wrappers are generated from
//! (`mpigram_wrapgen::bundled`): an output handle is a new object, an
//! in-out handle is freed (MPI_Type_commit's excepted). Requests are
//! created by the calls that return one, completed by the Wait and Test
//! families (a persistent request then stays allocated) and freed by
//! MPI_Request_free.
//!
//! The tracer reuses an object's id only once it saw the object freed, so
//! a name created again while this module holds it live was freed in a
//! way not understood here: it is not counted as a leak.
//!
//! A loop is found on the grammar of the rank's call shapes
//! ([`super::walk`]; a leaking loop's calls differ in the ids they
//! create, so the trace's own grammar does not repeat them): the
//! innermost repeated run holding the creating call is the loop, and its
//! body's count of that call is the number created per iteration.

use super::walk::{LoopRef, RankWalk};
use super::{Finding, Kind, LintError};
use crate::decode::DecodedCall;
use crate::sites::Sites;
use mpigram_mpispec::{FUNCS, HandleKind, decode_signature};
use mpigram_trace::Trace;
use mpigram_wrapgen::model::{Action, Elem, Out};
use rustc_hash::FxHashMap;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// What an object is, for the advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Object {
    Handle(HandleKind),
    /// A non-blocking operation's request: freed by its completion.
    Request,
    /// A persistent request: inactive after completion, freed by MPI_Request_free.
    PersistentRequest,
}

impl Object {
    /// The object's name, and how to free it.
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Object::Handle(kind) => match kind {
                HandleKind::Comm => ("communicator", "MPI_Comm_free"),
                HandleKind::Group => ("group", "MPI_Group_free"),
                HandleKind::Datatype => ("datatype", "MPI_Type_free"),
                HandleKind::Op => ("reduction operation", "MPI_Op_free"),
                HandleKind::Info => ("info object", "MPI_Info_free"),
                HandleKind::Errhandler => ("error handler", "MPI_Errhandler_free"),
                HandleKind::Win => ("window", "MPI_Win_free"),
                HandleKind::File => ("file", "MPI_File_close"),
                _ => ("session", "MPI_Session_finalize"),
            },
            Object::Request => ("request", "MPI_Wait or MPI_Test (or MPI_Request_free)"),
            Object::PersistentRequest => ("persistent request", "MPI_Request_free"),
        }
    }
}

/// The kinds of handles whose leaks are reported: those a program
/// allocates and must free (not messages, keyvals or MPI_T handles).
const TRACKED: [HandleKind; 9] = [
    HandleKind::Comm,
    HandleKind::Group,
    HandleKind::Datatype,
    HandleKind::Op,
    HandleKind::Info,
    HandleKind::Errhandler,
    HandleKind::Win,
    HandleKind::File,
    HandleKind::Session,
];

/// What a function does to the objects its arguments name.
#[derive(Debug, Default)]
struct Lifecycle {
    /// Parameters naming objects the call creates (a handle or an array).
    creates: Vec<(&'static str, Object)>,
    /// Parameters naming handles the call frees.
    frees: Vec<&'static str>,
}

/// Every function's lifecycle, by name, from the function model.
fn lifecycles() -> Result<&'static FxHashMap<&'static str, Lifecycle>, LintError> {
    static TABLE: OnceLock<Result<FxHashMap<&'static str, Lifecycle>, String>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let model = mpigram_wrapgen::bundled::prototypes()?;
            let tracked = |k: &str| TRACKED.into_iter().find(|t| format!("{t:?}") == k);
            let mut table = FxHashMap::default();
            for f in FUNCS {
                let Some(m) = model.get(f.name) else { continue };
                // MPI_Send_init, MPI_Bcast_init, MPI_Psend_init: persistent.
                let persistent = f.name.ends_with("_init") && f.name != "MPI_Init";
                let mut life = Lifecycle::default();
                for (param, p) in f.params.iter().zip(&m.params) {
                    let created = match &p.action {
                        Action::Out(Out::NewHandle(k))
                        | Action::Array {
                            elem: Elem::NewHandle(k),
                            ..
                        } => tracked(k).map(Object::Handle),
                        Action::Out(Out::NewRequest) if persistent => {
                            Some(Object::PersistentRequest)
                        }
                        Action::Out(Out::NewRequest) => Some(Object::Request),
                        Action::Free(k) if tracked(k).is_some() => {
                            life.frees.push(param.name);
                            None
                        }
                        _ => None,
                    };
                    if let Some(object) = created {
                        life.creates.push((param.name, object));
                    }
                }
                if !life.creates.is_empty() || !life.frees.is_empty() {
                    table.insert(f.name, life);
                }
            }
            Ok(table)
        })
        .as_ref()
        .map_err(|e| LintError::Model(e.clone()))
}

/// The function of each signature.
pub(super) fn signature_funcs(trace: &Trace) -> Result<Vec<&'static str>, LintError> {
    trace
        .signatures
        .iter()
        .enumerate()
        .map(|(t, bytes)| {
            decode_signature(bytes)
                .map(|s| FUNCS[s.func as usize].name)
                .map_err(|e| LintError::Signature(t as u32, e.to_string()))
        })
        .collect()
}

/// The user objects a value names (a handle, or an array of handles):
/// not null or predefined handles (`MPI_...`), nor ones the decoder could
/// not name.
fn object_names(v: Option<&Json>) -> Vec<&str> {
    let user = |s: &&str| !s.starts_with("MPI_") && !s.contains('?') && s != &"NULL";
    match v {
        Some(Json::String(s)) => std::iter::once(s.as_str()).filter(user).collect(),
        Some(Json::Array(items)) => items.iter().filter_map(Json::as_str).filter(user).collect(),
        _ => Vec::new(),
    }
}

/// The requests a call completes (a successful Wait or Test) or frees
/// (MPI_Request_free: `true`).
fn completed_requests(call: &DecodedCall) -> (Vec<&str>, bool) {
    let a = &call.args;
    let flag = a.get("flag").and_then(Json::as_i64).is_none_or(|f| f != 0);
    let requests = || -> Vec<&Json> {
        a.get("array_of_requests")
            .and_then(Json::as_array)
            .map(|r| r.iter().collect())
            .unwrap_or_default()
    };
    let at = |i: Option<i64>| {
        let requests = requests();
        i.and_then(|i| usize::try_from(i).ok())
            .and_then(|i| requests.get(i).copied())
    };
    let names: Vec<&Json> = match call.func {
        "MPI_Request_free" => return (object_names(a.get("request")), true),
        "MPI_Wait" | "MPI_Test" if flag => a.get("request").into_iter().collect(),
        "MPI_Waitall" | "MPI_Testall" if flag => requests(),
        // MPI_UNDEFINED (no active request) is no index of the array.
        "MPI_Waitany" | "MPI_Testany" if flag => at(a.get("index").and_then(Json::as_i64))
            .into_iter()
            .collect(),
        "MPI_Waitsome" | "MPI_Testsome" => a
            .get("array_of_indices")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| at(i.as_i64()))
            .collect(),
        _ => Vec::new(),
    };
    (
        names
            .into_iter()
            .flat_map(|v| object_names(Some(v)))
            .collect(),
        false,
    )
}

/// An object alive at a point of the rank's calls.
#[derive(Clone, Copy, Debug)]
pub(super) struct Live {
    object: Object,
    func: &'static str,
    /// The call that created it.
    pub(super) seq: u64,
}

/// The objects a rank holds, call by call.
pub(super) struct Objects {
    table: &'static FxHashMap<&'static str, Lifecycle>,
    live: FxHashMap<String, Live>,
}

impl Objects {
    pub(super) fn new() -> Result<Objects, LintError> {
        Ok(Objects {
            table: lifecycles()?,
            live: FxHashMap::default(),
        })
    }

    /// What `call` creates, completes and frees.
    pub(super) fn record(&mut self, call: &DecodedCall) {
        if call.ret != 0 {
            return; // a failed call creates and frees nothing
        }
        let live = &mut self.live;
        let (done, free) = completed_requests(call);
        for name in done {
            let persistent = live
                .get(name)
                .is_some_and(|l| l.object == Object::PersistentRequest);
            if free || !persistent {
                live.remove(name);
            }
        }
        let Some(life) = self.table.get(call.func) else {
            return;
        };
        for param in &life.frees {
            for name in object_names(call.args.get(*param)) {
                live.remove(name);
            }
        }
        for &(param, object) in &life.creates {
            for name in object_names(call.args.get(param)) {
                let created = Live {
                    object,
                    func: call.func,
                    seq: call.seq,
                };
                live.insert(name.to_owned(), created);
            }
        }
    }

    /// The objects still held, in creation order.
    pub(super) fn live(self) -> Vec<Live> {
        let mut left: Vec<Live> = self.live.into_values().collect();
        left.sort_by_key(|l| l.seq);
        left
    }
}

/// The findings about a rank's objects.
pub(super) fn rank_findings(rank: u32, walk: &RankWalk, sites: &Sites) -> Vec<Finding> {
    let Some(left) = &walk.leaked else {
        return Vec::new();
    };
    let loops = &walk.shapes;
    // Leaks by their loop and call shape; those in no loop, or alone in
    // theirs, by call site.
    let mut in_loops: BTreeMap<(LoopRef, u32), Vec<Live>> = BTreeMap::new();
    let mut single: Vec<Live> = Vec::new();
    for &l in left {
        match loops.loop_of(l.seq) {
            Some(key) => in_loops.entry(key).or_default().push(l),
            None => single.push(l),
        }
    }
    let mut findings = Vec::new();
    for ((lp, shape), group) in in_loops {
        if group.len() < 2 {
            single.extend(group);
            continue;
        }
        let first = group[0];
        let (noun, free) = first.object.describe();
        let per_iteration = loops.per_iteration(lp, shape);
        let what = if first.object == Object::Request {
            format!("{noun}s started in a loop ({per_iteration} per iteration) are never completed")
        } else {
            format!("{noun}s created in a loop ({per_iteration} per iteration) are never freed")
        };
        findings.push(Finding::on(
            Kind::LeakedInLoop,
            rank,
            first.func,
            sites.of(rank, first.seq),
            group.len() as u64,
            format!("{what}: free each with {free} in the loop, or create one before it"),
        ));
    }
    let mut by_site: BTreeMap<_, (Live, u64)> = BTreeMap::new();
    for l in single {
        let site = sites.of(rank, l.seq);
        by_site.entry((site, l.object, l.func)).or_insert((l, 0)).1 += 1;
    }
    for ((site, object, func), (_, n)) in by_site {
        let (noun, free) = object.describe();
        let (kind, message) = match object {
            Object::Request => (
                Kind::RequestNeverCompleted,
                format!(
                    "{} {noun} started here is never completed: complete it with {free}",
                    article(noun)
                ),
            ),
            _ => (
                Kind::LeakedObject,
                format!(
                    "{} {noun} created here is never freed: free it with {free}",
                    article(noun)
                ),
            ),
        };
        findings.push(Finding::on(kind, rank, func, site, n, message));
    }
    findings
}

/// `a` or `an` before `noun`.
fn article(noun: &str) -> &'static str {
    if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}
