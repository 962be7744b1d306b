//! How large each memory segment must be: the largest offset plus extent
//! any call used it with. Extents are worked out conservatively (an upper
//! bound, never less than MPI touches): predefined types by their size
//! rounded up to a power of two, derived types from the arguments of the
//! calls that built them, counts of gathering collectives times the world's
//! size. What cannot be worked out errs on the large side and is marked
//! [`SegmentSize::guessed`], which the generated program says in a comment.

use mpigram_analysis::stats::predefined_size;
use mpigram_mpispec::Args;
use mpigram_mpispec::{BufferRef, Enc, HandleKind, HandleRef, Signature, Value, predefined};
use rustc_hash::FxHashMap;

/// Bytes assumed for a buffer whose size the trace cannot tell. Large:
/// `calloc` maps big blocks lazily, so erring large costs address space,
/// not memory.
pub const UNKNOWN_BUFFER: u64 = 1 << 20;
/// Bytes assumed per element of a datatype whose extent is unknown (more
/// than any predefined type's).
pub const UNKNOWN_ELEMENT: u64 = 4096;
/// Smallest segment allocated.
pub const MIN_SEGMENT: u64 = 64;
/// Largest extent believed (a corrupt trace must not make the benchmark
/// allocate terabytes).
const MAX_BYTES: u64 = 1 << 34;

/// Bytes a call may touch, and whether some part of that was guessed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentSize {
    pub bytes: u64,
    pub guessed: bool,
}

impl SegmentSize {
    fn known(bytes: u64) -> SegmentSize {
        SegmentSize {
            bytes: bytes.min(MAX_BYTES),
            guessed: false,
        }
    }

    fn guess(bytes: u64) -> SegmentSize {
        SegmentSize {
            bytes: bytes.min(MAX_BYTES),
            guessed: true,
        }
    }
}

/// Parameters that hold an address MPI reads or writes no data at beyond
/// a pointer or two (attribute values, Fortran handles, addresses).
const POINTERS: &[&str] = &[
    "attribute_val",
    "extra_state",
    "f_status",
    "f08_status",
    "argc",
    "argv",
    "address",
    "location",
    "base",
    "addr1",
    "addr2",
    "buffer_addr",
    "baseptr",
    "obj_handle",
    "user_data",
];

/// Upper bounds of the extents of derived datatypes, by user id (an id
/// reused for several types holds the largest).
#[derive(Default)]
pub struct Extents {
    user: FxHashMap<u64, u64>,
}

