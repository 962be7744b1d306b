//! One call of the traced ranks of a class, unified into one signature
//! for a benchmark of another number of ranks (`extrapolate.rs`): the same
//! function and arguments, except outputs, requests (one slot per
//! position), peers (a rule of the rank, `peers.rs`), per-member arrays
//! (scaled), the grid of MPI_Dims_create and MPI_Cart_create, and an
//! integer that is each caller's rank; anything else that differs is an
//! error naming the argument.

use crate::peers::{self, Geometry, Layout};
use crate::protos::prototype;
use crate::timing::Sites;
use mpigram_grammar::Sequitur;
use mpigram_mpispec::{Args, BufferRef, HandleRef, Rank, RequestRef, Signature, Value};
use mpigram_trace::Trace;
use mpigram_wrapgen::lenexpr::Expr;
use mpigram_wrapgen::model::{Action, Elem, Out, Scalar};
use rustc_hash::FxHashMap;

/// Unified signatures, with what they need, across classes.
pub struct Unifier<'a> {
    traced: &'a [Signature],
    geometry: &'a Geometry,
    ranks: u32,
    pub sigs: Vec<Signature>,
    pub args: FxHashMap<(u32, usize), String>,
    /// (class, terminal of each member) -> new terminal.
    terminals: FxHashMap<(usize, Vec<u32>), u32>,
    /// (class, request of each member) -> one request slot.
    requests: FxHashMap<(usize, Vec<(u64, u64)>), u64>,
    /// A traced rank's request -> its slot: each must keep one.
    slot_of: FxHashMap<(u32, u64, u64), u64>,
    /// (class, traced rank, its segment) -> the class's segment (the
    /// first member's), and back: the correspondence must be one-to-one.
    seg_of: FxHashMap<(usize, u32, u64), u64>,
    rank_seg: FxHashMap<(usize, u32, u64), u64>,
    classes: usize,
}

