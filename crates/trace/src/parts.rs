//! What is particular to each rank in a whole-run file — its metadata and
//! its communicator log — stored per chunk of ranks as differences from the
//! previous rank, so that ranks alike cost next to nothing: one column per
//! metadata field across the chunk's ranks, then each rank's clock
//! measurements and communicator entries, each field a difference from the
//! same entry of the rank before. Strings (host names, MPI library
//! versions) and timing modes are numbered in tables of the whole file.

use crate::meta::{
    cpu_share_code, cpu_share_of_code, ended_in_code, ended_in_of_code, out_of_range,
};
use crate::{ClockSync, CommEntry, Ending, Lost, RankMeta, Timing};
use mpigram_varint::{ByteReader, DecodeError, PutVarint, unzigzag, zigzag};

/// The strings and timing modes of a file's ranks, each once.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Tables {
    strings: Vec<String>,
    timings: Vec<Timing>,
}

impl Tables {
    pub fn of<'a>(metas: impl Iterator<Item = &'a RankMeta>) -> Tables {
        let mut t = Tables::default();
        for m in metas {
            for s in [&m.host, &m.mpi_library] {
                if !t.strings.contains(s) {
                    t.strings.push(s.clone());
                }
            }
            if !t.timings.contains(&m.timing) {
                t.timings.push(m.timing.clone());
            }
        }
        t
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.strings.len() as u64);
        self.strings.iter().for_each(|s| out.put_str(s));
        out.put_u64(self.timings.len() as u64);
        self.timings.iter().for_each(|t| t.encode(out));
    }

    pub fn decode(r: &mut ByteReader<'_>) -> Result<Tables, DecodeError> {
        let strings = (0..r.count()?)
            .map(|_| r.str().map(str::to_owned))
            .collect::<Result<_, _>>()?;
        let timings = (0..r.count()?)
            .map(|_| Timing::decode(r))
            .collect::<Result<_, _>>()?;
        Ok(Tables { strings, timings })
    }

    fn string(&self, s: &str) -> u64 {
        self.strings.iter().position(|x| x == s).unwrap_or(0) as u64
    }

    fn timing(&self, t: &Timing) -> u64 {
        self.timings.iter().position(|x| x == t).unwrap_or(0) as u64
    }
}

/// Appends `values` as zig-zagged differences, each from the one before
/// (the first from `0`).
fn put_column(out: &mut Vec<u8>, values: impl Iterator<Item = u64>) {
    let mut last = 0u64;
    for v in values {
        out.put_u64(zigzag(v.wrapping_sub(last) as i64));
        last = v;
    }
}

fn column(r: &mut ByteReader<'_>, n: usize) -> Result<Vec<u64>, DecodeError> {
    let mut last = 0u64;
    (0..n)
        .map(|_| {
            last = last.wrapping_add(unzigzag(r.u64()?) as u64);
            Ok(last)
        })
        .collect()
}

/// Appends the rows of each rank (entries of `N` fields), each field a
/// difference from the same field of the previous rank's entry at the same
/// place (from 0 where it has none).
fn put_rows<const N: usize>(out: &mut Vec<u8>, ranks: &[Vec<[u64; N]>]) {
    let mut last: &[[u64; N]] = &[];
    for rows in ranks {
        out.put_u64(zigzag(rows.len() as i64 - last.len() as i64));
        for (i, row) in rows.iter().enumerate() {
            let before = last.get(i).copied().unwrap_or([0; N]);
            for (v, b) in row.iter().zip(before) {
                out.put_u64(zigzag(v.wrapping_sub(b) as i64));
            }
        }
        last = rows;
    }
}

fn rows<const N: usize>(
    r: &mut ByteReader<'_>,
    n: usize,
) -> Result<Vec<Vec<[u64; N]>>, DecodeError> {
    let mut out: Vec<Vec<[u64; N]>> = Vec::with_capacity(n);
    for _ in 0..n {
        let before = out.last().map_or(&[][..], |v| v.as_slice());
        let at = r.position();
        let change = unzigzag(r.u64()?);
        let len = (before.len() as i64).checked_add(change).unwrap_or(-1);
        // Each field takes a byte at least: a forged length must not size the vector.
        if len < 0 || len as usize > r.remaining() / N.max(1) {
            return Err(out_of_range(at, change as u64, "entries"));
        }
        let mut rows = Vec::with_capacity(len as usize);
        for i in 0..len as usize {
            let b = before.get(i).copied().unwrap_or([0; N]);
            let mut row = [0u64; N];
            for (v, b) in row.iter_mut().zip(b) {
                *v = b.wrapping_add(unzigzag(r.u64()?) as u64);
            }
            rows.push(row);
        }
        out.push(rows);
    }
    Ok(out)
}

