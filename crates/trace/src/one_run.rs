//! A trace directory holds one run. Files of another run (an earlier
//! run's leftovers, a rank file copied in) must not be mixed into it: the
//! readers check that every rank's metadata names the same run and world
//! size, and that a rank's own file holds the rank its name says.

use crate::{Error, RankMeta};
use std::path::Path;

/// Where a rank's metadata was read, for the check.
pub(crate) struct Source<'a> {
    pub file: &'a Path,
    /// The rank the file's name says (`rank<N>.mgr`), if it names one.
    pub named: Option<u32>,
    pub meta: &'a RankMeta,
}

/// Refuses a mixture of runs, naming two files that disagree.
pub(crate) fn check(dir: &Path, sources: &[Source<'_>]) -> Result<(), Error> {
    for s in sources {
        if let Some(named) = s.named.filter(|&n| n != s.meta.rank) {
            return Err(Error::dir(
                s.file,
                format!(
                    "holds rank {}, but its name says rank {named}: not this run's file",
                    s.meta.rank
                ),
            ));
        }
    }
    let Some(first) = sources.first() else {
        return Ok(());
    };
    let differ = |a: &RankMeta, b: &RankMeta| {
        a.world_size != b.world_size || (a.run != 0 && b.run != 0 && a.run != b.run)
    };
    // Run ids are compared with the first one known (files of older
    // versions have none), world sizes with the first file's.
    let known = sources.iter().find(|s| s.meta.run != 0).unwrap_or(first);
    for other in sources {
        for base in [first, known] {
            if differ(base.meta, other.meta) {
                return Err(Error::dir(
                    dir,
                    format!(
                        "files of different runs: {} and {}; trace each run into a directory of its own",
                        describe(base),
                        describe(other)
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn describe(s: &Source<'_>) -> String {
    let name = s.file.file_name().unwrap_or_default().to_string_lossy();
    format!(
        "{name} (run {:016x}, {} ranks)",
        s.meta.run, s.meta.world_size
    )
}

/// Hidden temporary files (`.NAME.tmp-PID-N`, `mpigram_format::create_temp`)
/// of this directory's trace files whose writer is gone: a write killed
/// midway (rank 0 writing `trace.mgr` at MPI_Finalize, a rank writing its
/// own file or a checkpoint). Readers never read them (a write that
/// did not finish is not a trace) and do not remove them (the directory
/// is not theirs to change; the next run into it does): one note each,
/// saying whence the ranks `from_journals` were read instead. A writer
/// whose process still runs on this host is writing now: not noted.
pub(crate) fn interrupted_writes(dir: &Path, from_journals: &[u32]) -> Vec<String> {
    let ours = |of: &str| {
        of == crate::RUN_FILE_NAME
            || [
                ".mgr",
                crate::journal::JOURNAL_SUFFIX,
                crate::journal::CHECKPOINT_SUFFIX,
            ]
            .iter()
            .any(|suffix| crate::rank_in_file_name(of, suffix).is_some())
    };
    let mut left: Vec<(String, String, u32)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let (of, pid) = mpigram_format::temp_of(&name)?;
            let gone = !Path::new(&format!("/proc/{pid}")).exists();
            (ours(of) && gone).then(|| (name.clone(), of.to_owned(), pid))
        })
        .collect();
    left.sort();
    let instead = match from_journals {
        [] => String::new(),
        [rank] => format!("; rank {rank} read from its crash journal"),
        ranks => format!("; ranks {} read from their crash journals", ranges(ranks)),
    };
    left.into_iter()
        .map(|(name, of, pid)| {
            format!(
                "{name}: left by a write of {of} that was interrupted (process {pid} is gone); ignored{instead}"
            )
        })
        .collect()
}

/// `0-3, 5, 7-8`: sorted ranks as ranges.
fn ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(match j - i {
            0 => ranks[i].to_string(),
            _ => format!("{}-{}", ranks[i], ranks[j]),
        });
        i = j + 1;
    }
    out.join(", ")
}
