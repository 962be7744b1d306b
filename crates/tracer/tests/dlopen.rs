//! An MPI library that a `dlopen` with `RTLD_LOCAL` loaded, as Python loads
//! mpi4py's extension module and `libmpi.so` with it: the program's calls
//! reach the tracer's wrappers (the preload is global), whose real
//! functions `dlsym(RTLD_NEXT)` does not see. They are found in the scope of
//! the object that loaded the library (`src/symbols.rs`). Before, every call
//! returned MPI_ERR_INTERN and the application failed.

mod common;

use common::*;
use mpigram_testkit::{Mpi, mpi_available, mpiexec};
use std::time::Duration;

/// A program without MPI that opens the library named by its argument
/// with RTLD_LOCAL and runs its `run`.
const PROGRAM: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
    int (*run)(void) = (int (*)(void))dlsym(lib, "run");
    return run ? run() : 3;
}
"#;

/// The library: MPI calls whose results it checks.
const LIBRARY: &str = r#"
#include <mpi.h>
#include <stdio.h>
int run(void)
{
    int rank = -1, size = -1, sum = -1;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) { fprintf(stderr, "MPI_Init failed\n"); return 4; }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = size == 2 && sum == 1;
    if (!ok) fprintf(stderr, "rank %d, size %d, sum %d\n", rank, size, sum);
    MPI_Finalize();
    return ok ? 0 : 5;
}
"#;

#[test]
fn an_mpi_library_loaded_locally_is_traced_and_works() {
    mpi_available().unwrap();
    let mpi = Mpi::selected();
    let dir = tempfile::tempdir().unwrap();
    let (program, library) = (dir.path().join("program"), dir.path().join("libapp.so"));
    compile_source("cc", mpi, PROGRAM, &program, &["-O2"]);
    compile_source(
        &mpi.cc,
        mpi,
        LIBRARY,
        &library,
        &["-shared", "-fPIC", "-O2"],
    );
    let trace_dir = tempfile::tempdir().unwrap();
    // Without the yield preload, which finds UCX with RTLD_NEXT as the
    // tracer did (2 ranks on 2 cores need it not).
    let output = mpiexec(2, &program, [library.to_str().unwrap()])
        .mpi(mpi)
        .without_yield()
        .preload(tracer())
        .env("MPIGRAM_OUT", trace_dir.path())
        .env("MPIGRAM_VERIFY", "1")
        .timeout(Duration::from_secs(60))
        .run()
        .unwrap();
    output.assert_success();
    assert!(
        !output.stderr.contains("MPI_ERR_INTERN"),
        "{}",
        output.stderr
    );
    let run = TracedRun {
        dir: trace_dir,
        output,
    };
    let trace = assert_trace_is_exact(&run, 2);
    for rank in 0..2 {
        let funcs: Vec<&str> = decoded(&trace, rank).iter().map(|c| c.func).collect();
        assert_eq!(
            funcs,
            [
                "MPI_Init",
                "MPI_Comm_rank",
                "MPI_Comm_size",
                "MPI_Allreduce",
                "MPI_Finalize"
            ],
            "rank {rank}"
        );
    }
}
