//! The META section: who wrote a rank's file, when, and how the rank ended.

use mpigram_mpispec::FuncId;
use mpigram_varint::{ByteReader, DecodeError, PutVarint};

/// How call times were recorded. Aggregated timing (per call signature:
/// count, total, min and max duration) is always kept; per-call times are
/// kept as lossy codes, exactly, or both (to compare them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timing {
    /// Lossy codes of every call's interval and duration, with these bases.
    pub lossy: Option<Bases>,
    /// Exact times of every call.
    pub lossless: bool,
}

/// The bases of lossy timing: one for all functions but those named.
#[derive(Clone, Debug, PartialEq)]
pub struct Bases {
    pub default: f64,
    /// (MPI function name, base) overrides.
    pub by_func: Vec<(String, f64)>,
}

impl Bases {
    /// Reads `MPIGRAM_TIMING_BASE`: a base for all functions, then
    /// optional `MPI_Name=base` overrides, comma-separated
    /// (`1.1,MPI_Wait=1.5`); or only overrides, with the default base for
    /// the rest. Names must be MPI functions this mpigram knows.
    pub fn parse(spec: &str) -> Result<Bases, String> {
        let mut bases = Bases {
            default: crate::timing::DEFAULT_BASE,
            by_func: Vec::new(),
        };
        let number = |s: &str| -> Result<f64, String> {
            let b: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("{s:?} is not a number"))?;
            crate::timing::check_base(b).map(|()| b)
        };
        let items = spec.split(',').map(str::trim).filter(|s| !s.is_empty());
        for (i, item) in items.enumerate() {
            match item.split_once('=') {
                None if i == 0 => bases.default = number(item)?,
                None => return Err(format!("{item:?}: expected MPI_Name=base")),
                Some((name, b)) => {
                    let name = name.trim();
                    if !mpigram_mpispec::FUNCS.iter().any(|f| f.name == name) {
                        return Err(format!("{name:?} is not an MPI function"));
                    }
                    if bases.by_func.iter().any(|(f, _)| f == name) {
                        return Err(format!("{name} is given two bases"));
                    }
                    bases.by_func.push((name.to_owned(), number(b)?));
                }
            }
        }
        Ok(bases)
    }

    /// The base of calls of `func`.
    pub fn of(&self, func: &str) -> f64 {
        self.by_func
            .iter()
            .find(|(f, _)| f == func)
            .map_or(self.default, |&(_, b)| b)
    }
}

impl Timing {
    /// Reads `MPIGRAM_TIMING` (`aggregated`, `lossy`, `lossless`, or
    /// `lossy,lossless` to record both) and, for lossy, the bases.
    pub fn parse(mode: &str, bases: Option<&str>) -> Result<Timing, String> {
        let mut timing = Timing::default();
        for m in mode.split(',').map(str::trim) {
            match m {
                "aggregated" | "" => {}
                "lossy" => {
                    timing.lossy = Some(match bases {
                        Some(spec) => Bases::parse(spec)?,
                        None => Bases::parse("")?,
                    })
                }
                "lossless" => timing.lossless = true,
                other => {
                    return Err(format!(
                        "timing mode {other:?} is not aggregated, lossy or lossless"
                    ));
                }
            }
        }
        Ok(timing)
    }

    /// `aggregated`, `lossy (base 1.1)`, `lossless`, `lossy (base 1.1) and lossless`.
    pub fn describe(&self) -> String {
        let lossy = self.lossy.as_ref().map(|b| {
            let mut s = format!("lossy (base {}", b.default);
            for (f, base) in &b.by_func {
                s += &format!(", {f} {base}");
            }
            s + ")"
        });
        match (lossy, self.lossless) {
            (None, false) => "aggregated".into(),
            (None, true) => "lossless".into(),
            (Some(l), false) => l,
            (Some(l), true) => format!("{l} and lossless"),
        }
    }

    /// Whether every call's start and end were recorded.
    pub fn per_call(&self) -> bool {
        self.lossy.is_some() || self.lossless
    }

