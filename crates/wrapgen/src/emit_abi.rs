//! `crates/tracer/src/generated/abi.rs`: MPICH's C types, constants and
//! predefined handles as the tracer needs them, from the probe.

use crate::mpich::{HANDLE_TYPES, Mpich, Role, TypeShape};
use crate::overrides::Overrides;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The Rust spelling of a probed C type.
pub fn rust_type(shape: &TypeShape) -> Result<&'static str> {
    Ok(match (shape.class.as_str(), shape.size, shape.signed) {
        ("int" | "enum", 4, true) => "c_int",
        ("int" | "enum", 4, false) => "std::ffi::c_uint",
        ("int" | "enum", 8, true) => "i64",
        ("int" | "enum", 8, false) => "u64",
        ("pointer", 8, _) => "*mut c_void",
        ("function" | "struct", _, _) => "c_void",
        _ => bail!("no Rust type for {shape:?}"),
    })
}

/// A constant's value as Rust source for a C type of `shape`.
fn literal(v: i64, rust: &str) -> String {
    match rust {
        "*mut c_void" if v == 0 => "std::ptr::null_mut()".into(),
        "*mut c_void" => format!("std::ptr::without_provenance_mut({v:#x})"),
        "c_int" if v < -0xffff => format!("{:#x}_u32 as c_int", v as u32),
        _ if v >= 0x10000 => format!("{v:#x}"),
        _ => v.to_string(),
    }
}

