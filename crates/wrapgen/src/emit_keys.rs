//! The key of a wrapper's call (the tracer's call memo, `memo.rs` there):
//! the raw words its encoding reads, each the very value the encoder is
//! given, so that equal keys (with nothing they are encoded through
//! changed) mean equal signatures. A function has a key when every
//! parameter is a plain value, a handle of an existing object, a buffer, a
//! single output, a status or a created request; strings, arrays, created
//! or freed objects and requests passed in have none (their encoding
//! reads more than a few words, or changes the tracer's tables).

use crate::ctype::CType;
use crate::model::{Action, FuncModel, Out, Scalar};

/// Most words of a key: the tracer's `memo::MAX_KEY`.
pub const MAX_KEY: usize = 16;

/// The Rust of one wrapper's key closures: its input words, which the
/// arguments give before the call, and its output words, read after it.
pub struct Key {
    /// One expression per input word (of an `InputWords` named `k`).
    pub inputs: Vec<String>,
    /// Per input word, whether it is a 32-bit integer sign-extended (its
    /// low 32 bits decide whether two such words are equal: the fast path
    /// compares only them, one instruction fewer than widening).
    pub narrow: Vec<bool>,
    /// Per input word, the statement that makes its argument (or value
    /// read before the call) again from the word `w[i]`, as the encoder
    /// records it: a call whose inputs are the memo's keeps no argument
    /// across the MPI call.
    pub from_words: Vec<String>,
    /// Statements before the output words (a status's words).
    pub prelude: Vec<String>,
    /// One expression per output word (of a `KeyWords` named `k`).
    pub outputs: Vec<String>,
    /// The output closure reads through pointers.
    pub needs_unsafe: bool,
}

impl Key {
    /// The input closure: `|k: &InputWords| [word, ...]`.
    pub fn inputs_closure(&self) -> String {
        let words = self.inputs.join(", ");
        let arg = if words.contains("k.") { "k" } else { "_" };
        format!("move |{arg}: &InputWords| [{words}]")
    }

    /// Which input words are [`narrow`](Key::narrow): `[bool, ...]`.
    pub fn narrow_array(&self) -> String {
        let flags: Vec<&str> = self
            .narrow
            .iter()
            .map(|&n| if n { "true" } else { "false" })
            .collect();
        format!("[{}]", flags.join(", "))
    }

    /// The head of the encoding closure: its arguments, and the input
    /// arguments made again from their words.
    pub fn encode_head(&self, arg: &str) -> (String, String) {
        let w = if self.from_words.is_empty() { "_" } else { "w" };
        let n = self.from_words.len();
        (
            format!("{arg}: &mut Encoder, {w}: &[u64; {n}]"),
            self.from_words.join(" "),
        )
    }

    /// The output closure: `|k| [word, ...]`, after the prelude.
    pub fn outputs_closure(&self) -> String {
        let mut s: String = self.prelude.iter().map(|p| format!("{p} ")).collect();
        s.push_str(&format!("[{}]", self.outputs.join(", ")));
        let arg = if s.contains("k.") { "k" } else { "_" };
        if self.needs_unsafe {
            format!("|{arg}| unsafe {{ {s} }}")
        } else {
            format!("|{arg}| {s}")
        }
    }
}

/// The key of `f`'s calls, if it has one. A value read before the call
/// is in `{name}_before`, as the wrapper binds it.
pub fn key(f: &FuncModel) -> Option<Key> {
    let mut k = Key {
        inputs: Vec::new(),
        narrow: Vec::new(),
        from_words: Vec::new(),
        prelude: Vec::new(),
        outputs: Vec::new(),
        needs_unsafe: false,
    };
    let mut buffers = false;
    for p in &f.params {
        let n = p.name.as_str();
        match &p.action {
            Action::Value(s) => {
                buffers |= scalar_word(&mut k, s, n, &p.ctype)?;
                from_word(&mut k, s, n, &p.ctype.rust());
            }
            Action::Before(s) => {
                let var = format!("{n}_before");
                buffers |= scalar_word(&mut k, s, &var, &p.ctype)?;
                from_word(&mut k, s, &var, &p.ctype.rust_elem());
            }
            Action::Out(o) => {
                k.needs_unsafe = true;
                buffers |= out_word(&mut k, o, n, &p.ctype)?;
            }
            Action::Free(_)
            | Action::Str { .. }
            | Action::StrOut { .. }
            | Action::Array { .. }
            | Action::Coords { .. }
            | Action::Varargs => return None,
        }
    }
    // After the call: a block freed during it changes the generation.
    if buffers {
        k.outputs.push("k.segments()".into());
    }
    (k.inputs.len() + k.outputs.len() <= MAX_KEY).then_some(k)
}

