//! `--times best|lossy|lossless`: which recorded per-call times a command
//! reads (a trace recorded with `MPIGRAM_TIMING=lossy,lossless` has both).

use clap::ValueEnum;
use mpigram_analysis::timeline::Source;

#[derive(Clone, Copy, ValueEnum)]
pub enum Times {
    /// Exact times where recorded, else lossy ones.
    Best,
    Lossy,
    Lossless,
}

impl From<Times> for Source {
    fn from(times: Times) -> Source {
        match times {
            Times::Best => Source::Best,
            Times::Lossy => Source::Lossy,
            Times::Lossless => Source::Lossless,
        }
    }
}