impl Extents {
    /// Extents of every type some signature builds. Types built from
    /// types are settled by repeating until nothing grows.
    pub fn of(sigs: &[&Signature]) -> Extents {
        let mut e = Extents::default();
        for _ in 0..8 {
            let mut grew = false;
            for sig in sigs {
                let a = Args::new(sig);
                if let Some((id, ext)) = e.constructed(&a) {
                    let slot = e.user.entry(id).or_insert(0);
                    if ext > *slot {
                        *slot = ext;
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        e
    }

    /// Extent bound of one datatype, if known.
    pub fn extent(&self, h: Option<HandleRef>) -> Option<u64> {
        match h {
            Some(HandleRef::Predefined(id)) => predefined(HandleKind::Datatype)
                .get(id as usize)
                .and_then(|name| predefined_size(name))
                .map(|s| s.max(1).next_power_of_two()),
            Some(HandleRef::User(id)) => self.user.get(&id).copied(),
            _ => None,
        }
    }

    /// Extent bound of one datatype, [`UNKNOWN_ELEMENT`] if unknown.
    fn element(&self, h: Option<HandleRef>) -> SegmentSize {
        match self.extent(h) {
            Some(e) => SegmentSize::known(e),
            None => SegmentSize::guess(UNKNOWN_ELEMENT),
        }
    }

    /// The new type and its extent bound, if `a` builds a datatype.
    fn constructed(&self, a: &Args) -> Option<(u64, u64)> {
        let id = a.new_user("newtype", HandleKind::Datatype)?;
        let old = || self.extent(a.handle("oldtype")).unwrap_or(UNKNOWN_ELEMENT);
        let n = |name: &str| a.int(name).unwrap_or(0).unsigned_abs();
        let ext = match a.base_name() {
            "MPI_Type_contiguous" => n("count").saturating_mul(old()),
            "MPI_Type_vector" => n("count")
                .saturating_sub(1)
                .saturating_mul(n("stride"))
                .saturating_add(n("blocklength"))
                .saturating_mul(old()),
            "MPI_Type_create_hvector" | "MPI_Type_hvector" => n("count")
                .saturating_sub(1)
                .saturating_mul(n("stride"))
                .saturating_add(n("blocklength").saturating_mul(old())),
            "MPI_Type_indexed" => {
                let (b, d) = (
                    ints(a, "array_of_blocklengths"),
                    ints(a, "array_of_displacements"),
                );
                spans(&b, &d, 1).saturating_mul(old())
            }
            "MPI_Type_create_hindexed" | "MPI_Type_hindexed" => {
                let (b, d) = (
                    ints(a, "array_of_blocklengths"),
                    ints(a, "array_of_displacements"),
                );
                spans(&b, &d, old())
            }
            "MPI_Type_create_indexed_block" => {
                let d = ints(a, "array_of_displacements");
                let b = vec![n("blocklength"); d.len()];
                spans(&b, &d, 1).saturating_mul(old())
            }
            "MPI_Type_create_hindexed_block" => {
                let d = ints(a, "array_of_displacements");
                let b = vec![n("blocklength"); d.len()];
                spans(&b, &d, old())
            }
            "MPI_Type_create_struct" | "MPI_Type_struct" => {
                let (b, d) = (
                    ints(a, "array_of_blocklengths"),
                    ints(a, "array_of_displacements"),
                );
                let types = a.handles("array_of_types").unwrap_or_default();
                b.iter()
                    .zip(&d)
                    .zip(&types)
                    .map(|((b, d), t)| {
                        let e = self.extent(Some(*t)).unwrap_or(UNKNOWN_ELEMENT);
                        d.saturating_add(b.saturating_mul(e))
                    })
                    .max()
                    .unwrap_or(0)
            }
            "MPI_Type_create_resized" => (n("lb").saturating_add(n("extent"))).max(old()),
            "MPI_Type_create_subarray" => ints(a, "array_of_sizes")
                .iter()
                .fold(1u64, |p, s| p.saturating_mul(*s))
                .saturating_mul(old()),
            "MPI_Type_create_darray" => ints(a, "array_of_gsizes")
                .iter()
                .fold(1u64, |p, s| p.saturating_mul(*s))
                .saturating_mul(old()),
            "MPI_Type_dup" => old(),
            _ => UNKNOWN_ELEMENT,
        };
        Some((id, ext.min(MAX_BYTES)))
    }
}

fn ints(a: &Args, name: &str) -> Vec<u64> {
    a.ints(name)
        .unwrap_or_default()
        .into_iter()
        .map(i64::unsigned_abs)
        .collect()
}

/// The end of the furthest block: max(displacement + length × unit).
fn spans(lengths: &[u64], displacements: &[u64], unit: u64) -> u64 {
    lengths
        .iter()
        .zip(displacements)
        .map(|(b, d)| d.saturating_add(b.saturating_mul(unit)))
        .max()
        .unwrap_or(0)
}

/// Whether a collective's buffers hold one block per member.
fn per_member(name: &str) -> bool {
    [
        "gather",
        "scatter",
        "alltoall",
        "allgather",
        "neighbor",
        "reduce_scatter",
    ]
    .iter()
    .any(|k| name.to_ascii_lowercase().contains(k))
}

/// The bytes a call may touch from the start of its buffer argument `param`.
pub fn buffer_bytes(a: &Args, param: &str, extents: &Extents, world_size: u64) -> SegmentSize {
    let name = a.base_name();
    let members = if per_member(name) {
        world_size.max(1)
    } else {
        1
    };
    let size = |p: &str| a.int(p).map(|s| SegmentSize::known(s.unsigned_abs()));
    // A reduction's send buffer has the count of its receive buffer
    // (`count`); a reduce-scatter's, the sum of the blocks it scatters.
    let (count, types, displs): (&[&str], &[&str], &[&str]) = match param {
        "sendbuf" => (
            &[
                "sendcount",
                "sendcounts",
                "count",
                "recvcount",
                "recvcounts",
            ],
            &["sendtype", "sendtypes", "datatype"],
            &["sdispls", "displs"],
        ),
        "recvbuf" => (
            &["recvcount", "recvcounts", "count"],
            &["recvtype", "recvtypes", "datatype"],
            &["rdispls", "displs"],
        ),
        "origin_addr" => (&["origin_count"], &["origin_datatype"], &[]),
        "result_addr" => (&["result_count"], &["result_datatype"], &[]),
        "compare_addr" => (&[], &["origin_datatype", "datatype"], &[]),
        "base" | "buffer" if a.int("size").is_some() => return size("size").unwrap_or_default(),
        "outbuf" if a.int("outsize").is_some() => return size("outsize").unwrap_or_default(),
        "inbuf" if a.int("insize").is_some() => return size("insize").unwrap_or_default(),
        p if POINTERS.contains(&p) => return SegmentSize::known(MIN_SEGMENT),
        _ => (&["count", "incount", "outcount"], &["datatype"], &[]),
    };
    // Scatterv's displacements go with its send buffer, Gatherv's with its receive buffer.
    let displs: Vec<&str> = displs
        .iter()
        .copied()
        .filter(|d| *d != "displs" || (param == "sendbuf") == name.contains("catter"))
        .collect();
    let one_type = types.iter().find_map(|t| match a.value(t) {
        Some(Value::Handle(_, h)) => Some(*h),
        _ => None,
    });
    let element = extents.element(one_type);
    let type_list = types.iter().find_map(|t| a.handles(t));
    let scalar = count.iter().find_map(|c| a.int(c));
    let list = count.iter().find_map(|c| a.ints(c));
    let times = |n: u64, e: SegmentSize| SegmentSize {
        bytes: n.saturating_mul(e.bytes).min(MAX_BYTES),
        guessed: e.guessed,
    };
    match (scalar, list) {
        (Some(c), _) => times(c.unsigned_abs().saturating_mul(members), element),
        (None, Some(counts)) => {
            let counts: Vec<u64> = counts.iter().map(|c| c.unsigned_abs()).collect();
            let d: Option<Vec<u64>> = displs
                .iter()
                .find_map(|d| a.ints(d))
                .map(|v| v.iter().map(|x| x.unsigned_abs()).collect());
            match (type_list, d) {
                // Alltoallw: byte displacements, one type per block.
                (Some(ts), Some(d)) => {
                    let mut guessed = false;
                    let end = counts
                        .iter()
                        .zip(&d)
                        .zip(&ts)
                        .map(|((c, d), t)| {
                            let e = extents.element(Some(*t));
                            guessed |= e.guessed;
                            d.saturating_add(c.saturating_mul(e.bytes))
                        })
                        .max()
                        .unwrap_or(0);
                    SegmentSize {
                        bytes: end.min(MAX_BYTES),
                        guessed,
                    }
                }
                (_, Some(d)) => times(spans(&counts, &d, 1), element),
                (_, None) => times(
                    counts.iter().fold(0u64, |s, c| s.saturating_add(*c)),
                    element,
                ),
            }
        }
        (None, None) if param == "compare_addr" => element,
        (None, None) => SegmentSize::guess(UNKNOWN_BUFFER),
    }
}

/// Each segment's size: the largest offset plus bytes touched of any use
/// (zero for segments no call names).
pub fn segment_sizes(sigs: &[&Signature], extents: &Extents, world_size: u64) -> Vec<SegmentSize> {
    let mut sizes: Vec<SegmentSize> = Vec::new();
    for sig in sigs {
        let a = Args::new(sig);
        for (p, v) in a.func.params.iter().zip(&sig.args) {
            let mut note = |b: &BufferRef, need: SegmentSize| {
                if let BufferRef::Segment { id, offset } = b {
                    let id = *id as usize;
                    if id >= sizes.len() {
                        sizes.resize(id + 1, SegmentSize::default());
                    }
                    let end = offset
                        .saturating_add(need.bytes)
                        .clamp(MIN_SEGMENT, MAX_BYTES);
                    let s = &mut sizes[id];
                    s.bytes = s.bytes.max(end);
                    s.guessed |= need.guessed;
                }
            };
            match (p.enc, v) {
                (Enc::Buffer, Value::Buffer(b)) => {
                    note(b, buffer_bytes(&a, p.name, extents, world_size))
                }
                (Enc::Array(Enc::Buffer), Value::Array(Some(items))) => {
                    for item in items {
                        if let Value::Buffer(b) = item {
                            note(b, SegmentSize::guess(UNKNOWN_BUFFER));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    sizes
}
