//! The critical path rebuilt from the walk's back-pointers, in bounded
//! memory: a backward pass over each rank's back-pointers (read last
//! first) finds where the path enters and leaves each rank (its *runs*),
//! and a forward pass over the runs and the ranks' call times gives the
//! path's segments in time order, with what lies on it.

use super::walk::BackPointer;
use super::{Activity, Segment, SiteTime};
use crate::spill::{Record, Records, Spill, i64_at, put_i64, put_u32, put_u64, u32_at, u64_at};
use crate::timeline::Span;
use rustc_hash::FxHashMap;
use std::io;

/// A stretch of the path on one rank, in program order: from vertex
/// `from` (where it enters the rank) to vertex `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    rank: u32,
    from: u64,
    to: u64,
}

impl Record for Run {
    const SIZE: usize = 20;
    fn put(&self, out: &mut Vec<u8>) {
        put_u32(out, self.rank);
        put_u64(out, self.from);
        put_u64(out, self.to);
    }
    fn get(b: &[u8]) -> Run {
        Run {
            rank: u32_at(b, 0),
            from: u64_at(b, 4),
            to: u64_at(b, 12),
        }
    }
}

/// A reader of one rank's back-pointers with one of lookahead.
struct Pointers<'s> {
    records: Records<'s, BackPointer>,
    next: Option<BackPointer>,
}

impl Pointers<'_> {
    fn peek(&mut self) -> io::Result<Option<BackPointer>> {
        if self.next.is_none() {
            self.next = self.records.next().transpose()?;
        }
        Ok(self.next)
    }
}

/// The runs of the path that ends at vertex `end` (rank index, vertex),
/// last first.
fn runs(back: &[Spill<BackPointer>], end: (u32, u64)) -> io::Result<Spill<Run>> {
    let mut readers: Vec<Pointers> = back
        .iter()
        .map(|s| Pointers {
            records: s.iter_rev(),
            next: None,
        })
        .collect();
    let mut runs = Spill::default();
    let (mut r, mut v) = end;
    loop {
        // The last vertex at or before `v` that the path enters from
        // elsewhere than the vertex before it.
        let reader = &mut readers[r as usize];
        let entry = loop {
            match reader.peek()? {
                Some(p) if p.vertex > v => reader.next = None,
                Some(p) if p.vertex.checked_sub(1).map(|u| (r, u)) == Some(p.pred) => {
                    reader.next = None
                }
                other => break other,
            }
        };
        match entry {
            Some(p) => {
                runs.push(&Run {
                    rank: r,
                    from: p.vertex,
                    to: v,
                })?;
                reader.next = None;
                (r, v) = p.pred;
            }
            None => {
                runs.push(&Run {
                    rank: r,
                    from: 0,
                    to: v,
                })?;
                return Ok(runs);
            }
        }
    }
}

/// A segment as kept in a [`Segments`]: with the call site of the call a
/// computation follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Kept {
    pub(super) segment: Segment,
    pub(super) after_site: u32,
}

impl Record for Kept {
    const SIZE: usize = 40;
    fn put(&self, out: &mut Vec<u8>) {
        let s = &self.segment;
        put_u32(out, s.rank);
        let (kind, a, b) = match s.activity {
            Activity::Computation { after } => (0, after, 0),
            Activity::Call { seq, site } => (1, seq, site),
        };
        put_u32(out, kind);
        put_u32(out, a);
        put_u32(out, b);
        put_i64(out, s.start_ns);
        put_i64(out, s.end_ns);
        put_u32(out, self.after_site);
        put_u32(out, 0);
    }
    fn get(b: &[u8]) -> Kept {
        let (a, c) = (u32_at(b, 8), u32_at(b, 12));
        Kept {
            segment: Segment {
                rank: u32_at(b, 0),
                activity: match u32_at(b, 4) {
                    0 => Activity::Computation { after: a },
                    _ => Activity::Call { seq: a, site: c },
                },
                start_ns: i64_at(b, 16),
                end_ns: i64_at(b, 24),
            },
            after_site: u32_at(b, 32),
        }
    }
}

