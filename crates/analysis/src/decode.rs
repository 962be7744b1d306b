//! Decoding a rank's calls: signatures read back, relative ranks made
//! absolute, handles named (`MPI_COMM_WORLD`, `comm1`, `type3`, `req5`),
//! buffers shown as `seg2+0`.

use mpigram_mpispec::{
    BufferRef, ConstRef, ConstSet, Enc, FUNCS, HandleKind, HandleRef, Rank, RequestRef, Signature,
    Status, Value, decode_signature, predefined,
};
use mpigram_trace::{RankPart, Trace};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json, json};
use std::sync::Arc;

/// A call's arguments keyed by the standard's parameter names, in C order.
pub type Args = Arc<Map<String, Json>>;

/// One call, ready to print.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedCall {
    pub rank: u32,
    /// Index of the call in the rank's stream.
    pub seq: u64,
    pub func: &'static str,
    /// Return code (0 is MPI_SUCCESS).
    pub ret: i64,
    /// Arguments keyed by the standard's parameter names, in C order;
    /// shared by the calls of one signature that decode alike.
    pub args: Args,
}

impl DecodedCall {
    /// The argument `name`, if the call has it.
    pub fn arg(&self, name: &str) -> Option<&Json> {
        field(&self.args, name)
    }

    /// The JSON line: `{"rank":0,"seq":12,"func":"MPI_Isend","args":{...}}`,
    /// with `"ret"` after `func` when the call returned an error.
    pub fn to_json(&self) -> Json {
        let mut o = Map::new();
        o.insert("rank".into(), json!(self.rank));
        o.insert("seq".into(), json!(self.seq));
        o.insert("func".into(), json!(self.func));
        if self.ret != 0 {
            o.insert("ret".into(), json!(self.ret));
        }
        o.insert("args".into(), Json::Object((*self.args).clone()));
        Json::Object(o)
    }

    /// `0 12 MPI_Isend(buf=seg2+0, count=8, ...)`, with ` -> ret` on errors.
    pub fn to_text(&self) -> String {
        let ret = if self.ret != 0 {
            format!(" -> {}", self.ret)
        } else {
            String::new()
        };
        format!(
            "{} {} {}({}){ret}",
            self.rank,
            self.seq,
            self.func,
            args_text(&self.args)
        )
    }
}

/// The value of `key` in `object` (a call's arguments, a status): a scan,
/// which for the few keys these have costs a fraction of the map's hashed
/// lookup (the analyses look arguments up for every call).
pub fn field<'a>(object: &'a Map<String, Json>, key: &str) -> Option<&'a Json> {
    object.iter().find_map(|(k, v)| (k == key).then_some(v))
}

/// A value as the text form shows it: `[req0, req1]`, `{MPI_SOURCE=1, ...}`.
/// Arguments as `mpigram decode` writes them: `count=4, datatype=MPI_INT`.
pub(crate) fn args_text(args: &serde_json::Map<String, Json>) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    args.join(", ")
}

