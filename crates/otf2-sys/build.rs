//! Links libotf2. Its directory comes from `otf2-config --ldflags` when that
//! tool is on the PATH (Debian's `libotf2-trace-dev` installs it), else the
//! linker's default search path is used.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PATH");
    if let Ok(out) = Command::new("otf2-config").arg("--ldflags").output()
        && out.status.success()
    {
        for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            }
        }
    }
    println!("cargo:rustc-link-lib=otf2");
}
