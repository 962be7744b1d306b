//! Shared by the tests of bad input.

use std::path::Path;

/// `e` is one line that names `file`.
pub fn one_line_naming(e: &impl std::fmt::Display, file: &Path) {
    let text = e.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(text.contains(name), "{text} does not name {name}");
}
