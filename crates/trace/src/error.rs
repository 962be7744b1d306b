//! Errors of reading a trace: one line naming the file and what is wrong.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The container itself is damaged or foreign: where a section is
    /// concerned, named as the payload errors name it.
    #[error("{}", located(.0))]
    Format(#[from] mpigram_format::Error),
    /// A section's contents do not decode (or the header's file kind is
    /// not the one expected: section "header").
    #[error("{file}: {section} section: {message}")]
    Payload {
        file: String,
        section: &'static str,
        message: String,
    },
    /// A crash journal is damaged, foreign, or does not fit its checkpoint.
    #[error("{file}: {message}")]
    Journal { file: String, message: String },
    /// The directory cannot be read or holds no trace.
    #[error("{path}: {message}")]
    Dir { path: String, message: String },
}

impl Error {
    /// Section `kind` of `file` does not decode: every error of a
    /// section's contents is made here, named by the section's kind.
    pub(crate) fn payload(file: &str, kind: u32, message: impl ToString) -> Error {
        Error::Payload {
            file: file.to_owned(),
            section: crate::section::name(kind),
            message: message.to_string(),
        }
    }

    /// The file's header says something this reader does not expect.
    pub(crate) fn header(file: &str, message: impl ToString) -> Error {
        Error::Payload {
            file: file.to_owned(),
            section: "header",
            message: message.to_string(),
        }
    }

    pub(crate) fn journal(file: &Path, message: impl ToString) -> Error {
        Error::Journal {
            file: file.display().to_string(),
            message: message.to_string(),
        }
    }

    pub(crate) fn dir(path: &Path, message: impl ToString) -> Error {
        Error::Dir {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }
}

/// A container error, with the section it concerns named by its kind's
/// name (`trace.mgr: LOSSY_TIMES section (kind 0x8, index 0, section 5 of
/// the table) at offset 4096: checksum mismatch ...`).
fn located(e: &mpigram_format::Error) -> String {
    let Some(s) = e.section() else {
        return e.to_string();
    };
    let at = e
        .offset()
        .map(|o| format!(" at offset {o}"))
        .unwrap_or_default();
    format!(
        "{}: {} section (kind {:#x}, index {}, section {} of the table){at}: {}",
        e.file(),
        crate::section::name(s.kind),
        s.kind,
        s.index,
        s.position,
        e.kind()
    )
}
