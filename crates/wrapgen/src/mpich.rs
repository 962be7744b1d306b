//! What wrapgen knows of the local MPI (MPICH): exported functions, type
//! shapes, constant values, predefined handles, the Fortran layer. Gathered
//! at generation time ([`crate::probe`]) and kept in
//! `data/mpich-probe.json`, so regenerating without MPICH installed gives
//! the same files (and CI, which has MPICH, checks the snapshot is current).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, PartialEq, Eq, Debug, Clone)]
pub struct Mpich {
    /// MPICH_VERSION.
    pub version: String,
    /// `MPI_X` names for which libmpich defines both `MPI_X` and `PMPI_X`.
    pub exports: Vec<String>,
    /// Shape of each C type the wrappers use, by name.
    pub types: BTreeMap<String, TypeShape>,
    /// MPI_Status: size and fields in memory order.
    pub status_size: u64,
    pub status_fields: Vec<Field>,
    /// Handle constants of mpi.h/mpio.h (predefined, null, aliases).
    pub handles: Vec<HandleConst>,
    /// Integer constants (`#define MPI_X <integer>` and `MPI_*` enumerators).
    pub ints: BTreeMap<String, i64>,
    /// Pointer-valued macros (MPI_IN_PLACE, MPI_STATUS_IGNORE, ...): value.
    pub pointers: BTreeMap<String, i64>,
    /// Pointer constants that are variables of the library in this MPI
    /// (MPICH's MPI_UNWEIGHTED): their value is read at run time.
    #[serde(default)]
    pub variables: Vec<String>,
    /// Function-like `MPI_*` macros of mpi.h (MPI_Comm_c2f, ...): no symbol.
    pub macros: Vec<String>,
    /// How MPICH's Fortran library reaches the C layer.
    pub fortran: crate::fortran::FortranLayer,
}

#[derive(Serialize, Deserialize, PartialEq, Eq, Debug, Clone)]
pub struct TypeShape {
    /// `int`, `enum`, `pointer`, `struct` or `function`.
    pub class: String,
    pub size: u64,
    pub signed: bool,
}

#[derive(Serialize, Deserialize, PartialEq, Eq, Debug, Clone)]
pub struct Field {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

#[derive(Serialize, Deserialize, PartialEq, Eq, Debug, Clone)]
pub struct HandleConst {
    pub name: String,
    /// C type of the handle (`MPI_Comm`, ...).
    pub c_type: String,
    /// mpispec `HandleKind` variant; `None` for MPI_Request.
    pub kind: Option<String>,
    pub role: Role,
    /// Absent from this MPI's headers (some MPI_T null handles), or only
    /// known at run time (`symbol`).
    pub value: Option<i64>,
    /// The library variable whose address the handle is (Open MPI:
    /// `MPI_COMM_WORLD` is `&ompi_mpi_comm_world`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

#[derive(Serialize, Deserialize, PartialEq, Eq, Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A predefined object (MPI_COMM_WORLD, MPI_INT, MPI_SUM, MPI_TAG_UB).
    Predefined,
    /// The kind's null handle.
    Null,
    /// Another name of a predefined handle (MPI_LONG_LONG = MPI_LONG_LONG_INT).
    Alias,
    /// Defined as the null handle: not supported by this MPI (MPI_INTEGER16).
    Unsupported,
}

/// mpi.h's handle types, the `HandleKind` of each, and the kind's null handle.
pub const HANDLE_TYPES: &[(&str, Option<&str>, &str)] = &[
    ("MPI_Comm", Some("Comm"), "MPI_COMM_NULL"),
    ("MPI_Group", Some("Group"), "MPI_GROUP_NULL"),
    ("MPI_Datatype", Some("Datatype"), "MPI_DATATYPE_NULL"),
    ("MPI_Op", Some("Op"), "MPI_OP_NULL"),
    ("MPI_Info", Some("Info"), "MPI_INFO_NULL"),
    ("MPI_Errhandler", Some("Errhandler"), "MPI_ERRHANDLER_NULL"),
    ("MPI_Win", Some("Win"), "MPI_WIN_NULL"),
    ("MPI_File", Some("File"), "MPI_FILE_NULL"),
    ("MPI_Message", Some("Message"), "MPI_MESSAGE_NULL"),
    ("MPI_Session", Some("Session"), "MPI_SESSION_NULL"),
    ("int", Some("Keyval"), "MPI_KEYVAL_INVALID"),
    (
        "MPI_T_cvar_handle",
        Some("CvarHandle"),
        "MPI_T_CVAR_HANDLE_NULL",
    ),
    (
        "MPI_T_pvar_handle",
        Some("PvarHandle"),
        "MPI_T_PVAR_HANDLE_NULL",
    ),
    (
        "MPI_T_pvar_session",
        Some("PvarSession"),
        "MPI_T_PVAR_SESSION_NULL",
    ),
    ("MPI_T_enum", Some("TEnum"), "MPI_T_ENUM_NULL"),
    (
        "MPI_T_event_registration",
        Some("EventRegistration"),
        "MPI_T_EVENT_REGISTRATION_NULL",
    ),
    (
        "MPI_T_event_instance",
        Some("EventInstance"),
        "MPI_T_EVENT_INSTANCE_NULL",
    ),
    ("MPI_Request", None, "MPI_REQUEST_NULL"),
];

impl Mpich {
    pub fn from_json(text: &str) -> Result<Mpich> {
        serde_json::from_str(text).context("data/mpich-probe.json")
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("serializable");
        s.push('\n');
        s
    }

