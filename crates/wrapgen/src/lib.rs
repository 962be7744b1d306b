//! mpigram-wrapgen: generates the tracer's MPI wrappers, the function
//! table every mpigram tool reads, and the MPICH ABI the tracer needs, from
//! the MPI standard's machine-readable API (pympistandard's `apis.json`), a
//! small overrides file, and a probe of the installed MPICH. The output is
//! checked in; [`run`] with [`Mode::Check`] says whether regenerating would
//! change it. See the crate's README.

pub mod bundled;
pub mod checks;
pub mod constants;
pub mod ctype;
pub mod emit_abi;
pub mod emit_coverage;
pub mod emit_fronts;
pub mod emit_keys;
pub mod emit_pmpi;
pub mod emit_spec;
pub mod emit_wrappers;
pub mod fortran;
pub mod kinds;
pub mod lenexpr;
pub mod model;
pub mod mpich;
pub mod overrides;
pub mod probe;
pub mod standard;

use anyhow::{Context, Result, bail};
use emit_coverage::Coverage;
use model::FuncModel;
use mpich::Mpich;
use overrides::Overrides;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const APIS: &str = "crates/wrapgen/data/apis.json";
pub const OVERRIDES: &str = "crates/wrapgen/overrides.toml";
/// An MPI wrapgen probes (or reads the snapshot of): the first is MPICH
/// 4.0.2, whose functions and C types the wrappers are generated for.
pub struct MpiSource {
    /// The ABI family (`mpich`, `openmpi`, `standard`).
    pub family: &'static str,
    /// The compiler wrapper: a command, or a path under `$MPIGRAM_MPIS`
    /// (scripts/setup-mpis).
    pub compiler: &'static str,
    pub snapshot: &'static str,
}

pub const MPIS: [MpiSource; 3] = [
    MpiSource {
        family: "mpich",
        compiler: "mpicc.mpich",
        snapshot: "crates/wrapgen/data/mpich-probe.json",
    },
    MpiSource {
        family: "openmpi",
        compiler: "mpicc.openmpi",
        snapshot: "crates/wrapgen/data/openmpi-probe.json",
    },
    MpiSource {
        family: "standard",
        compiler: "$MPIGRAM_MPIS/mpich5/bin/mpicc_abi",
        snapshot: "crates/wrapgen/data/mpi-abi-probe.json",
    },
];

