//! `overrides.toml`: what the standard's apis.json cannot say (see the
//! file itself and the README for the meaning of each table).

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    /// Wrappers the tracer writes by hand.
    pub hand_written: Vec<String>,
    /// Functions never wrapped, with the reason.
    pub not_wrapped: BTreeMap<String, String>,
    /// Predefined attribute keys (bare integers in mpi.h).
    pub predefined_keyvals: Vec<String>,
    /// Pointer-valued macros of mpi.h: name -> Rust pointee type.
    pub pointer_constants: BTreeMap<String, String>,
    /// Pointer-valued variables of libmpich: name -> Rust pointee type.
    pub extern_pointers: BTreeMap<String, String>,
    /// Per-parameter overrides, keyed `MPI_X.param`.
    pub param: BTreeMap<String, ParamOverride>,
    /// MPI-1 functions the standard dropped but MPICH still exports.
    pub legacy: Vec<LegacyFunction>,
    /// Sets of named integer constants, stored by name in traces: set name -> definition.
    pub constants: BTreeMap<String, ConstSetDef>,
    #[serde(skip)]
    used: RefCell<BTreeSet<String>>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct ParamOverride {
    /// Array length (or string capacity), a length expression.
    pub len: Option<String>,
    /// Recorded only if this condition holds (besides apis.json's root_only).
    pub when: Option<String>,
    /// The communicator a rank is a rank in, or "absolute".
    pub rank_in: Option<String>,
    /// The C parameter type MPICH declares, e.g. `char *[]`.
    pub ctype: Option<String>,
    /// An output handle that names an existing object (a query).
    #[serde(default)]
    pub lookup: bool,
    /// An inout handle the call keeps (default: the call frees it).
    #[serde(default)]
    pub keep: bool,
    /// A `void *` output that is a buffer, not a `void **` to read back.
    #[serde(default)]
    pub address_only: bool,
    /// An MPI_Aint that is a memory address (recorded like a buffer).
    #[serde(default)]
    pub location: bool,
    /// The set of named constants the integer takes (where its kind does not say).
    pub constants: Option<String>,
    /// An output array of coordinates in the communicator's Cartesian grid
    /// (recorded relative to the caller's own, `Enc::Coords`).
    #[serde(default)]
    pub coords: bool,
    /// An integer that is often the caller's rank in the call's one
    /// communicator (MPI_Comm_split's colour and key): that rank is
    /// recorded as such (`Enc::OwnRank`), so every rank passing its own
    /// rank makes the same call.
    #[serde(default)]
    pub own_rank: bool,
}

/// A set of named integer constants (`[constants.Order]`).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ConstSetDef {
    /// The apis.json kinds whose parameters take the set's constants.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Names of the set; a trailing `*` matches every probed name with that prefix.
    pub names: Vec<String>,
    /// Names the patterns match that are not of the set.
    #[serde(default)]
    pub except: Vec<String>,
    /// Constants ORed together (MPI_MODE_*): each must be one bit.
    #[serde(default)]
    pub flags: bool,
}

impl ConstSetDef {
    /// Whether `name` is of the set.
    pub fn matches(&self, name: &str) -> bool {
        !self.except.iter().any(|e| e == name)
            && self.names.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyFunction {
    pub name: String,
    pub params: Vec<LegacyParam>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyParam {
    pub name: String,
    pub kind: String,
    pub dir: String,
    pub len: Option<String>,
    #[serde(default)]
    pub constant: bool,
    pub func_type: Option<String>,
}

static EMPTY: ParamOverride = ParamOverride {
    len: None,
    when: None,
    rank_in: None,
    ctype: None,
    lookup: false,
    keep: false,
    address_only: false,
    location: false,
    constants: None,
    coords: false,
    own_rank: false,
};

impl Overrides {
    pub fn parse(text: &str) -> Result<Overrides> {
        toml::from_str(text).context("overrides.toml")
    }

    /// The override of `func`'s parameter `param`: an entry for `func`
    /// itself, else for its family (see [`family`]).
    pub fn param(&self, func: &str, param: &str) -> &ParamOverride {
        for name in [func.to_owned(), family(func)] {
            let key = format!("{name}.{param}");
            if let Some(o) = self.param.get(&key) {
                self.used.borrow_mut().insert(key);
                return o;
            }
        }
        &EMPTY
    }

    /// The set of named constants parameter `param` (of apis.json kind
    /// `kind`) of `func` takes, if any: the override, else its kind's set.
    pub fn constants(&self, func: &str, param: &str, kind: &str) -> Option<&str> {
        if let Some(set) = &self.param(func, param).constants {
            return Some(set);
        }
        self.constants
            .iter()
            .find(|(_, def)| def.kinds.iter().any(|k| k == kind))
            .map(|(name, _)| name.as_str())
    }

    /// Fails on `[param]` entries no function used: a typo, or a function
    /// that left the standard.
    pub fn check_all_used(&self) -> Result<()> {
        let used = self.used.borrow();
        let unused: Vec<&String> = self.param.keys().filter(|k| !used.contains(*k)).collect();
        if !unused.is_empty() {
            bail!("overrides.toml: [param] entries that match no parameter: {unused:?}");
        }
        Ok(())
    }
}

/// The function whose overrides `name` shares: `MPI_X_c`, `MPI_X_init`,
/// `MPI_IX` (and combinations) share those of `MPI_X`, because the
/// large-count, persistent and non-blocking variants of a function have
/// the same arrays.
pub fn family(name: &str) -> String {
    let mut base = name.strip_suffix("_c").unwrap_or(name);
    base = base.strip_suffix("_init").unwrap_or(base);
    let Some(rest) = base.strip_prefix("MPI_I") else {
        return base.to_owned();
    };
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() => {
            format!("MPI_{}{}", c.to_ascii_uppercase(), chars.as_str())
        }
        _ => base.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::family;

    #[test]
    fn variants_share_the_family_of_the_blocking_function() {
        assert_eq!(family("MPI_Ialltoallv_c"), "MPI_Alltoallv");
        assert_eq!(family("MPI_Alltoallv_init"), "MPI_Alltoallv");
        assert_eq!(family("MPI_Ineighbor_alltoallw"), "MPI_Neighbor_alltoallw");
        assert_eq!(family("MPI_Isend"), "MPI_Send");
        assert_eq!(family("MPI_Comm_idup"), "MPI_Comm_idup");
    }
}