pub(crate) fn text(v: &Json) -> String {
    match v {
        // A recorded string (an info key, an object's name) may hold a
        // newline or other control characters: escaped, a call stays one line.
        Json::String(s) if s.chars().any(char::is_control) => s.escape_debug().to_string(),
        Json::String(s) => s.clone(),
        Json::Array(a) => format!("[{}]", a.iter().map(text).collect::<Vec<_>>().join(", ")),
        Json::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{k}={}", text(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Why a call cannot be decoded.
#[derive(Debug, thiserror::Error)]
#[error("rank {rank}, call {seq}: {message}")]
pub struct DecodeError {
    pub rank: u32,
    pub seq: u64,
    pub message: String,
}

/// Terminals whose decoded values a decoder keeps, at most. A loop's
/// signatures stay decoded, and a trace of millions of signatures decodes
/// in bounded memory (with a value kept for every terminal, 3 × 10^6
/// signatures took 11 GB).
const CACHED_TERMINALS: usize = 1 << 14;

/// The last value put for keys, in a fixed number of slots: a key's slot
/// is the key modulo their number, and a key evicts the one there. What
/// the analyses keep per terminal (or per object) of traces that may have
/// millions.
pub(crate) struct SlotCache<V> {
    slots: Vec<Option<(usize, V)>>,
}

impl<V> SlotCache<V> {
    /// A cache of `slots` slots (at least one).
    pub(crate) fn new(slots: usize) -> Self {
        SlotCache {
            slots: (0..slots.max(1)).map(|_| None).collect(),
        }
    }

    pub(crate) fn get(&self, key: usize) -> Option<&V> {
        match &self.slots[key % self.slots.len()] {
            Some((k, v)) if *k == key => Some(v),
            _ => None,
        }
    }

    pub(crate) fn put(&mut self, key: usize, value: V) {
        let len = self.slots.len();
        self.slots[key % len] = Some((key, value));
    }
}

/// The calls of one rank, decoded in order.
pub struct RankDecoder<'t> {
    trace: &'t Trace,
    part: &'t RankPart,
    terminals: Box<dyn Iterator<Item = u32> + Send + 't>,
    /// Signatures decoded last, by terminal.
    signatures: SlotCache<Arc<Signature>>,
    seq: u64,
    /// Next entry of the rank's communicator log to apply.
    next_comm: usize,
    /// Caller's rank in each user communicator (by id), as of `seq`.
    comm_rank: FxHashMap<u64, u32>,
    /// Display number of each (pool, index) request.
    request_names: FxHashMap<(u64, u64), usize>,
    /// Communicator of each live request's operation.
    request_comm: FxHashMap<(u64, u64), Option<HandleRef>>,
    /// Communicator each window was created over (its group's ranks).
    win_comm: FxHashMap<HandleRef, HandleRef>,
    /// Only calls of functions this accepts are decoded (see [`RankDecoder::only`]).
    keep: Option<fn(&str) -> bool>,
    /// Whether each terminal's function is kept, once known.
    kept: Vec<Option<bool>>,
    /// Changes whenever what a call decodes to can change: the caller's
    /// rank in a communicator, a request's name or communicator, a
    /// window's communicator.
    state: u64,
    /// Terminals' last decoded arguments and the `state` they hold for.
    decoded: SlotCache<(u64, Args)>,
}

impl<'t> RankDecoder<'t> {
    pub fn new(trace: &'t Trace, part: &'t RankPart) -> RankDecoder<'t> {
        let terminals = trace.grammar.expand(part.meta.rank).into_iter().flatten();
        RankDecoder {
            trace,
            part,
            terminals: Box::new(terminals),
            signatures: SlotCache::new(trace.signatures.len().min(CACHED_TERMINALS)),
            seq: 0,
            next_comm: 0,
            comm_rank: FxHashMap::default(),
            request_names: FxHashMap::default(),
            request_comm: FxHashMap::default(),
            win_comm: FxHashMap::default(),
            keep: None,
            kept: Vec::new(),
            state: 0,
            decoded: SlotCache::new(trace.signatures.len().min(CACHED_TERMINALS)),
        }
    }

    /// The calls `first..first + count` of the rank, decoded without
    /// decoding the calls before them (the grammar is entered at `first`):
    /// communicators' ranks come from the rank's log, request names start
    /// afresh.
    pub fn window(trace: &'t Trace, part: &'t RankPart, first: u64, count: u64) -> RankDecoder<'t> {
        let terminals = trace
            .grammar
            .expand_from(part.meta.rank, first)
            .into_iter()
            .flatten()
            .take(usize::try_from(count).unwrap_or(usize::MAX));
        RankDecoder {
            terminals: Box::new(terminals),
            seq: first,
            ..RankDecoder::new(trace, part)
        }
    }

    /// Decodes only the calls of functions `keep` accepts, skipping the
    /// others (their `seq` still counts). Handles named in skipped calls
    /// are not learnt, so a skipped call must not be one that kept calls
    /// depend on (window creation for RMA calls).
    pub fn only(mut self, keep: fn(&str) -> bool) -> RankDecoder<'t> {
        self.keep = Some(keep);
        self.kept = vec![None; self.trace.signatures.len()];
        self
    }

    /// Whether the call of `terminal` is to be decoded.
    fn wanted(&mut self, terminal: u32) -> bool {
        let Some(keep) = self.keep else {
            return true;
        };
        let Some(slot) = self.kept.get(terminal as usize).copied() else {
            return true; // decoding reports the bad terminal
        };
        if let Some(k) = slot {
            return k;
        }
        let k = match self.signature(terminal) {
            Ok(sig) => FUNCS.get(sig.func as usize).is_none_or(|f| keep(f.name)),
            Err(_) => true,
        };
        self.kept[terminal as usize] = Some(k);
        k
    }

    /// The signature of `terminal`, decoded once (shared, not copied, by
    /// every call of it).
    fn signature(&mut self, terminal: u32) -> Result<Arc<Signature>, String> {
        if let Some(sig) = self.signatures.get(terminal as usize) {
            return Ok(Arc::clone(sig));
        }
        let bytes = &self.trace.signatures[terminal as usize];
        let sig = Arc::new(
            decode_signature(bytes).map_err(|e| format!("bad signature {terminal}: {e}"))?,
        );
        self.signatures.put(terminal as usize, Arc::clone(&sig));
        Ok(sig)
    }

    fn decode(&mut self, terminal: u32) -> Result<DecodedCall, String> {
        let sig = self.signature(terminal)?;
        // The rank's place in communicators learnt up to this call.
        let comms = &self.part.comms;
        while self.next_comm < comms.len() && comms[self.next_comm].seq <= self.seq {
            let c = comms[self.next_comm];
            if self.comm_rank.insert(c.comm, c.rank) != Some(c.rank) {
                self.state += 1;
            }
            self.next_comm += 1;
        }
        let args = match self.decoded.get(terminal as usize) {
            Some((state, args)) if *state == self.state => Arc::clone(args),
            _ => {
                // Decoding again in the state it leaves gives the same
                // arguments, so they hold for that state.
                let args = Arc::new(self.arguments(&sig));
                self.decoded
                    .put(terminal as usize, (self.state, Arc::clone(&args)));
                args
            }
        };
        Ok(DecodedCall {
            rank: self.part.meta.rank,
            seq: self.seq,
            func: FUNCS[sig.func as usize].name,
            ret: sig.ret,
            args,
        })
    }

    /// The arguments of `sig`, rendered in the decoder's present state.
    fn arguments(&mut self, sig: &Signature) -> Map<String, Json> {
        let func = &FUNCS[sig.func as usize];
        let handle = |kind: HandleKind| {
            sig.args.iter().find_map(|v| match v {
                Value::Handle(k, h) if *k == kind => Some(*h),
                _ => None,
            })
        };
        let (comm, win) = (handle(HandleKind::Comm), handle(HandleKind::Win));
        if let (Some(c), Some(w @ HandleRef::User(_))) = (comm, win) {
            // A window is created over a communicator.
            if self.win_comm.insert(w, c) != Some(c) {
                self.state += 1;
            }
        }
        let call_comm = comm
            .or_else(|| win.and_then(|w| self.win_comm.get(&w).copied()))
            .or_else(|| self.requests_comm(&sig.args));
        let mut args = Map::with_capacity(func.params.len());
        for (param, value) in func.params.iter().zip(&sig.args) {
            let rendered = match (param.enc, value) {
                (Enc::Array(Enc::Status), Value::Array(None)) => json!("MPI_STATUSES_IGNORE"),
                _ => self.render(value, call_comm),
            };
            args.insert(param.name.to_owned(), rendered);
        }
        args
    }

    fn render(&mut self, v: &Value, comm: Option<HandleRef>) -> Json {
        match v {
            Value::Int(i) | Value::Address(i) => json!(i),
            Value::Tag(t) if *t == -1 => json!("MPI_ANY_TAG"),
            Value::Tag(t) => json!(t),
            Value::Const(set, c) => constant_json(*set, *c),
            Value::Rank(r) => self.rank(*r, comm),
            Value::Handle(kind, h) => json!(handle_name(*kind, *h)),
            Value::Request(RequestRef::Null) => json!("MPI_REQUEST_NULL"),
            Value::Request(RequestRef::Pooled { pool, index }) => {
                let key = (*pool, *index);
                let next = self.request_names.len();
                let n = *self.request_names.entry(key).or_insert_with(|| {
                    self.state += 1;
                    next
                });
                if comm.is_some() && self.request_comm.insert(key, comm) != Some(comm) {
                    self.state += 1;
                }
                json!(format!("req{n}"))
            }
            Value::Status(None) => json!("MPI_STATUS_IGNORE"),
            Value::Status(Some(s)) => self.status(s, comm),
            Value::UndefinedStatus => json!("undefined"),
            Value::Buffer(BufferRef::Null) => json!("NULL"),
            Value::Buffer(BufferRef::InPlace) => json!("MPI_IN_PLACE"),
            Value::Buffer(BufferRef::Segment { id, offset }) => json!(format!("seg{id}+{offset}")),
            Value::Str(None) => Json::Null,
            Value::Str(Some(s)) => json!(String::from_utf8_lossy(s)),
            Value::Callback(None) => json!("NULL"),
            Value::Callback(Some(id)) => json!(format!("fn{id}")),
            Value::Array(None) | Value::Coords(None) => Json::Null,
            Value::Coords(Some(c)) => match c.absolute(self.my_rank(comm)) {
                Some(coords) => json!(coords),
                None => json!(format!("{c:?}")),
            },
            Value::Array(Some(items)) => {
                // A status in an array of a completion call belongs to the
                // request at the same position: use that request's communicator.
                Json::Array(items.iter().map(|item| self.render(item, comm)).collect())
            }
        }
    }

    /// For a call without a communicator argument (a completion call): the
    /// one communicator of all its requests' operations, if they share one.
    fn requests_comm(&self, args: &[Value]) -> Option<HandleRef> {
        let mut requests = Vec::new();
        for v in args {
            match v {
                Value::Request(RequestRef::Pooled { pool, index }) => {
                    requests.push((*pool, *index))
                }
                Value::Array(Some(items)) => {
                    requests.extend(items.iter().filter_map(|i| match i {
                        Value::Request(RequestRef::Pooled { pool, index }) => Some((*pool, *index)),
                        _ => None,
                    }))
                }
                _ => {}
            }
        }
        let mut comms = requests
            .iter()
            .map(|key| self.request_comm.get(key).copied().flatten());
        let first = comms.next()??;
        comms.all(|c| c == Some(first)).then_some(first)
    }

    /// A rank made absolute against the caller's rank in `comm`.
    fn rank(&self, r: Rank, comm: Option<HandleRef>) -> Json {
        match r {
            Rank::ProcNull => json!("MPI_PROC_NULL"),
            Rank::AnySource => json!("MPI_ANY_SOURCE"),
            Rank::Root => json!("MPI_ROOT"),
            Rank::Absolute(a) => json!(a),
            Rank::Relative(d) => match self.my_rank(comm) {
                Some(me) => json!(i64::from(me) + d),
                None if d >= 0 => json!(format!("me+{d}")),
                None => json!(format!("me{d}")),
            },
        }
    }

    /// The caller's rank in `comm`, where the trace says it.
    fn my_rank(&self, comm: Option<HandleRef>) -> Option<u32> {
        match comm? {
            HandleRef::Predefined(id) => match predefined(HandleKind::Comm).get(id as usize) {
                Some(&"MPI_COMM_WORLD") => Some(self.part.meta.rank),
                Some(&"MPI_COMM_SELF") => Some(0),
                _ => None,
            },
            HandleRef::User(id) => self.comm_rank.get(&id).copied(),
            HandleRef::Null => None,
        }
    }

    fn status(&self, s: &Status, comm: Option<HandleRef>) -> Json {
        let mut o = Map::new();
        o.insert("MPI_SOURCE".into(), self.rank(s.source, comm));
        o.insert(
            "MPI_TAG".into(),
            if s.tag == -1 {
                json!("MPI_ANY_TAG")
            } else {
                json!(s.tag)
            },
        );
        o.insert("count".into(), json!(s.count));
        if s.cancelled {
            o.insert("cancelled".into(), json!(true));
        }
        if s.error != 0 {
            o.insert("MPI_ERROR".into(), json!(s.error));
        }
        Json::Object(o)
    }
}

