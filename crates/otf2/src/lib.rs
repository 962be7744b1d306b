//! OTF2 archives of mpigram traces, for Vampir, Scalasca, Score-P's tools
//! and any other OTF2 reader ([`export()`]), written with the OTF2 library
//! (`libotf2`, through `mpigram-otf2-sys`) behind a small safe writer
//! ([`archive`]).

pub mod archive;
pub mod export;
mod regions;

pub use export::{ARCHIVE_NAME, Otf2ExportError, Otf2Summary, export};
