//! `crates/tracer/src/generated/pmpi.rs`: a lazily resolved pointer to the
//! real `PMPI_X` for every function MPICH exports.

use crate::ctype::rust_base;
use crate::model::FuncModel;
use crate::mpich::Mpich;
use std::fmt::Write as _;

/// `unsafe extern "C" fn(...) -> R` of `f`.
pub fn fn_type(f: &FuncModel) -> String {
    let mut args: Vec<String> = f.params.iter().map(|p| p.ctype.rust()).collect();
    if f.variadic {
        args.push("...".into());
    }
    format!(
        "unsafe extern \"C\" fn({}) -> {}",
        args.join(", "),
        rust_base(&f.ret)
    )
}

/// What a function returns when its real implementation cannot be found:
/// an error code, else a zero (or NULL) of its return type.
fn unresolved_return(f: &FuncModel, m: &Mpich) -> &'static str {
    match f.ret.as_str() {
        "int" => "crate::front::front().ints.MPI_ERR_INTERN",
        "double" => "0.0",
        t if crate::mpich::HANDLE_TYPES.iter().any(|(h, _, _)| *h == t) => "Handle(0)",
        t if m.types.get(t).is_some_and(|s| s.class == "pointer") => "std::ptr::null_mut()",
        _ => "0",
    }
}

pub fn emit(funcs: &[&FuncModel], m: &Mpich, header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    s.push_str(PREAMBLE);
    for f in funcs {
        let name = &f.name;
        let stub_args: Vec<String> = f
            .params
            .iter()
            .map(|p| format!("_: {}", p.ctype.rust()))
            .collect();
        let _ = write!(
            s,
            "\npub type P{name}_t = {ty};\n\n\
             /// The real `{name}`: `P{name}`.\n\
             pub fn {name}() -> P{name}_t {{\n\
             \x20   unsafe extern \"C\" fn unresolved({args}) -> {ret} {{\n\
             \x20       {fail}\n\
             \x20   }}\n",
            ty = fn_type(f),
            args = stub_args.join(", "),
            ret = rust_base(&f.ret),
            fail = unresolved_return(f, m),
        );
        if f.variadic {
            // No stub can pass variable arguments on: the slot starts
            // empty and each call tests it.
            let _ = write!(
                s,
                "\x20   static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());\n\
                 \x20   let f = resolve(&SLOT, c\"P{name}\", c\"{name}\", unresolved as *mut c_void);\n\
                 \x20   // SAFETY: `f` is P{name} or {name}, whose C type this is, or `unresolved` (not variadic: it ignores the variable arguments, which the C calling convention allows).\n\
                 \x20   unsafe {{ std::mem::transmute::<*mut c_void, P{name}_t>(f) }}\n\
                 }}\n"
            );
            continue;
        }
        let params: Vec<String> = f
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| format!("a{i}: {}", p.ctype.rust()))
            .collect();
        let names: Vec<String> = (0..f.params.len()).map(|i| format!("a{i}")).collect();
        let _ = write!(
            s,
            "\x20   /// Resolves the slot on the first call, then makes it.\n\
             \x20   unsafe extern \"C\" fn first({params}) -> {ret} {{\n\
             \x20       let f = resolve_slow(&SLOT, c\"P{name}\", c\"{name}\", unresolved as *mut c_void);\n\
             \x20       // SAFETY: `f` is P{name} or {name}, whose C type this is, or `unresolved`.\n\
             \x20       unsafe {{ std::mem::transmute::<*mut c_void, P{name}_t>(f)({names}) }}\n\
             \x20   }}\n\
             \x20   static SLOT: AtomicPtr<c_void> = AtomicPtr::new(first as *mut c_void);\n\
             \x20   // SAFETY: the slot holds P{name}, {name}, `unresolved` or `first`, all of this C type.\n\
             \x20   unsafe {{ std::mem::transmute::<*mut c_void, P{name}_t>(SLOT.load(Ordering::Acquire)) }}\n\
             }}\n",
            params = params.join(", "),
            names = names.join(", "),
            ret = rust_base(&f.ret),
        );
    }
    s
}

const PREAMBLE: &str = r#"//! The real MPI functions, for the wrappers to call: `PMPI_X` resolved
//! lazily with `dlsym(RTLD_NEXT)` (or, for an MPI library loaded with
//! `RTLD_LOCAL`, in the scope of an object that loaded it:
//! `crate::symbols::next`) and cached, never by a direct extern
//! reference (a Rust cdylib binds eagerly, and a direct reference would break
//! every non-MPI process the library is preloaded into). Each function's slot
//! first holds a stub that resolves it on its first call, so a call loads
//! the slot and tests nothing (a variadic function, which no stub can pass
//! its arguments on to, tests for an empty slot instead). If `PMPI_X` is
//! missing, the next `MPI_X` after this library is used; if that is missing
//! too, a stub that returns MPI_ERR_INTERN (the application is told, never
//! crashed). One accessor per function MPICH exports, used or not.

#![allow(dead_code)]

use crate::abi::*;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::io::Write as _;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The function cached in `slot`, resolving it on first use.
#[inline]
fn resolve(slot: &AtomicPtr<c_void>, pmpi: &CStr, mpi: &CStr, unresolved: *mut c_void) -> *mut c_void {
    let f = slot.load(Ordering::Acquire);
    if !f.is_null() {
        return f;
    }
    resolve_slow(slot, pmpi, mpi, unresolved)
}

#[cold]
fn resolve_slow(slot: &AtomicPtr<c_void>, pmpi: &CStr, mpi: &CStr, unresolved: *mut c_void) -> *mut c_void {
    let mut f = crate::symbols::next(pmpi);
    if f.is_null() {
        f = crate::symbols::next(mpi);
    }
    if f.is_null() {
        let _ = writeln!(
            std::io::stderr(),
            "mpigram: neither {} nor {} found: {} returns MPI_ERR_INTERN",
            pmpi.to_string_lossy(),
            mpi.to_string_lossy(),
            mpi.to_string_lossy()
        );
        f = unresolved;
    }
    slot.store(f, Ordering::Release);
    f
}
"#;
