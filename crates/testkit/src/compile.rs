//! Building the test programs: `mpicc`/`mpif90` into a cache under `target/`,
//! rebuilt only when a source or header is newer than the executable.
//!
//! Safe with many builders at once: threads of one process building the same
//! program wait for each other; separate processes each build to a private
//! temporary name and rename it into place, so nobody ever runs a half-written
//! executable.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::mpis::Mpi;
use crate::paths::{cache_dir, mpi_tests_dir};

/// Flags for the C programs. `-Wno-stringop-overflow`: GCC 12 wrongly warns
/// that MPICH's `MPI_STATUSES_IGNORE` is a too-small status array.
const C_FLAGS: &[&str] = &[
    "-O2",
    "-g",
    "-Wall",
    "-Wextra",
    "-Wno-stringop-overflow",
    "-pthread",
];
const FORTRAN_FLAGS: &[&str] = &["-O2", "-g", "-Wall"];
const PRELOAD_FLAGS: &[&str] = &["-shared", "-fPIC", "-O2", "-Wall", "-Wextra"];

/// Name of the yield preload's source under `tests/mpi/yield/`.
const YIELD_SOURCE: &str = "ucx_yield.c";

/// Short hash of every compiler flag: names the cache subdirectory.
pub(crate) fn flags_fingerprint() -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    (C_FLAGS, FORTRAN_FLAGS, PRELOAD_FLAGS).hash(&mut hasher);
    format!("{:08x}", hasher.finish() as u32)
}

/// Checks that the selected MPI's ([`Mpi::selected`]) compiler wrappers
/// and launcher run. The error names the missing tool and how to install
/// it; tests should fail with it rather than skip.
pub fn mpi_available() -> Result<()> {
    static RESULT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            let mpi = Mpi::selected();
            let mut tools = vec![(mpi.cc.as_str(), "-show")];
            if let Some(fc) = &mpi.fc {
                tools.push((fc.as_str(), "-show"));
            }
            for (tool, arg) in tools {
                match Command::new(tool)
                    .envs(mpi.env.iter().cloned())
                    .arg(arg)
                    .output()
                {
                    Ok(out) if out.status.success() => {}
                    Ok(out) => return Err(format!("`{tool} {arg}` failed ({})", out.status)),
                    Err(e) => return Err(format!("cannot run `{tool}` ({}): {e}", mpi.name)),
                }
            }
            Ok(())
        })
        .clone()
        .map_err(Error::MpiMissing)
}

/// Builds `tests/mpi/<name>.c` (with mpicc) or `tests/mpi/<name>.f90` (with
/// mpif90) of the selected MPI unless the cached executable is newer than
/// the source and every header in `tests/mpi`, and returns the
/// executable's path.
pub fn compile(name: &str) -> Result<PathBuf> {
    compile_with(Mpi::selected(), name)
}

/// [`compile`] with `mpi`'s compilers, into its own cache.
pub fn compile_with(mpi: &Mpi, name: &str) -> Result<PathBuf> {
    let dir = mpi_tests_dir();
    let c = dir.join(format!("{name}.c"));
    let f90 = dir.join(format!("{name}.f90"));
    let (source, compiler, flags, deps) = if c.is_file() {
        (c, mpi.cc.as_str(), C_FLAGS, headers(&dir)?)
    } else if f90.is_file() {
        let Some(fc) = &mpi.fc else {
            return Err(Error::MpiMissing(format!(
                "no Fortran compiler with {}",
                mpi.name
            )));
        };
        (f90, fc.as_str(), FORTRAN_FLAGS, Vec::new())
    } else {
        return Err(Error::NoSuchProgram {
            name: name.to_owned(),
            dir,
        });
    };
    let out = cache_dir().join(mpi.name).join(name);
    build_cached(&source, &deps, &out, |tmp| {
        let mut cmd = Command::new(compiler);
        cmd.envs(mpi.env.iter().cloned())
            .args(flags)
            .arg("-o")
            .arg(tmp)
            .arg(&source);
        cmd
    })?;
    Ok(out)
}

/// Builds the yield preload (`tests/mpi/yield/ucx_yield.c`, with `cc`) and
/// returns the shared library's path. See [`crate::Mpiexec::without_yield`].
pub fn yield_preload() -> Result<PathBuf> {
    let source = mpi_tests_dir().join("yield").join(YIELD_SOURCE);
    let out = cache_dir().join("libucx_yield.so");
    build_cached(&source, &[], &out, |tmp| {
        let mut cmd = Command::new("cc");
        cmd.args(PRELOAD_FLAGS)
            .arg("-o")
            .arg(tmp)
            .arg(&source)
            .arg("-ldl");
        cmd
    })?;
    Ok(out)
}

