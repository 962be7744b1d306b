//! Encoded parameter values, and reading a signature's arguments back.

use crate::encoding::*;
use crate::{Enc, Func, FuncId, HandleKind};
use mpigram_varint::{ByteReader, DecodeError};

/// A rank argument as encoded: constants stay constants, other ranks are
/// relative to the caller where that makes ranks agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rank {
    ProcNull,
    AnySource,
    Root,
    /// `rank - caller's rank` in the call's communicator.
    Relative(i64),
    /// The rank itself.
    Absolute(i64),
}

/// An MPI object by symbolic id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandleRef {
    /// The kind's null handle (MPI_COMM_NULL, MPI_DATATYPE_NULL, ...).
    Null,
    /// A predefined handle by fixed id: see [`crate::predefined`].
    Predefined(u32),
    /// A user object, by id from the kind's free-id pool.
    User(u64),
}

/// A request: MPI_REQUEST_NULL, or an index in the pool of the call
/// signature that created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestRef {
    Null,
    Pooled { pool: u64, index: u64 },
}

/// What a completed operation's status said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status {
    pub source: Rank,
    pub tag: i64,
    /// Received (or, for MPI-IO, transferred) size in bytes.
    pub count: u64,
    pub cancelled: bool,
    /// MPI_ERROR when it is not MPI_SUCCESS.
    pub error: i64,
}

/// An integer of a set of named constants ([`crate::ConstSet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConstRef {
    /// A constant of the set, by id: its index in [`crate::ConstSet::names`].
    Named(u32),
    /// Constants of a set of flags ORed: bit i is the constant of id i.
    Flags(u64),
    /// A number that is none of the set's constants (a colour, a user's
    /// error class), by value.
    Plain(i64),
}

/// A buffer address as memory segment and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferRef {
    /// NULL, which is also MPI_BOTTOM in MPICH.
    Null,
    InPlace,
    Segment {
        id: u64,
        offset: u64,
    },
}

/// Coordinates in a Cartesian grid, as encoded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Coords {
    /// The coordinates themselves (the tracer did not know the grid).
    Absolute(Vec<i64>),
    /// Offsets from the caller's own coordinates in a grid of `dims`.
    Relative { dims: Vec<i64>, offsets: Vec<i64> },
}

impl Coords {
    /// The coordinates, given the caller's rank in the communicator (its
    /// own coordinates are that rank in row-major order, as MPI numbers a
    /// Cartesian grid); `None` if they cannot be worked out.
    pub fn absolute(&self, caller: Option<u32>) -> Option<Vec<i64>> {
        match self {
            Coords::Absolute(c) => Some(c.clone()),
            Coords::Relative { dims, offsets } => {
                let mut rest = i64::from(caller?);
                let mut own = vec![0; dims.len()];
                for (o, &d) in own.iter_mut().zip(dims).rev() {
                    if d <= 0 {
                        return None;
                    }
                    *o = rest % d;
                    rest /= d;
                }
                own.iter()
                    .zip(offsets)
                    .map(|(o, d)| o.checked_add(*d))
                    .collect()
            }
        }
    }
}

/// One decoded argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Rank(Rank),
    Tag(i64),
    Address(i64),
    Const(crate::ConstSet, ConstRef),
    Handle(HandleKind, HandleRef),
    Request(RequestRef),
    Status(Option<Status>),
    /// A status MPI leaves undefined (of a completed send, collective or
    /// RMA operation).
    UndefinedStatus,
    Buffer(BufferRef),
    Str(Option<Vec<u8>>),
    Callback(Option<u64>),
    /// `None`: not recorded (NULL, or not significant on this rank).
    Array(Option<Vec<Value>>),
    /// `None`: not recorded.
    Coords(Option<Coords>),
}

/// One call signature, decoded: the function, its return code and every
/// argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub func: FuncId,
    /// The call's return code (MPI_SUCCESS is 0).
    pub ret: i64,
    pub args: Vec<Value>,
}

/// Starts a signature: the function id and the return code; the arguments follow.
#[inline]
pub fn put_signature_head(out: &mut Vec<u8>, func: FuncId, ret: i64) {
    use mpigram_varint::PutVarint;
    out.put_u64(u64::from(func));
    out.put_i64(ret);
}

