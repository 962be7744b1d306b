//! One decoded call's arguments, looked up by the standard's parameter names.

use mpigram_mpispec::{BufferRef, FUNCS, Func, HandleKind, HandleRef, Rank, Signature, Value};

/// A call signature with its function: `call.int("count")`.
#[derive(Clone, Copy)]
pub(crate) struct Call<'s> {
    pub func: &'static Func,
    pub sig: &'s Signature,
}

impl<'s> Call<'s> {
    pub fn new(sig: &'s Signature) -> Call<'s> {
        Call {
            func: &FUNCS[sig.func as usize],
            sig,
        }
    }

    /// The function's name without `MPI_` and the large-count `_c`:
    /// `Send`, `Isend`, `Bcast_init`, `Type_vector`.
    pub fn base_name(&self) -> &'static str {
        let name = self.func.name;
        let name = name.strip_prefix("MPI_").unwrap_or(name);
        name.strip_suffix("_c").unwrap_or(name)
    }

    pub fn value(&self, name: &str) -> Option<&'s Value> {
        let i = self.func.params.iter().position(|p| p.name == name)?;
        self.sig.args.get(i)
    }

    /// An integer argument (counts, sizes, block lengths, ...).
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.value(name)? {
            Value::Int(v) | Value::Address(v) => Some(*v),
            _ => None,
        }
    }

    /// An array of integers; `None` if it was not recorded.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        match self.value(name)? {
            Value::Array(Some(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Int(i) | Value::Address(i) => Some(*i),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    pub fn handle(&self, name: &str) -> Option<HandleRef> {
        match self.value(name)? {
            Value::Handle(_, h) => Some(*h),
            _ => None,
        }
    }

    /// An array of handles; `None` if it was not recorded.
    pub fn handles(&self, name: &str) -> Option<Vec<HandleRef>> {
        match self.value(name)? {
            Value::Array(Some(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Handle(_, h) => Some(*h),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    pub fn rank(&self, name: &str) -> Option<Rank> {
        match self.value(name)? {
            Value::Rank(r) => Some(*r),
            _ => None,
        }
    }

    pub fn in_place(&self, name: &str) -> bool {
        matches!(self.value(name), Some(Value::Buffer(BufferRef::InPlace)))
    }

    /// The user objects of `kind` the call names, in argument order
    /// (arrays included).
    pub fn user_handles(&self, kind: HandleKind) -> impl Iterator<Item = u64> + 's {
        fn walk(v: &Value, kind: HandleKind, out: &mut Vec<u64>) {
            match v {
                Value::Handle(k, HandleRef::User(id)) if *k == kind => out.push(*id),
                Value::Array(Some(items)) => items.iter().for_each(|i| walk(i, kind, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        self.sig.args.iter().for_each(|v| walk(v, kind, &mut out));
        out.into_iter()
    }
}
