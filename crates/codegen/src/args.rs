//! One signature's arguments, looked up by the standard's parameter names.

use mpigram_mpispec::{FUNCS, Func, HandleKind, HandleRef, Signature, Value};

/// A decoded signature with its function, for lookups by parameter name.
pub struct Args<'s> {
    pub func: &'static Func,
    pub sig: &'s Signature,
}

impl<'s> Args<'s> {
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

    pub fn value(&self, name: &str) -> Option<&'s Value> {
        let i = self.func.params.iter().position(|p| p.name == name)?;
        self.sig.args.get(i)
    }

    /// An integer argument (Int, Address or Tag).
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.value(name)? {
            Value::Int(v) | Value::Address(v) | Value::Tag(v) => Some(*v),
            _ => None,
        }
    }

    /// An array of integers.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        match self.value(name)? {
            Value::Array(Some(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Int(v) | Value::Address(v) => Some(*v),
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

    /// The first user handle of `kind` the call names (a constructor's new object).
    pub fn new_user(&self, name: &str, kind: HandleKind) -> Option<u64> {
        match self.value(name)? {
            Value::Handle(k, HandleRef::User(id)) if *k == kind => Some(*id),
            _ => None,
        }
    }
}
