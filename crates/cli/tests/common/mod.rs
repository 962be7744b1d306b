//! Running the `mpigram` command as a user does.

#![allow(dead_code)]

use std::process::{Command, Output};

pub fn mpigram(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(args)
        .output()
        .unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