    /// Appends the mode as META (and the crash journal's header) hold it:
    /// lossy (0, or 1 and its bases), lossless (0/1).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match &self.lossy {
            None => out.put_u32(0),
            Some(b) => {
                out.put_u32(1);
                out.put_u64(b.default.to_bits());
                out.put_u64(b.by_func.len() as u64);
                for (f, base) in &b.by_func {
                    out.put_str(f);
                    out.put_u64(base.to_bits());
                }
            }
        }
        out.put_u32(u32::from(self.lossless));
    }

    pub(crate) fn decode(r: &mut ByteReader<'_>) -> Result<Timing, DecodeError> {
        let at = r.position();
        let lossy = match r.u32()? {
            0 => None,
            1 => {
                let default = base(r)?;
                let n = r.count()?;
                let mut by_func = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let f = r.str()?.to_owned();
                    by_func.push((f, base(r)?));
                }
                Some(Bases { default, by_func })
            }
            other => return Err(out_of_range(at, other.into(), "lossy timing flag")),
        };
        let at = r.position();
        let lossless = match r.u32()? {
            0 => false,
            1 => true,
            other => return Err(out_of_range(at, other.into(), "lossless timing flag")),
        };
        Ok(Timing { lossy, lossless })
    }
}

/// The rank's clock against rank 0's, measured by message round trips.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockSync {
    /// When it was measured: CLOCK_MONOTONIC nanoseconds of this rank.
    pub at_ns: u64,
    /// This rank's clock minus rank 0's, in nanoseconds.
    pub offset_ns: i64,
    /// How far the true offset may be from `offset_ns` (half the best
    /// round trip, summed along the tree of measurements).
    pub error_ns: u64,
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

/// Calls a rank recorded that its trace does not hold: a write failed (a
/// full disk) after its crash journal had stopped, so the trace ends
/// early.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lost {
    /// The trace holds every call the rank recorded.
    #[default]
    None,
    /// This many calls (at least, above 4,294,967,294) are missing at its end.
    Calls(u64),
    /// Calls are missing at its end; how many is not known (the rank died
    /// after its journal stopped).
    Unknown,
}

impl Lost {
    /// As META stores it: 0 none, 1 unknown, n + 2 for n calls.
    pub(crate) fn code(self) -> u64 {
        match self {
            Lost::None => 0,
            Lost::Unknown => 1,
            Lost::Calls(n) => n.saturating_add(2),
        }
    }

    pub(crate) fn of_code(code: u64) -> Lost {
        match code {
            0 => Lost::None,
            1 => Lost::Unknown,
            n => Lost::Calls(n - 2),
        }
    }
}

/// This machine's host name, as a rank's metadata records it (Linux's
/// `/proc/sys/kernel/hostname`, what gethostname(2) gives; empty if
/// unknown).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim_end_matches('\n').to_owned())
        .unwrap_or_default()
}

/// What a rank's file says about the rank and its recording.
#[derive(Clone, Debug, PartialEq)]
pub struct RankMeta {
    /// Rank in MPI_COMM_WORLD.
    pub rank: u32,
    /// Size of MPI_COMM_WORLD (0 if MPI was never initialised).
    pub world_size: u32,
    pub pid: u32,
    pub host: String,
    /// MPI_Get_library_version's text.
    pub mpi_library: String,
    pub timing: Timing,
    /// Calls recorded.
    pub calls: u64,
    /// CLOCK_MONOTONIC nanoseconds when recording started and ended.
    pub start_ns: u64,
    pub end_ns: u64,
    pub ending: Ending,
    /// Allocations the tracer made while recording calls (they stop once
    /// the program's behaviour has been seen).
    pub recorder_allocations: u64,
    /// Nanoseconds per clock tick: per-call times are ticks since
    /// `start_ns`.
    pub ns_per_tick: f64,
    /// Processors the rank's process could run on (its CPU affinity); 0:
    /// not known.
    pub cpus: u32,
    /// The rank's share of a processor between its MPI calls: the CPU time
    /// of its thread over the wall time of the gaps the tracer sampled (one
    /// in about a millisecond), to `CPU_SHARE_STEPS` steps a doubling.
    /// Below 1 where the rank waited for a processor (more ranks than
    /// processors) or blocked outside MPI. `None`: not measured.
    pub cpu_share: Option<f64>,
    /// Offsets to rank 0's clock, measured at MPI_Init and MPI_Finalize
    /// (empty if they could not be measured).
    pub clock_sync: Vec<ClockSync>,
    /// The run: the same number on every rank of one run, another on every
    /// other run (0: not known, as in files of older mpigram versions).
    pub run: u64,
    /// Calls recorded but not in the trace.
    pub lost: Lost,
    /// The MPI function the rank was inside when it ended (the call did
    /// not return, so it is not among its calls): MPI ended the process
    /// in it (a fatal error handler, MPI_Abort of another rank) or it was
    /// killed while blocked in it.
    pub ended_in: Option<FuncId>,
}

