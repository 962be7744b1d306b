//! `crates/tracer/src/generated/abi.rs`: MPICH's C types, constants and
//! predefined handles as the tracer needs them, from the probe.

use crate::mpich::{HANDLE_TYPES, Mpich, TypeShape};
use anyhow::{Result, bail};
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

/// The C types every front end shares: scalar types as MPICH's probe
/// gives them (the other MPIs' probes must agree), handles as machine
/// words, statuses opaque (read through the bound front end).
pub fn emit(m: &Mpich, others: &[&Mpich], header: &str) -> Result<String> {
    let handle_types: Vec<&str> = HANDLE_TYPES
        .iter()
        .map(|(t, _, _)| *t)
        .filter(|t| *t != "int")
        .collect();
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    s.push_str("//! The C types of the MPI functions as every ABI front end shares them (see\n");
    s.push_str(
        "//! `crate::front`): scalar types as the probed MPIs define them alike, each handle a\n",
    );
    s.push_str(
        "//! [`Handle`] word, handles in memory and statuses opaque, read through the bound\n",
    );
    s.push_str("//! front end. The tracer builds without MPI.\n\n#![allow(dead_code)]\n\n");
    s.push_str("use std::ffi::{c_int, c_void};\n\n");
    s.push_str(HANDLE);
    s.push_str("// --- Types ---\n\n");
    for (name, shape) in &m.types {
        if name == "MPI_Status" {
            continue;
        }
        if handle_types.contains(&name.as_str()) {
            let _ = writeln!(s, "pub type {name} = Handle;");
            continue;
        }
        for other in others {
            if let Some(o) = other.types.get(name) {
                if o != shape {
                    bail!(
                        "{name} is {shape:?} in {} but {o:?} in {}",
                        m.version,
                        other.version
                    );
                }
            }
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
    s.push_str("\n/// A status: its layout is the bound front end's.\n#[repr(C)]\npub struct MPI_Status {\n    _opaque: [u8; 0],\n}\n\n");
    for (name, shape) in &m.types {
        if matches!(shape.class.as_str(), "int" | "enum" | "pointer")
            && !handle_types.contains(&name.as_str())
        {
            let _ = writeln!(
                s,
                "const _: () = assert!(std::mem::size_of::<{name}>() == {});",
                shape.size
            );
        }
    }
    Ok(s)
}

const HANDLE: &str = r#"/// MPI_SUCCESS, 0 in every MPI (other constants are the bound front end's).
pub const MPI_SUCCESS: c_int = 0;

/// A handle passed by value: an int (MPICH's ABI) or a pointer (Open MPI,
/// the standard ABI), in the argument register or stack slot both take in
/// the x86-64 and AArch64 calling conventions. The bits that hold the
/// handle are the bound front end's to say (`Front::value`); forwarded to
/// MPI as received.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handle(pub usize);

/// A handle in memory (an output, an array element): 4 or 8 bytes as the
/// bound front end says; read only through it (`Front::read`).
#[repr(C)]
pub struct HandleSlot {
    _opaque: [u8; 0],
}

impl From<c_int> for Handle {
    /// An int handle (a keyval), as MPI reads it from a register.
    fn from(v: c_int) -> Handle {
        Handle(v as u32 as usize)
    }
}

impl Handle {
    /// Where MPI may write a handle of any width into this one (zeroed
    /// first: a 4-byte handle fills its low half on a little-endian machine).
    pub fn out(&mut self) -> *mut HandleSlot {
        *self = Handle(0);
        (self as *mut Handle).cast()
    }
}

"#;
