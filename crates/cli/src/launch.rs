//! The launcher `mpigram run` starts: `--launcher`, else `MPIGRAM_LAUNCHER`,
//! else `mpiexec` from PATH; each may carry options of its own
//! (`"mpirun.openmpi --oversubscribe"`). What kind it is decides how the
//! tracer's environment reaches the ranks only (not the launcher itself):
//! Hydra's `-genv` (MPICH, Intel MPI, MVAPICH), Open MPI's `-x` (and
//! `--allow-run-as-root` when run as root, which Open MPI otherwise
//! refuses), Slurm's `srun --export`.

use anyhow::{Context, Result, bail};
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// MPICH's Hydra (also Intel MPI's and MVAPICH's mpiexec).
    Hydra,
    /// Open MPI's mpirun/mpiexec (ORTE in 4.x, PRRTE in 5.x).
    OpenMpi,
    /// Slurm's srun.
    Slurm,
}

/// A launcher command and what kind it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    /// The command and its own options.
    pub command: Vec<String>,
    pub kind: Kind,
}

impl Launcher {
    /// The launcher to use: `explicit` (`--launcher`), else
    /// `MPIGRAM_LAUNCHER`, else `mpiexec`.
    pub fn find(explicit: Option<&str>) -> Result<Launcher> {
        let from_env = std::env::var("MPIGRAM_LAUNCHER").ok();
        let spec = explicit
            .or(from_env.as_deref())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or("mpiexec");
        let command: Vec<String> = spec.split_whitespace().map(String::from).collect();
        let kind = kind_of(&command[0])?;
        Ok(Launcher { command, kind })
    }

    /// The command that runs `program` on `ranks` ranks with `env` set in
    /// the ranks (and only there).
    pub fn command(&self, ranks: u32, env: &[(&str, String)], program: &[String]) -> Command {
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(self.args(ranks, env, program, is_root()));
        cmd
    }

    /// The launcher's arguments (after its name).
    pub fn args(
        &self,
        ranks: u32,
        env: &[(&str, String)],
        program: &[String],
        root: bool,
    ) -> Vec<String> {
        let mut args: Vec<String> = self.command[1..].to_vec();
        match self.kind {
            Kind::Hydra => {
                args.extend(["-n".into(), ranks.to_string()]);
                for (var, value) in env {
                    args.extend(["-genv".into(), (*var).into(), value.clone()]);
                }
            }
            Kind::OpenMpi => {
                if root && !args.iter().any(|a| a == "--allow-run-as-root") {
                    args.push("--allow-run-as-root".into());
                }
                args.extend(["-n".into(), ranks.to_string()]);
                for (var, value) in env {
                    args.extend(["-x".into(), format!("{var}={value}")]);
                }
            }
            Kind::Slurm => {
                args.push(format!("--ntasks={ranks}"));
                let vars: Vec<String> = env.iter().map(|(v, x)| format!("{v}={x}")).collect();
                args.push(format!("--export=ALL,{}", vars.join(",")));
            }
        }
        args.extend(program.iter().cloned());
        args
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// What kind of launcher `program` is: from its name where that says
/// (`srun`, `mpirun.openmpi`, `prterun`), else from what it says of its
/// version.
fn kind_of(program: &str) -> Result<Kind> {
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    if let Some(kind) = kind_by_name(name) {
        return Ok(kind);
    }
    let version = |flag: &str| -> Result<String> {
        let out = Command::new(program)
            .arg(flag)
            .output()
            .with_context(|| format!("cannot start the launcher {program} (is MPI installed? scripts/setup installs MPICH; --launcher or MPIGRAM_LAUNCHER names another)"))?;
        Ok(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    };
    for flag in ["--version", "-V"] {
        if let Some(kind) = kind_by_version(&version(flag)?) {
            return Ok(kind);
        }
    }
    bail!(
        "cannot tell what kind of launcher {program} is (MPICH/Intel MPI hydra, Open MPI or srun); run it by hand with LD_PRELOAD=$(mpigram lib), see the README"
    )
}

fn kind_by_name(name: &str) -> Option<Kind> {
    if name == "srun" {
        Some(Kind::Slurm)
    } else if name.contains("openmpi") || name == "prterun" || name == "orterun" {
        Some(Kind::OpenMpi)
    } else if name.contains("mpich") || name.contains("hydra") {
        Some(Kind::Hydra)
    } else {
        None
    }
}

fn kind_by_version(text: &str) -> Option<Kind> {
    if text.contains("HYDRA") || text.contains("Intel(R) MPI") {
        Some(Kind::Hydra)
    } else if text.contains("Open MPI") || text.contains("OpenRTE") {
        Some(Kind::OpenMpi)
    } else if text.starts_with("slurm") {
        Some(Kind::Slurm)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launcher(command: &str, kind: Kind) -> Launcher {
        Launcher {
            command: command.split_whitespace().map(String::from).collect(),
            kind,
        }
    }

    fn args(l: &Launcher, root: bool) -> String {
        let env = [
            ("LD_PRELOAD", "/l/libmpigram.so".to_owned()),
            ("MPIGRAM_OUT", "/t".to_owned()),
        ];
        l.args(2, &env, &["./app".into(), "x".into()], root)
            .join(" ")
    }

    #[test]
    fn each_launcher_gets_the_environment_its_own_way() {
        assert_eq!(
            args(&launcher("mpiexec", Kind::Hydra), true),
            "-n 2 -genv LD_PRELOAD /l/libmpigram.so -genv MPIGRAM_OUT /t ./app x"
        );
        assert_eq!(
            args(
                &launcher("mpirun.openmpi --oversubscribe", Kind::OpenMpi),
                true
            ),
            "--oversubscribe --allow-run-as-root -n 2 -x LD_PRELOAD=/l/libmpigram.so -x MPIGRAM_OUT=/t ./app x"
        );
        assert_eq!(
            args(&launcher("mpirun", Kind::OpenMpi), false),
            "-n 2 -x LD_PRELOAD=/l/libmpigram.so -x MPIGRAM_OUT=/t ./app x"
        );
        assert_eq!(
            args(&launcher("srun -p debug", Kind::Slurm), false),
            "-p debug --ntasks=2 --export=ALL,LD_PRELOAD=/l/libmpigram.so,MPIGRAM_OUT=/t ./app x"
        );
    }

    #[test]
    fn launchers_are_told_apart_by_name_or_version() {
        assert_eq!(kind_by_name("srun"), Some(Kind::Slurm));
        assert_eq!(kind_by_name("mpirun.openmpi"), Some(Kind::OpenMpi));
        assert_eq!(kind_by_name("mpiexec.mpich"), Some(Kind::Hydra));
        assert_eq!(kind_by_name("mpiexec"), None);
        assert_eq!(kind_by_version("HYDRA build details:\n"), Some(Kind::Hydra));
        assert_eq!(
            kind_by_version("Intel(R) MPI Library for Linux* OS, Version 2021.19.0"),
            Some(Kind::Hydra)
        );
        assert_eq!(
            kind_by_version("mpirun (Open MPI) 5.0.11\n"),
            Some(Kind::OpenMpi)
        );
        assert_eq!(
            kind_by_version("mpirun.openmpi (OpenRTE) 4.1.4\n"),
            Some(Kind::OpenMpi)
        );
        assert_eq!(kind_by_version("slurm 23.02.7\n"), Some(Kind::Slurm));
        assert_eq!(kind_by_version("usage: foo"), None);
    }
}