impl RankMeta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_u32(self.rank);
        out.put_u32(self.world_size);
        out.put_u32(self.pid);
        out.put_str(&self.host);
        out.put_str(&self.mpi_library);
        self.timing.encode(&mut out);
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
        out.put_u64(self.ns_per_tick.to_bits());
        out.put_u64(self.clock_sync.len() as u64);
        for s in &self.clock_sync {
            out.put_u64(s.at_ns);
            out.put_i64(s.offset_ns);
            out.put_u64(s.error_ns);
        }
        out.put_u64(self.run);
        out.put_u64(self.lost.code());
        out.put_u64(ended_in_code(self.ended_in));
        out.put_u32(self.cpus);
        out.put_u64(cpu_share_code(self.cpu_share));
        out
    }

    /// Whether the trace holds the rank's every call up to MPI_Finalize.
    pub fn is_complete(&self) -> bool {
        self.ending.is_complete() && self.lost == Lost::None
    }

    /// How the rank's record ended, for people: its ending, and the calls
    /// lost at its end if any.
    pub fn describe_end(&self) -> String {
        let mut ending = self.ending.describe();
        if let Some(func) = self.ended_in {
            ending += &format!(
                ", inside {} (the call did not return: it is not in the trace)",
                func_name(func)
            );
        }
        match self.lost {
            Lost::None => ending,
            Lost::Calls(n) => {
                format!(
                    "its trace ends early, {n} calls lost (a write failed; the rank {ending} after them)"
                )
            }
            Lost::Unknown => format!(
                "its trace ends early, calls lost (a write failed; how many is not known; the rank {ending} after them)"
            ),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<RankMeta, DecodeError> {
        let mut r = ByteReader::new(bytes);
        let rank = r.u32()?;
        let world_size = r.u32()?;
        let pid = r.u32()?;
        let host = r.str()?.to_owned();
        let mpi_library = r.str()?.to_owned();
        let timing = Timing::decode(&mut r)?;
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
        let at = r.position();
        let ns_per_tick = f64::from_bits(r.u64()?);
        if !(ns_per_tick.is_finite() && ns_per_tick > 0.0) {
            return Err(out_of_range(
                at,
                ns_per_tick.to_bits(),
                "nanoseconds per tick",
            ));
        }
        let n = r.count()?;
        let mut clock_sync = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            clock_sync.push(ClockSync {
                at_ns: r.u64()?,
                offset_ns: r.i64()?,
                error_ns: r.u64()?,
            });
        }
        // Added in a later minor version: absent from older files.
        let run = if r.is_empty() { 0 } else { r.u64()? };
        let lost = Lost::of_code(if r.is_empty() { 0 } else { r.u64()? });
        let at = r.position();
        let code = if r.is_empty() { 0 } else { r.u64()? };
        let ended_in =
            ended_in_of_code(code).ok_or_else(|| out_of_range(at, code, "MPI function number"))?;
        let cpus = if r.is_empty() { 0 } else { r.u32()? };
        let cpu_share = cpu_share_of_code(if r.is_empty() { 0 } else { r.u64()? });
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
            ns_per_tick,
            cpus,
            cpu_share,
            clock_sync,
            run,
            lost,
            ended_in,
        })
    }
}

/// Steps of a rank's CPU share per doubling as stored (about 1.1 % each).
pub const CPU_SHARE_STEPS: f64 = 64.0;

