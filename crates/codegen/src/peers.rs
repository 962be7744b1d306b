//! Rank-parametric arguments, for a benchmark of another number of ranks
//! (`gen-bench --ranks N`, see `extrapolate.rs`): the ranks of a traced
//! SPMD run make the same call with different peers (`rank + 1`, the
//! grid neighbour above, `MPI_PROC_NULL` at the edge); what they have in
//! common is a *rule* for the peer, which holds at any size.
//!
//! The rules recognised, in the order they are tried:
//! - in a Cartesian communicator, a displacement in grid coordinates
//!   (`MPI_PROC_NULL` where it leaves a non-periodic grid);
//! - in `MPI_COMM_WORLD` (or a communicator of the same ranks in the same
//!   order): a fixed offset (`MPI_PROC_NULL` beyond the ends), an offset
//!   modulo the size (a ring), the first rank, the last rank.
//!
//! Arrays with one element per member of a communicator (the counts and
//! displacements of `MPI_Alltoallv`, `MPI_Gatherv`, ...) scale with the
//! size when their elements are all equal or an arithmetic progression.

use mpigram_mpispec::{HandleKind, HandleRef, Rank, Signature, Value, predefined};
use mpigram_trace::Trace;
use rustc_hash::FxHashMap;

/// How a communicator's ranks are laid out, as far as peers go.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// The ranks of `MPI_COMM_WORLD` in their order.
    World,
    /// `MPI_COMM_SELF`.
    Own,
    /// A Cartesian grid over the ranks of `MPI_COMM_WORLD` in their order,
    /// with its dimensions in the traced run.
    Cart { dims: Vec<i64>, periods: Vec<bool> },
}

/// The layout of every communicator the extrapolation can reason about.
pub struct Geometry {
    /// Ranks of the traced run.
    pub ranks: u32,
    user: FxHashMap<u64, Layout>,
}

impl Geometry {
    /// Learns from the trace which user communicators hold the world's
    /// ranks in the world's order (from what each rank recorded of them),
    /// and which of those are Cartesian grids (from MPI_Cart_create).
    pub fn of(trace: &Trace, sigs: &[Signature], ranks: u32) -> Geometry {
        let mut seen: FxHashMap<u64, (u32, bool)> = FxHashMap::default();
        for part in &trace.ranks {
            for e in &part.comms {
                let world_like = !e.inter && e.rank == part.meta.rank && e.size == ranks;
                let s = seen.entry(e.comm).or_insert((0, true));
                s.0 += 1;
                s.1 &= world_like;
            }
        }
        let mut user: FxHashMap<u64, Layout> = seen
            .into_iter()
            .filter(|(_, (n, like))| *n >= ranks && *like)
            .map(|(id, _)| (id, Layout::World))
            .collect();
        let mut grids: FxHashMap<u64, Option<Layout>> = FxHashMap::default();
        for sig in sigs {
            let a = mpigram_mpispec::Args::new(sig);
            if a.func.name != "MPI_Cart_create" {
                continue;
            }
            let (Some(HandleRef::User(id)), Some(dims), Some(periods)) =
                (a.handle("comm_cart"), a.ints("dims"), a.ints("periods"))
            else {
                continue;
            };
            // (the benchmark's cart_peer holds up to 32 dimensions)
            if dims.iter().any(|d| *d <= 0) || periods.len() != dims.len() || dims.len() > 32 {
                continue; // not a grid MPI accepted
            }
            let grid = Layout::Cart {
                dims,
                periods: periods.iter().map(|p| *p != 0).collect(),
            };
            let e = grids.entry(id).or_insert_with(|| Some(grid.clone()));
            if e.as_ref() != Some(&grid) {
                *e = None; // one id, two grids: no layout
            }
        }
        for (id, grid) in grids {
            match grid {
                Some(g) if user.contains_key(&id) => user.insert(id, g),
                _ => user.remove(&id),
            };
        }
        Geometry { ranks, user }
    }

    /// The layout of a communicator, if known.
    pub fn layout(&self, comm: Option<HandleRef>) -> Option<&Layout> {
        match comm? {
            HandleRef::Predefined(id) => match predefined(HandleKind::Comm).get(id as usize) {
                Some(&"MPI_COMM_WORLD") => Some(&Layout::World),
                Some(&"MPI_COMM_SELF") => Some(&Layout::Own),
                _ => None,
            },
            HandleRef::User(id) => self.user.get(&id),
            HandleRef::Null => None,
        }
    }