/// The compiler command of `mpi`, with `$MPIGRAM_MPIS` expanded.
fn compiler(mpi: &MpiSource) -> String {
    let mpis = std::env::var("MPIGRAM_MPIS").unwrap_or_else(|_| {
        format!(
            "{}/.cache/mpigram/mpis",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    mpi.compiler.replace("$MPIGRAM_MPIS", &mpis)
}

/// Probes `mpi` if its compiler is installed (and checks the probe and,
/// for MPICH, the wrappers' prototypes against its headers), else reads
/// its snapshot; CI, which has MPICH, must probe MPICH. Also says which.
fn probe_or_snapshot(
    root: &Path,
    mpi: &MpiSource,
    funcs: &[FuncModel],
    o: &Overrides,
    read: &dyn Fn(&str) -> Result<String>,
) -> Result<(Mpich, bool)> {
    let Some(tc) = probe::toolchain(&compiler(mpi))? else {
        if mpi.family == "mpich" && std::env::var("CI").is_ok_and(|v| v == "true") {
            bail!(
                "{} not found: CI must check the generated files against MPICH (install mpich)",
                mpi.compiler
            );
        }
        let _ = root;
        return Ok((Mpich::from_json(&read(mpi.snapshot)?)?, false));
    };
    let exports = probe::exports(&tc)?;
    let exported: Vec<&FuncModel> = funcs.iter().filter(|f| exports.contains(&f.name)).collect();
    let (types, fns) = c_types(&exported);
    let m = probe::probe(&tc, o, &types, &fns, exports.clone())?;
    if mpi.family == "mpich" {
        checks::prototypes(&tc, &exported)?;
    }
    checks::abi(&tc, &m)?;
    Ok((m, true))
}
pub const SPEC: &str = "crates/mpispec/src/generated.rs";
pub const ABI: &str = "crates/tracer/src/generated/abi.rs";
pub const FRONTS: &str = "crates/tracer/src/generated/fronts.rs";
pub const REGISTRY: &str = "crates/wrapgen/data/predefined.txt";
pub const CONSTANTS: &str = "crates/wrapgen/data/constants.txt";
pub const PMPI: &str = "crates/tracer/src/generated/pmpi.rs";
pub const WRAPPERS: &str = "crates/tracer/src/generated/wrappers.rs";
pub const COVERAGE: &str = "docs/coverage.md";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Write the generated files.
    Write,
    /// Only compare: report the files that would change.
    Check,
}

/// One generated file: path relative to the workspace root, and contents.
pub struct File {
    pub path: &'static str,
    pub contents: String,
}

/// What a generation did.
pub struct Outcome {
    /// Files whose contents differ from the generated ones (written, in
    /// [`Mode::Write`]).
    pub changed: Vec<&'static str>,
    /// Whether MPICH was probed (mpicc found) and the checks against it ran.
    pub probed: bool,
}

/// Generates every file and writes (or compares) them under `root`.
pub fn run(root: &Path, mode: Mode) -> Result<Outcome> {
    let (files, probed) = generate(root)?;
    let mut changed = Vec::new();
    for f in &files {
        let path = root.join(f.path);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(f.contents.as_str()) {
            changed.push(f.path);
            if mode == Mode::Write {
                std::fs::create_dir_all(path.parent().context("path")?)?;
                std::fs::write(&path, &f.contents)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(Outcome { changed, probed })
}

/// Generates every file in memory. Probes MPICH when `mpicc` is there (and
/// then runs the prototype and ABI checks); otherwise uses the checked-in
/// probe snapshot, which is an error under CI (`CI=true`): CI has MPICH.
pub fn generate(root: &Path) -> Result<(Vec<File>, bool)> {
    let read =
        |p: &str| std::fs::read_to_string(root.join(p)).with_context(|| format!("reading {p}"));
    let apis = read(APIS)?;
    let o = Overrides::parse(&read(OVERRIDES)?)?;
    let functions = standard::load(&apis, &o.legacy)?;
    let funcs = model::build(&functions, &o)?;
    o.check_all_used()?;
    for name in o.hand_written.iter().chain(o.not_wrapped.keys()) {
        if !funcs.iter().any(|f| &f.name == name) {
            bail!("overrides.toml names {name}, which is not a function of the table");
        }
    }
    let mut probes = Vec::new();
    for mpi in &MPIS {
        probes.push(probe_or_snapshot(root, mpi, &funcs, &o, &read)?);
    }
    let probed = probes.iter().all(|(_, p)| *p);
    let m = &probes[0].0;
    let mut registry =
        emit_fronts::parse_registry(&read(REGISTRY).unwrap_or_default(), "predefined.txt")?;
    let all: Vec<&Mpich> = probes.iter().map(|(m, _)| m).collect();
    emit_fronts::extend_registry(&mut registry, &all);
    let mut consts =
        emit_fronts::parse_registry(&read(CONSTANTS).unwrap_or_default(), "constants.txt")?;
    constants::extend_registry(&mut consts, &o, &all)?;
    let families: Vec<(&str, &Mpich)> = MPIS
        .iter()
        .map(|mpi| mpi.family)
        .zip(all.iter().copied())
        .collect();
    let header = format!(
        "@generated by mpigram-wrapgen from {APIS} (pympistandard 0.2.0: MPI 5.0), {OVERRIDES} and \
         the probes of {}. Do not edit: run `cargo run -p mpigram-wrapgen`.",
        probes
            .iter()
            .map(|(m, _)| m.version.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rs_header = format!("// {header}");
    // The real functions: those this MPICH exports and those the wrappers
    // call that only newer MPIs have.
    let exported: Vec<&FuncModel> = funcs
        .iter()
        .filter(|f| {
            m.exports(&f.name)
                || emit_coverage::coverage(f, m, &all[1..], &o) == Coverage::Generated
        })
        .collect();
    let wrapped: Vec<&FuncModel> = funcs
        .iter()
        .filter(|f| emit_coverage::coverage(f, m, &all[1..], &o) == Coverage::Generated)
        .collect();
    let pmpi_aliases: Vec<(&FuncModel, bool)> = funcs
        .iter()
        .filter(|f| all.iter().any(|p| p.fortran.pmpi_imports.contains(&f.name)))
        .filter_map(|f| match emit_coverage::coverage(f, m, &all[1..], &o) {
            Coverage::Generated => Some((f, false)),
            Coverage::HandWritten => Some((f, true)),
            _ => None,
        })
        .collect();
    let (callbacks, predefined_functions) = standard::not_procedures(&apis)?;
    let skipped = emit_coverage::NotInTable {
        callbacks: callbacks.len(),
        predefined_functions,
    };
    let mut files = vec![
        File {
            path: SPEC,
            contents: rustfmt(
                root,
                &emit_spec::emit(&funcs, &registry, &consts, &o, &rs_header)?,
            )?,
        },
        File {
            path: ABI,
            contents: rustfmt(root, &emit_abi::emit(m, &all[1..], &rs_header)?)?,
        },
        File {
            path: FRONTS,
            contents: rustfmt(
                root,
                &emit_fronts::emit(&families, &registry, &consts, &o, &rs_header)?,
            )?,
        },
        File {
            path: CONSTANTS,
            contents: constants::registry_text(&consts),
        },
        File {
            path: REGISTRY,
            contents: emit_fronts::registry_text(&registry),
        },
        File {
            path: PMPI,
            contents: rustfmt(root, &emit_pmpi::emit(&exported, m, &rs_header))?,
        },
        File {
            path: WRAPPERS,
            contents: rustfmt(
                root,
                &emit_wrappers::emit(&wrapped, &pmpi_aliases, &rs_header)?,
            )?,
        },
        File {
            path: COVERAGE,
            contents: emit_coverage::emit(&funcs, m, &all[1..], &o, &skipped, &header),
        },
    ];
    files.extend(MPIS.iter().zip(&probes).map(|(mpi, (m, _))| File {
        path: mpi.snapshot,
        contents: m.to_json(),
    }));
    Ok((files, probed))
}

/// The C types the probe must know: every base type of `funcs`' parameters
/// and returns, and which of them are function types.
fn c_types(funcs: &[&FuncModel]) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut types = BTreeSet::new();
    let mut fns = BTreeSet::new();
    for f in funcs {
        for p in &f.params {
            if p.ctype.function {
                fns.insert(p.ctype.base.clone());
            }
            types.insert(p.ctype.base.clone());
        }
        types.insert(f.ret.clone());
    }
    for builtin in ["int", "char", "void", "double"] {
        types.remove(builtin);
    }
    (types, fns)
}

/// Formats Rust source with the workspace's rustfmt settings.
fn rustfmt(root: &Path, source: &str) -> Result<String> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running rustfmt")?;
    let mut stdin = child.stdin.take().context("rustfmt stdin")?;
    let input = source.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output()?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("rustfmt writer panicked"))??;
    if !out.status.success() {
        bail!(
            "rustfmt failed on generated code:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// The workspace root: two levels above this crate.
pub fn default_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
