//! `crates/mpispec/src/generated.rs`: the function table and the names of
//! the predefined handles and the sets of named constants.

use crate::emit_fronts::Registry;
use crate::model::FuncModel;
use crate::mpich::HANDLE_TYPES;
use anyhow::{Context, Result, ensure};
use std::fmt::Write as _;

pub fn emit(
    funcs: &[FuncModel],
    registry: &Registry,
    consts: &crate::constants::Registry,
    o: &crate::overrides::Overrides,
    header: &str,
) -> Result<String> {
    ensure!(
        funcs.len() <= usize::from(u16::MAX),
        "more functions than FuncId holds"
    );
    ensure!(
        funcs.windows(2).all(|w| w[0].name < w[1].name),
        "functions not sorted by name"
    );
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    s.push_str("//! The function table and predefined handle names (see the crate docs).\n\n");
    s.push_str("use crate::{Enc, Func, HandleKind, Param};\n\n");
    s.push_str(&crate::constants::emit_spec(consts, o));
    s.push('\n');
    s.push_str("/// Every C function of the MPI standard (MPI 5.0, both variants of the\n");
    s.push_str("/// large-count ones) and the ten MPI-1 functions MPI 3.0 removed, sorted by\n");
    s.push_str("/// name: a function's [`crate::FuncId`] is its index. Each lists its C\n");
    s.push_str("/// parameters in order (the error code and `...` excepted) and how each\n");
    s.push_str("/// is encoded. Functions an MPI lacks are here too, so ids do not depend\n/// on the platform.\n");
    s.push_str("pub static FUNCS: &[Func] = &[\n");
    for f in funcs {
        let _ = write!(s, "    Func {{ name: \"{}\", params: &[", f.name);
        for p in &f.params {
            let enc = p.action.enc().context("encoding")?;
            let _ = write!(s, "Param {{ name: \"{}\", enc: {} }}, ", p.name, enc.rust());
        }
        s.push_str("] },\n");
    }
    s.push_str("];\n\n");
    s.push_str("/// The id of each function, by its C name.\n#[allow(non_upper_case_globals)]\npub mod func {\n");
    s.push_str("    use crate::FuncId;\n\n");
    for (i, f) in funcs.iter().enumerate() {
        let _ = writeln!(s, "    pub const {}: FuncId = {i};", f.name);
    }
    s.push_str("}\n\n");
    s.push_str("/// The names of the predefined handles of `kind` of every MPI mpigram knows:\n");
    s.push_str("/// the fixed id of a predefined handle is its index here\n");
    s.push_str("/// ([`crate::HandleRef::Predefined`]), the same whichever MPI a trace was\n");
    s.push_str("/// taken under (wrapgen's `data/predefined.txt`, which only grows). Null\n");
    s.push_str("/// handles are not listed ([`crate::HandleRef::Null`]), nor aliases\n");
    s.push_str("/// (MPI_LONG_LONG is MPI_LONG_LONG_INT).\n");
    s.push_str(
        "pub fn predefined(kind: HandleKind) -> &'static [&'static str] {\n    match kind {\n",
    );
    for (_, kind, _) in HANDLE_TYPES {
        let Some(kind) = kind else { continue };
        let names: Vec<String> = registry
            .get(*kind)
            .into_iter()
            .flatten()
            .map(|n| format!("\"{n}\""))
            .collect();
        let _ = writeln!(s, "        HandleKind::{kind} => &[{}],", names.join(", "));
    }
    s.push_str("    }\n}\n");
    Ok(s)
}