/// The ending column: the ending's code (below [`ENDED_IN_SHIFT`]'s bit)
/// and, above it, the function the rank ended inside (`ended_in_code`).
fn ending_code(m: &RankMeta) -> u64 {
    let code = match m.ending {
        Ending::Finalized => 0,
        Ending::ExitWithoutFinalize => 1,
        Ending::Abort => 2,
        Ending::Killed => 3,
        Ending::Signal(s) => 4 + s.clamp(0, 255) as u64,
    };
    code | ended_in_code(m.ended_in) << ENDED_IN_SHIFT
}

/// Ending codes are below 2^9 (signal 255 is 259).
const ENDED_IN_SHIFT: u32 = 9;

fn ending(code: u64) -> Ending {
    match code & ((1 << ENDED_IN_SHIFT) - 1) {
        0 => Ending::Finalized,
        1 => Ending::ExitWithoutFinalize,
        2 => Ending::Abort,
        3 => Ending::Killed,
        s => Ending::Signal((s - 4).min(255) as i32),
    }
}

/// How a chunk's parts are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Every field as it is (files with every rank's own timing, and
    /// summarised files before rank timing 3).
    Full,
    /// Summarised files since rank timing 3: no nanoseconds per tick (1),
    /// clock measurements' times in units like start and end times, and a
    /// communicator's instance as its difference from what its leader
    /// would name it with serial 0, so that ranks alike store zeros.
    Summarised,
}

fn sync_row(s: &ClockSync, unit: u64, layout: Layout) -> [u64; 3] {
    let at = match layout {
        Layout::Full => s.at_ns,
        Layout::Summarised => s.at_ns / unit,
    };
    [at, s.offset_ns as u64, s.error_ns]
}

fn comm_row(c: &CommEntry, layout: Layout) -> [u64; 8] {
    [
        c.seq,
        c.comm,
        c.rank.into(),
        c.size.into(),
        c.remote_size.into(),
        c.inter.into(),
        c.leader.into(),
        c.instance.wrapping_sub(instance_base(c.leader, layout)),
    ]
}

/// What a communicator's instance is stored as a difference from: the
/// instance its leader's first creation would have (`(leader + 1) << 32`).
fn instance_base(leader: u32, layout: Layout) -> u64 {
    match layout {
        Layout::Full => 0,
        Layout::Summarised => (u64::from(leader) + 1) << 32,
    }
}

/// Metadata fields stored as columns (all of them in [`Layout::Full`]).
const COLUMNS: usize = 13;

/// The column of nanoseconds per tick, which [`Layout::Summarised`] leaves out.
const NS_PER_TICK: usize = 10;

/// Appends the parts of a chunk's ranks; start and end times are stored in
/// units of `unit` nanoseconds (1: exact).
pub(crate) fn encode_chunk(
    out: &mut Vec<u8>,
    ranks: &[(&RankMeta, &[CommEntry])],
    tables: &Tables,
    unit: u64,
    layout: Layout,
) {
    let fields: [fn(&RankMeta, &Tables, u64) -> u64; COLUMNS] = [
        |m, _, _| m.world_size.into(),
        |m, _, _| m.pid.into(),
        |m, t, _| t.string(&m.host),
        |m, t, _| t.string(&m.mpi_library),
        |m, t, _| t.timing(&m.timing),
        |m, _, _| m.calls,
        |m, _, u| m.start_ns / u,
        |m, _, u| m.end_ns / u,
        |m, _, _| ending_code(m),
        |m, _, _| m.recorder_allocations,
        |m, _, _| m.ns_per_tick.to_bits(),
        |m, _, _| m.run,
        |m, _, _| m.lost.code(),
    ];
    for (i, f) in fields.into_iter().enumerate() {
        if layout == Layout::Full || i != NS_PER_TICK {
            put_column(out, ranks.iter().map(|(m, _)| f(m, tables, unit)));
        }
    }
    let syncs: Vec<Vec<[u64; 3]>> = ranks
        .iter()
        .map(|(m, _)| {
            m.clock_sync
                .iter()
                .map(|s| sync_row(s, unit, layout))
                .collect()
        })
        .collect();
    put_rows(out, &syncs);
    let comms: Vec<Vec<[u64; 8]>> = ranks
        .iter()
        .map(|(_, c)| c.iter().map(|e| comm_row(e, layout)).collect())
        .collect();
    put_rows(out, &comms);
    // Added later, left out where no rank has them (older readers read
    // such chunks).
    if ranks
        .iter()
        .any(|(m, _)| m.cpus > 0 || m.cpu_share.is_some())
    {
        put_column(out, ranks.iter().map(|(m, _)| u64::from(m.cpus)));
        put_column(out, ranks.iter().map(|(m, _)| cpu_share_code(m.cpu_share)));
    }
}