/// `let x = ...;` from the input word `w[i]` of `x` (of Rust type `ty`,
/// a handle if `s` says so), for the `i`th input word: the value itself,
/// but for a handle's bits outside its front end's mask (which the encoder
/// does not read) and a buffer's provenance (it records addresses only).
fn from_word(k: &mut Key, s: &Scalar, x: &str, ty: &str) {
    let w = format!("w[{}]", k.inputs.len() - 1);
    let value = match s {
        Scalar::Handle(_) if ty != "c_int" => format!("Handle({w} as usize)"),
        _ if ty.starts_with("*const ") => format!("std::ptr::without_provenance({w} as usize)"),
        _ if ty.starts_with("*mut ") => format!("std::ptr::without_provenance_mut({w} as usize)"),
        _ => format!("{w} as {ty}"),
    };
    k.from_words.push(format!("let {x}: {ty} = {value};"));
}

/// The word of a value `x` in hand; whether it is a buffer. `None`: a
/// request, whose id the request table says.
fn scalar_word(k: &mut Key, s: &Scalar, x: &str, ct: &CType) -> Option<bool> {
    let mut narrow = false;
    let word = match s {
        Scalar::Int
        | Scalar::Const(_)
        | Scalar::Address
        | Scalar::Tag
        | Scalar::Rank(_)
        | Scalar::Root
        | Scalar::WinRank(_)
        | Scalar::OwnRank { .. } => {
            let value = crate::emit_wrappers::int_value(x, ct);
            // `i64::from` of a C int: a sign-extended 32-bit value.
            narrow = value.starts_with("i64::from(") && ct.rust() == "c_int";
            format!("{value} as u64")
        }
        Scalar::Handle(kind) if ct.base == "int" => {
            format!("k.handle(HandleKind::{kind}, Handle::from({x}))")
        }
        Scalar::Handle(kind) => format!("k.handle(HandleKind::{kind}, {x})"),
        Scalar::Callback | Scalar::Buffer | Scalar::Location => format!("{x} as u64"),
        Scalar::Request => return None,
    };
    k.inputs.push(word);
    k.narrow.push(narrow);
    Some(matches!(s, Scalar::Buffer | Scalar::Location))
}

/// The words of an output behind pointer `p`; whether it is a buffer.
/// `None`: an object the call created.
fn out_word(k: &mut Key, o: &Out, p: &str, ct: &CType) -> Option<bool> {
    let word = match o {
        Out::Number { method, .. } if *method != "int_out" || ct.base == "int" => {
            format!("k.out({p}.cast_const())")
        }
        Out::Tag | Out::Const(_) if ct.base == "int" => format!("k.out({p}.cast_const())"),
        Out::Number { .. } | Out::Tag | Out::Const(_) => {
            format!("k.out({p}.cast_const().cast::<c_int>())")
        }
        Out::Location => format!("k.out({p}.cast_const())"),
        Out::Rank(_) => format!("k.rank_out({p}.cast_const())"),
        Out::Lookup(kind) => format!("k.handle_out(HandleKind::{kind}, {p}.cast())"),
        Out::NewRequest => format!("k.created({p}.cast())"),
        Out::BufferOut => format!("k.pointer_out({p}.cast_const().cast::<*mut c_void>())"),
        Out::Status(_) => {
            let s = format!("{p}_words");
            k.prelude.push(format!("let {s} = k.status({p});"));
            k.outputs.extend((0..5).map(|i| format!("{s}[{i}]")));
            return Some(false);
        }
        Out::NewHandle(_) | Out::PendingComm => return None,
    };
    k.outputs.push(word);
    Some(matches!(o, Out::Location | Out::BufferOut))
}