/// The segments of a critical path, in time order; kept in a temporary
/// file past a few thousand.
#[derive(Default)]
pub struct Segments {
    kept: Spill<Kept>,
}

impl Segments {
    /// The segments in time order. Reading stops early only if the
    /// temporary file cannot be read back: [`Segments::len`] tells.
    pub fn iter(&self) -> impl Iterator<Item = Segment> + '_ {
        self.kept.iter().map_while(Result::ok).map(|k| k.segment)
    }

    /// The path's jumps between ranks: each pair of consecutive segments
    /// on different ranks, in time order.
    pub fn jumps(&self) -> impl Iterator<Item = (Segment, Segment)> + '_ {
        let mut segments = self.iter();
        let mut previous = segments.next();
        segments.filter_map(move |b| {
            let a = previous.replace(b)?;
            (a.rank != b.rank).then_some((a, b))
        })
    }

    /// With the call site each computation follows (`u32::MAX`: not known).
    pub(super) fn iter_kept(&self) -> impl Iterator<Item = Kept> + '_ {
        self.kept.iter().map_while(Result::ok)
    }

    pub fn len(&self) -> usize {
        self.kept.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    pub fn first(&self) -> Option<Segment> {
        self.iter().next()
    }

    pub(super) fn push(&mut self, kept: Kept) -> io::Result<()> {
        self.kept.push(&kept)
    }
}

impl From<Vec<Segment>> for Segments {
    fn from(segments: Vec<Segment>) -> Segments {
        let mut out = Segments::default();
        for segment in segments {
            out.push(Kept {
                segment,
                after_site: u32::MAX,
            })
            .expect("a few segments stay in memory");
        }
        out
    }
}

impl Clone for Segments {
    fn clone(&self) -> Segments {
        let mut out = Segments::default();
        for kept in self.iter_kept() {
            // Past the buffer, a copy goes to a new temporary file; if that
            // fails the copy is short, as `len` shows.
            if out.push(kept).is_err() {
                break;
            }
        }
        out
    }
}

impl std::fmt::Debug for Segments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Segments({})", self.len())
    }
}

/// Each call of a rank in order: its span and call site.
pub(super) type RankCallTimes<'a, E> = Box<dyn Iterator<Item = Result<(Span, u32), E>> + 'a>;

/// What the path is made of.
pub(super) struct Made {
    pub(super) segments: Segments,
    /// By rank index: computation and MPI time on the path.
    pub(super) compute: Vec<i64>,
    pub(super) mpi: Vec<i64>,
    pub(super) sites: Vec<SiteTime>,
}

/// One rank's calls read forward as the runs need them.
struct Cursor<'a, 'b, E> {
    calls: RankCallTimes<'a, E>,
    pointers: Records<'b, BackPointer>,
    next_pointer: Option<BackPointer>,
    /// Calls read so far, and the last two: (span, site).
    read: u64,
    last: Option<(Span, u32)>,
    before: Option<(Span, u32)>,
}

impl<E: From<io::Error>> Cursor<'_, '_, E> {
    /// Reads up to call `k` (the last read is call k, the one before k−1).
    fn read_to(&mut self, k: u64) -> Result<bool, E> {
        while self.read <= k {
            let Some(call) = self.calls.next().transpose()? else {
                return Ok(false);
            };
            self.before = self.last;
            self.last = Some(call);
            self.read += 1;
        }
        Ok(true)
    }

    /// The time of vertex `v` (calls read up to v's call) and of the vertex before.
    fn times(&self, v: u64) -> (i64, Option<i64>) {
        let (span, _) = self.last.expect("read");
        if v % 2 == 0 {
            (span.start_ns, self.before.map(|b| b.0.end_ns))
        } else {
            (span.end_ns, Some(span.start_ns))
        }
    }

