//! Reading mpigram traces: every call of every rank with its arguments
//! restored to absolute values ([`decode`]), and summaries of a trace
//! computed from its grammar ([`summary`]); call sites as places in the
//! grammar ([`sites`]), shared by the [`profile`] and the [`critical_path`].

pub mod critical_path;
pub mod decode;
pub mod diff;
pub mod export;
mod json;
pub mod lint;
pub mod matching;
pub mod members;
pub mod parallel;
pub mod profile;
mod replay;
pub mod sites;
mod spill;
pub mod stats;
pub mod summary;
pub mod timeline;