    /// A traced rank's rank in a communicator of layout `layout`, and
    /// the communicator's size.
    pub fn place(&self, layout: &Layout, world_rank: u32) -> (i64, i64) {
        match layout {
            Layout::Own => (0, 1),
            _ => (i64::from(world_rank), i64::from(self.ranks)),
        }
    }
}

/// The rule a peer rank follows.
#[derive(Clone, Debug, PartialEq)]
pub enum Peer {
    /// A displacement in a Cartesian grid's coordinates.
    Cart(Vec<i64>),
    /// `me + d`, MPI_PROC_NULL outside the communicator.
    Offset(i64),
    /// `me + d` modulo the size.
    Periodic(i64),
    First,
    Last,
}

impl Peer {
    /// The peer as C, given the communicator (`comms[2]`), the caller's
    /// rank in it and its size, as C.
    pub fn c(&self, comm: &str, me: &str, size: &str) -> String {
        match self {
            Peer::Cart(disp) => {
                let d: Vec<String> = disp.iter().map(i64::to_string).collect();
                format!(
                    "cart_peer({comm}, {}, (const int[]){{{}}})",
                    disp.len(),
                    d.join(", ")
                )
            }
            Peer::Offset(d) => format!("offset_peer({me}, {d}, {size})"),
            Peer::Periodic(d) => format!("periodic_peer({me}, {d}, {size})"),
            Peer::First => "0".into(),
            Peer::Last => format!("{size} - 1"),
        }
    }
}

/// The one rule that gives, on each traced rank `me` (its rank in a
/// communicator of `size` ranks laid out as `layout`), the peer it named:
/// `values` are (me, recorded rank) per rank.
pub fn unify(layout: &Layout, size: i64, values: &[(i64, Rank)]) -> Result<Peer, String> {
    let target = |me: i64, r: Rank| match r {
        Rank::Relative(d) => Some(me.saturating_add(d)),
        Rank::Absolute(a) => Some(a),
        _ => None,
    };
    let named: Vec<(i64, i64)> = values
        .iter()
        .filter_map(|&(me, r)| target(me, r).map(|t| (me, t)))
        .collect();
    let nulls: Vec<i64> = values
        .iter()
        .filter(|(_, r)| *r == Rank::ProcNull)
        .map(|(me, _)| *me)
        .collect();
    if named.len() + nulls.len() != values.len() {
        return Err("a rank constant (MPI_ANY_SOURCE, MPI_ROOT) on some ranks only".into());
    }
    let Some(&(me0, t0)) = named.first() else {
        return Err(
            "MPI_PROC_NULL on every rank: the trace cannot tell which peer it stands for at another size"
                .into(),
        );
    };
    match layout {
        Layout::Cart { dims, periods } => {
            let disp = |me: i64, t: i64| -> Result<Vec<i64>, String> {
                let (a, b) = (coords(me, dims), coords(t, dims));
                let mut out = Vec::with_capacity(dims.len());
                for k in 0..dims.len() {
                    let mut d = b[k].saturating_sub(a[k]);
                    if periods[k] {
                        d = d.rem_euclid(dims[k]);
                        if 2 * d > dims[k] {
                            d -= dims[k];
                        }
                        if d != 0 && 2 * d == dims[k] {
                            return Err(format!(
                                "a shift by {d} in periodic dimension {k} of extent {}, the same as by -{d}: the trace cannot tell which it is",
                                dims[k]
                            ));
                        }
                    }
                    out.push(d);
                }
                Ok(out)
            };
            let first = disp(me0, t0)?;
            for &(me, t) in &named[1..] {
                let other = disp(me, t)?;
                if other != first {
                    return Err(format!(
                        "a different grid neighbour on different ranks (rank {me0}: {first:?}, rank {me}: {other:?})"
                    ));
                }
            }
            for &me in &nulls {
                let at = coords(me, dims);
                let inside = (0..dims.len())
                    .all(|k| periods[k] || (0..dims[k]).contains(&(at[k] + first[k])));
                if inside {
                    return Err(format!(
                        "MPI_PROC_NULL on rank {me}, which has a neighbour at {first:?}"
                    ));
                }
            }
            Ok(Peer::Cart(first))
        }
        Layout::World | Layout::Own => {
            let offset = t0.saturating_sub(me0);
            let mut wrapped = offset.rem_euclid(size);
            if 2 * wrapped > size {
                wrapped -= size;
            }
            // Where one rank alone says (a class of the first or last
            // rank), the shorter way round is the likelier rule.
            let mut rules = vec![Peer::Offset(t0 - me0)];
            if wrapped != 0 && 2 * wrapped != size {
                let at = if wrapped.abs() < (t0 - me0).abs() {
                    0
                } else {
                    1
                };
                rules.insert(at, Peer::Periodic(wrapped));
            }
            rules.extend([Peer::First, Peer::Last]);
            let holds = |rule: &Peer, me: i64, t: Option<i64>| match rule {
                Peer::Offset(d) => {
                    let p = me.saturating_add(*d);
                    t == (0..size).contains(&p).then_some(p)
                }
                Peer::Periodic(d) => t == Some(me.saturating_add(*d).rem_euclid(size)),
                Peer::First => t == Some(0),
                Peer::Last => t == Some(size - 1),
                Peer::Cart(_) => false,
            };
            rules
                .into_iter()
                .find(|rule| {
                    named.iter().all(|&(me, t)| holds(rule, me, Some(t)))
                        && nulls.iter().all(|&me| holds(rule, me, None))
                })
                .ok_or_else(|| {
                    let seen: Vec<String> = values
                        .iter()
                        .take(6)
                        .map(|&(me, r)| match target(me, r) {
                            Some(t) => format!("{me} -> {t}"),
                            None => format!("{me} -> MPI_PROC_NULL"),
                        })
                        .collect();
                    format!(
                        "peers that follow no rule of the rank (offset, ring, first, last): {}",
                        seen.join(", ")
                    )
                })
        }
    }
}

