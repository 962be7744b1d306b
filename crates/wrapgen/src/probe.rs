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

/// Where `mpicc` finds MPICH.
pub struct Toolchain {
    pub include: PathBuf,
    pub libdir: PathBuf,
}

/// `mpicc`'s include and library directories; `None` if there is no mpicc.
pub fn toolchain() -> Result<Option<Toolchain>> {
    let Ok(out) = Command::new("mpicc").arg("-show").output() else {
        return Ok(None);
    };
    ensure!(out.status.success(), "mpicc -show failed");
    let show = String::from_utf8_lossy(&out.stdout).into_owned();
    let dir = |flag: &str| {
        show.split_whitespace()
            .find_map(|t| t.strip_prefix(flag))
            .map(PathBuf::from)
    };
    let include = dir("-I").unwrap_or_else(|| PathBuf::from("/usr/include"));
    let libdir = dir("-L").context("mpicc -show names no library directory (-L)")?;
    Ok(Some(Toolchain { include, libdir }))
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

/// Compiles `source` with mpicc (and `args`), returning the compiler's error text on failure.
pub fn mpicc(dir: &Path, name: &str, source: &str, args: &[&str]) -> Result<()> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source)?;
    let out = Command::new("mpicc")
        .args(args)
        .arg(&src)
        .current_dir(dir)
        .output()
        .context("running mpicc")?;
    if !out.status.success() {
        bail!(
            "mpicc {name}.c failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn compile_and_run(dir: &Path, name: &str, source: &str) -> Result<String> {
    mpicc(dir, name, source, &["-o", name])?;
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
    let text = format!(
        "{}\n{}",
        header("mpi.h")?,
        header("mpio.h").unwrap_or_default()
    );
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
    int_names.extend(mpich::enumerators(&text));
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
    for line in compile_and_run(&scratch.0, "types", &c)?.lines() {
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
    c.push_str("    printf(\"version %s\\n\", MPICH_VERSION);\n");
    for (t, s) in &shapes {
        if s.class == "int" || s.class == "enum" {
            let _ = writeln!(c, "    printf(\"signed {t} %d\\n\", ({t})-1 < ({t})0);");
        }
    }
    for h in &handles {
        let n = &h.name;
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
    for n in overrides.extern_pointers.keys() {
        let _ = writeln!(c, "    (void)&{n};");
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
        macros: mpich::function_macros(&text),
        fortran: crate::fortran::analyse(&tc.libdir.join("libmpichfort.so"))?,
    };
    for line in compile_and_run(&scratch.0, "values", &c)?.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["version", v] => m.version = (*v).to_owned(),
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
    Ok(m)
}

/// Handle constants: casts to a handle type (`((MPI_Comm)0x44000000)`),
/// aliases of those, the predefined keyvals, and every kind's null handle.
fn handle_constants(defines: &[mpich::Define], overrides: &Overrides) -> Vec<HandleConst> {
    let mut out: Vec<HandleConst> = Vec::new();
    for d in defines {
        if !(d.name.starts_with("MPI_") || d.name.starts_with("MPIX_")) {
            continue;
        }
        let cast = HANDLE_TYPES
            .iter()
            .find(|(t, _, _)| *t != "int" && d.body.contains(&format!("({t})")));
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
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
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

/// `MPI_X` for which libmpich (or its Fortran library, which defines the
/// C functions MPI_Status_c2f08 and MPI_Status_f082c) defines both `MPI_X`
/// and `PMPI_X`.
pub fn exports(libdir: &Path) -> Result<Vec<String>> {
    let mut all = BTreeSet::new();
    for lib in ["libmpich.so", "libmpichfort.so"] {
        let path = libdir.join(lib);
        if lib == "libmpich.so" || path.exists() {
            all.extend(library_exports(&path)?);
        }
    }
    Ok(all.into_iter().collect())
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