    pub fn exports(&self, name: &str) -> bool {
        self.exports
            .binary_search_by(|e| e.as_str().cmp(name))
            .is_ok()
    }

    /// Predefined handles of `kind`, sorted by name: index = fixed id.
    pub fn predefined(&self, kind: &str) -> Vec<&HandleConst> {
        let mut v: Vec<&HandleConst> = self
            .handles
            .iter()
            .filter(|h| h.role == Role::Predefined && h.kind.as_deref() == Some(kind))
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

/// An object-like `#define` of a header.
#[derive(Debug, Clone)]
pub struct Define {
    pub name: String,
    pub body: String,
}

/// The object-like macros of a header (function-like ones are skipped).
pub fn defines(header: &str) -> Vec<Define> {
    let mut out = Vec::new();
    let mut lines = header.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim_start().strip_prefix("#define") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        let rest = rest.trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[name.len()..];
        if name.is_empty() || after.starts_with('(') {
            continue;
        }
        let mut body = after.split("/*").next().unwrap_or("").trim().to_owned();
        while body.ends_with('\\') {
            body.pop();
            body.push(' ');
            body.push_str(lines.next().unwrap_or("").trim());
        }
        out.push(Define {
            name,
            body: body.trim().to_owned(),
        });
    }
    out
}

/// Names of the function-like `MPI_*` macros of a header.
pub fn function_macros(header: &str) -> Vec<String> {
    let mut out: Vec<String> = header
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("#define"))
        .map(str::trim_start)
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (name.starts_with("MPI_") && rest[name.len()..].starts_with('(')).then_some(name)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `MPI_*` enumerators of the header's `enum { ... }` blocks.
pub fn enumerators(header: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = header;
    while let Some(at) = rest.find("enum ") {
        rest = &rest[at + 5..];
        let (Some(open), Some(close)) = (rest.find('{'), rest.find('}')) else {
            break;
        };
        if open > close || rest[..open].contains(';') {
            continue;
        }
        for item in unconditional(&without_comments(&rest[open + 1..close])).split(',') {
            let name = item.split('=').next().unwrap_or("").trim();
            if name.starts_with("MPI_")
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                out.push(name.to_owned());
            }
        }
        rest = &rest[close..];
    }
    out
}

/// The lines of `text` outside `#if` blocks, joined by spaces: Open MPI
/// keeps removed enumerators (MPI_COMBINER_HVECTOR_INTEGER) under `#if`,
/// with a placeholder in the `#else`, before the ones that always count.
fn unconditional(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        match line.strip_prefix('#').map(str::trim_start) {
            Some(d) if d.starts_with("if") => depth += 1,
            Some(d) if d.starts_with("endif") => depth = depth.saturating_sub(1),
            Some(_) => {}
            None if depth == 0 => out.push(line),
            None => {}
        }
    }
    out.join(" ")
}

/// `text` without its `/* ... */` comments.
fn without_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("/*") {
        out.push_str(&rest[..at]);
        rest = rest[at..]
            .find("*/")
            .map_or("", |end| &rest[at + end + 2..]);
    }
    out.push_str(rest);
    out
}

