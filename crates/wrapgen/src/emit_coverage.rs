//! `docs/coverage.md`: every function of the table, wrapped or not and why.

use crate::model::FuncModel;
use crate::mpich::Mpich;
use crate::overrides::Overrides;
use std::fmt::Write as _;

/// Why a function has (or has no) wrapper.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Coverage {
    Generated,
    HandWritten,
    /// Not wrapped by design (overrides' `not_wrapped`).
    ByDesign,
    /// A macro in mpi.h: there is no symbol to interpose.
    Macro,
    /// MPICH does not export it.
    NotExported,
}

pub fn coverage(f: &FuncModel, m: &Mpich, others: &[&Mpich], o: &Overrides) -> Coverage {
    if o.not_wrapped.contains_key(&f.name) {
        Coverage::ByDesign
    } else if !m.exports(&f.name)
        && !m.macros.contains(&f.name)
        && !o.hand_written.contains(&f.name)
        && others.iter().any(|x| x.exports(&f.name))
    {
        // Newer than this MPICH (MPICH 5's): wrapped all the same, the
        // real function resolved when it is first called.
        Coverage::Generated
    } else if !m.exports(&f.name) {
        if m.macros.contains(&f.name) {
            Coverage::Macro
        } else {
            Coverage::NotExported
        }
    } else if o.hand_written.contains(&f.name) {
        Coverage::HandWritten
    } else {
        Coverage::Generated
    }
}

pub struct NotInTable {
    pub callbacks: usize,
    pub predefined_functions: Vec<String>,
}

pub fn emit(
    funcs: &[FuncModel],
    m: &Mpich,
    others: &[&Mpich],
    o: &Overrides,
    skipped: &NotInTable,
    header: &str,
) -> String {
    let cov: Vec<Coverage> = funcs.iter().map(|f| coverage(f, m, others, o)).collect();
    let count = |c: Coverage| cov.iter().filter(|x| **x == c).count();
    let legacy = funcs.iter().filter(|f| f.legacy).count();
    let large = funcs
        .iter()
        .filter(|f| !f.legacy && f.name.ends_with("_c"))
        .count();
    let standard = funcs.len() - legacy;
    let exported = funcs.iter().filter(|f| m.exports(&f.name)).count();
    let v = &m.version;
    let mut s = String::new();
    let _ = writeln!(s, "<!-- {header} -->\n");
    s.push_str("# MPI function coverage\n\n");
    let _ = writeln!(
        s,
        "The function table (`mpigram_mpispec::FUNCS`) lists every C function of the MPI standard \
         (MPI 5.0, from pympistandard 0.2.0's `apis.json`) and the ten MPI-1 functions that MPI 3.0 \
         removed but MPICH still exports. The tracer wraps those that this platform's MPICH {v} \
         exports (both `MPI_X` and `PMPI_X` in `libmpich`, or in `libmpichfort` for the two C \
         functions it defines, MPI_Status_c2f08 and MPI_Status_f082c), and those that only newer \
         MPIs probed here export (MPICH 5's), whose real functions are looked up when first \
         called; the prototypes of those are not checked against a header (the checks run \
         against MPICH {v}'s `mpi.h`).\n"
    );
    s.push_str("| | functions |\n|---|---:|\n");
    let _ = writeln!(s, "| in the table | {} |", funcs.len());
    let _ = writeln!(
        s,
        "| of the standard (of which large-count `_c` variants) | {standard} ({large}) |"
    );
    let _ = writeln!(s, "| legacy MPI-1 (removed in MPI 3.0) | {legacy} |");
    let _ = writeln!(s, "| exported by MPICH {v} | {exported} |");
    let _ = writeln!(s, "| wrapped: generated | {} |", count(Coverage::Generated));
    let _ = writeln!(
        s,
        "| wrapped: hand-written (`crates/tracer/src/special.rs`) | {} |",
        count(Coverage::HandWritten)
    );
    let _ = writeln!(
        s,
        "| not wrapped, by design | {} |",
        count(Coverage::ByDesign)
    );
    let _ = writeln!(
        s,
        "| not wrapped, a macro in MPICH's mpi.h (no symbol) | {} |",
        count(Coverage::Macro)
    );
    let _ = writeln!(
        s,
        "| not wrapped, not in MPICH {v} | {} |",
        count(Coverage::NotExported)
    );
    let _ = writeln!(
        s,
        "\nNot in the table at all: the {} callback prototypes of the standard \
         (`MPI_User_function`, ...) and its {} predefined callback functions ({}): \
         the application passes them to MPI, it does not call them as library functions.\n",
        skipped.callbacks,
        skipped.predefined_functions.len(),
        skipped.predefined_functions.join(", ")
    );
    per_mpi(&mut s, funcs, m, others, &cov);
    fortran(&mut s, m);
    for other in others.iter().filter(|o| !o.fortran.library.is_empty()) {
        fortran_of_other(&mut s, other, m);
    }
    s.push_str("\n## Every function\n\n| function | wrapper | note |\n|---|---|---|\n");
    for (f, c) in funcs.iter().zip(&cov) {
        let (status, note) = match c {
            Coverage::Generated => ("generated", String::new()),
            Coverage::HandWritten => ("hand-written", String::new()),
            Coverage::ByDesign => ("—", o.not_wrapped.get(&f.name).cloned().unwrap_or_default()),
            Coverage::Macro => ("—", "a macro in MPICH's mpi.h".into()),
            Coverage::NotExported => ("—", format!("not in MPICH {v}")),
        };
        let note = match (f.legacy, note.is_empty()) {
            (true, true) => "legacy MPI-1 (removed in MPI 3.0)".to_owned(),
            (true, false) => format!("legacy MPI-1 (removed in MPI 3.0); {note}"),
            (false, _) => note,
        };
        let _ = writeln!(s, "| `{}` | {status} | {} |", f.name, note.trim());
    }
    s
}