impl<'a> Unifier<'a> {
    pub fn new(traced: &'a [Signature], geometry: &'a Geometry, ranks: u32) -> Unifier<'a> {
        Unifier {
            traced,
            geometry,
            ranks,
            sigs: Vec::new(),
            args: FxHashMap::default(),
            terminals: FxHashMap::default(),
            requests: FxHashMap::default(),
            slot_of: FxHashMap::default(),
            seg_of: FxHashMap::default(),
            rank_seg: FxHashMap::default(),
            classes: 0,
        }
    }

    /// Walks the calls of `members` in lockstep, unifying each call.
    pub fn class(&mut self, trace: &Trace, members: &[u32]) -> Result<Sequitur, String> {
        let class = self.classes;
        self.classes += 1;
        let g = &trace.grammar;
        let mut walks = Vec::with_capacity(members.len());
        for &r in members {
            let start = g.start(r).ok_or(format!("rank {r} has no calls"))?;
            walks.push(Sites::new(g, start));
        }
        let mut out = Sequitur::new();
        let mut tuple: Vec<u32> = Vec::with_capacity(members.len());
        for call in 0u64.. {
            tuple.clear();
            for walk in walks.iter_mut() {
                if let Some((_, t)) = walk.next() {
                    tuple.push(t);
                }
            }
            if tuple.is_empty() {
                break;
            }
            if tuple.len() != members.len() {
                let lens: Vec<String> = members
                    .iter()
                    .map(|&r| format!("rank {r}: {}", g.stream_len(r).unwrap_or(0)))
                    .collect();
                return Err(format!(
                    "the ranks make different numbers of calls ({})",
                    lens.join(", ")
                ));
            }
            let key = (class, tuple.clone());
            let t = match self.terminals.get(&key) {
                Some(&t) => t,
                None => {
                    let t = self
                        .unify(class, members, &tuple)
                        .map_err(|e| format!("call {call} of rank {}: {e}", members[0]))?;
                    self.terminals.insert(key, t);
                    t
                }
            };
            out.push(t);
        }
        Ok(out)
    }

    /// One signature standing for `tuple`, the signatures of `members` at
    /// one call.
    fn unify(&mut self, class: usize, members: &[u32], tuple: &[u32]) -> Result<u32, String> {
        let reps: Vec<&Signature> = tuple.iter().map(|&t| &self.traced[t as usize]).collect();
        let a = Args::new(reps[0]);
        let name = a.func.name;
        if let Some((i, other)) = reps
            .iter()
            .enumerate()
            .find(|(_, s)| s.func != reps[0].func)
        {
            return Err(format!(
                "rank {} calls {name} where rank {} calls {}",
                members[0],
                members[i],
                Args::new(other).func.name
            ));
        }
        let terminal = self.sigs.len() as u32;
        let mut sig = reps[0].clone();
        let Some(model) = prototype(name) else {
            return match reps.iter().all(|s| *s == reps[0]) {
                true => {
                    self.sigs.push(sig);
                    Ok(terminal)
                }
                false => Err(format!("{name} differs between ranks")),
            };
        };
        for (pos, p) in model.params.iter().enumerate() {
            let values: Vec<&Value> = reps.iter().filter_map(|s| s.args.get(pos)).collect();
            if values.len() != reps.len() || is_output(&p.action) {
                continue;
            }
            // Arguments significant at the root only are not recorded
            // elsewhere: the root's stand for all (MPI ignores them).
            let (members, values): (Vec<u32>, Vec<&Value>) = members
                .iter()
                .copied()
                .zip(values)
                .filter(|(_, v)| !(root_only(&p.action) && **v == Value::Array(None)))
                .unzip();
            if values.is_empty() {
                continue;
            }
            let what = || format!("{name}'s {}", p.name);
            if let Some(v) = self
                .requests(class, &members, &values)
                .map_err(|e| format!("{}: {e}", what()))?
            {
                sig.args[pos] = v;
                continue;
            }
            match (name, p.name.as_str()) {
                ("MPI_Dims_create", "nnodes")
                    if values
                        .iter()
                        .all(|v| **v == Value::Int(i64::from(self.geometry.ranks))) =>
                {
                    sig.args[pos] = Value::Int(i64::from(self.ranks));
                    continue;
                }
                ("MPI_Dims_create", "dims") => {
                    // Free dimensions: the trace holds the grid it chose.
                    let n = a.ints("dims").map_or(0, |d| d.len());
                    let zeros = vec!["0"; n.max(1)].join(", ");
                    self.args
                        .insert((terminal, pos), format!("(int[]){{{zeros}}}"));
                    continue;
                }
                ("MPI_Cart_create", "dims") => {
                    let e = self.grid(&a, pos).map_err(|e| format!("{}: {e}", what()))?;
                    self.args.insert((terminal, pos), e);
                    continue;
                }
                _ => {}
            }
            if let (Action::Value(Scalar::Root), Value::Rank(Rank::Absolute(root))) =
                (&p.action, values[0])
            {
                if *root >= i64::from(self.ranks) {
                    return Err(format!(
                        "{} is rank {root}, beyond {} ranks",
                        what(),
                        self.ranks
                    ));
                }
            }
            if let (
                Action::Array {
                    len: Some(Expr::Call(f, comm)),
                    out: false,
                    ..
                },
                Value::Array(Some(_)),
            ) = (&p.action, values[0])
            {
                if f == "peers" {
                    let comm = match comm.first() {
                        Some(Expr::Name(c)) => a.handle(c),
                        _ => None,
                    };
                    let size = match self.geometry.layout(comm) {
                        Some(Layout::Own) => 1,
                        Some(_) => self.ranks as usize,
                        None => {
                            return Err(format!(
                                "{}: per-member values in a communicator whose ranks are not the world's",
                                what()
                            ));
                        }
                    };
                    let arrays: Vec<&[Value]> = values
                        .iter()
                        .filter_map(|v| match v {
                            Value::Array(Some(items)) => Some(items.as_slice()),
                            _ => None,
                        })
                        .collect();
                    if arrays.len() != values.len() {
                        return Err(format!("{} is recorded on some ranks only", what()));
                    }
                    let scaled =
                        peers::per_member(&arrays, size).map_err(|e| format!("{}: {e}", what()))?;
                    sig.args[pos] = Value::Array(Some(scaled));
                    continue;
                }
            }
            if let Some(v) = self
                .segments(class, &members, &values)
                .map_err(|e| format!("{}: {e}", what()))?
            {
                sig.args[pos] = v;
                continue;
            }
            if values.iter().all(|v| *v == values[0]) && !moves(values[0]) {
                continue;
            }
            match (&p.action, values[0]) {
                (
                    Action::Value(Scalar::Rank(comm)) | Action::Before(Scalar::Rank(comm)),
                    Value::Rank(_),
                ) => {
                    let handle = a.handle(comm);
                    let layout = self
                        .geometry
                        .layout(handle)
                        .ok_or_else(|| format!("{} is a peer in a communicator whose ranks are not the world's in order", what()))?;
                    let placed: Vec<(i64, Rank)> = members
                        .iter()
                        .zip(&values)
                        .map(|(&r, v)| {
                            let (me, _) = self.geometry.place(layout, r);
                            (
                                me,
                                if let Value::Rank(x) = v {
                                    *x
                                } else {
                                    Rank::ProcNull
                                },
                            )
                        })
                        .collect();
                    let size = self.geometry.place(layout, 0).1;
                    let peer = peers::unify(layout, size, &placed)
                        .map_err(|e| format!("{}: {e}", what()))?;
                    let (comm_c, me, size_c) = match (layout, handle) {
                        (Layout::Own, _) => {
                            ("MPI_COMM_SELF".to_owned(), "0".to_owned(), "1".to_owned())
                        }
                        (_, Some(HandleRef::User(id))) => (
                            format!("comms[{id}]"),
                            format!("rank_in(comms[{id}])"),
                            format!("size_in(comms[{id}])"),
                        ),
                        _ => (
                            "MPI_COMM_WORLD".to_owned(),
                            "world_rank".to_owned(),
                            self.ranks.to_string(),
                        ),
                    };
                    self.args
                        .insert((terminal, pos), peer.c(&comm_c, &me, &size_c));
                }
                _ => {
                    let i = values.iter().position(|v| *v != values[0]).unwrap_or(0);
                    return Err(format!(
                        "{} differs between ranks (rank {}: {}, rank {}: {}), and is no rank-parametric argument",
                        what(),
                        members[0],
                        short(values[0]),
                        members[i],
                        short(values[i])
                    ));
                }
            }
        }
        self.sigs.push(sig);
        Ok(terminal)
    }

    /// The requests in `values` (one per member) as one slot per position,
    /// or `None` if they hold no request.
    fn requests(
        &mut self,
        class: usize,
        members: &[u32],
        values: &[&Value],
    ) -> Result<Option<Value>, String> {
        match values[0] {
            Value::Request(RequestRef::Pooled { .. }) => {
                let mut key = Vec::with_capacity(values.len());
                for v in values {
                    match v {
                        Value::Request(RequestRef::Pooled { pool, index }) => {
                            key.push((*pool, *index))
                        }
                        _ => return Err("a request on some ranks, none on others".into()),
                    }
                }
                let next = self.requests.len() as u64;
                let slot = *self.requests.entry((class, key.clone())).or_insert(next);
                for (&r, &(pool, index)) in members.iter().zip(&key) {
                    if *self.slot_of.entry((r, pool, index)).or_insert(slot) != slot {
                        return Err(format!(
                            "rank {r} uses one request where other ranks use several"
                        ));
                    }
                }
                Ok(Some(Value::Request(RequestRef::Pooled {
                    pool: 0,
                    index: slot,
                })))
            }
            Value::Array(Some(items)) if items.iter().any(|v| matches!(v, Value::Request(_))) => {
                let mut out = Vec::with_capacity(items.len());
                for i in 0..items.len() {
                    let column: Option<Vec<&Value>> = values
                        .iter()
                        .map(|v| match v {
                            Value::Array(Some(x)) if x.len() == items.len() => x.get(i),
                            _ => None,
                        })
                        .collect();
                    let column = column.ok_or("arrays of requests of different lengths")?;
                    out.push(
                        self.requests(class, members, &column)?
                            .unwrap_or_else(|| column[0].clone()),
                    );
                }
                Ok(Some(Value::Array(Some(out))))
            }
            _ => Ok(None),
        }
    }

    /// The buffers in `values` (one per member) as the class's segment,
    /// the first member's, or `None` if they are no segments: each rank
    /// allocates its own memory, and its segment ids need only correspond
    /// one-to-one to the first member's, at the same offset.
    fn segments(
        &mut self,
        class: usize,
        members: &[u32],
        values: &[&Value],
    ) -> Result<Option<Value>, String> {
        let Value::Buffer(BufferRef::Segment { id: k, offset }) = *values[0] else {
            return Ok(None);
        };
        for (&r, v) in members.iter().zip(values) {
            let Value::Buffer(BufferRef::Segment { id, offset: o }) = **v else {
                return Err(format!(
                    "a segment on rank {}, {} on rank {r}",
                    members[0],
                    short(v)
                ));
            };
            if o != offset {
                return Err(format!(
                    "offsets differ between ranks (rank {}: seg{k}+{offset}, rank {r}: seg{id}+{o})",
                    members[0]
                ));
            }
            let to = *self.seg_of.entry((class, r, id)).or_insert(k);
            let from = *self.rank_seg.entry((class, r, k)).or_insert(id);
            if to != k || from != id {
                return Err(format!(
                    "rank {r}'s segments do not correspond one-to-one to rank {}'s (its seg{id} stands for seg{to} and seg{k} for its seg{from})",
                    members[0]
                ));
            }
        }
        Ok(Some(values[0].clone()))
    }

    /// The C of a Cartesian grid's dimensions at the new size: what
    /// MPI_Dims_create gives there, if the traced grid is what it gave
    /// at the traced size.
    fn grid(&self, a: &Args, pos: usize) -> Result<String, String> {
        let dims = a.ints("dims").ok_or("not recorded")?;
        let from_dims_create = self.traced.iter().any(|s| {
            let d = Args::new(s);
            d.func.name == "MPI_Dims_create"
                && d.int("nnodes") == Some(i64::from(self.geometry.ranks))
                && d.ints("dims").as_ref() == Some(&dims)
        });
        let old = self.geometry.layout(a.handle("comm_old"));
        if old != Some(&Layout::World) {
            return Err("a grid over a communicator whose ranks are not the world's".into());
        }
        if !(from_dims_create || dims.len() == 1) {
            return Err(format!(
                "the grid {dims:?} does not come from MPI_Dims_create: the trace cannot tell its shape at another size"
            ));
        }
        Ok(format!(
            "dims_for((int *)scratch[{pos}], {}, {})",
            self.ranks,
            dims.len()
        ))
    }
}