impl Iterator for RankDecoder<'_> {
    type Item = Result<DecodedCall, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut terminal = self.terminals.next()?;
        while !self.wanted(terminal) {
            self.seq += 1;
            terminal = self.terminals.next()?;
        }
        let call = self.decode(terminal).map_err(|message| DecodeError {
            rank: self.part.meta.rank,
            seq: self.seq,
            message,
        });
        self.seq += 1;
        Some(call)
    }
}

/// `MPI_COMM_WORLD`, `MPI_DOUBLE`, `MPI_COMM_NULL`, or `comm3` for user objects.
pub fn handle_name(kind: HandleKind, h: HandleRef) -> String {
    match h {
        HandleRef::Null => kind.null_name().to_owned(),
        HandleRef::Predefined(id) => match predefined(kind).get(id as usize) {
            Some(name) => (*name).to_owned(),
            None => format!("{}?{id}", kind.prefix()),
        },
        HandleRef::User(id) => format!("{}{id}", kind.prefix()),
    }
}

/// A successful call of `func` with `args` (a JSON object), for tests that
/// build calls by hand.
#[cfg(test)]
pub(crate) fn test_call(rank: u32, seq: u64, func: &'static str, args: Json) -> DecodedCall {
    DecodedCall {
        rank,
        seq,
        func,
        ret: 0,
        args: Arc::new(args.as_object().expect("args are an object").clone()),
    }
}

