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
