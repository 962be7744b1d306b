//! Does MPICH's Fortran library reach MPI through the C `MPI_*` symbols
//! (then the C wrappers trace Fortran programs too) or straight through
//! `PMPI_*` (then those entry points bypass the tracer)? Answered from the
//! library's machine code: for every exported Fortran entry point, the
//! `MPI_*`/`PMPI_*` functions reachable through its calls.

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

#[derive(Serialize, Deserialize, PartialEq, Eq, Debug, Clone, Default)]
pub struct FortranLayer {
    /// The library's file name (empty: no Fortran library found).
    pub library: String,
    /// Entry points (distinct addresses) with a Fortran MPI name.
    pub entry_points: usize,
    /// Of those, how many call C `MPI_*` functions (traced).
    pub through_c: usize,
    /// Entry points that reach `PMPI_*` and no `MPI_*`: one name each.
    pub bypass: Vec<String>,
    /// Entry points that reach neither (attribute helpers, predefined callbacks).
    pub neither: Vec<String>,
    /// `MPI_X` for every `PMPI_X` the library calls (an undefined dynamic
    /// symbol of it): the tracer exports those `PMPI_X` too, so the calls
    /// of the bindings that bypass the C layer are traced.
    #[serde(default)]
    pub pmpi_imports: Vec<String>,
}

/// [`analyse`] of each library of `names` that `dir` holds, as one layer
/// (MPICH has one Fortran library, `libmpichfort`; Open MPI three, one per
/// binding: `libmpi_mpifh`, `libmpi_usempi_ignore_tkr`, `libmpi_usempif08`).
pub fn analyse_all(dir: &Path, names: &[&str]) -> Result<FortranLayer> {
    let mut all = FortranLayer::default();
    for name in names {
        let l = analyse(&dir.join(name))?;
        if l.library.is_empty() {
            continue;
        }
        if !all.library.is_empty() {
            all.library.push_str(", ");
        }
        all.library.push_str(&l.library);
        all.entry_points += l.entry_points;
        all.through_c += l.through_c;
        all.bypass.extend(l.bypass);
        all.neither.extend(l.neither);
        all.pmpi_imports.extend(l.pmpi_imports);
    }
    for list in [&mut all.bypass, &mut all.neither, &mut all.pmpi_imports] {
        list.sort();
        list.dedup();
    }
    Ok(all)
}