/// All `*.h` files of `dir`: every C program may include any of them.
fn headers(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut headers = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?
            .path();
        if path.extension() == Some(OsStr::new("h")) {
            headers.push(path);
        }
    }
    Ok(headers)
}

fn mtime(path: &Path) -> Result<SystemTime> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| Error::io(format!("reading the time stamp of {}", path.display()), e))
}

/// True if `out` exists and is at least as new as `source` and every dep.
fn up_to_date(out: &Path, source: &Path, deps: &[PathBuf]) -> Result<bool> {
    let Ok(built) = mtime(out) else {
        return Ok(false);
    };
    for input in std::iter::once(source).chain(deps.iter().map(PathBuf::as_path)) {
        if mtime(input)? > built {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One lock per output path, so threads of this process build each file once.
fn lock_for(out: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    locks.entry(out.to_path_buf()).or_default().clone()
}

/// Runs `command(tmp)` to build `out` from `source` when it is stale; the
/// result is written to a unique temporary name and renamed into place.
pub(crate) fn build_cached(
    source: &Path,
    deps: &[PathBuf],
    out: &Path,
    command: impl Fn(&Path) -> Command,
) -> Result<()> {
    let lock = lock_for(out);
    let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if up_to_date(out, source, deps)? {
        return Ok(());
    }
    let dir = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut tmp_name = out.file_name().unwrap_or(OsStr::new("out")).to_os_string();
    tmp_name.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = dir.join(tmp_name);

    let mut cmd = command(&tmp);
    cmd.current_dir(dir); // compilers may drop side files (Fortran modules) in the cwd
    let shown = format!("{cmd:?}");
    let output = cmd
        .output()
        .map_err(|e| Error::io(format!("running {shown}"), e))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Compile {
            path: source.to_path_buf(),
            command: shown,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    std::fs::rename(&tmp, out).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(
            format!("renaming {} to {}", tmp.display(), out.display()),
            e,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch_later(path: &Path, text: &str) {
        // Sleep past coarse time-stamp granularity before rewriting.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(path, text).unwrap();
    }

    fn cc(source: &Path) -> impl Fn(&Path) -> Command + '_ {
        move |tmp: &Path| {
            let mut cmd = Command::new("cc");
            cmd.arg("-o").arg(tmp).arg(source);
            cmd
        }
    }

    #[test]
    fn rebuilds_only_when_an_input_is_newer() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("p.c");
        let header = dir.path().join("p.h");
        let out = dir.path().join("cache").join("p");
        std::fs::write(&header, "#define VALUE 1\n").unwrap();
        std::fs::write(
            &source,
            "#include \"p.h\"\nint main(void) { return VALUE; }\n",
        )
        .unwrap();
        let deps = vec![header.clone()];

        build_cached(&source, &deps, &out, cc(&source)).unwrap();
        let first = mtime(&out).unwrap();
        build_cached(&source, &deps, &out, cc(&source)).unwrap();
        assert_eq!(mtime(&out).unwrap(), first, "fresh output was rebuilt");

        touch_later(&header, "#define VALUE 2\n");
        build_cached(&source, &deps, &out, cc(&source)).unwrap();
        assert!(mtime(&out).unwrap() > first, "newer header did not rebuild");
        let status = Command::new(&out).status().unwrap();
        assert_eq!(status.code(), Some(2));
    }

    #[test]
    fn concurrent_builds_leave_one_complete_executable() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("q.c");
        std::fs::write(&source, "int main(void) { return 7; }\n").unwrap();
        let out = dir.path().join("cache").join("q");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| build_cached(&source, &[], &out, cc(&source)).unwrap());
            }
        });
        assert_eq!(Command::new(&out).status().unwrap().code(), Some(7));
        let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![OsStr::new("q").to_os_string()]);
    }

    #[test]
    fn compiler_errors_are_reported_with_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("bad.c");
        std::fs::write(&source, "int main(void) { return }\n").unwrap();
        let out = dir.path().join("bad");
        let err = build_cached(&source, &[], &out, cc(&source)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("bad.c"), "{text}");
        assert!(text.contains("error"), "{text}");
        assert!(!out.exists());
    }

    #[test]
    fn unknown_program_is_named_in_the_error() {
        let err = compile("no_such_program").unwrap_err();
        assert!(matches!(err, Error::NoSuchProgram { .. }), "{err}");
        assert!(err.to_string().contains("no_such_program.c"));
    }
}
