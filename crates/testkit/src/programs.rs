//! The catalogue of test programs in `tests/mpi`, read from their header
//! comments: which rank counts each supports (`ranks: 2-4`) and, for the
//! programs that are meant to crash, how they must fail (`expect: abort 42`,
//! `expect: exit 3`, `expect: signal SIGSEGV`), and what an MPI must have
//! to build them (`needs: mpi4`: MPI 4.0 functions; `needs: mpi5`: MPI 5.0
//! functions (MPICH 5); `needs: removed`: the
//! MPI-1 functions MPI 3.0 removed; Fortran programs need `fortran`).

use std::ffi::OsStr;
use std::ops::RangeInclusive;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::paths::mpi_tests_dir;
use crate::run::RunOutput;

/// Header lines are looked for in this many first lines of a source.
const HEADER_LINES: usize = 40;

/// One test program of `tests/mpi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// File stem: `halo2d` for `tests/mpi/halo2d.c`.
    pub name: String,
    pub source: PathBuf,
    /// The rank counts it supports.
    pub ranks: RangeInclusive<u32>,
    /// How a run ends when everything is right.
    pub expect: Expect,
    /// What the MPI must have (see [`crate::Mpi::features`]).
    pub needs: Vec<String>,
}

/// How a program's run must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exit status 0 (no `expect:` line).
    Success,
    /// A rank calls `MPI_Abort` with this error code, which hydra passes on
    /// as its exit status. (MPICH's "application called MPI_Abort" line is
    /// lost in about one run in ten, so it is not required.)
    Abort(i32),
    /// Every rank calls `exit(code)` without `MPI_Finalize`. Hydra kills
    /// the ranks still running once the first has exited, and then reports
    /// either `code` or 9 (SIGKILL, with its "EXIT CODE: 9" banner): both count
    /// (9 in about one 3- or 4-rank run in ten).
    Exit(i32),
    /// Ranks die of this signal; hydra exits with the signal number as its
    /// status and says "(signal N)" on its stdout.
    Signal(i32),
}

impl Program {
    /// Reads the header of one source file.
    pub fn from_source(path: &Path) -> Result<Program> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let header_error = |message: String| Error::Header {
            path: path.to_path_buf(),
            message,
        };
        let name = path
            .file_stem()
            .and_then(OsStr::to_str)
            .ok_or_else(|| header_error("file name is not UTF-8".into()))?
            .to_owned();
        let mut ranks = None;
        let mut expect = Expect::Success;
        let mut needs = Vec::new();
        if path.extension() == Some(OsStr::new("f90")) {
            needs.push("fortran".to_owned());
        }
        for line in text.lines().take(HEADER_LINES) {
            if let Some(value) = header_value(line, "needs:") {
                needs.extend(value.split_whitespace().map(String::from));
            }
            if let Some(value) = header_value(line, "ranks:") {
                ranks = Some(parse_ranks(value).map_err(header_error)?);
            } else if let Some(value) = header_value(line, "expect:") {
                expect = parse_expect(value).map_err(header_error)?;
            }
        }
        let ranks = ranks.ok_or_else(|| {
            header_error(format!(
                "no `ranks: LO-HI` comment in the first {HEADER_LINES} lines"
            ))
        })?;
        Ok(Program {
            name,
            source: path.to_path_buf(),
            ranks,
            expect,
            needs,
        })
    }

    /// Whether `mpi` has what it needs to build.
    pub fn builds_with(&self, mpi: &crate::Mpi) -> bool {
        self.needs
            .iter()
            .all(|n| mpi.features.contains(&n.as_str()))
    }

    /// The rank counts to test it with: those it supports, capped at `max`.
    pub fn rank_counts(&self, max: u32) -> RangeInclusive<u32> {
        *self.ranks.start()..=(*self.ranks.end()).min(max)
    }

    /// Builds it (see [`crate::compile`]).
    pub fn compile(&self) -> Result<PathBuf> {
        crate::compile(&self.name)
    }
}

/// Every program of `tests/mpi` (`*.c` and `*.f90`), sorted by name.
pub fn programs() -> Result<Vec<Program>> {
    let dir = mpi_tests_dir();
    let entries =
        std::fs::read_dir(&dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut programs = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?
            .path();
        let ext = path.extension().and_then(OsStr::to_str);
        if matches!(ext, Some("c" | "f90")) && path.is_file() {
            programs.push(Program::from_source(&path)?);
        }
    }
    programs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(programs)
}

/// One program by name.
pub fn program(name: &str) -> Result<Program> {
    let dir = mpi_tests_dir();
    for ext in ["c", "f90"] {
        let path = dir.join(format!("{name}.{ext}"));
        if path.is_file() {
            return Program::from_source(&path);
        }
    }
    Err(Error::NoSuchProgram {
        name: name.to_owned(),
        dir,
    })
}

