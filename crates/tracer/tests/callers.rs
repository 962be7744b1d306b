//! Conversions of handles and statuses between C and Fortran are recorded
//! where the application makes them, not where the MPI library does (its
//! Fortran bindings: Intel MPI's converts every handle of every call through
//! `MPI_*_fromint`): the tracer's `src/caller.rs`. A call from a shared
//! object whose file is `libmpi*` goes to the real function unrecorded.

mod common;

use common::*;
use mpigram_testkit::{Mpi, mpi_available};

/// A library as an MPI's Fortran binding is one: a function that converts
/// a status for Fortran through the exported C function, then stores its
/// error code (as a binding stores `ierr`; a call in tail position would
/// return to the program, whose call it would then be).
const CONVERT: &str = r#"
#include <mpi.h>
volatile int ierr;
int convert(const MPI_Status *c_status, MPI_Fint *f_status)
{
    ierr = MPI_Status_c2f(c_status, f_status);
    return ierr;
}
"#;

/// The program's own MPI_Status_c2f and the one of a library of its own
/// (`libhelper.so`) are recorded; the one of a library named as an MPI's
/// (`libmpi_fake_binding.so`) is made, and not recorded. Every conversion
/// fills its status (the program checks).
#[test]
fn conversions_made_by_an_mpi_library_are_not_recorded() {
    mpi_available().unwrap();
    let mpi = Mpi::selected();
    let libs = tempfile::tempdir().unwrap();
    let library = |name: &str| {
        let lib = libs.path().join(name);
        compile_source(
            &mpi.cc,
            mpi,
            CONVERT,
            &lib,
            &["-shared", "-fPIC", "-O2", "-Wall"],
        );
        lib
    };
    let (binding, helper) = (library("libmpi_fake_binding.so"), library("libhelper.so"));
    let args = [binding.to_str().unwrap(), helper.to_str().unwrap()];
    let run = run_traced("conversions", 2, &args, &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in 0..2 {
        let funcs: Vec<&str> = decoded(&trace, rank).iter().map(|c| c.func).collect();
        let conversions = funcs.iter().filter(|&&f| f == "MPI_Status_c2f").count();
        assert_eq!(
            conversions, 2,
            "rank {rank}: the program's and the helper's: {funcs:?}"
        );
    }
}
