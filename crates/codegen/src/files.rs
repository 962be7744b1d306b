//! Where the benchmark opens and deletes files. A trace records the file
//! names the application gave MPI_File_open and MPI_File_delete; replayed
//! as they are, a benchmark would write (zeros) over, and delete, files at
//! the recorded absolute paths. So absolute names are replayed only under
//! a directory the user names (`--io-dir DIR`: the file of the same name
//! in DIR); without it a trace that has them is refused. Relative names
//! stay relative to the benchmark's working directory, or go under DIR too
//! when it is given.

use mpigram_mpispec::{FUNCS, Signature, Value};
use std::path::Path;

/// The calls whose `filename` names a file to open or delete.
const FILE_CALLS: [&str; 2] = ["MPI_File_open", "MPI_File_delete"];

/// Maps the file names of `sigs` as described above; the first absolute
/// name, if there is one and no `io_dir`.
pub fn map_file_names(sigs: &mut [Signature], io_dir: Option<&Path>) -> Result<(), String> {
    for sig in sigs {
        let func = &FUNCS[sig.func as usize];
        if !FILE_CALLS.contains(&func.name) {
            continue;
        }
        let Some(i) = func.params.iter().position(|p| p.name == "filename") else {
            continue;
        };
        if let Some(Value::Str(Some(name))) = sig.args.get_mut(i) {
            *name = map_name(name, io_dir)?;
        }
    }
    Ok(())
}

fn map_name(name: &[u8], io_dir: Option<&Path>) -> Result<Vec<u8>, String> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(name));
    match (io_dir, path.file_name()) {
        (Some(dir), Some(file)) => Ok(dir.join(file).as_os_str().as_bytes().to_vec()),
        (None, _) if path.is_absolute() => Err(format!(
            "the trace opens or deletes {}: replaying it would write there; give --io-dir DIR to use DIR instead",
            path.display()
        )),
        _ => Ok(name.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::map_name;
    use std::path::Path;

    #[test]
    fn absolute_names_need_a_directory_of_the_users() {
        let dir = Some(Path::new("/scratch/io"));
        assert_eq!(
            map_name(b"/home/me/results/out.dat", dir).unwrap(),
            b"/scratch/io/out.dat"
        );
        assert_eq!(map_name(b"out.dat", dir).unwrap(), b"/scratch/io/out.dat");
        assert_eq!(map_name(b"data/out.dat", None).unwrap(), b"data/out.dat");
        let e = map_name(b"/home/me/results/out.dat", None).unwrap_err();
        assert!(
            e.contains("/home/me/results/out.dat") && e.contains("--io-dir"),
            "{e}"
        );
    }
}
