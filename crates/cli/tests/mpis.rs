//! The same programs traced under MPICH 4.0.2, Open MPI 4.1.4 and MPICH
//! 5.0.2's MPI 5.0 standard ABI make the same calls, as `mpigram diff`
//! sees them (scripts/setup installs all three), buffers included: memory
//! segments are numbered in the order MPI calls first use them, so each MPI
//! library's own allocations among the application's do not shift them.

mod common;

use common::{mpigram, text, trace_under};
use mpigram_testkit::Mpi;
use std::path::{Path, PathBuf};

/// Traces `program` on 2 ranks under `mpi` into `dir/<mpi>-<program>`.
fn trace(dir: &Path, mpi: &Mpi, program: &str, args: &[&str]) -> PathBuf {
    assert!(
        mpi.installed(),
        "{} is not installed: scripts/setup-mpis installs it",
        mpi.name
    );
    let out = dir.join(format!("{}-{program}", mpi.name));
    trace_under(mpi, program, args, &out);
    out
}

#[test]
fn the_same_programs_make_the_same_calls_under_every_mpi() {
    let dir = tempfile::tempdir().unwrap();
    let mpich = Mpi::named("mpich").unwrap();
    for (program, args) in [("halo2d", &["20"][..]), ("coll_blocking", &[][..])] {
        let reference = trace(dir.path(), &mpich, program, args);
        for name in ["openmpi", "mpich-abi"] {
            let mpi = Mpi::named(name).unwrap();
            let other = trace(dir.path(), &mpi, program, args);
            // Buffers included: heap segments are numbered in the order MPI
            // calls first use them, so each MPI's own allocations do not
            // shift them.
            let out = mpigram(&["diff", reference.to_str().unwrap(), other.to_str().unwrap()]);
            let report = text(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{program} under {name}:\n{report}{}",
                text(&out.stderr)
            );
            assert!(report.contains("same calls on all 2 ranks"), "{report}");
        }
    }
}

/// Every call of `trace`, as compared across MPIs: buffers masked, and
/// what the MPIs' Fortran bindings pass differently left out: MPI_Init's
/// arguments (MPICH's binding passes NULL for argc and argv, Open MPI's its
/// own copies) and the statuses of a completion call (for a program's
/// MPI_STATUSES_IGNORE, Open MPI's `mpi_f08` binding passes an array of its
/// own).
fn fortran_calls(trace: &Path) -> Vec<serde_json::Value> {
    let out = mpigram(&["decode", trace.to_str().unwrap(), "--format", "jsonl"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|line| {
            let mut call: serde_json::Value = serde_json::from_str(line).unwrap();
            let o = call.as_object_mut().unwrap();
            for key in ["seq", "start_ns", "end_ns"] {
                o.remove(key);
            }
            if o["func"] == "MPI_Init" {
                o.remove("args");
            }
            if let Some(args) = o.get_mut("args").and_then(|a| a.as_object_mut()) {
                args.remove("array_of_statuses");
            }
            for v in o
                .get_mut("args")
                .into_iter()
                .flat_map(|a| a.as_object_mut().unwrap().values_mut())
            {
                if v.as_str().is_some_and(|s| s.starts_with("seg")) {
                    *v = "seg".into();
                }
            }
            call
        })
        .collect()
}

/// Fortran programs too, under the MPIs with Fortran here: Open MPI's
/// bindings call `PMPI_*` (MPICH's `use mpi_f08` bindings without choice
/// buffers do too), which the tracer exports for them.
#[test]
fn fortran_programs_make_the_same_calls_under_mpich_and_open_mpi() {
    let dir = tempfile::tempdir().unwrap();
    let (mpich, openmpi) = (Mpi::named("mpich").unwrap(), Mpi::named("openmpi").unwrap());
    for program in ["fortran_basic", "fortran_f08"] {
        let reference = fortran_calls(&trace(dir.path(), &mpich, program, &[]));
        let other = fortran_calls(&trace(dir.path(), &openmpi, program, &[]));
        assert!(reference.len() >= 16, "{program}: {reference:?}");
        assert_eq!(reference, other, "{program}");
    }
}

/// MPI 5.0 functions that MPICH 4 lacks are wrapped too (generated from
/// the standard, their real functions looked up when first called):
/// traced under MPICH 5's standard ABI with every argument.
#[test]
fn mpi5_functions_are_traced_under_mpich5() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), &Mpi::named("mpich-abi").unwrap(), "mpi5", &[]);
    let out = mpigram(&["decode", trace.to_str().unwrap(), "--rank", "0"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let decoded = text(&out.stdout);
    for call in [
        "MPI_Status_get_source(status={MPI_SOURCE=3, MPI_TAG=17,",
        "MPI_Comm_toint(comm=MPI_COMM_WORLD) -> ",
        "MPI_Comm_attach_buffer(comm=MPI_COMM_WORLD, buffer=seg",
        "MPI_Comm_detach_buffer(comm=MPI_COMM_WORLD, buffer_addr=seg",
        "MPI_Buffer_flush()",
        "MPI_Type_get_value_index(value_type=MPI_DOUBLE, index_type=MPI_INT, pair_type=MPI_DOUBLE_INT)",
        "MPI_Remove_error_class(errorclass=",
    ] {
        assert!(decoded.contains(call), "{call} not in\n{decoded}");
    }
}
