//! Asks the installed MPICH, at generation time: `mpicc` compiles and runs
//! a small C program that prints type shapes and constant values, `nm`
//! lists the exported functions, and [`crate::fortran`] reads the Fortran
//! library. Never used at build time.

use crate::mpich::{self, Field, HANDLE_TYPES, HandleConst, Mpich, Role, TypeShape};
use crate::overrides::Overrides;
use anyhow::{Context, Result, bail, ensure};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Types only ever passed by pointer: their size is all the ABI needs.
const STRUCT_TYPES: &[&str] = &["MPI_Status", "MPI_F08_status"];

/// An MPI's compiler wrapper and where it finds the MPI.
pub struct Toolchain {
    /// The compiler wrapper (`mpicc.mpich`, `mpicc.openmpi`, a path to `mpicc_abi`).
    pub compiler: String,
    pub include: PathBuf,
    pub libdir: PathBuf,
    /// The wrapper compiles for the MPI 5.0 standard ABI (`-DMPI_ABI`).
    pub standard_abi: bool,
}

/// `compiler`'s include and library directories; `None` if there is no
/// such compiler.
pub fn toolchain(compiler: &str) -> Result<Option<Toolchain>> {
    let Ok(out) = Command::new(compiler).arg("-show").output() else {
        return Ok(None);
    };
    ensure!(out.status.success(), "{compiler} -show failed");
    let show = String::from_utf8_lossy(&out.stdout).into_owned();
    let dir = |flag: &str| {
        show.split_whitespace()
            .find_map(|t| t.strip_prefix(flag))
            .map(PathBuf::from)
    };
    let include = dir("-I").unwrap_or_else(|| PathBuf::from("/usr/include"));
    let libdir =
        dir("-L").with_context(|| format!("{compiler} -show names no library directory (-L)"))?;
    Ok(Some(Toolchain {
        compiler: compiler.to_owned(),
        include,
        libdir,
        standard_abi: show.split_whitespace().any(|t| t == "-DMPI_ABI"),
    }))
}

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Result<Scratch> {
        let dir =
            std::env::temp_dir().join(format!("mpigram-wrapgen-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles `source` with `compiler` (and `args`), returning the compiler's error text on failure.
pub fn mpicc(compiler: &str, dir: &Path, name: &str, source: &str, args: &[&str]) -> Result<()> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source)?;
    let out = Command::new(compiler)
        .args(args)
        .arg(&src)
        .current_dir(dir)
        .output()
        .with_context(|| format!("running {compiler}"))?;
    if !out.status.success() {
        bail!(
            "{compiler} {name}.c failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn compile_and_run(tc: &Toolchain, dir: &Path, name: &str, source: &str) -> Result<String> {
    mpicc(&tc.compiler, dir, name, source, &["-o", name])?;
    let out = Command::new(dir.join(name))
        .output()
        .with_context(|| format!("running {name}"))?;
    ensure!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// Probes MPICH for the types `type_names` (plus the handle and scalar
/// types; `fns` are function types); `exports` as [`exports`] found them.
pub fn probe(
    tc: &Toolchain,
    overrides: &Overrides,
    type_names: &BTreeSet<String>,
    fns: &BTreeSet<String>,
    exports: Vec<String>,
) -> Result<Mpich> {
    let header = |f: &str| {
        std::fs::read_to_string(tc.include.join(f)).with_context(|| format!("reading {f}"))
    };
    // The standard ABI's mpi.h includes mpi_abi.h under -DMPI_ABI, and
    // holds the implementation's own ABI otherwise: read only mpi_abi.h.
    let text = if tc.standard_abi {
        header("mpi_abi.h")?
    } else {
        format!(
            "{}\n{}",
            header("mpi.h")?,
            header("mpio.h").unwrap_or_default()
        )
    };
    let defines = mpich::defines(&text);
    let bodies: BTreeMap<String, String> = defines
        .iter()
        .map(|d| (d.name.clone(), d.body.clone()))
        .collect();
    let handles = handle_constants(&defines, overrides);
    let handle_names: BTreeSet<&str> = handles.iter().map(|h| h.name.as_str()).collect();
    let mut int_names: BTreeSet<String> = defines
        .iter()
        .filter(|d| {
            d.name.starts_with("MPI_")
                && d.name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && !handle_names.contains(d.name.as_str())
                && mpich::is_int_expr(&d.body, &bodies, 0)
        })
        .map(|d| d.name.clone())
        .collect();
    int_names.extend(
        mpich::enumerators(&text)
            .into_iter()
            .filter(|n| !handle_names.contains(n.as_str())),
    );
    let fields = mpich::status_fields(&text);
    ensure!(
        !fields.is_empty(),
        "mpi.h: no `typedef struct MPI_Status {{ ... }}`"
    );

    let mut types: BTreeSet<String> = type_names.clone();
    types.extend(
        HANDLE_TYPES
            .iter()
            .map(|t| t.0.to_owned())
            .filter(|t| t != "int"),
    );
    types.extend(["MPI_Aint", "MPI_Offset", "MPI_Count", "MPI_Fint"].map(String::from));
    // Types of newer MPI versions an older MPI lacks (Open MPI 4.1 has no
    // MPI_Session): not probed.
    types.retain(|t| text.contains(t.as_str()));
    let scratch = Scratch::new("probe")?;

    // Stage 1: what each type is.
    let mut c = String::from("#include <mpi.h>\n#include <stdio.h>\nint main(void) {\n");
    for t in &types {
        if fns.contains(t) {
            let _ = writeln!(
                c,
                "    printf(\"{t} function 0 0\\n\"); (void)sizeof({t} *);"
            );
        } else if STRUCT_TYPES.contains(&t.as_str()) {
            let _ = writeln!(c, "    printf(\"{t} struct %zu 0\\n\", sizeof({t}));");
        } else {
            let _ = writeln!(
                c,
                "    printf(\"{t} %d %zu 0\\n\", __builtin_classify_type(({t})0), sizeof({t}));"
            );
        }
    }
    c.push_str("    return 0;\n}\n");
    let mut shapes = BTreeMap::new();
    for line in compile_and_run(tc, &scratch.0, "types", &c)?.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let class = match f[1] {
            "1" => "int",
            "3" => "enum",
            "5" => "pointer",
            "function" | "struct" => f[1],
            other => bail!("type {}: unexpected class {other}", f[0]),
        };
        shapes.insert(
            f[0].to_owned(),
            TypeShape {
                class: class.into(),
                size: f[2].parse()?,
                signed: false,
            },
        );
    }

    // Stage 2: signedness of integer types, constants, MPI_Status.
    let mut c = String::from(
        "#include <mpi.h>\n#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\nint main(void) {\n",
    );
    c.push_str("    { char v[MPI_MAX_LIBRARY_VERSION_STRING]; int n = 0; MPI_Get_library_version(v, &n);\n");
    c.push_str("      for (int i = 0; i < n; i++) if (v[i] == '\\n') { n = i; break; }\n");
    c.push_str("      printf(\"version %.*s\\n\", n, v); }\n");
    for (t, s) in &shapes {
        if s.class == "int" || s.class == "enum" {
            let _ = writeln!(c, "    printf(\"signed {t} %d\\n\", ({t})-1 < ({t})0);");
        }
    }
    let enumerators = mpich::enumerators(&text);
    for h in &handles {
        let n = &h.name;
        if enumerators.contains(n) {
            // An enumerator (Open MPI's and the standard ABI's keyvals): no #ifdef.
            let _ = writeln!(c, "    printf(\"handle {n} %lld\\n\", (long long)({n}));");
            continue;
        }
        let _ = writeln!(
            c,
            "#ifdef {n}\n    printf(\"handle {n} %lld\\n\", (long long)(intptr_t)({n}));\n#else\n    printf(\"absent {n}\\n\");\n#endif"
        );
    }
    for n in &int_names {
        let _ = writeln!(c, "    printf(\"int {n} %lld\\n\", (long long)({n}));");
    }
    for n in overrides.pointer_constants.keys() {
        let _ = writeln!(
            c,
            "    printf(\"pointer {n} %lld\\n\", (long long)(intptr_t)({n}));"
        );
    }
    let variables: Vec<String> = overrides
        .extern_pointers
        .keys()
        .filter(|n| !bodies.contains_key(n.as_str()))
        .cloned()
        .collect();
    for n in overrides
        .extern_pointers
        .keys()
        .filter(|n| text.contains(n.as_str()))
    {
        if variables.contains(n) {
            let _ = writeln!(c, "    (void)&{n};");
        } else {
            let _ = writeln!(
                c,
                "    printf(\"pointer {n} %lld\\n\", (long long)(intptr_t)({n}));"
            );
        }
    }
    let _ = writeln!(c, "    printf(\"status_size %zu\\n\", sizeof(MPI_Status));");
    for f in &fields {
        let _ = writeln!(
            c,
            "    printf(\"field {f} %zu %zu\\n\", offsetof(MPI_Status, {f}), sizeof(((MPI_Status *)0)->{f}));"
        );
    }
    c.push_str("    return 0;\n}\n");
    let mut m = Mpich {
        version: String::new(),
        exports,
        types: shapes,
        status_size: 0,
        status_fields: Vec::new(),
        handles,
        ints: BTreeMap::new(),
        pointers: BTreeMap::new(),
        variables,
        macros: mpich::function_macros(&text),
        fortran: crate::fortran::analyse_all(&tc.libdir, fortran_libraries(tc))?,
    };
    for line in compile_and_run(tc, &scratch.0, "values", &c)?.lines() {
        if let Some(v) = line.strip_prefix("version ") {
            m.version = v.split_whitespace().collect::<Vec<_>>().join(" ");
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["signed", t, s] => m.types.get_mut(*t).context("type")?.signed = *s == "1",
            ["handle", n, v] => {
                m.handles
                    .iter_mut()
                    .find(|h| h.name == *n)
                    .context("handle")?
                    .value = Some(v.parse()?)
            }
            ["absent", _] => {}
            ["int", n, v] => {
                m.ints.insert((*n).to_owned(), v.parse()?);
            }
            ["pointer", n, v] => {
                m.pointers.insert((*n).to_owned(), v.parse()?);
            }
            ["status_size", v] => m.status_size = v.parse()?,
            ["field", n, o, s] => m.status_fields.push(Field {
                name: (*n).into(),
                offset: o.parse()?,
                size: s.parse()?,
            }),
            _ => bail!("unexpected probe output {line:?}"),
        }
    }
    m.status_fields.sort_by_key(|f| f.offset);
    classify_unsupported(&mut m.handles);
    classify_aliases(&mut m.handles);
    for h in m.handles.iter_mut().filter(|h| h.symbol.is_some()) {
        h.value = None; // an address of this run: not part of the ABI
    }
    Ok(m)
}

/// The Fortran libraries of the MPI `tc` builds with: MPICH's one, or Open
/// MPI's three (Debian keeps both MPIs' in the same directory).
fn fortran_libraries(tc: &Toolchain) -> &'static [&'static str] {
    if tc.standard_abi || tc.libdir.join("libmpich.so").exists() {
        &["libmpichfort.so"]
    } else {
        &[
            "libmpi_mpifh.so",
            "libmpi_usempi_ignore_tkr.so",
            "libmpi_usempif08.so",
        ]
    }
}

/// Handle constants: casts to a handle type (`((MPI_Comm)0x44000000)`),
/// addresses of library variables (Open MPI's
/// `OMPI_PREDEFINED_GLOBAL(MPI_Comm, ompi_mpi_comm_world)`), aliases of
/// those, the predefined keyvals, and every kind's null handle.
fn handle_constants(defines: &[mpich::Define], overrides: &Overrides) -> Vec<HandleConst> {
    let mut out: Vec<HandleConst> = Vec::new();
    for d in defines {
        if !(d.name.starts_with("MPI_") || d.name.starts_with("MPIX_")) {
            continue;
        }
        let global = d
            .body
            .strip_prefix("OMPI_PREDEFINED_GLOBAL(")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|args| args.split_once(','))
            .map(|(t, sym)| (t.trim().to_owned(), sym.trim().to_owned()));
        let cast = HANDLE_TYPES.iter().find(|(t, _, _)| {
            *t != "int"
                && (d.body.contains(&format!("({t})"))
                    || global.as_ref().is_some_and(|(gt, _)| gt == t))
        });
        if let Some((t, kind, null)) = cast {
            let role = if d.name == *null {
                Role::Null
            } else {
                Role::Predefined
            };
            out.push(HandleConst {
                name: d.name.clone(),
                c_type: (*t).into(),
                kind: kind.map(String::from),
                role,
                value: None,
                symbol: global.map(|(_, sym)| sym),
            });
        }
    }
    for d in defines {
        let target = d.body.trim_matches(|c| c == '(' || c == ')' || c == ' ');
        if let Some(t) = out
            .iter()
            .find(|h| h.name == target && h.role == Role::Predefined)
            .cloned()
        {
            out.push(HandleConst {
                name: d.name.clone(),
                role: Role::Alias,
                ..t
            });
        }
    }
    for k in &overrides.predefined_keyvals {
        out.push(HandleConst {
            name: k.clone(),
            c_type: "int".into(),
            kind: Some("Keyval".into()),
            role: Role::Predefined,
            value: None,
            symbol: None,
        });
    }
    for (t, kind, null) in HANDLE_TYPES {
        if !out.iter().any(|h| h.name == *null) {
            out.push(HandleConst {
                name: (*null).into(),
                c_type: (*t).into(),
                kind: kind.map(String::from),
                role: Role::Null,
                value: None,
                symbol: None,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Predefined handles of one kind that are the same object (one value,
/// or one library variable) under two names: the longest name stays
/// predefined (MPI_LONG_LONG_INT, MPI_C_FLOAT_COMPLEX, as MPICH has them),
/// the others become aliases.
fn classify_aliases(handles: &mut [HandleConst]) {
    let key = |h: &HandleConst| {
        (
            h.kind.clone(),
            h.symbol.clone(),
            if h.symbol.is_some() { None } else { h.value },
        )
    };
    let predefined: Vec<usize> = (0..handles.len())
        .filter(|&i| {
            handles[i].role == Role::Predefined
                && (handles[i].value.is_some() || handles[i].symbol.is_some())
        })
        .collect();
    for &i in &predefined {
        let longest = predefined
            .iter()
            .filter(|&&j| key(&handles[j]) == key(&handles[i]))
            .max_by_key(|&&j| (handles[j].name.len(), handles[j].name.clone()))
            .copied();
        if longest != Some(i) {
            handles[i].role = Role::Alias;
        }
    }
}

/// Predefined handles whose value is their kind's null handle are names
/// this MPI does not support (MPICH: MPI_INTEGER16).
fn classify_unsupported(handles: &mut [HandleConst]) {
    let nulls: Vec<(Option<String>, Option<i64>)> = handles
        .iter()
        .filter(|h| h.role == Role::Null)
        .map(|h| (h.kind.clone(), h.value))
        .collect();
    for h in handles.iter_mut().filter(|h| h.role == Role::Predefined) {
        if nulls
            .iter()
            .any(|(k, v)| *k == h.kind && v.is_some() && *v == h.value)
        {
            h.role = Role::Unsupported;
        }
    }
}

/// `MPI_X` for which the MPI's C library (or MPICH's Fortran library, which
/// defines the C functions MPI_Status_c2f08 and MPI_Status_f082c) defines
/// both `MPI_X` and `PMPI_X`.
pub fn exports(tc: &Toolchain) -> Result<Vec<String>> {
    let main = if tc.standard_abi {
        "libmpi_abi.so"
    } else if tc.libdir.join("libmpich.so").exists() {
        "libmpich.so"
    } else {
        "libmpi.so"
    };
    let mut all = BTreeSet::new();
    for lib in [main, "libmpichfort.so"] {
        let path = linked_library(&tc.libdir.join(lib));
        if lib == main || path.exists() {
            all.extend(library_exports(&path)?);
        }
    }
    Ok(all.into_iter().collect())
}

/// The library a `.so` name stands for: itself, or the file a linker
/// script names (the wheels' `libmpi_abi.so` is `INPUT(libmpi_abi.so.1)`).
fn linked_library(path: &Path) -> PathBuf {
    let script = std::fs::read(path)
        .ok()
        .filter(|b| b.starts_with(b"INPUT("));
    let target = script.and_then(|b| {
        let text = String::from_utf8(b).ok()?;
        let name = text
            .trim()
            .strip_prefix("INPUT(")?
            .strip_suffix(')')?
            .trim()
            .to_owned();
        Some(path.with_file_name(name))
    });
    target.unwrap_or_else(|| path.to_owned())
}

fn library_exports(lib: &Path) -> Result<Vec<String>> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .context("running nm")?;
    ensure!(out.status.success(), "nm -D {} failed", lib.display());
    let text = String::from_utf8(out.stdout)?;
    let functions: BTreeSet<&str> = text
        .lines()
        .filter_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                [_, "T" | "W" | "i", name] => Some(*name),
                _ => None,
            },
        )
        .collect();
    Ok(functions
        .iter()
        // C names are mixed case (MPI_SEND is a Fortran binding).
        .filter(|n| n.starts_with("MPI_") && n.chars().any(|c| c.is_ascii_lowercase()))
        .filter(|n| functions.contains(format!("P{n}").as_str()))
        .map(|n| (*n).to_owned())
        .collect())
}