/// A CPU share as stored: 0 none, else 1 plus its steps below 1 (a share
/// of 1 is 1, a half 65, an eighth 193).
pub(crate) fn cpu_share_code(share: Option<f64>) -> u64 {
    share.map_or(0, |s| {
        let below = -s.clamp(f64::MIN_POSITIVE, 1.0).log2() * CPU_SHARE_STEPS;
        1 + below.round().min(u32::MAX as f64) as u64
    })
}

/// `share` as a trace stores it (to `CPU_SHARE_STEPS` steps a doubling).
pub fn stored_cpu_share(share: f64) -> f64 {
    cpu_share_of_code(cpu_share_code(Some(share))).unwrap_or(1.0)
}

/// The share of a [`cpu_share_code`].
pub(crate) fn cpu_share_of_code(code: u64) -> Option<f64> {
    (code > 0).then(|| (-((code - 1) as f64) / CPU_SHARE_STEPS).exp2())
}

/// The function a rank ended in as META (and PARTS) store it: 0 none,
/// else its number plus 1.
pub(crate) fn ended_in_code(func: Option<FuncId>) -> u64 {
    func.map_or(0, |f| u64::from(f) + 1)
}

/// The function of an [`ended_in_code`]; `None` if no MPI function has
/// that number.
pub(crate) fn ended_in_of_code(code: u64) -> Option<Option<FuncId>> {
    match code {
        0 => Some(None),
        c => FuncId::try_from(c - 1)
            .ok()
            .filter(|&f| usize::from(f) < mpigram_mpispec::FUNCS.len())
            .map(Some),
    }
}

/// An MPI function's name.
pub fn func_name(func: FuncId) -> &'static str {
    mpigram_mpispec::FUNCS
        .get(usize::from(func))
        .map_or("an unknown MPI function", |f| f.name)
}

/// A lossy base, refused unless the bins can be built from it.
fn base(r: &mut ByteReader<'_>) -> Result<f64, DecodeError> {
    let at = r.position();
    let b = f64::from_bits(r.u64()?);
    if crate::timing::check_base(b).is_err() {
        return Err(out_of_range(at, b.to_bits(), "lossy timing base"));
    }
    Ok(b)
}

pub(crate) fn out_of_range(offset: usize, value: u64, target: &'static str) -> DecodeError {
    DecodeError {
        offset,
        kind: mpigram_varint::DecodeErrorKind::OutOfRange { value, target },
    }
}

/// A rank's clock: its ticks to rank 0's nanoseconds.
#[derive(Clone, Debug)]
pub struct RankClock {
    start_ns: f64,
    ns_per_tick: f64,
    sync: Vec<ClockSync>,
}

impl RankClock {
    pub fn of(meta: &RankMeta) -> RankClock {
        RankClock {
            start_ns: meta.start_ns as f64,
            ns_per_tick: meta.ns_per_tick,
            sync: meta.clock_sync.clone(),
        }
    }

    /// Rank 0's clock at `ticks` after this rank's origin, in nanoseconds.
    pub fn global_ns(&self, ticks: u64) -> f64 {
        let local = self.start_ns + ticks as f64 * self.ns_per_tick;
        local - self.offset_at(local)
    }

    /// This clock minus rank 0's at local time `local`: the measured
    /// offset, interpolated (and extrapolated) linearly between the first
    /// and last measurement.
    fn offset_at(&self, local: f64) -> f64 {
        match (self.sync.first(), self.sync.last()) {
            (Some(a), Some(b)) if b.at_ns > a.at_ns => {
                let drift = (b.offset_ns - a.offset_ns) as f64 / (b.at_ns - a.at_ns) as f64;
                a.offset_ns as f64 + (local - a.at_ns as f64) * drift
            }
            (Some(a), _) => a.offset_ns as f64,
            _ => 0.0,
        }
    }