/// Reads the parts of the ranks `ranks` (their numbers, in order) of a chunk.
pub(crate) fn decode_chunk(
    r: &mut ByteReader<'_>,
    ranks: &[u32],
    tables: &Tables,
    unit: u64,
    layout: Layout,
) -> Result<Vec<(RankMeta, Vec<CommEntry>)>, DecodeError> {
    let n = ranks.len();
    let mut columns = Vec::with_capacity(COLUMNS);
    for i in 0..COLUMNS {
        let at = r.position();
        if layout == Layout::Summarised && i == NS_PER_TICK {
            columns.push((at, vec![1f64.to_bits(); n]));
        } else {
            columns.push((at, column(r, n)?));
        }
    }
    let syncs = rows::<3>(r, n)?;
    let comms = rows::<8>(r, n)?;
    let (cpus, shares) = match r.is_empty() {
        true => (vec![0; n], vec![0; n]),
        false => (column(r, n)?, column(r, n)?),
    };
    let mut out = Vec::with_capacity(n);
    for (i, (&rank, (syncs, comms))) in ranks.iter().zip(syncs.into_iter().zip(comms)).enumerate() {
        let v = |c: usize| columns[c].1[i];
        let small = |c: usize, what| {
            u32::try_from(v(c)).map_err(|_| out_of_range(columns[c].0, v(c), what))
        };
        let string = |c: usize| {
            tables
                .strings
                .get(v(c) as usize)
                .cloned()
                .ok_or_else(|| out_of_range(columns[c].0, v(c), "string number"))
        };
        let timing = tables
            .timings
            .get(v(4) as usize)
            .cloned()
            .ok_or_else(|| out_of_range(columns[4].0, v(4), "timing number"))?;
        let ns_per_tick = f64::from_bits(v(10));
        if !(ns_per_tick.is_finite() && ns_per_tick > 0.0) {
            return Err(out_of_range(columns[10].0, v(10), "nanoseconds per tick"));
        }
        let meta = RankMeta {
            rank,
            world_size: small(0, "world size")?,
            pid: small(1, "process id")?,
            host: string(2)?,
            mpi_library: string(3)?,
            timing,
            calls: v(5),
            start_ns: v(6).wrapping_mul(unit),
            end_ns: v(7).wrapping_mul(unit),
            ending: ending(v(8)),
            recorder_allocations: v(9),
            ns_per_tick,
            cpus: u32::try_from(cpus[i]).map_err(|_| out_of_range(0, cpus[i], "processors"))?,
            cpu_share: cpu_share_of_code(shares[i]),
            clock_sync: syncs
                .iter()
                .map(|s| ClockSync {
                    at_ns: match layout {
                        Layout::Full => s[0],
                        Layout::Summarised => s[0].wrapping_mul(unit),
                    },
                    offset_ns: s[1] as i64,
                    error_ns: s[2],
                })
                .collect(),
            run: v(11),
            lost: Lost::of_code(v(12)),
            ended_in: ended_in_of_code(v(8) >> ENDED_IN_SHIFT)
                .ok_or_else(|| out_of_range(columns[8].0, v(8), "MPI function number"))?,
        };
        let comms = comms
            .iter()
            .map(|c| {
                let field = |k: usize| {
                    u32::try_from(c[k]).map_err(|_| out_of_range(0, c[k], "communicator field"))
                };
                let leader = field(6)?;
                Ok(CommEntry {
                    seq: c[0],
                    comm: c[1],
                    rank: field(2)?,
                    size: field(3)?,
                    remote_size: field(4)?,
                    inter: c[5] != 0,
                    leader,
                    instance: c[7].wrapping_add(instance_base(leader, layout)),
                })
            })
            .collect::<Result<_, DecodeError>>()?;
        out.push((meta, comms));
    }
    Ok(out)
}