/// The C of the rules (`static inline`: a benchmark that uses none is
/// not warned about them); they ask MPI through the PMPI functions of
/// `emit.rs`'s `real` table, which a tracer of the benchmark does not see.
pub const HELPERS: &str = r#"
/* Peers that follow the caller's rank, in a benchmark made for another
 * number of ranks than the traced run's (gen-bench --ranks): `me + d`,
 * MPI_PROC_NULL outside the communicator; `me + d` modulo its size; the
 * neighbour at a displacement in a Cartesian grid, MPI_PROC_NULL off a
 * non-periodic edge. */
static inline int offset_peer(int me, int d, int size)
{
    return me + d >= 0 && me + d < size ? me + d : MPI_PROC_NULL;
}

static inline int periodic_peer(int me, int d, int size)
{
    return ((me + d) % size + size) % size;
}

static inline int cart_peer(MPI_Comm comm, int ndims, const int *disp)
{
    int dims[32], periods[32], coords[32], rank = MPI_PROC_NULL;
    real.cart_get(comm, ndims, dims, periods, coords);
    for (int i = 0; i < ndims; i++) {
        coords[i] += disp[i];
        if (!periods[i] && (coords[i] < 0 || coords[i] >= dims[i]))
            return MPI_PROC_NULL;
    }
    real.cart_rank(comm, coords, &rank);
    return rank;
}

/* The grid MPI_Dims_create makes of `nodes` ranks in `ndims` dimensions. */
static inline int *dims_for(int *dims, int nodes, int ndims)
{
    for (int i = 0; i < ndims; i++)
        dims[i] = 0;
    real.dims_create(nodes, ndims, dims);
    return dims;
}
"#;

/// A rank's coordinates in a grid, row-major as MPI numbers them.
fn coords(rank: i64, dims: &[i64]) -> Vec<i64> {
    let mut rest = rank;
    let mut out = vec![0; dims.len()];
    for (c, &d) in out.iter_mut().zip(dims).rev() {
        let d = d.max(1);
        *c = rest % d;
        rest /= d;
    }
    out
}

