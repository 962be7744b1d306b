//! Checks against the installed MPICH, run at generation time and by the
//! regeneration test when `mpicc` is present:
//! - prototypes: the C prototype of every function the tracer defines or
//!   calls, written from the same model as the Rust signatures, is declared
//!   again after `#include <mpi.h>`; C rejects a redeclaration whose types
//!   differ, so this proves the wrappers have MPICH's signatures;
//! - ABI: every size, offset and constant value of abi.rs, as a
//!   `_Static_assert` against mpi.h.

use crate::model::FuncModel;
use crate::mpich::{Mpich, Role};
use crate::probe::{Scratch, Toolchain, mpicc};
use anyhow::{Context, Result};
use std::fmt::Write as _;

/// The C prototype of `f` (named `prefix` + its name).
pub fn prototype(f: &FuncModel, prefix: &str) -> String {
    let mut params: Vec<String> = f.params.iter().map(|p| p.ctype.c_decl(&p.name)).collect();
    if f.variadic {
        params.push("...".into());
    }
    if params.is_empty() {
        params.push("void".into());
    }
    format!("{} {prefix}{}({});", f.ret, f.name, params.join(", "))
}

/// Redeclares `MPI_X` and `PMPI_X` of every function in `funcs`.
pub fn prototypes(tc: &Toolchain, funcs: &[&FuncModel]) -> Result<()> {
    let mut c = String::from("#include <mpi.h>\n\n");
    for f in funcs {
        let _ = writeln!(c, "{}\n{}", prototype(f, ""), prototype(f, "P"));
    }
    let scratch = Scratch::new("prototypes")?;
    mpicc(
        &tc.compiler,
        &scratch.0,
        "prototypes",
        &c,
        &["-fsyntax-only"],
    )
    .context(
        "the wrappers' C prototypes do not match MPICH's (fix the model or the overrides' ctype)",
    )
}

/// Asserts every size, offset and constant of the ABI.
pub fn abi(tc: &Toolchain, m: &Mpich) -> Result<()> {
    let mut c = String::from("#include <mpi.h>\n#include <stddef.h>\n#include <stdint.h>\n\n");
    for (name, shape) in &m.types {
        if shape.class != "function" {
            let _ = writeln!(
                c,
                "_Static_assert(sizeof({name}) == {}, \"{name}\");",
                shape.size
            );
        }
    }
    for f in &m.status_fields {
        let _ = writeln!(
            c,
            "_Static_assert(offsetof(MPI_Status, {0}) == {1}, \"{0}\");",
            f.name, f.offset
        );
    }
    let _ = writeln!(
        c,
        "_Static_assert(sizeof(MPI_Status) == {}, \"MPI_Status\");",
        m.status_size
    );
    let int_types = [
        "int",
        "MPI_Comm",
        "MPI_Group",
        "MPI_Datatype",
        "MPI_Op",
        "MPI_Info",
        "MPI_Errhandler",
    ];
    let int_types = [
        &int_types[..],
        &["MPI_Win", "MPI_Message", "MPI_Session", "MPI_Request"],
    ]
    .concat();
    for h in &m.handles {
        if let (Some(v), true) = (
            h.value,
            int_types.contains(&h.c_type.as_str()) && h.role != Role::Unsupported,
        ) {
            let _ = writeln!(
                c,
                "_Static_assert((long long)({0}) == {v}LL, \"{0}\");",
                h.name
            );
        }
    }
    for (name, v) in &m.ints {
        let _ = writeln!(
            c,
            "_Static_assert((long long)({name}) == {v}LL, \"{name}\");"
        );
    }
    let scratch = Scratch::new("abi")?;
    mpicc(&tc.compiler, &scratch.0, "abi", &c, &["-fsyntax-only"])
        .with_context(|| format!("the probe of {} does not match its mpi.h", m.version))
}
