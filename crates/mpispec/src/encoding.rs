//! The bytes of each encoded parameter value (writer side; [`crate::decode_args`]
//! reads them back). Every number is a LEB128 varint, signed ones zigzagged.
//!
//! | encoding | bytes |
//! |---|---|
//! | Int, Tag, Address | zigzag(v) |
//! | Rank | 0 MPI_PROC_NULL, 1 MPI_ANY_SOURCE, 2 MPI_ROOT, else 3 + (zigzag(v) << 1 \| absolute): v = rank − caller's rank, or the rank itself where no relative form applies (inter-communicators, unknown communicators) |
//! | Const | zigzag(v) << 1 for a number that is no constant of the set; (id << 1) \| 1 for the set's constant `id`, or for a set of flags (mask << 1) \| 1, bit i of the mask the constant of id i |
//! | Handle | 0 the kind's null handle, else 1 + (id << 1 \| user): predefined handles have fixed ids ([`crate::predefined`]), user objects ids from a free-id pool |
//! | Request | 0 MPI_REQUEST_NULL, else pool + 1, index |
//! | Status | 0 MPI_STATUS_IGNORE, 2 a status whose fields MPI leaves undefined (a completed send, collective or RMA request), else flags (1 \| cancelled << 1 \| has error << 2), source (as Rank), zigzag(tag), count in bytes, [zigzag(MPI_ERROR)] |
//! | Buffer | 0 NULL (also MPI_BOTTOM in MPICH), 1 MPI_IN_PLACE, else 2 + segment, offset |
//! | Str | 0 NULL, else length + 1, bytes |
//! | Callback | 0 NULL, else id + 1 (one id per distinct function, in order of first use) |
//! | Array | 0 not recorded (NULL or not significant here), else length + 1, elements |
//! | Coords | 0 not recorded, else 1 + (n << 1 \| relative), then with relative the grid's n dimensions and n offsets from the caller's own coordinates (zigzag), else the n coordinates (zigzag) |
//! | OwnRank | 0 the caller's rank in the call's communicator, else 1 + the inner encoding's one number (Int: zigzag(v); Const: as above). The tracer uses 0 only where the argument is its caller's rank on every rank of the communicator (since the compact summary, rank timing 3; before, wherever it was the caller's rank): a number that is one rank's own rank only stays a number |

use crate::Enc;
use crate::value::{BufferRef, ConstRef, Coords, HandleRef, Rank, RequestRef, Status, Value};
use mpigram_varint::PutVarint;

pub(crate) const RANK_PROC_NULL: u64 = 0;
pub(crate) const RANK_ANY_SOURCE: u64 = 1;
pub(crate) const RANK_ROOT: u64 = 2;
pub(crate) const RANK_VALUE: u64 = 3;

pub(crate) const STATUS_PRESENT: u64 = 1;
pub(crate) const STATUS_UNDEFINED: u64 = 2;
pub(crate) const STATUS_CANCELLED: u64 = 2;
pub(crate) const STATUS_ERROR: u64 = 4;

pub(crate) const COORDS_NONE: u64 = 0;

pub(crate) const OWN_RANK: u64 = 0;

pub(crate) const BUFFER_NULL: u64 = 0;
pub(crate) const BUFFER_IN_PLACE: u64 = 1;
pub(crate) const BUFFER_SEGMENT: u64 = 2;

#[inline]
pub fn put_int(out: &mut Vec<u8>, v: i64) {
    out.put_i64(v);
}

#[inline]
pub fn put_rank(out: &mut Vec<u8>, rank: Rank) {
    out.put_u64(match rank {
        Rank::ProcNull => RANK_PROC_NULL,
        Rank::AnySource => RANK_ANY_SOURCE,
        Rank::Root => RANK_ROOT,
        Rank::Relative(d) => RANK_VALUE + (mpigram_varint::zigzag(d) << 1),
        Rank::Absolute(r) => RANK_VALUE + (mpigram_varint::zigzag(r) << 1 | 1),
    });
}

#[inline]
pub fn put_const(out: &mut Vec<u8>, c: ConstRef) {
    out.put_u64(const_code(c));
}

/// The one number a constant is encoded as.
#[inline]
pub fn const_code(c: ConstRef) -> u64 {
    match c {
        ConstRef::Plain(v) => mpigram_varint::zigzag(v) << 1,
        ConstRef::Named(id) => u64::from(id) << 1 | 1,
        ConstRef::Flags(mask) => mask << 1 | 1,
    }
}

/// An `OwnRank` argument: the caller's own rank (`None`), or another value
/// as the inner encoding's one number (`zigzag(v)` of an int, [`const_code`]
/// of a constant). The arguments it is for are C ints, so the number is
/// below `u64::MAX`.
#[inline]
pub fn put_own_rank(out: &mut Vec<u8>, other: Option<u64>) {
    out.put_u64(other.map_or(OWN_RANK, |code| code.wrapping_add(1)));
}

#[inline]
pub fn put_handle(out: &mut Vec<u8>, handle: HandleRef) {
    out.put_u64(match handle {
        HandleRef::Null => 0,
        HandleRef::Predefined(id) => 1 + (u64::from(id) << 1),
        HandleRef::User(id) => 1 + (id << 1 | 1),
    });
}