/// Whether a value is a peer that may need a rule even where all ranks
/// agree (a fixed non-zero offset may leave the communicator at another
/// size).
fn moves(v: &Value) -> bool {
    matches!(v, Value::Rank(Rank::Relative(d)) if *d != 0)
}

/// Parameters the benchmark does not pass a recorded value for.
fn is_output(action: &Action) -> bool {
    match action {
        Action::Out(o) => !matches!(
            o,
            Out::NewHandle(_)
                | Out::Lookup(_)
                | Out::NewRequest
                | Out::BufferOut
                | Out::PendingComm
        ),
        Action::StrOut { .. } | Action::Coords { .. } => true,
        Action::Array {
            out: true, elem, ..
        } => !matches!(
            elem,
            Elem::NewHandle(_) | Elem::Lookup(_) | Elem::Scalar(Scalar::Request)
        ),
        _ => false,
    }
}

/// Whether an argument is significant (and recorded) at a collective's
/// root only.
fn root_only(action: &Action) -> bool {
    matches!(action, Action::Array { when: Some(w), .. } if w.split("&&").any(|c| c.trim() == "root"))
}

/// A value as a user reads it, briefly: `8`, `MPI_UNDEFINED`, `me + 1`,
/// `seg3+16`, `[0, 64, 128]`.
fn short(v: &Value) -> String {
    use crate::render::{const_expr, handle_expr, rank_expr};
    match v {
        Value::Int(i) | Value::Address(i) | Value::Tag(i) => i.to_string(),
        Value::Const(set, c) => const_expr(*set, *c),
        Value::Rank(r) => rank_expr(*r, "me"),
        Value::Handle(k, h) => handle_expr(*k, *h).unwrap_or_else(|e| e),
        Value::Buffer(BufferRef::Segment { id, offset }) => format!("seg{id}+{offset}"),
        Value::Array(Some(items)) => {
            let mut shown: Vec<String> = items.iter().take(8).map(short).collect();
            if items.len() > 8 {
                shown.push("...".into());
            }
            format!("[{}]", shown.join(", "))
        }
        Value::Array(None) => "not recorded".into(),
        other => format!("{other:?}"),
    }
}
