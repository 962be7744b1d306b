//! The C binding of every MPI function: each parameter's C type and what
//! the call does with it (reads a value, reads through a pointer, writes
//! a result). It is the model `crates/wrapgen` builds the tracer's wrappers
//! and mpispec's function table from (the standard's `apis.json` plus
//! `overrides.toml`), so a parameter here is the parameter the tracer
//! recorded, in the same order.

pub use mpigram_wrapgen::bundled::{prototype, prototypes};

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