    /// How far the offsets may be off, in nanoseconds.
    pub fn uncertainty_ns(&self) -> u64 {
        self.sync.iter().map(|s| s.error_ns).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_shares_are_stored_to_a_64th_of_a_doubling() {
        assert_eq!(cpu_share_code(None), 0);
        assert_eq!(cpu_share_of_code(0), None);
        for (share, code) in [(1.0, 1), (0.5, 65), (0.125, 193), (1.5, 1)] {
            assert_eq!(cpu_share_code(Some(share)), code, "{share}");
        }
        for share in [1.0, 0.9, 0.3, 0.126, 0.01] {
            let stored = stored_cpu_share(share);
            assert!(
                (stored / share - 1.0).abs() < 0.006,
                "{share} stored as {stored}"
            );
            assert_eq!(stored_cpu_share(stored), stored, "{share}: stored again");
        }
    }

    #[test]
    fn metadata_of_older_files_reads_without_processors_and_share() {
        let meta = RankMeta {
            rank: 3,
            world_size: 4,
            pid: 7,
            host: "node".into(),
            mpi_library: "MPICH".into(),
            timing: Timing::default(),
            calls: 10,
            start_ns: 1,
            end_ns: 2,
            ending: Ending::Finalized,
            recorder_allocations: 0,
            ns_per_tick: 0.5,
            cpus: 8,
            cpu_share: Some(stored_cpu_share(0.3)),
            clock_sync: Vec::new(),
            run: 9,
            lost: Lost::None,
            ended_in: None,
        };
        let bytes = meta.encode();
        assert_eq!(RankMeta::decode(&bytes).unwrap(), meta);
        // The two fields are the last two varints (8, then one byte).
        let older = RankMeta::decode(&bytes[..bytes.len() - 2]).unwrap();
        assert_eq!((older.cpus, older.cpu_share), (0, None));
        assert_eq!(
            RankMeta {
                cpus: 8,
                cpu_share: meta.cpu_share,
                ..older
            },
            meta
        );
    }

    #[test]
    fn offsets_and_drift_map_a_clock_to_rank_0s() {
        let meta = |sync| RankClock {
            start_ns: 1_000.0,
            ns_per_tick: 0.5,
            sync,
        };
        let none = meta(vec![]);
        assert_eq!(none.global_ns(2_000), 2_000.0);
        let fixed = meta(vec![ClockSync {
            at_ns: 0,
            offset_ns: 300,
            error_ns: 5,
        }]);
        assert_eq!(fixed.global_ns(2_000), 1_700.0);
        assert_eq!(fixed.uncertainty_ns(), 5);
        // 100 ns of drift over 10 µs.
        let drifting = meta(vec![
            ClockSync {
                at_ns: 0,
                offset_ns: 300,
                error_ns: 5,
            },
            ClockSync {
                at_ns: 10_000,
                offset_ns: 400,
                error_ns: 9,
            },
        ]);
        assert_eq!(drifting.global_ns(18_000), 10_000.0 - 400.0);
        assert_eq!(drifting.global_ns(8_000), 5_000.0 - 350.0);
        assert_eq!(drifting.uncertainty_ns(), 9);
    }

    #[test]
    fn timing_modes_and_bases_parse() {
        let t = Timing::parse("lossy", Some("1.2,MPI_Wait=1.5, MPI_Allreduce = 2")).unwrap();
        let b = t.lossy.as_ref().unwrap();
        assert_eq!(
            (b.of("MPI_Send"), b.of("MPI_Wait"), b.of("MPI_Allreduce")),
            (1.2, 1.5, 2.0)
        );
        assert!(!t.lossless);
        let t = Timing::parse("lossless,lossy", Some("MPI_Wait=3")).unwrap();
        assert!(t.lossless);
        let b = t.lossy.unwrap();
        assert_eq!(
            (b.default, b.of("MPI_Wait")),
            (crate::timing::DEFAULT_BASE, 3.0)
        );
        assert_eq!(
            Timing::parse("aggregated", None).unwrap(),
            Timing::default()
        );
        assert_eq!(
            Timing::parse("lossy", None).unwrap().lossy.unwrap().default,
            crate::timing::DEFAULT_BASE
        );
        for (mode, base) in [
            ("exact", None),
            ("lossy", Some("1")),
            ("lossy", Some("x")),
            ("lossy", Some("1.1,MPI_Nope=2")),
            ("lossy", Some("1.1,2")),
            ("lossy", Some("MPI_Wait=99")),
            ("lossy", Some("1.1,MPI_Wait=1.5,MPI_Wait=2")),
            ("lossy", Some("MPI_Wait=1.5, MPI_Wait =1.5")),
        ] {
            assert!(Timing::parse(mode, base).is_err(), "{mode} {base:?}");
        }
    }
}
