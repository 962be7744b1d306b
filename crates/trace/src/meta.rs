//! The META section: who wrote a rank's file, when, and how the rank ended.

use mpigram_varint::{ByteReader, DecodeError, PutVarint};

/// How call durations were recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingMode {
    /// Per call signature: count, total, min and max duration.
    Aggregated,
}

impl TimingMode {
    pub fn name(self) -> &'static str {
        match self {
            TimingMode::Aggregated => "aggregated",
        }
    }
}

/// How the rank's recording ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// MPI_Finalize was called: the trace is complete.
    Finalized,
    /// The process exited without calling MPI_Finalize.
    ExitWithoutFinalize,
    /// The rank called MPI_Abort.
    Abort,
    /// The rank died of a signal its handler saw (SIGSEGV, SIGTERM, ...).
    Signal(i32),
    /// The rank left no word of how it ended: it was killed without a
    /// chance to react (SIGKILL, as the launcher does to the other ranks
    /// after one calls MPI_Abort or dies; or the node went down). Its
    /// calls come from its crash journal.
    Killed,
}

impl Ending {
    pub fn is_complete(self) -> bool {
        self == Ending::Finalized
    }

    pub fn describe(self) -> String {
        match self {
            Ending::Finalized => "finalized".into(),
            Ending::ExitWithoutFinalize => "exited without MPI_Finalize".into(),
            Ending::Abort => "called MPI_Abort".into(),
            Ending::Signal(s) => match signal_name(s) {
                Some(name) => format!("killed by signal {s} ({name})"),
                None => format!("killed by signal {s}"),
            },
            Ending::Killed => "was killed without a word (SIGKILL, e.g. by the launcher after another rank's MPI_Abort or death)".into(),
        }
    }
}

/// Names of the signals the tracer notes (Linux numbers).
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// What a rank's file says about the rank and its recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankMeta {
    /// Rank in MPI_COMM_WORLD.
    pub rank: u32,
    /// Size of MPI_COMM_WORLD (0 if MPI was never initialised).
    pub world_size: u32,
    pub pid: u32,
    pub host: String,
    /// MPI_Get_library_version's text.
    pub mpi_library: String,
    pub timing: TimingMode,
    /// Calls recorded.
    pub calls: u64,
    /// CLOCK_MONOTONIC nanoseconds when recording started and ended.
    pub start_ns: u64,
    pub end_ns: u64,
    pub ending: Ending,
    /// Allocations the tracer made while recording calls (they stop once
    /// the program's behaviour has been seen).
    pub recorder_allocations: u64,
}

impl RankMeta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_u32(self.rank);
        out.put_u32(self.world_size);
        out.put_u32(self.pid);
        out.put_str(&self.host);
        out.put_str(&self.mpi_library);
        out.put_u32(match self.timing {
            TimingMode::Aggregated => 0,
        });
        out.put_u64(self.calls);
        out.put_u64(self.start_ns);
        out.put_u64(self.end_ns);
        match self.ending {
            Ending::Finalized => out.put_u32(0),
            Ending::ExitWithoutFinalize => out.put_u32(1),
            Ending::Abort => out.put_u32(2),
            Ending::Signal(s) => {
                out.put_u32(3);
                out.put_i64(i64::from(s));
            }
            Ending::Killed => out.put_u32(4),
        }
        out.put_u64(self.recorder_allocations);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<RankMeta, DecodeError> {
        let mut r = ByteReader::new(bytes);
        let rank = r.u32()?;
        let world_size = r.u32()?;
        let pid = r.u32()?;
        let host = r.str()?.to_owned();
        let mpi_library = r.str()?.to_owned();
        let at = r.position();
        let timing = match r.u32()? {
            0 => TimingMode::Aggregated,
            other => return Err(out_of_range(at, other.into(), "timing mode")),
        };
        let calls = r.u64()?;
        let start_ns = r.u64()?;
        let end_ns = r.u64()?;
        let at = r.position();
        let ending = match r.u32()? {
            0 => Ending::Finalized,
            1 => Ending::ExitWithoutFinalize,
            2 => Ending::Abort,
            3 => Ending::Signal(r.i64()?.clamp(0, 255) as i32),
            4 => Ending::Killed,
            other => return Err(out_of_range(at, other.into(), "ending")),
        };
        let recorder_allocations = r.u64()?;
        r.finish()?;
        Ok(RankMeta {
            rank,
            world_size,
            pid,
            host,
            mpi_library,
            timing,
            calls,
            start_ns,
            end_ns,
            ending,
            recorder_allocations,
        })
    }
}

fn out_of_range(offset: usize, value: u64, target: &'static str) -> DecodeError {
    DecodeError {
        offset,
        kind: mpigram_varint::DecodeErrorKind::OutOfRange { value, target },
    }
}