/// Reads a whole signature (function, return code, arguments) from `bytes`.
pub fn decode_signature(bytes: &[u8]) -> Result<Signature, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let at = r.position();
    let id = r.u64()?;
    let func = crate::FUNCS
        .get(id as usize)
        .ok_or(out_of_range(at, id, "function id"))?;
    let ret = r.i64()?;
    let args = decode_args(func, &mut r)?;
    r.finish()?;
    Ok(Signature {
        func: id as FuncId,
        ret,
        args,
    })
}

impl Signature {
    /// The signature's bytes, as the tracer writes them: the inverse of
    /// [`decode_signature`], which accepts only bytes this gives back.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_signature_head(&mut out, self.func, self.ret);
        let params = crate::FUNCS
            .get(self.func as usize)
            .map_or(&[][..], |f| f.params);
        for (i, v) in self.args.iter().enumerate() {
            // Values beyond the function's parameters (a hand-made signature) as they are.
            let enc = params.get(i).map_or(Enc::Int, |p| p.enc);
            put_value(&mut out, enc, v);
        }
        out
    }
}

/// Reads the arguments of one call of `func` from `r`.
pub fn decode_args(func: &Func, r: &mut ByteReader<'_>) -> Result<Vec<Value>, DecodeError> {
    func.params.iter().map(|p| decode(p.enc, r)).collect()
}

fn decode(enc: Enc, r: &mut ByteReader<'_>) -> Result<Value, DecodeError> {
    Ok(match enc {
        Enc::Int => Value::Int(r.i64()?),
        Enc::Tag => Value::Tag(r.i64()?),
        Enc::Const(set) => Value::Const(set, constant(set, r)?),
        Enc::Address => Value::Address(r.i64()?),
        Enc::Rank => Value::Rank(rank(r)?),
        Enc::Handle(kind) => Value::Handle(kind, handle(r)?),
        Enc::Request => Value::Request(match r.u64()? {
            0 => RequestRef::Null,
            pool => RequestRef::Pooled {
                pool: pool - 1,
                index: r.u64()?,
            },
        }),
        Enc::Status => status(r)?,
        Enc::Buffer => Value::Buffer(match r.u64()? {
            BUFFER_NULL => BufferRef::Null,
            BUFFER_IN_PLACE => BufferRef::InPlace,
            code => BufferRef::Segment {
                id: code - BUFFER_SEGMENT,
                offset: r.u64()?,
            },
        }),
        Enc::Str => Value::Str(match r.u64()? {
            0 => None,
            n => Some(
                r.bytes(usize::try_from(n - 1).unwrap_or(usize::MAX))?
                    .to_vec(),
            ),
        }),
        Enc::Callback => Value::Callback(r.u64()?.checked_sub(1)),
        Enc::Coords => coords(r)?,
        Enc::OwnRank(inner) => {
            let at = r.position();
            match r.u64()?.checked_sub(1) {
                None => Value::Rank(Rank::Relative(0)),
                Some(code) => match inner {
                    Enc::Int => Value::Int(mpigram_varint::unzigzag(code)),
                    Enc::Const(set) => Value::Const(*set, const_of_code(*set, code, at)?),
                    _ => return Err(out_of_range(at, code, "own-rank argument")),
                },
            }
        }
        Enc::Array(elem) => Value::Array(match r.u64()? {
            0 => None,
            n => {
                let len = n - 1;
                check_room(r, len)?;
                Some(
                    (0..len)
                        .map(|_| decode(*elem, r))
                        .collect::<Result<_, _>>()?,
                )
            }
        }),
    })
}

/// Every element takes at least one byte: more than the bytes left is
/// corrupt, and refused before it takes memory.
fn check_room(r: &ByteReader<'_>, elements: u64) -> Result<(), DecodeError> {
    if elements > r.remaining() as u64 {
        return Err(DecodeError {
            offset: r.position(),
            kind: mpigram_varint::DecodeErrorKind::TooManyElements {
                count: elements,
                left: r.remaining(),
            },
        });
    }
    Ok(())
}

fn coords(r: &mut ByteReader<'_>) -> Result<Value, DecodeError> {
    let code = r.u64()?;
    if code == COORDS_NONE {
        return Ok(Value::Coords(None));
    }
    let (len, relative) = ((code - 1) >> 1, (code - 1) & 1 == 1);
    check_room(r, len.saturating_mul(1 + u64::from(relative)))?;
    let mut numbers = |n| (0..n).map(|_| r.i64()).collect::<Result<Vec<_>, _>>();
    Ok(Value::Coords(Some(if relative {
        let dims = numbers(len)?;
        Coords::Relative {
            dims,
            offsets: numbers(len)?,
        }
    } else {
        Coords::Absolute(numbers(len)?)
    })))
}