#[inline]
pub fn put_request(out: &mut Vec<u8>, request: RequestRef) {
    match request {
        RequestRef::Null => out.put_u64(0),
        RequestRef::Pooled { pool, index } => {
            out.put_u64(pool + 1);
            out.put_u64(index);
        }
    }
}

#[inline]
pub fn put_status(out: &mut Vec<u8>, status: Option<&Status>) {
    let Some(s) = status else {
        out.put_u64(0);
        return;
    };
    let flags = STATUS_PRESENT
        | if s.cancelled { STATUS_CANCELLED } else { 0 }
        | if s.error != 0 { STATUS_ERROR } else { 0 };
    out.put_u64(flags);
    put_rank(out, s.source);
    out.put_i64(s.tag);
    out.put_u64(s.count);
    if s.error != 0 {
        out.put_i64(s.error);
    }
}

/// A status argument whose fields MPI leaves undefined for this operation.
#[inline]
pub fn put_status_undefined(out: &mut Vec<u8>) {
    out.put_u64(STATUS_UNDEFINED);
}

#[inline]
pub fn put_buffer(out: &mut Vec<u8>, buffer: BufferRef) {
    match buffer {
        BufferRef::Null => out.put_u64(BUFFER_NULL),
        BufferRef::InPlace => out.put_u64(BUFFER_IN_PLACE),
        BufferRef::Segment { id, offset } => {
            out.put_u64(BUFFER_SEGMENT + id);
            out.put_u64(offset);
        }
    }
}

#[inline]
pub fn put_str(out: &mut Vec<u8>, s: Option<&[u8]>) {
    match s {
        None => out.put_u64(0),
        Some(bytes) => {
            out.put_u64(bytes.len() as u64 + 1);
            out.extend_from_slice(bytes);
        }
    }
}

#[inline]
pub fn put_callback(out: &mut Vec<u8>, id: Option<u64>) {
    out.put_u64(id.map_or(0, |id| id + 1));
}

/// Starts an array of `len` elements (`None`: not recorded); the caller
/// then writes exactly `len` elements.
#[inline]
pub fn put_array_len(out: &mut Vec<u8>, len: Option<usize>) {
    out.put_u64(len.map_or(0, |n| n as u64 + 1));
}

/// Cartesian coordinates (`None`: not recorded).
pub fn put_coords(out: &mut Vec<u8>, coords: Option<&Coords>) {
    match coords {
        None => out.put_u64(COORDS_NONE),
        Some(Coords::Absolute(c)) => put_coords_parts(out, None, c.iter().copied()),
        Some(Coords::Relative { dims, offsets }) => {
            put_coords_parts(out, Some(dims), offsets.iter().copied())
        }
    }
}

/// Recorded coordinates: `values` are offsets from the caller's own
/// coordinates in a grid of `dims` (as long as `values`), or with no grid
/// the coordinates themselves.
pub fn put_coords_parts(
    out: &mut Vec<u8>,
    dims: Option<&[i64]>,
    values: impl ExactSizeIterator<Item = i64>,
) {
    out.put_u64(1 + ((values.len() as u64) << 1 | u64::from(dims.is_some())));
    dims.into_iter().flatten().for_each(|&v| out.put_i64(v));
    values.for_each(|v| out.put_i64(v));
}

/// Writes a decoded value back in the bytes it was read from. The tracer
/// encodes straight from C arguments with the functions above; this is for
/// code that holds [`Value`]s (re-encoding what was decoded, tests).
pub fn put_value(out: &mut Vec<u8>, enc: Enc, value: &Value) {
    match (enc, value) {
        (Enc::OwnRank(_), Value::Rank(Rank::Relative(0))) => put_own_rank(out, None),
        (Enc::OwnRank(_), Value::Int(v)) => put_own_rank(out, Some(mpigram_varint::zigzag(*v))),
        (Enc::OwnRank(_), Value::Const(_, c)) => put_own_rank(out, Some(const_code(*c))),
        (_, Value::Int(v) | Value::Tag(v) | Value::Address(v)) => put_int(out, *v),
        (_, Value::Rank(r)) => put_rank(out, *r),
        (_, Value::Const(_, c)) => put_const(out, *c),
        (_, Value::Handle(_, h)) => put_handle(out, *h),
        (_, Value::Request(q)) => put_request(out, *q),
        (_, Value::Status(s)) => put_status(out, s.as_ref()),
        (_, Value::UndefinedStatus) => put_status_undefined(out),
        (_, Value::Buffer(b)) => put_buffer(out, *b),
        (_, Value::Str(s)) => put_str(out, s.as_deref()),
        (_, Value::Callback(c)) => put_callback(out, *c),
        (_, Value::Coords(c)) => put_coords(out, c.as_ref()),
        (_, Value::Array(items)) => {
            let elem = match enc {
                Enc::Array(elem) => *elem,
                other => other,
            };
            put_array_len(out, items.as_ref().map(Vec::len));
            for item in items.iter().flatten() {
                put_value(out, elem, item);
            }
        }
    }
}
