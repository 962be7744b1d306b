//! Errors of the test kit: each says what was attempted and what to do about it.

use std::path::PathBuf;
use std::time::Duration;

/// Result with the test kit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong while building or running an MPI test program.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// MPICH's tools are not installed or do not run.
    #[error(
        "MPI is not available: {0}. Install MPICH (Debian: apt-get install mpich libmpich-dev \
         gfortran, or run scripts/setup)"
    )]
    MpiMissing(String),

    /// No `tests/mpi/<name>.c` or `.f90`.
    #[error("no MPI test program {name:?}: neither {name}.c nor {name}.f90 in {}", dir.display())]
    NoSuchProgram { name: String, dir: PathBuf },

    /// The compiler rejected a program.
    #[error("compiling {}: `{command}` failed ({status}):\n{stderr}", path.display())]
    Compile {
        path: PathBuf,
        command: String,
        status: String,
        stderr: String,
    },

    /// A program's header comment (`ranks:`, `expect:`) is missing or malformed.
    #[error("{}: {message}", path.display())]
    Header { path: PathBuf, message: String },

    /// A run outlived its timeout; mpiexec and every rank were killed.
    #[error(
        "`{command}` timed out after {:.1} s; killed mpiexec and all its ranks\n\
         --- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        after.as_secs_f64()
    )]
    Timeout {
        command: String,
        after: Duration,
        stdout: String,
        stderr: String,
    },

    /// An operating-system call failed.
    #[error("{context}: {error}")]
    Io {
        context: String,
        #[source]
        error: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, error: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            error,
        }
    }
}