pub fn emit(m: &Mpich, o: &Overrides, header: &str) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    s.push_str(
        "//! MPICH's C ABI as the tracer sees it: types named as in C, constants, and the\n",
    );
    let _ = writeln!(
        s,
        "//! fixed ids of predefined handles. Probed from MPICH {} at generation time",
        m.version
    );
    s.push_str("//! (every value here was printed by a C program compiled against mpi.h, then\n");
    s.push_str("//! checked again with static assertions), so the tracer builds without MPI.\n");
    s.push_str(
        "//! A complete table, of which the tracer uses a part.\n\n#![allow(dead_code)]\n\n",
    );
    s.push_str("use mpigram_mpispec::HandleKind;\nuse std::ffi::{CStr, c_char, c_int, c_void};\n");
    s.push_str("use std::sync::atomic::{AtomicPtr, Ordering};\n\n");

    s.push_str("// --- Types ---\n\n");
    for (name, shape) in &m.types {
        if name == "MPI_Status" {
            continue;
        }
        let doc = match shape.class.as_str() {
            "function" => {
                "/// A C function type: opaque, the tracer only passes callbacks through.\n"
            }
            "struct" => "/// A C struct the tracer only passes by pointer: opaque.\n",
            _ => "",
        };
        let _ = writeln!(s, "{doc}pub type {name} = {};", rust_type(shape)?);
    }
    s.push_str("\n/// MPICH's status object, field for field.\n#[repr(C)]\n#[derive(Clone, Copy, Debug, Default)]\n");
    s.push_str("pub struct MPI_Status {\n");
    let mut end = 0;
    for f in &m.status_fields {
        if f.offset != end || f.size != 4 {
            bail!(
                "MPI_Status field {} at {} ({} bytes): not a packed int field",
                f.name,
                f.offset,
                f.size
            );
        }
        end += f.size;
        let _ = writeln!(s, "    pub {}: c_int,", f.name);
    }
    s.push_str("}\n\n");
    let _ = writeln!(
        s,
        "const _: () = assert!(std::mem::size_of::<MPI_Status>() == {});",
        m.status_size
    );
    for f in &m.status_fields {
        let _ = writeln!(
            s,
            "const _: () = assert!(std::mem::offset_of!(MPI_Status, {}) == {});",
            f.name, f.offset
        );
    }
    for (name, shape) in &m.types {
        if matches!(shape.class.as_str(), "int" | "enum" | "pointer") {
            let _ = writeln!(
                s,
                "const _: () = assert!(std::mem::size_of::<{name}>() == {});",
                shape.size
            );
        }
    }

    s.push_str("\n// --- Handles (predefined, null, aliases) ---\n\n");
    for h in m
        .handles
        .iter()
        .filter(|h| h.value.is_some() && h.role != Role::Unsupported)
    {
        let ty = if h.c_type == "int" {
            "c_int"
        } else {
            h.c_type.as_str()
        };
        let shape_rust = match m.types.get(&h.c_type) {
            Some(shape) => rust_type(shape)?,
            None => "c_int",
        };
        let v = h.value.context("value")?;
        let _ = writeln!(
            s,
            "pub const {}: {ty} = {};",
            h.name,
            literal(v, shape_rust)
        );
    }

    s.push_str("\n// --- Integer constants ---\n\n");
    for (name, v) in &m.ints {
        let ty = if i32::try_from(*v).is_ok() {
            "c_int"
        } else {
            "i64"
        };
        let _ = writeln!(s, "pub const {name}: {ty} = {};", literal(*v, ty));
    }

    s.push_str("\n// --- Pointer constants ---\n\n");
    for (name, pointee) in &o.pointer_constants {
        let v = *m
            .pointers
            .get(name)
            .with_context(|| format!("{name} was not probed"))?;
        let value = if v == 0 {
            "std::ptr::null_mut()".to_owned()
        } else {
            format!("std::ptr::without_provenance_mut({})", v as u64 as usize)
        };
        let value = value.replace(&format!("({})", usize::MAX), "(usize::MAX)");
        let _ = writeln!(s, "pub const {name}: *mut {pointee} = {value};");
    }

    s.push_str("\n// --- Variables of libmpich (their value is known only at run time) ---\n\n");
    s.push_str(EXTERN_POINTER);
    for (name, pointee) in &o.extern_pointers {
        let _ = writeln!(
            s,
            "\n/// `{name}`, a variable of libmpich: NULL if the library is not loaded.\npub fn {name}() -> *mut {pointee} {{\n    static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());\n    extern_pointer(c\"{name}\", &SLOT).cast()\n}}"
        );
    }

    s.push_str("\n// --- Predefined handles ---\n\n");
    s.push_str("/// The fixed id of a predefined handle: its index in\n/// `mpigram_mpispec::predefined(kind)`. Handle values are those of the\n");
    s.push_str(
        "/// tracer's `IntoHandle`: an int handle zero-extended, a pointer handle its address.\n",
    );
    s.push_str("pub fn predefined_id(kind: HandleKind, handle: u64) -> Option<u32> {\n");
    s.push_str(
        "    // Only int handles are predefined in MPICH; their value is the low 32 bits.\n",
    );
    s.push_str("    let v = handle as u32 as c_int;\n    match kind {\n");
    for (_, kind, _) in HANDLE_TYPES {
        let Some(kind) = kind else { continue };
        let list = m.predefined(kind);
        if list.is_empty() {
            let _ = writeln!(s, "        HandleKind::{kind} => None,");
            continue;
        }
        let _ = writeln!(s, "        HandleKind::{kind} => match v {{");
        let mut seen = BTreeMap::new();
        for (i, h) in list.iter().enumerate() {
            if let Some(other) = seen.insert(h.value, &h.name) {
                bail!(
                    "{} and {other} have the same value: one must be an alias",
                    h.name
                );
            }
            let _ = writeln!(s, "            {} => Some({i}),", h.name);
        }
        s.push_str("            _ => None,\n        },\n");
    }
    s.push_str("    }\n}\n\n");
    s.push_str("/// The value of `kind`'s null handle, as the tracer's `IntoHandle` gives it.\n");
    s.push_str("pub fn null_handle(kind: HandleKind) -> u64 {\n    match kind {\n");
    for (_, kind, null) in HANDLE_TYPES {
        let Some(kind) = kind else { continue };
        let h = m
            .handles
            .iter()
            .find(|h| h.name == *null)
            .context("null handle")?;
        let (v, note) = match h.value {
            Some(v) => (v as u32 as u64, (*null).to_owned()),
            None => (
                0,
                format!("{null}: not in this MPICH's mpi.h; NULL as in MPI 4.1"),
            ),
        };
        let _ = writeln!(s, "        HandleKind::{kind} => {v:#x}, // {note}");
    }
    s.push_str("    }\n}\n");
    Ok(s)
}

const EXTERN_POINTER: &str = r#"/// The value of the pointer variable `name` of the MPI library, cached.
fn extern_pointer(name: &CStr, slot: &AtomicPtr<c_void>) -> *mut c_void {
    let cached = slot.load(Ordering::Acquire);
    if !cached.is_null() {
        return cached;
    }
    // SAFETY: `name` is NUL-terminated; dlsym only looks the symbol up.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if sym.is_null() {
        return sym;
    }
    // SAFETY: the symbol is a pointer variable of the MPI library (mpi.h:
    // `extern T * const NAME`), readable for the life of the process.
    let value = unsafe { sym.cast::<*mut c_void>().read() };
    slot.store(value, Ordering::Release);
    value
}
"#;
