//! Errors of reading a trace: one line naming the file and what is wrong.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The container itself is damaged or foreign.
    #[error(transparent)]
    Format(#[from] mpigram_format::Error),
    /// A section's contents do not decode.
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
    pub(crate) fn payload(file: &str, section: &'static str, message: impl ToString) -> Error {
        Error::Payload {
            file: file.to_owned(),
            section,
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
