//! One call signature as C: each recorded argument becomes the expression
//! that passes the same value on every rank that makes the call.
//!
//! - ranks relative to the caller become `world_rank + d` (or the caller's
//!   rank in the call's communicator or window, asked of MPI through PMPI,
//!   which the tracer does not record);
//! - user objects are slots of per-kind tables (`comms[3]`, `types[1]`),
//!   filled by the calls that create them (`&types[1]` as the output);
//! - requests are slots of one table, one per (pool, index) of the trace;
//! - buffers are `segs[id] + offset`, one allocation per memory segment;
//! - outputs nobody reads go to scratch space; statuses passed in
//!   (MPI_Get_count) are rebuilt from the recorded fields.

use crate::callbacks::{callback_name, callback_stub};
use crate::calls::{
    completed_indices, init, is_allocation, is_empty_poll, not_reproduced, poll_flag,
};
use crate::protos::prototype;
use crate::wildcard::{self, Binding, Bindings};
use mpigram_mpispec::Args;
use mpigram_mpispec::{
    BufferRef, ConstRef, ConstSet, HandleKind, HandleRef, Rank, RequestRef, Signature, Status,
    Value, predefined,
};
use mpigram_wrapgen::ctype::Array as CArray;
use mpigram_wrapgen::model::{Action, Elem, Out, ParamModel, Scalar};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Bytes of each scratch slot for outputs (strings up to
/// MPI_MAX_LIBRARY_VERSION_STRING, arrays of statuses).
pub const SCRATCH_MIN: usize = 16384;

/// The C of one call: statements before it, the call, statements after.
#[derive(Debug, Default, Clone)]
pub struct CallCode {
    pub pre: Vec<String>,
    pub call: String,
    pub post: Vec<String>,
    /// A polling call (MPI_Test, MPI_Iprobe, ...) that found what it polled
    /// for: the benchmark repeats it until it does, in variable `flag`.
    pub poll: bool,
}

/// What a signature becomes.
#[derive(Debug, Clone)]
pub enum Rendered {
    Call(CallCode),
    /// Not reproduced, with the reason (a comment in the C).
    Skip(String),
}

/// The C table of user objects of `kind`, and the C type of its slots.
pub fn table(kind: HandleKind) -> Option<(&'static str, &'static str)> {
    Some(match kind {
        HandleKind::Comm => ("comms", "MPI_Comm"),
        HandleKind::Group => ("groups", "MPI_Group"),
        HandleKind::Datatype => ("types", "MPI_Datatype"),
        HandleKind::Op => ("ops", "MPI_Op"),
        HandleKind::Info => ("infos", "MPI_Info"),
        HandleKind::Errhandler => ("errhandlers", "MPI_Errhandler"),
        HandleKind::Win => ("wins", "MPI_Win"),
        HandleKind::File => ("files", "MPI_File"),
        HandleKind::Message => ("messages", "MPI_Message"),
        HandleKind::Session => ("sessions", "MPI_Session"),
        HandleKind::Keyval => ("keyvals", "int"),
        _ => return None,
    })
}

/// State shared by all calls: tables and the things calls refer to.
#[derive(Default)]
pub struct Context {
    /// Table size (largest id + 1) of each kind used.
    pub handles: BTreeMap<HandleKind, u64>,
    /// Slot of each (pool, index) request.
    pub requests: FxHashMap<(u64, u64), usize>,
    /// User functions to stand in for: id -> C function type of its first use.
    pub callbacks: BTreeMap<u64, String>,
    /// Scratch slots needed and bytes each.
    pub scratch_slots: usize,
    pub scratch_bytes: usize,
    /// Segments each window's memory came from (MPI_Win_allocate), by window id.
    pub window_segments: FxHashMap<u64, Vec<u64>>,
    pub bindings: Bindings,
    /// Windows (by id) some call creates with MPI_Win_create_dynamic.
    pub dynamic_windows: rustc_hash::FxHashSet<u64>,
    /// Tables of wildcard senders by rank, to define before the rules.
    pub sender_tables: Vec<String>,
    /// Terminals called only after MPI_Finalize (by the MPI library itself).
    pub after_finalize: rustc_hash::FxHashSet<u32>,
    /// Arguments given as C expressions instead of recorded values:
    /// (terminal, parameter position) -> C (peers of a benchmark for
    /// another number of ranks, `extrapolate.rs`).
    pub arg_exprs: FxHashMap<(u32, usize), String>,
}

impl Context {
    /// Learns the tables `sigs` need.
    pub fn learn(&mut self, sigs: &[Signature]) {
        self.scratch_bytes = SCRATCH_MIN;
        for sig in sigs {
            self.scratch_slots = self.scratch_slots.max(sig.args.len());
            self.learn_values(&sig.args);
            let a = Args::new(sig);
            if let (Some(Value::Buffer(BufferRef::Segment { id, .. })), Some(HandleRef::User(w))) =
                (a.value("baseptr"), a.handle("win"))
            {
                if is_allocation(a.func.name) {
                    let segments = self.window_segments.entry(w).or_default();
                    if !segments.contains(id) {
                        segments.push(*id);
                    }
                }
            }
            if let ("MPI_Win_create_dynamic", Some(HandleRef::User(w))) =
                (a.func.name, a.handle("win"))
            {
                self.dynamic_windows.insert(w);
            }
        }
    }

    fn learn_values(&mut self, values: &[Value]) {
        for v in values {
            match v {
                Value::Handle(k, HandleRef::User(id)) => {
                    let n = self.handles.entry(*k).or_insert(0);
                    *n = (*n).max(id + 1);
                }
                Value::Request(RequestRef::Pooled { pool, index }) => {
                    let next = self.requests.len();
                    self.requests.entry((*pool, *index)).or_insert(next);
                }
                Value::Array(Some(items)) => {
                    self.scratch_bytes = self.scratch_bytes.max(items.len() * 64);
                    self.learn_values(items);
                }
                _ => {}
            }
        }
    }

    /// The C of terminal `terminal`'s signature.
    pub fn render(&mut self, terminal: u32, sig: &Signature) -> Rendered {
        let a = Args::new(sig);
        let name = a.func.name;
        if let Some(why) = not_reproduced(name) {
            return Rendered::Skip(format!("{name}: {why}"));
        }
        if let Some(code) = init(&a) {
            return Rendered::Call(code);
        }
        if self.dynamic_access(&a) {
            return Rendered::Skip(format!(
                "{name} on a dynamic window: its displacement is an address in the target's memory in the traced run"
            ));
        }
        if self.after_finalize.contains(&terminal) {
            return Rendered::Skip(format!(
                "{name} after MPI_Finalize: the MPI library's own clean-up, which it repeats"
            ));
        }
        if is_empty_poll(sig) {
            return Rendered::Skip(format!(
                "{name} that found nothing: the benchmark polls until the recorded success instead"
            ));
        }
        let Some(model) = prototype(name) else {
            return Rendered::Skip(format!("{name}: no C binding known"));
        };
        let bound = if wildcard::is_wildcard(&a) {
            wildcard::own_sender(&a)
                .map(Binding::All)
                .or_else(|| self.bindings.get(&terminal).cloned())
        } else {
            None
        };
        let flag = poll_flag(name);
        let mut code = CallCode {
            poll: flag.is_some(),
            ..CallCode::default()
        };
        let mut c_args = Vec::with_capacity(model.params.len());
        for (pos, (p, v)) in model.params.iter().zip(&sig.args).enumerate() {
            let v = match (p.name.as_str(), &bound) {
                ("source", Some(Binding::All(r))) => &Value::Rank(*r),
                ("source", Some(Binding::PerRank(senders))) => {
                    c_args.push(self.sender_table(terminal, senders, &comm_rank(a.handle("comm"))));
                    continue;
                }
                _ => v,
            };
            if flag == Some(p.name.as_str()) {
                c_args.push("&flag".to_owned());
                continue;
            }
            if let Some(expr) = self.arg_exprs.get(&(terminal, pos)) {
                c_args.push(expr.clone());
                continue;
            }
            match self.argument(&a, pos, p, v, &mut code) {
                Ok(s) => c_args.push(s),
                Err(why) => return Rendered::Skip(format!("{name}: {why}")),
            }
        }
        code.call = format!("{name}({})", c_args.join(", "));
        // Which of several requests completes depends on timing: wait
        // (without a call a tracer sees) for the ones that had completed.
        if let Some(done) = completed_indices(&a) {
            if let Some(pos) = a
                .func
                .params
                .iter()
                .position(|p| p.name == "array_of_requests")
            {
                if !done.is_empty() {
                    let list: Vec<String> = done.iter().map(|i| i.to_string()).collect();
                    code.pre.push(format!(
                        "await_requests({}, (const int[]){{{}}}, {});",
                        c_args[pos],
                        list.join(", "),
                        list.len()
                    ));
                }
            }
        }
        match name {
            "MPI_Free_mem" => {
                if let Some(Value::Buffer(BufferRef::Segment { id, .. })) = a.value("base") {
                    code.post.push(format!("segs[{id}] = seg_home[{id}];"));
                }
            }
            "MPI_Win_free" => {
                if let Some(Value::Handle(_, HandleRef::User(w))) = a.value("win") {
                    for id in self.window_segments.get(w).into_iter().flatten() {
                        code.post.push(format!("segs[{id}] = seg_home[{id}];"));
                    }
                }
            }
            _ => {}
        }
        Rendered::Call(code)
    }

    /// Whether `a` accesses a window created dynamic (its target
    /// displacement is an address of the traced run).
    fn dynamic_access(&self, a: &Args) -> bool {
        a.value("target_disp").is_some()
            && matches!(a.handle("win"), Some(HandleRef::User(w)) if self.dynamic_windows.contains(&w))
    }

    /// The source of a wildcard receive bound per rank: a table by world
    /// rank of relative (or absolute) senders.
    fn sender_table(&mut self, terminal: u32, senders: &[Option<Rank>], me: &str) -> String {
        let name = format!("sender_{terminal}");
        let relative = senders
            .iter()
            .flatten()
            .any(|r| matches!(r, Rank::Relative(_)));
        let values: Vec<String> = senders
            .iter()
            .map(|r| match r {
                Some(Rank::Relative(d) | Rank::Absolute(d)) => int_lit(*d),
                _ => "0".into(),
            })
            .collect();
        self.sender_tables.push(format!(
            "/* the recorded sender of a wildcard receive, by rank{} */\nstatic const int {name}[{}] = {{{}}};",
            if relative { ", relative to the receiver" } else { "" },
            values.len(),
            values.join(", ")
        ));
        if relative {
            format!("{me} + {name}[world_rank]")
        } else {
            format!("{name}[world_rank]")
        }
    }

    fn argument(
        &mut self,
        a: &Args,
        pos: usize,
        p: &ParamModel,
        v: &Value,
        code: &mut CallCode,
    ) -> Result<String, String> {
        let base = p.ctype.base.as_str();
        Ok(match &p.action {
            Action::Value(s) => self.scalar(a, s, v, base)?,
            Action::Before(s) => match (s, v) {
                (Scalar::Request, Value::Request(RequestRef::Pooled { pool, index })) => {
                    format!("&reqs[{}]", self.requests[&(*pool, *index)])
                }
                (_, Value::Handle(k, HandleRef::User(id))) => {
                    format!("&{}[{id}]", table(*k).ok_or("an MPI tool object")?.0)
                }
                _ => format!("({base}[]){{{}}}", self.scalar(a, s, v, base)?),
            },
            // Freed through a copy: two of the application's variables may
            // have held the same object (MPI_Type_get_contents returns the
            // handle it was given), and freeing one left the other as it was.
            Action::Free(_) => match v {
                Value::Handle(k, HandleRef::User(id)) => {
                    let t = table(*k).ok_or("an MPI tool object")?.0;
                    code.pre.push(format!("{base} h{pos} = {t}[{id}];"));
                    format!("&h{pos}")
                }
                Value::Handle(k, h) => format!("({base}[]){{{}}}", handle_expr(*k, *h)?),
                _ => return Err(format!("{} is not a handle", p.name)),
            },
            Action::Out(o) => match (o, v) {
                (
                    Out::NewHandle(_) | Out::Lookup(_) | Out::PendingComm,
                    Value::Handle(k, HandleRef::User(id)),
                ) => {
                    format!("&{}[{id}]", table(*k).ok_or("an MPI tool object")?.0)
                }
                (Out::NewRequest, Value::Request(RequestRef::Pooled { pool, index })) => {
                    format!("&reqs[{}]", self.requests[&(*pool, *index)])
                }
                (Out::Status(_), Value::Status(None)) => "MPI_STATUS_IGNORE".into(),
                (Out::Status(_), Value::Status(Some(s))) if p.ctype.konst => status_expr(pos, s),
                (Out::BufferOut, Value::Buffer(BufferRef::Segment { id, .. }))
                    if is_allocation(a.func.name) =>
                {
                    format!("(void *)&segs[{id}]")
                }
                _ => scratch(pos),
            },
            Action::Str { .. } => match v {
                Value::Str(Some(s)) => c_string(s),
                _ => "NULL".into(),
            },
            Action::StrOut { .. } | Action::Coords { .. } => scratch(pos),
            Action::Array { elem, out, .. } => match v {
                Value::Array(None) => match (elem, p.action.clone()) {
                    (Elem::Status, _) => "MPI_STATUSES_IGNORE".into(),
                    (_, Action::Array { weights: true, .. }) => "MPI_UNWEIGHTED".into(),
                    _ => "NULL".into(),
                },
                Value::Array(Some(items))
                    if items.is_empty()
                        && matches!(p.action, Action::Array { weights: true, .. }) =>
                {
                    "MPI_WEIGHTS_EMPTY".into()
                }
                Value::Array(Some(items)) => self.array(a, pos, p, elem, *out, items, code)?,
                _ => return Err(format!("{} is not an array", p.name)),
            },
            Action::Varargs => return Err("variadic arguments".into()),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn array(
        &mut self,
        a: &Args,
        pos: usize,
        p: &ParamModel,
        elem: &Elem,
        out: bool,
        items: &[Value],
        code: &mut CallCode,
    ) -> Result<String, String> {
        let base = p.ctype.base.as_str();
        let temp = format!("a{pos}");
        // Requests are read and written (completed, freed): consecutive
        // slots of the table are passed as they are, others through a
        // copy that is written back.
        let slots: Option<Vec<usize>> = items
            .iter()
            .map(|v| match v {
                Value::Request(RequestRef::Pooled { pool, index }) => {
                    Some(self.requests[&(*pool, *index)])
                }
                _ => None,
            })
            .collect();
        if let Some(slots) = slots.filter(|s| !s.is_empty()) {
            if slots.windows(2).all(|w| w[1] == w[0] + 1) {
                return Ok(format!("&reqs[{}]", slots[0]));
            }
        }
        if matches!(elem, Elem::Scalar(Scalar::Request))
            || (out && matches!(elem, Elem::NewHandle(_) | Elem::Lookup(_)))
        {
            let mut init = Vec::new();
            for (i, v) in items.iter().enumerate() {
                match v {
                    Value::Request(RequestRef::Pooled { pool, index }) => {
                        let slot = self.requests[&(*pool, *index)];
                        init.push(format!("reqs[{slot}]"));
                        code.post.push(format!("reqs[{slot}] = {temp}[{i}];"));
                    }
                    Value::Request(RequestRef::Null) => init.push("MPI_REQUEST_NULL".into()),
                    Value::Handle(k, HandleRef::User(id)) => {
                        let t = table(*k).ok_or("an MPI tool object")?.0;
                        init.push(k.null_name().into());
                        code.post.push(format!("{t}[{id}] = {temp}[{i}];"));
                    }
                    Value::Handle(k, _) => init.push(k.null_name().into()),
                    _ => return Err(format!("{} holds a non-request", p.name)),
                }
            }
            if init.is_empty() {
                init.push("0".into());
            }
            code.pre.push(format!(
                "{base} {temp}[{}] = {{{}}};",
                init.len(),
                init.join(", ")
            ));
            return Ok(temp);
        }
        if out {
            return Ok(scratch(pos));
        }
        let mut elems = Vec::with_capacity(items.len());
        for v in items {
            elems.push(match (elem, v) {
                (Elem::Scalar(s), v) => self.scalar(a, s, v, base)?,
                (Elem::NewHandle(_) | Elem::Lookup(_), Value::Handle(k, h)) => handle_expr(*k, *h)?,
                (Elem::Str, Value::Str(Some(s))) => c_string(s),
                (Elem::Str, _) => "NULL".into(),
                (Elem::Row(_), Value::Array(Some(row))) => {
                    let row: Vec<String> = row
                        .iter()
                        .map(|x| match x {
                            Value::Int(i) => int_lit(*i),
                            _ => "0".into(),
                        })
                        .collect();
                    format!("{{{}}}", row.join(", "))
                }
                (Elem::Status, _) => return Ok(scratch(pos)),
                _ => {
                    return Err(format!(
                        "{}: an array element mpigram cannot rebuild",
                        p.name
                    ));
                }
            });
        }
        let konst = if p.ctype.konst { "const " } else { "" };
        let stars = "*".repeat(usize::from(p.ctype.stars));
        let shape = match p.ctype.array {
            CArray::Rows(n) => format!("[][{n}]"),
            _ => "[]".into(),
        };
        if elems.is_empty() {
            return Ok(format!("({konst}{base} {stars}[1]){{0}}"));
        }
        Ok(format!(
            "({konst}{base} {stars}{shape}){{{}}}",
            elems.join(", ")
        ))
    }

    /// A value passed as is.
    fn scalar(&mut self, a: &Args, s: &Scalar, v: &Value, base: &str) -> Result<String, String> {
        Ok(match (s, v) {
            (Scalar::Int | Scalar::Address, Value::Int(i) | Value::Address(i)) => int_lit(*i),
            (Scalar::Tag, Value::Tag(-1)) => "MPI_ANY_TAG".into(),
            (Scalar::Tag, Value::Tag(t) | Value::Int(t)) => int_lit(*t),
            (Scalar::Const(_), Value::Const(set, c)) => const_expr(*set, *c),
            (Scalar::Rank(comm), Value::Rank(r)) => rank_expr(*r, &comm_rank(a.handle(comm))),
            // Roots are recorded absolute.
            (Scalar::Root, Value::Rank(r)) => rank_expr(*r, "world_rank"),
            (Scalar::WinRank(win), Value::Rank(r)) => {
                let me = match a.handle(win) {
                    Some(HandleRef::User(id)) => format!("rank_in_win(wins[{id}])"),
                    _ => "world_rank".into(),
                };
                rank_expr(*r, &me)
            }
            // A colour or key that was the caller's own rank.
            (Scalar::OwnRank { comm, .. }, Value::Rank(r)) => {
                rank_expr(*r, &comm_rank(a.handle(comm)))
            }
            (Scalar::OwnRank { inner, .. }, v) => self.scalar(a, inner, v, base)?,
            (Scalar::Handle(_), Value::Handle(k, h)) => handle_expr(*k, *h)?,
            (Scalar::Request, Value::Request(RequestRef::Pooled { pool, index })) => {
                format!("reqs[{}]", self.requests[&(*pool, *index)])
            }
            (Scalar::Request, Value::Request(RequestRef::Null)) => "MPI_REQUEST_NULL".into(),
            (Scalar::Callback, Value::Callback(None)) => "NULL".into(),
            (Scalar::Callback, Value::Callback(Some(id))) => {
                if callback_stub(base, "x").is_none() {
                    return Err(format!(
                        "a user function of type {base}, which mpigram cannot stand in for"
                    ));
                }
                // One function per recorded id (the tracer numbers distinct
                // functions), defined with the type of its first use.
                let first = self.callbacks.entry(*id).or_insert_with(|| base.to_owned());
                if first == base {
                    callback_name(*id)
                } else {
                    format!("({base} *){}", callback_name(*id))
                }
            }
            (Scalar::Buffer, Value::Buffer(b)) => match b {
                BufferRef::Null => "NULL".into(),
                BufferRef::InPlace => "MPI_IN_PLACE".into(),
                BufferRef::Segment { id, offset: 0 } => format!("(void *)segs[{id}]"),
                BufferRef::Segment { id, offset } => format!("(void *)(segs[{id}] + {offset})"),
            },
            (Scalar::Location, Value::Buffer(b)) => match b {
                BufferRef::Null | BufferRef::InPlace => "0".into(),
                BufferRef::Segment { id, offset } => format!("(MPI_Aint)(segs[{id}] + {offset})"),
            },
            (_, Value::Int(i) | Value::Address(i)) => int_lit(*i),
            _ => return Err(format!("a recorded value {v:?} where {s:?} was expected")),
        })
    }
}

/// Scratch space for output number `pos` of a call.
fn scratch(pos: usize) -> String {
    format!("(void *)scratch[{pos}]")
}

/// The caller's rank in a communicator, as C.
fn comm_rank(comm: Option<HandleRef>) -> String {
    match comm {
        Some(HandleRef::Predefined(id)) => match predefined(HandleKind::Comm).get(id as usize) {
            Some(&"MPI_COMM_SELF") => "0".into(),
            _ => "world_rank".into(),
        },
        Some(HandleRef::User(id)) => format!("rank_in(comms[{id}])"),
        _ => "world_rank".into(),
    }
}

/// A rank argument: constants by name, relative ranks against `me`.
pub fn rank_expr(r: Rank, me: &str) -> String {
    match r {
        Rank::ProcNull => "MPI_PROC_NULL".into(),
        Rank::AnySource => "MPI_ANY_SOURCE".into(),
        Rank::Root => "MPI_ROOT".into(),
        Rank::Absolute(a) => int_lit(a),
        Rank::Relative(0) => me.into(),
        Rank::Relative(d) if d > 0 => format!("{me} + {d}"),
        Rank::Relative(d) => format!("{me} - {}", d.unsigned_abs()),
    }
}

/// A handle: predefined ones by name, user objects by table slot.
pub fn handle_expr(kind: HandleKind, h: HandleRef) -> Result<String, String> {
    Ok(match h {
        HandleRef::Null => kind.null_name().into(),
        HandleRef::Predefined(id) => predefined(kind)
            .get(id as usize)
            .map(|s| (*s).to_owned())
            .ok_or_else(|| format!("predefined {} {id} is unknown", kind.prefix()))?,
        HandleRef::User(id) => format!("{}[{id}]", table(kind).ok_or("an MPI tool object")?.0),
    })
}

/// An input status rebuilt from its recorded fields.
fn status_expr(pos: usize, s: &Status) -> String {
    let source = rank_expr(s.source, "world_rank");
    format!(
        "make_status({pos}, {source}, {}, {}, {}, {})",
        if s.tag == -1 {
            "MPI_ANY_TAG".into()
        } else {
            int_lit(s.tag)
        },
        s.count,
        i32::from(s.cancelled),
        int_lit(s.error)
    )
}

/// A named constant by its name (flags ORed), a number as a literal.
pub fn const_expr(set: ConstSet, c: ConstRef) -> String {
    match (set.text(c), c) {
        (Some(names), _) => names.replace('|', " | "),
        (None, ConstRef::Plain(v)) => int_lit(v),
        (None, _) => "0".into(),
    }
}

/// An integer literal of the right width.
pub fn int_lit(v: i64) -> String {
    if v == i64::from(i32::MIN) {
        "(-2147483647 - 1)".into()
    } else if i32::try_from(v).is_ok() {
        v.to_string()
    } else if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else {
        format!("{v}LL")
    }
}

/// A C string literal holding exactly `bytes`.
pub fn c_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'?' => s.push_str("\\?"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\{b:03o}");
            }
        }
    }
    s.push('"');
    s
}