    /// The back-pointer at vertex `v`, if `v` is a join.
    fn pointer(&mut self, v: u64) -> io::Result<Option<BackPointer>> {
        loop {
            if self.next_pointer.is_none() {
                self.next_pointer = self.pointers.next().transpose()?;
            }
            match self.next_pointer {
                Some(p) if p.vertex < v => self.next_pointer = None,
                Some(p) if p.vertex == v => return Ok(Some(p)),
                _ => return Ok(None),
            }
        }
    }
}

/// The segments of the path ending at `end` (rank index, vertex), and
/// their sums by rank and call site. `world[r]`: rank index r's world
/// rank; `calls(r)`: rank index r's calls.
pub(super) fn make<'a, 'b, E: From<io::Error>>(
    back: &'b [Spill<BackPointer>],
    end: Option<(u32, u64)>,
    world: &[u32],
    calls: &dyn Fn(u32) -> Result<RankCallTimes<'a, E>, E>,
) -> Result<Made, E> {
    let n = world.len();
    let mut made = Made {
        segments: Segments::default(),
        compute: vec![0; n],
        mpi: vec![0; n],
        sites: Vec::new(),
    };
    let Some(end) = end else {
        return Ok(made);
    };
    let runs = runs(back, end)?;
    let mut cursors: Vec<Option<Cursor<'a, 'b, E>>> = (0..n).map(|_| None).collect();
    let mut sites: FxHashMap<(u32, bool), (i64, u64)> = FxHashMap::default();
    let mut last: Option<Kept> = None;
    let mut first = true;
    for run in runs.iter_rev() {
        let run = run?;
        let cursor = match &mut cursors[run.rank as usize] {
            Some(c) => c,
            slot => slot.insert(Cursor {
                calls: calls(run.rank)?,
                pointers: back[run.rank as usize].iter(),
                next_pointer: None,
                read: 0,
                last: None,
                before: None,
            }),
        };
        for v in run.from..=run.to {
            if !cursor.read_to(v / 2)? {
                break;
            }
            let (t, t_prev) = cursor.times(v);
            let pointer = cursor.pointer(v)?;
            let release = match pointer {
                Some(p) => Some(p.release),
                None => t_prev,
            };
            let w = match release {
                Some(release) if !first => (t - release).max(0),
                _ => 0,
            };
            first = false;
            if w <= 0 {
                continue;
            }
            let k = v / 2;
            let (activity, site) = if v % 2 == 0 {
                let after_site = cursor.before.map_or(u32::MAX, |b| b.1);
                (
                    Activity::Computation {
                        after: (k as u32).wrapping_sub(1),
                    },
                    after_site,
                )
            } else {
                let site = cursor.last.map_or(u32::MAX, |l| l.1);
                (
                    Activity::Call {
                        seq: k as u32,
                        site,
                    },
                    site,
                )
            };
            let rank = world[run.rank as usize];
            let computation = v % 2 == 0;
            if computation {
                made.compute[run.rank as usize] += w;
            } else {
                made.mpi[run.rank as usize] += w;
            }
            let e = sites.entry((site, computation)).or_default();
            e.0 += w;
            e.1 += 1;
            match &mut last {
                Some(l)
                    if l.segment.rank == rank
                        && l.segment.activity == activity
                        && l.segment.end_ns == t - w =>
                {
                    l.segment.end_ns = t
                }
                _ => {
                    if let Some(l) = last.take() {
                        made.segments.push(l)?;
                    }
                    last = Some(Kept {
                        segment: Segment {
                            rank,
                            activity,
                            start_ns: t - w,
                            end_ns: t,
                        },
                        after_site: if computation { site } else { u32::MAX },
                    });
                }
            }
        }
    }
    if let Some(l) = last {
        made.segments.push(l)?;
    }
    let mut sites: Vec<SiteTime> = sites
        .into_iter()
        .map(|((site, computation), (ns, count))| SiteTime {
            site,
            computation,
            ns,
            count,
        })
        .collect();
    sites.sort_by_key(|s| (std::cmp::Reverse(s.ns), s.site, s.computation));
    made.sites = sites;
    Ok(made)
}