/// Analyses `lib` (absent: an empty answer).
pub fn analyse(lib: &Path) -> Result<FortranLayer> {
    if !lib.exists() {
        return Ok(FortranLayer::default());
    }
    let run = |cmd: &str, args: &[&str]| -> Result<String> {
        let out = Command::new(cmd)
            .args(args)
            .arg(lib)
            .output()
            .with_context(|| format!("running {cmd}"))?;
        ensure!(out.status.success(), "{cmd} {} failed", lib.display());
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let code = CallGraph::parse(&run("objdump", &["-d", "--no-show-raw-insn"])?);
    let mut names_at: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in run("nm", &["-D", "--defined-only"])?.lines() {
        if let [addr, "T" | "W", name] = line.split_whitespace().collect::<Vec<_>>().as_slice() {
            // Fortran names are all lower or all upper case; MPI_Status_c2f08 is a C function.
            let fortran = *name == name.to_lowercase() || *name == name.to_uppercase();
            if fortran && (name.starts_with("mpi_") || name.starts_with("MPI_")) {
                names_at
                    .entry(u64::from_str_radix(addr, 16)?)
                    .or_default()
                    .push((*name).to_owned());
            }
        }
    }
    let mut layer = FortranLayer {
        library: lib
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..FortranLayer::default()
    };
    for (addr, names) in &names_at {
        let reached = code.reachable(*addr);
        let c = reached.iter().any(|s| s.starts_with("MPI_"));
        let p = reached.iter().any(|s| s.starts_with("PMPI_"));
        // One name per entry point: the lowercase one with the fewest underscores appended.
        let name = names
            .iter()
            .min_by_key(|n| (n.chars().any(|c| c.is_ascii_uppercase()), n.len()))
            .cloned();
        layer.entry_points += 1;
        match (c, p) {
            (true, _) => layer.through_c += 1,
            (false, true) => layer.bypass.extend(name),
            (false, false) => layer.neither.extend(name),
        }
    }
    layer.bypass.sort();
    layer.neither.sort();
    layer.pmpi_imports = run("nm", &["-D", "--undefined-only"])?
        .lines()
        .filter_map(|l| l.split_whitespace().last()?.strip_prefix("PMPI_"))
        .map(|name| format!("MPI_{name}"))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(layer)
}

/// Calls between the functions of a disassembly: every labelled address
/// and every call target starts a function, which runs to the next start.
struct CallGraph {
    /// Function start -> (called starts, called external symbols).
    calls: HashMap<u64, (BTreeSet<u64>, BTreeSet<String>)>,
}

impl CallGraph {
    fn parse(disassembly: &str) -> CallGraph {
        let mut labels: BTreeMap<u64, String> = BTreeMap::new();
        let mut insns: Vec<(u64, &str)> = Vec::new();
        for line in disassembly.lines() {
            if let Some((addr, rest)) = line.split_once(" <") {
                if let (Ok(a), Some(name)) = (
                    u64::from_str_radix(addr.trim(), 16),
                    rest.strip_suffix(">:"),
                ) {
                    labels.insert(a, name.to_owned());
                    continue;
                }
            }
            if let Some((addr, text)) = line.trim_start().split_once(":\t") {
                if let Ok(a) = u64::from_str_radix(addr, 16) {
                    insns.push((a, text));
                }
            }
        }
        let target = |text: &str| -> Option<(u64, String)> {
            let (op, rest) = text.split_once(char::is_whitespace)?;
            if !(op.starts_with("call") || op.starts_with("jmp")) {
                return None;
            }
            let (addr, sym) = rest.trim().split_once(" <")?;
            let sym = sym.strip_suffix('>')?;
            Some((u64::from_str_radix(addr, 16).ok()?, sym.to_owned()))
        };
        let mut starts: BTreeSet<u64> = labels.keys().copied().collect();
        for (_, text) in &insns {
            if let Some((a, _)) = target(text).filter(|_| text.starts_with("call")) {
                starts.insert(a);
            }
        }
        let plt: HashMap<u64, String> = labels
            .iter()
            .filter_map(|(a, n)| n.strip_suffix("@plt").map(|s| (*a, s.to_owned())))
            .collect();
        let mut calls: HashMap<u64, (BTreeSet<u64>, BTreeSet<String>)> = HashMap::new();
        let mut current = None;
        for (a, text) in &insns {
            if starts.contains(a) {
                current = Some(*a);
            }
            let (Some(f), Some((t, _))) = (current, target(text)) else {
                continue;
            };
            let entry = calls.entry(f).or_default();
            match plt.get(&t) {
                Some(sym) => {
                    entry.1.insert(sym.clone());
                }
                None if starts.contains(&t) && t != f => {
                    entry.0.insert(t);
                }
                None => {}
            }
        }
        CallGraph { calls }
    }

    /// External `MPI_*`/`PMPI_*` symbols reachable from `start`.
    fn reachable(&self, start: u64) -> BTreeSet<String> {
        let mut seen = BTreeSet::from([start]);
        let mut stack = vec![start];
        let mut out = BTreeSet::new();
        while let Some(f) = stack.pop() {
            let Some((fns, syms)) = self.calls.get(&f) else {
                continue;
            };
            out.extend(
                syms.iter()
                    .filter(|s| s.starts_with("MPI_") || s.starts_with("PMPI_"))
                    .cloned(),
            );
            for g in fns {
                if seen.insert(*g) {
                    stack.push(*g);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_followed_through_local_functions_to_plt_symbols() {
        let dis = "0000000000001000 <MPI_Send@plt>:\n    1000:\tjmp    *0x10(%rip)\n\
                   0000000000002000 <mpi_send_@@Base>:\n    2000:\tcall   3000 <helper+0x10>\n    2005:\tret\n\
                   0000000000002100 <mpi_barrier_f08_@@Base>:\n    2100:\tcall   1010 <PMPI_Barrier@plt>\n\
                   0000000000001010 <PMPI_Barrier@plt>:\n    1010:\tjmp    *0x18(%rip)\n\
                       3000:\tcall   1000 <MPI_Send@plt>\n    3005:\tret\n";
        let g = CallGraph::parse(dis);
        assert_eq!(g.reachable(0x2000), BTreeSet::from(["MPI_Send".to_owned()]));
        assert_eq!(
            g.reachable(0x2100),
            BTreeSet::from(["PMPI_Barrier".to_owned()])
        );
    }
}