/// An array with one element per member of a communicator, recorded on
/// each traced rank, for a communicator of `size` members: every rank's
/// array must be one constant or one arithmetic progression, the same on
/// every rank.
pub fn per_member(arrays: &[&[Value]], size: usize) -> Result<Vec<Value>, String> {
    let mut result: Option<Vec<Value>> = None;
    for items in arrays {
        let scaled = match items {
            [] => Vec::new(),
            [first, rest @ ..] if rest.iter().all(|v| v == first) => vec![first.clone(); size],
            _ => {
                let ints: Option<Vec<i64>> = items
                    .iter()
                    .map(|v| match v {
                        Value::Int(i) | Value::Address(i) => Some(*i),
                        _ => None,
                    })
                    .collect();
                let ints = ints.ok_or("per-member elements that differ and are no numbers")?;
                let steps: Option<Vec<i64>> =
                    ints.windows(2).map(|w| w[1].checked_sub(w[0])).collect();
                let step = steps.as_ref().and_then(|s| s.first().copied()).unwrap_or(0);
                if steps.is_none_or(|s| s.iter().any(|d| *d != step)) {
                    return Err(format!(
                        "per-member values that are neither equal nor evenly spaced ({ints:?})"
                    ));
                }
                let like = |v: i64| match items[0] {
                    Value::Address(_) => Value::Address(v),
                    _ => Value::Int(v),
                };
                (0..size as i64)
                    .map(|i| like(ints[0].saturating_add(i.saturating_mul(step))))
                    .collect()
            }
        };
        match &result {
            Some(r) if *r != scaled => {
                return Err("per-member values that differ between ranks".into());
            }
            Some(_) => {}
            None => result = Some(scaled),
        }
    }
    Ok(result.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(values: &[(i64, Rank)]) -> Result<Peer, String> {
        unify(&Layout::World, 4, values)
    }

    #[test]
    fn a_ring_is_an_offset_modulo_the_size() {
        let next: Vec<(i64, Rank)> = (0..4)
            .map(|me| (me, Rank::Relative((me + 1) % 4 - me)))
            .collect();
        assert_eq!(world(&next), Ok(Peer::Periodic(1)));
        let previous: Vec<(i64, Rank)> = (0..4)
            .map(|me| (me, Rank::Relative((me + 3) % 4 - me)))
            .collect();
        assert_eq!(world(&previous), Ok(Peer::Periodic(-1)));
    }

    #[test]
    fn a_line_ends_in_proc_null() {
        let right: Vec<(i64, Rank)> = (0..4)
            .map(|me| {
                (
                    me,
                    if me == 3 {
                        Rank::ProcNull
                    } else {
                        Rank::Relative(1)
                    },
                )
            })
            .collect();
        assert_eq!(world(&right), Ok(Peer::Offset(1)));
        // A missing neighbour where there is one is no rule.
        let mut wrong = right.clone();
        wrong[1].1 = Rank::ProcNull;
        assert!(world(&wrong).is_err());
    }

    #[test]
    fn first_and_last_ranks() {
        let to_first: Vec<(i64, Rank)> = (1..4).map(|me| (me, Rank::Relative(-me))).collect();
        assert_eq!(world(&to_first), Ok(Peer::First));
        let to_last: Vec<(i64, Rank)> = (0..3).map(|me| (me, Rank::Relative(3 - me))).collect();
        assert_eq!(world(&to_last), Ok(Peer::Last));
        let scattered = [
            (0, Rank::Relative(2)),
            (1, Rank::Relative(2)),
            (2, Rank::Relative(-1)),
        ];
        let e = world(&scattered).unwrap_err();
        assert!(e.contains("0 -> 2, 1 -> 3, 2 -> 1"), "{e}");
    }

    #[test]
    fn grid_neighbours_are_displacements() {
        let grid = Layout::Cart {
            dims: vec![2, 2],
            periods: vec![false, false],
        };
        // "down" in a 2 x 2 grid: +2 from the top row, nothing from the bottom.
        let down = [
            (0, Rank::Relative(2)),
            (1, Rank::Relative(2)),
            (2, Rank::ProcNull),
            (3, Rank::ProcNull),
        ];
        assert_eq!(unify(&grid, 4, &down), Ok(Peer::Cart(vec![1, 0])));
        let all_null = [(0, Rank::ProcNull), (1, Rank::ProcNull)];
        assert!(
            unify(&grid, 4, &all_null)
                .unwrap_err()
                .contains("every rank")
        );
        // Periodic extent 2: +1 and -1 are the same neighbour.
        let ring = Layout::Cart {
            dims: vec![2],
            periods: vec![true],
        };
        let e = unify(&ring, 2, &[(0, Rank::Relative(1)), (1, Rank::Relative(-1))]);
        assert!(e.unwrap_err().contains("cannot tell"));
    }

    #[test]
    fn per_member_arrays_scale() {
        let counts = [Value::Int(5), Value::Int(5), Value::Int(5)];
        let displs = [Value::Int(0), Value::Int(5), Value::Int(10)];
        assert_eq!(
            per_member(&[&counts, &counts], 4),
            Ok(vec![Value::Int(5); 4])
        );
        assert_eq!(
            per_member(&[&displs], 4),
            Ok((0..4).map(|i| Value::Int(5 * i)).collect())
        );
        let uneven = [Value::Int(0), Value::Int(5), Value::Int(7)];
        assert!(per_member(&[&uneven], 4).is_err());
        assert!(per_member(&[&counts, &displs], 4).is_err());
    }
}