/// The text after `key` on a comment line (`/* key value */` or `! key value`).
fn header_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let trimmed = line.trim_start();
    let body = trimmed
        .strip_prefix("/*")
        .or_else(|| trimmed.strip_prefix('!'))?;
    let value = body.trim_start().strip_prefix(key)?;
    Some(value.trim().trim_end_matches("*/").trim())
}

fn parse_ranks(value: &str) -> std::result::Result<RangeInclusive<u32>, String> {
    let bad = || format!("bad `ranks:` value {value:?}: expected LO-HI or N");
    let (lo, hi) = match value.split_once('-') {
        Some((lo, hi)) => (lo.trim(), hi.trim()),
        None => (value, value),
    };
    let lo: u32 = lo.parse().map_err(|_| bad())?;
    let hi: u32 = hi.parse().map_err(|_| bad())?;
    if lo == 0 || lo > hi {
        return Err(bad());
    }
    Ok(lo..=hi)
}

fn parse_expect(value: &str) -> std::result::Result<Expect, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        ["abort", code] => code
            .parse()
            .map(Expect::Abort)
            .map_err(|_| format!("bad error code in `expect: {value}`")),
        ["exit", code] => code
            .parse()
            .map(Expect::Exit)
            .map_err(|_| format!("bad exit code in `expect: {value}`")),
        ["signal", name] => signal_number(name)
            .map(Expect::Signal)
            .ok_or_else(|| format!("unknown signal in `expect: {value}`")),
        _ => Err(format!(
            "bad `expect:` value {value:?}: expected abort N, exit N or signal SIGNAME"
        )),
    }
}

fn signal_number(name: &str) -> Option<i32> {
    Some(match name {
        "SIGSEGV" => libc::SIGSEGV,
        "SIGTERM" => libc::SIGTERM,
        "SIGKILL" => libc::SIGKILL,
        "SIGABRT" => libc::SIGABRT,
        "SIGBUS" => libc::SIGBUS,
        "SIGFPE" => libc::SIGFPE,
        "SIGILL" => libc::SIGILL,
        "SIGINT" => libc::SIGINT,
        _ => return None,
    })
}

impl Expect {
    /// Whether a finished run ended as expected; the error says how it differs.
    pub fn check(&self, run: &RunOutput) -> std::result::Result<(), String> {
        let status = run.status;
        // Hydra reports on stdout, the ranks' MPI library on stderr.
        let reported = |text: &str| run.stdout.contains(text) || run.stderr.contains(text);
        let ok = match *self {
            Expect::Success => status.success(),
            Expect::Abort(code) => status.code() == Some(code),
            // Hydra may register a rank it killed or hung up in its cleanup
            // first; then the program's own word on stderr names the status.
            Expect::Exit(code) => {
                status.code() == Some(code)
                    || (status.code() == Some(libc::SIGKILL) && reported("EXIT CODE: 9"))
                    || (status.code().is_some()
                        && reported("EXIT STRING: Hangup (signal 1)")
                        && run.stderr.contains(&format!("exits with status {code}\n")))
            }
            // When every rank dies of the signal, hydra's banner names the
            // first one's ("EXIT CODE: 7"), but its status may be that of a
            // rank it was cleaning up meanwhile (SIGTERM, or a rank whose
            // MPI library crashed as its peers vanished). Now and then it
            // registers a rank it killed in the cleanup first ("EXIT CODE:
            // 9", or "EXIT STRING: Hangup (signal 1)" with exit status 1):
            // then only the ranks' MPI library (UCX's handler) says which
            // signal they caught, or, for signals it does not catch
            // (SIGTERM, SIGINT), the program that sent itself one.
            Expect::Signal(sig) => {
                let cleanup =
                    reported("EXIT CODE: 9\n") || reported("EXIT STRING: Hangup (signal 1)");
                let said = run.stderr.contains(&format!("Caught signal {sig} ("))
                    || run.stderr.contains(&format!("sends itself signal {sig}\n"));
                status.signal() == Some(sig)
                    || (status.code() == Some(sig) && reported(&format!("(signal {sig})")))
                    || (status.code().is_some() && reported(&format!("EXIT CODE: {sig}\n")))
                    || (status.code().is_some() && cleanup && said)
            }
        };
        if ok {
            Ok(())
        } else {
            // What the launcher and the ranks said last: a rare outcome
            // can then be told from the error alone.
            let last = |text: &str| {
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                lines[lines.len().saturating_sub(4)..].join(" | ")
            };
            Err(format!(
                "expected {self}, got {status}; stdout ends: {}; stderr ends: {}",
                last(&run.stdout),
                last(&run.stderr)
            ))
        }
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expect::Success => write!(f, "success"),
            Expect::Abort(code) => write!(f, "MPI_Abort with exit status {code}"),
            Expect::Exit(code) => write!(f, "exit status {code}"),
            Expect::Signal(sig) => write!(f, "death by signal {sig}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_named_in_hydras_banner_counts() {
        use std::os::unix::process::ExitStatusExt;
        let ran = |code: i32, stdout: &str, stderr: &str| RunOutput {
            command: String::new(),
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: stdout.into(),
            stderr: stderr.into(),
            elapsed: std::time::Duration::ZERO,
        };
        let run = |code: i32, stdout: &str| ran(code, stdout, "");
        let bus = Expect::Signal(libc::SIGBUS);
        assert!(bus.check(&run(7, "(signal 7)")).is_ok());
        assert!(bus.check(&run(15, "=   EXIT CODE: 7\n")).is_ok());
        assert!(bus.check(&run(15, "=   EXIT CODE: 15\n")).is_err());
        // A rank killed in the cleanup registered first (CI's run): the
        // ranks' own report names the signal, or nothing does.
        let caught = "[vm:30049:0:30049] Caught signal 7 (Bus error: nonexistent physical address)";
        assert!(bus.check(&ran(15, "=   EXIT CODE: 9\n", caught)).is_ok());
        assert!(bus.check(&run(15, "=   EXIT CODE: 9\n")).is_err());
        // Or one it hung up (a CI run here, exit status 1).
        let hangup = "=   YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Hangup (signal 1)\n";
        assert!(bus.check(&ran(1, hangup, caught)).is_ok());
        assert!(bus.check(&run(1, hangup)).is_err());
        // A signal UCX does not catch, as the program that sent it to
        // itself said (a CI run here: crash_sigterm, stderr empty).
        let term = Expect::Signal(libc::SIGTERM);
        let sent = "crash_sigterm: sends itself signal 15\n";
        assert!(term.check(&ran(1, hangup, sent)).is_ok());
        assert!(term.check(&run(1, hangup)).is_err());
        assert!(
            Expect::Signal(libc::SIGINT)
                .check(&ran(1, hangup, sent))
                .is_err()
        );
        assert!(term.check(&ran(1, "", sent)).is_err());
        // An exit status the launcher missed, as the program said it.
        let said = "crash_exit: exits with status 3\n";
        assert!(Expect::Exit(3).check(&ran(1, hangup, said)).is_ok());
        assert!(Expect::Exit(3).check(&run(1, hangup)).is_err());
        assert!(Expect::Exit(4).check(&ran(1, hangup, said)).is_err());
        assert!(
            Expect::Signal(libc::SIGSEGV)
                .check(&ran(15, "=   EXIT CODE: 9\n", caught))
                .is_err()
        );
        assert!(
            Expect::Signal(1)
                .check(&run(15, "=   EXIT CODE: 11\n"))
                .is_err()
        );
    }

    fn parse(text: &str) -> Result<Program> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prog.c");
        std::fs::write(&path, text).unwrap();
        Program::from_source(&path)
    }

