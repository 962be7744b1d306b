//! The model of every function built from the data this crate ships
//! (`data/apis.json` and `overrides.toml`, compiled in): for tools that
//! need to know what each parameter of a recorded call is — which calls
//! create objects, which free them — without the files at run time.

use crate::model::{self, FuncModel};
use crate::{overrides::Overrides, standard};
use std::collections::HashMap;
use std::sync::OnceLock;

const APIS_JSON: &str = include_str!("../data/apis.json");
const OVERRIDES_TOML: &str = include_str!("../overrides.toml");

/// The model of every function, by name (built once).
pub fn prototypes() -> Result<&'static HashMap<String, FuncModel>, String> {
    static MODEL: OnceLock<Result<HashMap<String, FuncModel>, String>> = OnceLock::new();
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
