//! The C binding of every MPI function: each parameter's C type and what
//! the call does with it (reads a value, reads through a pointer, writes
//! a result). It is the model `crates/wrapgen` builds the tracer's wrappers
//! and mpispec's function table from (the standard's `apis.json` plus
//! `overrides.toml`), so a parameter here is the parameter the tracer
//! recorded, in the same order.

use mpigram_wrapgen::model::{self, FuncModel};
use mpigram_wrapgen::{overrides::Overrides, standard};
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

const APIS_JSON: &str = include_str!("../../wrapgen/data/apis.json");
const OVERRIDES_TOML: &str = include_str!("../../wrapgen/overrides.toml");

/// The model of every function, by name (built once).
pub fn prototypes() -> Result<&'static FxHashMap<String, FuncModel>, String> {
    static MODEL: OnceLock<Result<FxHashMap<String, FuncModel>, String>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let o = Overrides::parse(OVERRIDES_TOML).map_err(|e| format!("{e:#}"))?;
            let functions = standard::load(APIS_JSON, &o.legacy).map_err(|e| format!("{e:#}"))?;
            let funcs = model::build(&functions, &o).map_err(|e| format!("{e:#}"))?;
            Ok(funcs.into_iter().map(|f| (f.name.clone(), f)).collect())
        })
        .as_ref()
        .map_err(|e| format!("the MPI function model does not build: {e}"))
}

/// The model of `name`.
pub fn prototype(name: &str) -> Option<&'static FuncModel> {
    prototypes().ok()?.get(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_mpispec::FUNCS;

    /// Every function of mpispec's table has a model with the same
    /// parameters: what the tracer recorded is what the C call takes.
    #[test]
    fn the_model_matches_the_function_table() {
        for f in FUNCS {
            let m = prototype(f.name).unwrap_or_else(|| panic!("{} has no model", f.name));
            let names: Vec<&str> = m.params.iter().map(|p| p.name.as_str()).collect();
            let table: Vec<&str> = f.params.iter().map(|p| p.name).collect();
            assert_eq!(names, table, "{}", f.name);
        }
        let send = prototype("MPI_Send").unwrap();
        assert_eq!(send.params[0].ctype.c_decl("buf"), "const void *buf");
    }
}
