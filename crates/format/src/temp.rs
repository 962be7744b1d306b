//! Files that appear whole under their final name: written under a
//! hidden temporary name beside it, then renamed over it. The temporary
//! file is created exclusively (O_CREAT|O_EXCL: a symbolic link or any
//! other file already there is never opened, let alone written through),
//! under a name with a random part, tried again under another name if it
//! is taken: a directory others can write may hold planted links under
//! every name they can guess. The rename replaces whatever entry has the
//! final name (a link is replaced, not followed).

use std::collections::hash_map::RandomState;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names tried before giving up: a random 64-bit part taken 16 times in a
/// row is someone else's file only if the directory is being flooded.
const ATTEMPTS: u32 = 16;

/// Creates a new, empty temporary file beside `path`, named
/// `.NAME.tmp-PID-N` (readers ignore hidden files), readable and writable
/// by its owner only until it is renamed.
pub fn create_temp(path: &Path) -> io::Result<(File, PathBuf)> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let Some(file_name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path has no file name",
        ));
    };
    let mut last = None;
    for attempt in 0..ATTEMPTS {
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        // The first name is plain (pid and serial); a taken name is
        // followed by random ones.
        let n = if attempt == 0 { serial } else { random(serial) };
        let tmp = path.with_file_name(format!(
            ".{}.tmp-{}-{n}",
            file_name.to_string_lossy(),
            std::process::id(),
        ));
        match new_file(&tmp) {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name")))
}

/// What a temporary file's name says: the final name it was written for
/// and the id of the process that wrote it (`.NAME.tmp-PID-N`, see
/// [`create_temp`]); `None` for any other name.
pub fn temp_of(name: &str) -> Option<(&str, u32)> {
    let (of, rest) = name.strip_prefix('.')?.rsplit_once(".tmp-")?;
    let (pid, n) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if of.is_empty() || !digits(n) {
        return None;
    }
    Some((of, pid.parse().ok().filter(|_| digits(pid))?))
}

/// Replaces `path` with a file holding `bytes`, through a temporary file.
pub fn replace_with(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (mut file, tmp) = create_temp(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Creates `path`, which must not exist (a link there is not followed).
fn new_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// A number no one can guess: the process's random hash keys, stirred.
fn random(salt: u64) -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(salt);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_say_what_they_were_written_for() {
        let dir = tempfile::tempdir().unwrap();
        let (_, tmp) = create_temp(&dir.path().join("trace.mgr")).unwrap();
        let name = tmp.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_of(name), Some(("trace.mgr", std::process::id())));
        assert_eq!(
            temp_of(".rank3.journal.tmp-77-18446744073709551615"),
            Some(("rank3.journal", 77))
        );
        for other in [
            "trace.mgr",
            ".trace.mgr",
            ".x.tmp-1",
            ".x.tmp--1",
            ".tmp-1-2",
            ".x.tmp-a-1",
        ] {
            assert_eq!(temp_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_planted_link_under_the_first_name_is_neither_followed_nor_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let path = dir.path().join("out");
        // Links under every plain name this test process may try.
        for n in 0..4096 {
            let name = format!(".out.tmp-{}-{n}", std::process::id());
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
        replace_with(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }
}
