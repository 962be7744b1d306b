//! The tracer owns its trace directory for a run. Before PMPI_Init each
//! traced rank locks its own byte of `DIR/.lock` (byte N for rank N, a
//! POSIX record lock: the kernel drops it when the process dies, a forked
//! child does not inherit it). A byte already locked means another run is
//! alive in the directory with that rank: the census then turns tracing off
//! on every rank of this run, with one message, instead of the two runs
//! deleting each other's journals and traces. Once the run is known to own
//! the directory, each rank removes what an earlier run left under its own
//! rank's names (an aborted run's rank file and journal, an unmerged run's
//! rank file, a verification stream, a temporary file a killed write left),
//! and the lowest traced rank removes the whole-run file (and its
//! temporaries) and the files of ranks no process of this run owns (when
//! no live process locks them).

use mpigram_trace::{
    RUN_FILE_NAME, checkpoint_file_name, journal_file_name, rank_file_name, verify_file_name,
};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::OnceLock;

/// The lock file, held open for the life of the process (closing any
/// descriptor of it would drop the process's record locks).
static LOCK: OnceLock<File> = OnceLock::new();

/// What locking this rank's byte found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// This process holds rank N's byte now.
    Held,
    /// Another live process (this pid, 0 if not known) holds it.
    Busy(u32),
    /// The lock could not be taken (no such directory, a link planted as
    /// the lock file, a file system without locks): traced as before.
    Unavailable,
}

/// Locks `rank`'s byte of `dir/.lock`.
pub fn claim(dir: &Path, rank: u32) -> Claim {
    let file = match LOCK.get() {
        Some(file) => file,
        None => {
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(dir.join(".lock"));
            match opened {
                Ok(file) => LOCK.get_or_init(|| file),
                Err(_) => return Claim::Unavailable,
            }
        }
    };
    let mut lock = byte_lock(rank);
    // SAFETY: fcntl on an open descriptor with a valid flock.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) } == 0 {
        return Claim::Held;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EACCES | libc::EAGAIN) => {
            // SAFETY: as above; F_GETLK writes the holder into `lock`.
            let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
            let holder = if asked == 0 && lock.l_type != libc::F_UNLCK as i16 {
                u32::try_from(lock.l_pid).unwrap_or(0)
            } else {
                0
            };
            Claim::Busy(holder)
        }
        _ => Claim::Unavailable,
    }
}

/// Whether a live process holds `rank`'s byte (this process does not ask
/// for its own).
fn locked_by_another(rank: u32) -> bool {
    let Some(file) = LOCK.get() else {
        return false;
    };
    let mut lock = byte_lock(rank);
    // SAFETY: fcntl on an open descriptor with a valid flock.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
    asked != 0 || lock.l_type != libc::F_UNLCK as i16
}

fn byte_lock(rank: u32) -> libc::flock {
    // SAFETY: a plain C struct, all zeroes valid.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as i16;
    lock.l_whence = libc::SEEK_SET as i16;
    lock.l_start = libc::off_t::from(rank);
    lock.l_len = 1;
    lock
}

/// The files under rank `rank`'s names.
fn rank_files(rank: u32) -> [String; 4] {
    [
        rank_file_name(rank),
        journal_file_name(rank),
        checkpoint_file_name(rank),
        verify_file_name(rank),
    ]
}

/// The run owns `dir`: removes what earlier runs left there. Every traced
/// rank removes its own rank's files; the lowest one (`sweep`) also the
/// whole-run file and the files of ranks that are not `traced` in this
/// run and that no live process locks.
pub fn clear_earlier_runs(dir: &Path, rank: u32, sweep: bool, traced: &dyn Fn(u32) -> bool) {
    let mut names: Vec<String> = rank_files(rank).into();
    if sweep {
        names.push(RUN_FILE_NAME.into());
    }
    // Rank files of other ranks, and what writers killed in the middle of
    // a write left (`.NAME.tmp-PID-N`, see `mpigram_format::create_temp`):
    // the whole-run file's (written at MPI_Finalize only), this rank's, and
    // other ranks' that no process of this run or a live one owns.
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    for entry in entries {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let temporary = mpigram_format::temp_of(name).map(|(of, _)| of);
        let of = temporary.unwrap_or(name);
        let remove = match rank_in_name(of) {
            Some(r) if r == rank => temporary.is_some(),
            Some(r) => sweep && !traced(r) && !locked_by_another(r),
            None => sweep && temporary == Some(RUN_FILE_NAME),
        };
        if remove {
            names.push(name.to_owned());
        }
    }
    for name in names {
        match std::fs::remove_file(dir.join(&name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => crate::message::say(&format!(
                "cannot remove {} of an earlier run: {e}",
                dir.join(&name).display()
            )),
            _ => {}
        }
    }
}

/// The rank a file of a rank's names is for.
fn rank_in_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("rank")?;
    let end = digits.find('.')?;
    let rank = digits[..end].parse().ok()?;
    rank_files(rank).contains(&name.to_owned()).then_some(rank)
}

#[cfg(test)]
mod tests {
    use super::rank_in_name;

    #[test]
    fn rank_files_are_recognised_by_name() {
        assert_eq!(rank_in_name("rank12.mgr"), Some(12));
        assert_eq!(rank_in_name("rank3.journal"), Some(3));
        assert_eq!(rank_in_name("rank3.checkpoint"), Some(3));
        assert_eq!(rank_in_name("rank0.verify"), Some(0));
        for other in [
            "trace.mgr",
            "rank.mgr",
            "rank1.mgr.bak",
            "rank+1.mgr",
            ".rank1.mgr.tmp-1-0",
        ] {
            assert_eq!(rank_in_name(other), None, "{other}");
        }
    }
}
