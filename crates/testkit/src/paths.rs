//! Where things are: the workspace, its MPI test programs and the build cache.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The root of the Cargo workspace (the directory of the top-level Cargo.toml).
pub fn workspace_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        // This crate lives at <root>/crates/testkit.
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        manifest
            .ancestors()
            .nth(2)
            .unwrap_or(manifest)
            .to_path_buf()
    })
}

/// `tests/mpi`: the C and Fortran test programs, `common.h` and the yield preload.
pub fn mpi_tests_dir() -> PathBuf {
    workspace_root().join("tests").join("mpi")
}

/// Cargo's target directory (`CARGO_TARGET_DIR` if set, else `<root>/target`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace_root().join(dir),
        _ => workspace_root().join("target"),
    }
}

/// Where compiled test programs and the yield preload are cached:
/// `<target>/mpi-tests/<flags>`, one subdirectory per set of compiler flags
/// so that changing the flags rebuilds everything.
pub fn cache_dir() -> PathBuf {
    target_dir()
        .join("mpi-tests")
        .join(crate::compile::flags_fingerprint())
}