    #[test]
    fn reads_ranks_and_expectation() {
        let p = parse("/* ranks: 2-4 */\n/* expect: signal SIGSEGV */\nint main;\n").unwrap();
        assert_eq!(p.name, "prog");
        assert_eq!(p.ranks, 2..=4);
        assert_eq!(p.expect, Expect::Signal(libc::SIGSEGV));
        assert_eq!(p.rank_counts(3).collect::<Vec<_>>(), vec![2, 3]);

        let p = parse("/* ranks: 1 */\n/* expect: exit 3 */\n").unwrap();
        assert_eq!((p.ranks, p.expect), (1..=1, Expect::Exit(3)));
        let p = parse("! ranks: 1-4\nprogram x\n").unwrap();
        assert_eq!((p.ranks, p.expect), (1..=4, Expect::Success));
        let p = parse("/* ranks: 2-3 */\n/* expect: abort 42 */\n").unwrap();
        assert_eq!(p.expect, Expect::Abort(42));
    }

    #[test]
    fn rejects_missing_or_malformed_headers() {
        for text in [
            "int main;\n",
            "/* ranks: 4-2 */\n",
            "/* ranks: 0-2 */\n",
            "/* ranks: two */\n",
            "/* ranks: 1-2 */\n/* expect: explode */\n",
            "/* ranks: 1-2 */\n/* expect: abort */\n",
            "/* ranks: 1-2 */\n/* expect: signal SIGWHAT */\n",
            "/* ranks: 1-2 */\n/* expect: exit three */\n",
        ] {
            let err = parse(text).unwrap_err();
            assert!(matches!(err, Error::Header { .. }), "{text:?}: {err}");
            assert!(err.to_string().contains("prog.c"), "{err}");
        }
    }

    #[test]
    fn every_program_in_the_tree_has_a_header() {
        let all = programs().unwrap();
        assert!(all.len() >= 30, "only {} programs", all.len());
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        for needed in [
            "halo2d",
            "halo3d",
            "microbench",
            "fortran_basic",
            "crash_abort",
        ] {
            assert!(names.contains(&needed), "{needed} missing from {names:?}");
        }
        assert_eq!(program("halo2d").unwrap().ranks, 1..=4);
    }
}