/// Per probed MPI: the functions it exports, and how many of them are
/// wrapped (the wrappers are MPICH's set; an MPI's functions that MPICH
/// lacks are listed).
fn per_mpi(s: &mut String, funcs: &[FuncModel], m: &Mpich, others: &[&Mpich], cov: &[Coverage]) {
    s.push_str("## Per MPI\n\nEvery MPI is traced through the same wrappers (their handles are machine words, \
        read through the ABI front end bound at the first call, `crates/tracer/src/front.rs`): a function \
        is traced under an MPI when that MPI exports it and the wrappers have it.\n\n\
        | MPI (ABI) | exports (standard functions) | wrapped | exported, not wrapped |\n|---|---:|---:|---|\n");
    for (abi, mpi) in std::iter::once(("MPICH", m)).chain(others.iter().map(|o| (abi_of(o), *o))) {
        let exported: Vec<(usize, &FuncModel)> = funcs
            .iter()
            .enumerate()
            .filter(|(_, f)| mpi.exports(&f.name))
            .collect();
        let wrapped = exported
            .iter()
            .filter(|(i, _)| matches!(cov[*i], Coverage::Generated | Coverage::HandWritten))
            .count();
        let missing: Vec<&str> = exported
            .iter()
            .filter(|(i, _)| !matches!(cov[*i], Coverage::Generated | Coverage::HandWritten))
            .map(|(_, f)| f.name.as_str())
            .collect();
        let missing = if missing.is_empty() {
            "—".to_owned()
        } else {
            missing.join(", ")
        };
        let _ = writeln!(
            s,
            "| {} ({abi}) | {} | {wrapped} | {missing} |",
            short(&mpi.version),
            exported.len()
        );
    }
    s.push('\n');
}

/// `MPICH 4.0.2`, `Open MPI v4.1.4` from a library version string.
fn short(version: &str) -> String {
    let first = version.split(',').next().unwrap_or(version);
    first
        .replace("MPICH Version:", "MPICH")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn abi_of(m: &Mpich) -> &'static str {
    if m.handles.iter().any(|h| h.symbol.is_some()) {
        "Open MPI"
    } else if m
        .types
        .get("MPI_Comm")
        .is_some_and(|t| t.class == "pointer")
    {
        "MPI 5.0 standard"
    } else {
        "MPICH"
    }
}

/// The Fortran layer of another MPI than the platform's MPICH (Open MPI's
/// bindings call `PMPI_*` throughout).
fn fortran_of_other(s: &mut String, other: &Mpich, m: &Mpich) {
    let f = &other.fortran;
    let _ = writeln!(
        s,
        "\n{}'s Fortran libraries (`{}`): {} entry points, {} of them calling the C `MPI_*` \
         functions, {} `PMPI_*` (the others call into `libmpi_mpifh`, or are no MPI calls). They import {} `PMPI_*` functions; the tracer exports \
         the {} of them it wraps, so calls through these bindings are traced too.",
        other.version,
        f.library,
        f.entry_points,
        f.through_c,
        f.bypass.len(),
        f.pmpi_imports.len(),
        f.pmpi_imports.iter().filter(|n| m.exports(n)).count()
    );
}

fn fortran(s: &mut String, m: &Mpich) {
    let f = &m.fortran;
    s.push_str("## Fortran\n\n");
    if f.library.is_empty() {
        s.push_str("No Fortran library was found next to libmpich.\n");
        return;
    }
    let _ = writeln!(
        s,
        "Evidence from MPICH {}'s `{}` (its machine code: `objdump -d`, and `nm -D` for the entry \
         points; see `crates/wrapgen/src/fortran.rs`): of its {} Fortran entry points, {} call the \
         C `MPI_*` functions (through `PLT` entries, so they reach the tracer's wrappers: the \
         `mpif.h`/`use mpi` bindings `mpi_x_`, `mpi_x__`, `MPI_X`, and the `use mpi_f08` bindings \
         with choice buffers, `mpi_x_f08ts_`). No Fortran symbols are needed for those.\n",
        m.version, f.library, f.entry_points, f.through_c
    );
    let _ = writeln!(
        s,
        "{} entry points call `PMPI_*` directly and so bypass the `MPI_*` wrappers: the `use \
         mpi_f08` bindings without choice buffers (`mpi_x_f08_`) and their large-count forms. \
         The library imports {} `PMPI_*` functions; the tracer exports each of them that it wraps \
         ({} here) as well, recording the call as the `MPI_*` wrapper does and then calling the \
         real one, so calls through these bindings are traced too. (MPICH's C library calls no \
         `PMPI_*` through the dynamic linker, so nothing else reaches those exports, short of a \
         program calling PMPI itself.)\n",
        f.bypass.len(),
        f.pmpi_imports.len(),
        f.pmpi_imports.iter().filter(|n| m.exports(n)).count()
    );
    let _ = writeln!(
        s,
        "<details><summary>{} entry points</summary>\n\n{}\n\n</details>\n",
        f.bypass.len(),
        f.bypass.join(", ")
    );
    let _ = writeln!(
        s,
        "{} entry points reach neither `MPI_*` nor `PMPI_*`: the predefined callbacks \
         (`MPI_COMM_DUP_FN`, ...), which are not MPI calls, and the attribute functions \
         (`MPI_ATTR_GET`, `mpi_comm_get_attr_f08_`, ...), which call MPICH's internal `MPII_*` \
         functions and so are not traced: {}.",
        f.neither.len(),
        f.neither.join(", ")
    );
}