fn rank(r: &mut ByteReader<'_>) -> Result<Rank, DecodeError> {
    Ok(match r.u64()? {
        RANK_PROC_NULL => Rank::ProcNull,
        RANK_ANY_SOURCE => Rank::AnySource,
        RANK_ROOT => Rank::Root,
        code => {
            let v = code - RANK_VALUE;
            let n = mpigram_varint::unzigzag(v >> 1);
            if v & 1 == 0 {
                Rank::Relative(n)
            } else {
                Rank::Absolute(n)
            }
        }
    })
}

fn constant(set: crate::ConstSet, r: &mut ByteReader<'_>) -> Result<ConstRef, DecodeError> {
    let at = r.position();
    let code = r.u64()?;
    const_of_code(set, code, at)
}

/// The constant encoded as `code` (read at byte `at`).
fn const_of_code(set: crate::ConstSet, code: u64, at: usize) -> Result<ConstRef, DecodeError> {
    let payload = code >> 1;
    let known = set.names().len() as u64;
    Ok(match code & 1 {
        0 => ConstRef::Plain(mpigram_varint::unzigzag(payload)),
        _ if set.is_flags() && payload >> known == 0 => ConstRef::Flags(payload),
        _ if !set.is_flags() && payload < known => ConstRef::Named(payload as u32),
        _ => return Err(out_of_range(at, code, "named constant")),
    })
}

fn handle(r: &mut ByteReader<'_>) -> Result<HandleRef, DecodeError> {
    let at = r.position();
    Ok(match r.u64()? {
        0 => HandleRef::Null,
        code if (code - 1) & 1 == 1 => HandleRef::User((code - 1) >> 1),
        code => HandleRef::Predefined(
            u32::try_from((code - 1) >> 1)
                .map_err(|_| out_of_range(at, code, "predefined handle"))?,
        ),
    })
}

fn status(r: &mut ByteReader<'_>) -> Result<Value, DecodeError> {
    let at = r.position();
    let flags = r.u64()?;
    match flags {
        0 => return Ok(Value::Status(None)),
        STATUS_UNDEFINED => return Ok(Value::UndefinedStatus),
        // Flags no writer sets are refused, not guessed at.
        f if f & STATUS_PRESENT == 0
            || f & !(STATUS_PRESENT | STATUS_CANCELLED | STATUS_ERROR) != 0 =>
        {
            return Err(out_of_range(at, f, "status flags"));
        }
        _ => {}
    }
    let source = rank(r)?;
    let tag = r.i64()?;
    let count = r.u64()?;
    let error = if flags & STATUS_ERROR != 0 {
        let at = r.position();
        // Written only when it is not MPI_SUCCESS.
        match r.i64()? {
            0 => return Err(out_of_range(at, 0, "status MPI_ERROR flagged as set")),
            e => e,
        }
    } else {
        0
    };
    Ok(Value::Status(Some(Status {
        source,
        tag,
        count,
        cancelled: flags & STATUS_CANCELLED != 0,
        error,
    })))
}

