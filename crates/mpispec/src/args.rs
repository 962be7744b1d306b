//! A decoded signature's arguments, looked up by the standard's parameter
//! names: `Args::new(&sig).int("count")`.

use crate::{BufferRef, ConstRef, FUNCS, Func, HandleKind, HandleRef, Rank, Signature, Value};

/// A call signature with its function.
#[derive(Clone, Copy)]
pub struct Args<'s> {
    pub func: &'static Func,
    pub sig: &'s Signature,
}

impl<'s> Args<'s> {
    /// Panics if `sig.func` is no function of [`FUNCS`] (decoded
    /// signatures always name one).
    pub fn new(sig: &'s Signature) -> Args<'s> {
        Args {
            func: &FUNCS[sig.func as usize],
            sig,
        }
    }

    /// The function's name without the large-count suffix (`MPI_Send_c` -> `MPI_Send`).
    pub fn base_name(&self) -> &'static str {
        self.func.name.strip_suffix("_c").unwrap_or(self.func.name)
    }

    /// The function's name without `MPI_` and the large-count `_c`:
    /// `Send`, `Isend`, `Bcast_init`, `Type_vector`.
    pub fn operation(&self) -> &'static str {
        let name = self.base_name();
        name.strip_prefix("MPI_").unwrap_or(name)
    }

    /// The argument of parameter `name`.
    pub fn value(&self, name: &str) -> Option<&'s Value> {
        let i = self.func.params.iter().position(|p| p.name == name)?;
        self.sig.args.get(i)
    }

    /// An integer argument (Int, Address or Tag, or a number that is no
    /// named constant).
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.value(name)? {
            Value::Int(v)
            | Value::Address(v)
            | Value::Tag(v)
            | Value::Const(_, ConstRef::Plain(v)) => Some(*v),
            _ => None,
        }
    }

    /// The name of a named constant argument (`MPI_ORDER_C`; flags joined by `|`).
    pub fn constant(&self, name: &str) -> Option<String> {
        match self.value(name)? {
            Value::Const(set, c) => set.text(*c),
            _ => None,
        }
    }

    /// An array of integers; `None` if it was not recorded.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        match self.value(name)? {
            Value::Array(Some(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Int(v) | Value::Address(v) | Value::Const(_, ConstRef::Plain(v)) => {
                        Some(*v)
                    }
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

    /// The user object of `kind` that parameter `name` names (a
    /// constructor's new object).
    pub fn new_user(&self, name: &str, kind: HandleKind) -> Option<u64> {
        match self.value(name)? {
            Value::Handle(k, HandleRef::User(id)) if *k == kind => Some(*id),
            _ => None,
        }
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