/// A named constant as its name (flags joined by `|`), a number as itself.
fn constant_json(set: ConstSet, c: ConstRef) -> Json {
    match (set.text(c), c) {
        (Some(name), _) => json!(name),
        (None, ConstRef::Plain(v)) => json!(v),
        (None, _) => json!(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys a slot apart share it: the later one evicts the earlier, and a
    /// table smaller than the cache gets a slot per terminal.
    #[test]
    fn the_slot_cache_keeps_the_last_value_of_a_slot() {
        let mut c = SlotCache::new(CACHED_TERMINALS);
        let far = CACHED_TERMINALS + 5;
        c.put(5, "five");
        assert_eq!((c.get(5), c.get(far)), (Some(&"five"), None));
        c.put(far, "far");
        assert_eq!((c.get(5), c.get(far)), (None, Some(&"far")));
        let mut small = SlotCache::new(3);
        (0..3).for_each(|t| small.put(t, t * 10));
        assert_eq!(
            (small.slots.len(), small.get(0), small.get(2)),
            (3, Some(&0), Some(&20))
        );
        assert_eq!(SlotCache::<u8>::new(0).get(7), None);
    }

    /// Found by fuzzing: a recorded string with a newline split a call's
    /// text over two lines.
    #[test]
    fn a_call_is_one_line_whatever_its_strings_hold() {
        let mut args = Map::new();
        args.insert("info".into(), json!("info1"));
        args.insert("key".into(), json!("a\nb\u{3}"));
        args.insert("value".into(), json!("plain text"));
        let call = DecodedCall {
            rank: 1,
            seq: 7,
            func: "MPI_Info_set",
            ret: 0,
            args: Arc::new(args),
        };
        assert_eq!(
            call.to_text(),
            r"1 7 MPI_Info_set(info=info1, key=a\nb\u{3}, value=plain text)"
        );
    }
}