fn out_of_range(offset: usize, value: u64, target: &'static str) -> DecodeError {
    DecodeError {
        offset,
        kind: mpigram_varint::DecodeErrorKind::OutOfRange { value, target },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Param;

    #[test]
    fn coordinates_are_rebuilt_from_the_callers_rank() {
        let relative = Coords::Relative {
            dims: vec![2, 3],
            offsets: vec![0, 1],
        };
        // Rank 4 of a 2 x 3 grid is (1, 1), row-major; one column on is (1, 2).
        assert_eq!(relative.absolute(Some(4)), Some(vec![1, 2]));
        assert_eq!(relative.absolute(None), None);
        assert_eq!(Coords::Absolute(vec![5]).absolute(None), Some(vec![5]));
        for v in [
            Value::Coords(None),
            Value::Coords(Some(relative.clone())),
            Value::Coords(Some(Coords::Absolute(vec![-1, 7]))),
        ] {
            let mut out = Vec::new();
            put_value(&mut out, Enc::Coords, &v);
            let mut r = ByteReader::new(&out);
            assert_eq!(decode(Enc::Coords, &mut r).unwrap(), v);
            r.finish().unwrap();
        }
        // A length past the bytes left is refused before it takes memory.
        let mut r = ByteReader::new(&[0xff, 0xff, 0x7f]);
        assert!(decode(Enc::Coords, &mut r).is_err());
    }

    /// A colour or key that is the caller's own rank is one byte, 0, and
    /// decodes as a rank relative to the caller; other values keep their
    /// inner encoding's value, constants by name.
    #[test]
    fn own_rank_arguments_round_trip() {
        static COLOUR: Enc = Enc::Const(crate::ConstSet::Undefined);
        let undefined = crate::ConstSet::Undefined;
        for (enc, v, bytes) in [
            (
                Enc::OwnRank(&Enc::Int),
                Value::Rank(Rank::Relative(0)),
                vec![0],
            ),
            (Enc::OwnRank(&Enc::Int), Value::Int(0), vec![1]),
            (Enc::OwnRank(&Enc::Int), Value::Int(-2), vec![4]),
            (
                Enc::OwnRank(&COLOUR),
                Value::Const(undefined, ConstRef::Named(0)),
                vec![2],
            ),
            (
                Enc::OwnRank(&COLOUR),
                Value::Const(undefined, ConstRef::Plain(3)),
                vec![13],
            ),
            (
                Enc::OwnRank(&COLOUR),
                Value::Rank(Rank::Relative(0)),
                vec![0],
            ),
        ] {
            let mut out = Vec::new();
            put_value(&mut out, enc, &v);
            assert_eq!(out, bytes, "{v:?}");
            let mut r = ByteReader::new(&out);
            assert_eq!(decode(enc, &mut r).unwrap(), v);
            r.finish().unwrap();
        }
        // A constant of the set that does not exist is refused.
        let mut r = ByteReader::new(&[4]);
        assert!(decode(Enc::OwnRank(&COLOUR), &mut r).is_err());
    }

    static EVERY_ENCODING: &[Param] = &[
        Param {
            name: "i",
            enc: Enc::Int,
        },
        Param {
            name: "r",
            enc: Enc::Rank,
        },
        Param {
            name: "t",
            enc: Enc::Tag,
        },
        Param {
            name: "a",
            enc: Enc::Address,
        },
        Param {
            name: "h",
            enc: Enc::Handle(HandleKind::Datatype),
        },
        Param {
            name: "q",
            enc: Enc::Request,
        },
        Param {
            name: "s",
            enc: Enc::Status,
        },
        Param {
            name: "b",
            enc: Enc::Buffer,
        },
        Param {
            name: "x",
            enc: Enc::Str,
        },
        Param {
            name: "c",
            enc: Enc::Callback,
        },
        Param {
            name: "v",
            enc: Enc::Array(&Enc::Rank),
        },
        Param {
            name: "n",
            enc: Enc::Array(&Enc::Int),
        },
        Param {
            name: "e",
            enc: Enc::Array(&Enc::Int),
        },
    ];

    #[test]
    fn every_encoding_round_trips() {
        let f = Func {
            name: "MPI_Test_all_encodings",
            params: EVERY_ENCODING,
        };
        let status = Status {
            source: Rank::Relative(-1),
            tag: 7,
            count: 64,
            cancelled: true,
            error: 13,
        };
        let mut out = Vec::new();
        put_int(&mut out, -5);
        put_rank(&mut out, Rank::Absolute(3));
        put_int(&mut out, -1);
        put_int(&mut out, 1 << 40);
        put_handle(&mut out, HandleRef::User(9));
        put_request(&mut out, RequestRef::Pooled { pool: 2, index: 0 });
        put_status(&mut out, Some(&status));
        put_buffer(&mut out, BufferRef::Segment { id: 4, offset: 128 });
        put_str(&mut out, Some(b"key"));
        put_callback(&mut out, Some(0));
        put_array_len(&mut out, Some(3));
        for r in [Rank::ProcNull, Rank::AnySource, Rank::Root] {
            put_rank(&mut out, r);
        }
        put_array_len(&mut out, None);
        put_array_len(&mut out, Some(0));
        let mut r = ByteReader::new(&out);
        let values = decode_args(&f, &mut r).unwrap();
        r.finish().unwrap();
        assert_eq!(
            values,
            vec![
                Value::Int(-5),
                Value::Rank(Rank::Absolute(3)),
                Value::Tag(-1),
                Value::Address(1 << 40),
                Value::Handle(HandleKind::Datatype, HandleRef::User(9)),
                Value::Request(RequestRef::Pooled { pool: 2, index: 0 }),
                Value::Status(Some(status)),
                Value::Buffer(BufferRef::Segment { id: 4, offset: 128 }),
                Value::Str(Some(b"key".to_vec())),
                Value::Callback(Some(0)),
                Value::Array(Some(vec![
                    Value::Rank(Rank::ProcNull),
                    Value::Rank(Rank::AnySource),
                    Value::Rank(Rank::Root)
                ])),
                Value::Array(None),
                Value::Array(Some(vec![])),
            ]
        );
    }

    #[test]
    fn constants_and_nulls_round_trip() {
        static P: &[Param] = &[
            Param {
                name: "h",
                enc: Enc::Handle(HandleKind::Comm),
            },
            Param {
                name: "h2",
                enc: Enc::Handle(HandleKind::Comm),
            },
            Param {
                name: "q",
                enc: Enc::Request,
            },
            Param {
                name: "s",
                enc: Enc::Status,
            },
            Param {
                name: "b",
                enc: Enc::Buffer,
            },
            Param {
                name: "b2",
                enc: Enc::Buffer,
            },
            Param {
                name: "x",
                enc: Enc::Str,
            },
            Param {
                name: "c",
                enc: Enc::Callback,
            },
            Param {
                name: "u",
                enc: Enc::Status,
            },
        ];
        let f = Func {
            name: "MPI_Test_nulls",
            params: P,
        };
        let mut out = Vec::new();
        put_handle(&mut out, HandleRef::Null);
        put_handle(&mut out, HandleRef::Predefined(1));
        put_request(&mut out, RequestRef::Null);
        put_status(&mut out, None);
        put_buffer(&mut out, BufferRef::Null);
        put_buffer(&mut out, BufferRef::InPlace);
        put_str(&mut out, None);
        put_callback(&mut out, None);
        put_status_undefined(&mut out);
        let values = decode_args(&f, &mut ByteReader::new(&out)).unwrap();
        assert_eq!(
            values,
            vec![
                Value::Handle(HandleKind::Comm, HandleRef::Null),
                Value::Handle(HandleKind::Comm, HandleRef::Predefined(1)),
                Value::Request(RequestRef::Null),
                Value::Status(None),
                Value::Buffer(BufferRef::Null),
                Value::Buffer(BufferRef::InPlace),
                Value::Str(None),
                Value::Callback(None),
                Value::UndefinedStatus,
            ]
        );
    }

    /// Found by fuzzing: flags without the "present" bit, unknown flag bits
    /// and an MPI_ERROR flagged but 0 used to be read as something else
    /// (MPI_STATUS_IGNORE, dropped bits, no error), so garbage passed as a
    /// status. Every accepted status must be one that `put_status` writes.
    #[test]
    fn status_flags_no_writer_sets_are_refused() {
        static P: &[Param] = &[Param {
            name: "s",
            enc: Enc::Status,
        }];
        let f = Func {
            name: "MPI_Test_status",
            params: P,
        };
        let decode = |bytes: &[u8]| decode_args(&f, &mut ByteReader::new(bytes));
        // flags, source (relative 0), tag 0, count 0, [error]
        for flags in [4u8, 6, 8, 9, 0x41] {
            let e = decode(&[flags, 3, 0, 0, 2]).expect_err("unknown flags");
            assert_eq!(e.offset, 0);
            assert!(e.to_string().contains("status flags"), "{e}");
        }
        let e = decode(&[1 | 4, 3, 0, 0, 0]).expect_err("error flagged but 0");
        assert_eq!(e.offset, 4);
        let ok = decode(&[1 | 2 | 4, 3, 0, 0, 2]).expect("cancelled, error 1");
        assert_eq!(
            ok,
            vec![Value::Status(Some(Status {
                source: Rank::Relative(0),
                tag: 0,
                count: 0,
                cancelled: true,
                error: 1,
            }))]
        );
    }

    #[test]
    fn truncated_or_random_bytes_give_errors_not_panics() {
        let f = Func {
            name: "MPI_Test_all_encodings",
            params: EVERY_ENCODING,
        };
        let mut state = 0x1234_5678_9abc_def0u64;
        for len in 0..64 {
            for _ in 0..200 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        state as u8
                    })
                    .collect();
                let _ = decode_args(&f, &mut ByteReader::new(&bytes));
            }
        }
    }
}
