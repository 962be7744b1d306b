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

/// The Rust of one wrapper's key closure.
pub struct Key {
    /// Statements before the words (a status's words).
    pub prelude: Vec<String>,
    /// One expression per word.
    pub words: Vec<String>,
    /// The closure reads through pointers.
    pub needs_unsafe: bool,
}

impl Key {
    /// The closure's body: `[word, ...]`, after the prelude.
    pub fn body(&self) -> String {
        let mut s: String = self.prelude.iter().map(|p| format!("{p} ")).collect();
        s.push_str(&format!("[{}]", self.words.join(", ")));
        if self.needs_unsafe {
            format!("unsafe {{ {s} }}")
        } else {
            s
        }
    }
}

/// The key of `f`'s calls, if it has one. A value read before the call
/// is in `{name}_before`, as the wrapper binds it.
pub fn key(f: &FuncModel) -> Option<Key> {
    let mut k = Key {
        prelude: Vec::new(),
        words: Vec::new(),
        needs_unsafe: false,
    };
    let mut buffers = false;
    for p in &f.params {
        let n = p.name.as_str();
        match &p.action {
            Action::Value(s) => {
                buffers |= scalar_word(&mut k, s, n, &p.ctype)?;
            }
            Action::Before(s) => {
                buffers |= scalar_word(&mut k, s, &format!("{n}_before"), &p.ctype)?;
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
    if buffers {
        k.words.push("k.segments()".into());
    }
    (k.words.len() <= MAX_KEY).then_some(k)
}

/// The word of a value `x` in hand; whether it is a buffer. `None`: a
/// request, whose id the request table says.
fn scalar_word(k: &mut Key, s: &Scalar, x: &str, ct: &CType) -> Option<bool> {
    let word = match s {
        Scalar::Int
        | Scalar::Const(_)
        | Scalar::Address
        | Scalar::Tag
        | Scalar::Rank(_)
        | Scalar::Root
        | Scalar::WinRank(_)
        | Scalar::OwnRank { .. } => {
            format!("{} as u64", crate::emit_wrappers::int_value(x, ct))
        }
        Scalar::Handle(kind) if ct.base == "int" => {
            format!("k.handle(HandleKind::{kind}, Handle::from({x}))")
        }
        Scalar::Handle(kind) => format!("k.handle(HandleKind::{kind}, {x})"),
        Scalar::Callback | Scalar::Buffer | Scalar::Location => format!("{x} as u64"),
        Scalar::Request => return None,
    };
    k.words.push(word);
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
            k.words.extend((0..5).map(|i| format!("{s}[{i}]")));
            return Some(false);
        }
        Out::NewHandle(_) | Out::PendingComm => return None,
    };
    k.words.push(word);
    Some(matches!(o, Out::Location | Out::BufferOut))
}