/// The field names of the struct `MPI_Status` names (`typedef struct
/// MPI_Status { ... } MPI_Status;`, `typedef struct { ... } MPI_Status;`,
/// or `typedef struct tag MPI_Status;` and `struct tag { ... };`); an array
/// field by its name (`MPI_internal`).
pub fn status_fields(header: &str) -> Vec<String> {
    let body = if let Some(end) = header.find("} MPI_Status;") {
        let open = header[..end].rfind('{');
        open.map(|open| &header[open + 1..end])
    } else {
        let tag = header
            .lines()
            .filter_map(|l| l.trim().strip_prefix("typedef struct "))
            .find_map(|rest| rest.strip_suffix(" MPI_Status;"))
            .map(str::trim);
        tag.and_then(|tag| {
            let at = header.find(&format!("struct {tag} {{"))?;
            let body = &header[at..];
            let (open, close) = (body.find('{')?, body.find('}')?);
            Some(&body[open + 1..close])
        })
    };
    let Some(body) = body else {
        return Vec::new();
    };
    body.lines()
        .map(|l| l.split("/*").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .split(';')
        .filter_map(|decl| decl.split_whitespace().last())
        .map(|name| name.split('[').next().unwrap_or(name).to_owned())
        .collect()
}

/// Whether a macro body is an integer constant expression over numbers
/// and other such macros (`(-32766)`, `0x3fffffff`, `MPICH_ERR_FIRST_MPIX+1`).
pub fn is_int_expr(body: &str, defines: &BTreeMap<String, String>, depth: u32) -> bool {
    if body.is_empty() || depth > 8 {
        return false;
    }
    let mut chars = body.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                chars.next();
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut name = String::new();
            while let Some(&d) = chars
                .peek()
                .filter(|d| d.is_ascii_alphanumeric() || **d == '_')
            {
                name.push(d);
                chars.next();
            }
            let ok = name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && defines
                    .get(&name)
                    .is_some_and(|b| is_int_expr(b, defines, depth + 1));
            if !ok {
                return false;
            }
        } else if "()+- ".contains(c) {
            chars.next();
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)\n\
        #define MPI_Comm_c2f(comm) (MPI_Fint)(comm)\n\
        #define MPI_UNDEFINED      (-32766)\n\
        #define MPICH_ERR_FIRST_MPIX 100 /* gap */\n\
        #define MPIX_ERR_NOREQ MPICH_ERR_FIRST_MPIX+5\n\
        typedef enum MPIR_Topo_type { MPI_GRAPH=1, MPI_CART=2, MPI_DIST_GRAPH=3 } MPIR_Topo_type;\n\
        typedef struct MPI_Status {\n    int count_lo;\n    int MPI_SOURCE;\n} MPI_Status;\n";

    #[test]
    fn header_parsing_finds_object_macros_enumerators_and_status_fields() {
        let d = defines(HEADER);
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "MPI_COMM_WORLD",
                "MPI_UNDEFINED",
                "MPICH_ERR_FIRST_MPIX",
                "MPIX_ERR_NOREQ"
            ]
        );
        assert_eq!(d[2].body, "100");
        assert_eq!(
            enumerators(HEADER),
            ["MPI_GRAPH", "MPI_CART", "MPI_DIST_GRAPH"]
        );
        let ompi = "enum {\n  MPI_COMBINER_VECTOR,\n#if (COMPAT)\n  MPI_COMBINER_HVECTOR_INTEGER,\n#else\n  OMPI_WAS_HVECTOR_INTEGER, /* ABI */\n#endif\n  MPI_COMBINER_HVECTOR\n};";
        assert_eq!(
            enumerators(ompi),
            ["MPI_COMBINER_VECTOR", "MPI_COMBINER_HVECTOR"]
        );
        assert_eq!(status_fields(HEADER), ["count_lo", "MPI_SOURCE"]);
        let ompi = "typedef struct ompi_status_public_t MPI_Status;\nstruct ompi_status_public_t {\n    int MPI_SOURCE; /* x */\n    size_t _ucount;\n};";
        assert_eq!(status_fields(ompi), ["MPI_SOURCE", "_ucount"]);
        let abi = "typedef struct {\n    int MPI_SOURCE;\n    int MPI_internal[5];\n} MPI_Status;";
        assert_eq!(status_fields(abi), ["MPI_SOURCE", "MPI_internal"]);
        let map: BTreeMap<String, String> = d.into_iter().map(|d| (d.name, d.body)).collect();
        assert!(is_int_expr("(-32766)", &map, 0));
        assert!(is_int_expr("MPICH_ERR_FIRST_MPIX+5", &map, 0));
        assert!(!is_int_expr("((MPI_Comm)0x44000000)", &map, 0));
        assert!(!is_int_expr("(void *) -1", &map, 0));
    }
}
