//! Sizes of MPI datatypes: what `MPI_Type_size` says, from the predefined
//! types' sizes in MPICH's ABI and from the recorded arguments of the calls
//! that build derived types. A type that cannot be sized (built by a call
//! mpigram cannot size, or from such a type) has an unknown size, never a
//! guessed one.

use mpigram_mpispec::Args as Call;
use mpigram_mpispec::{ConstRef, HandleKind, HandleRef, Signature, Value, predefined};
use rustc_hash::FxHashMap;

/// `MPI_DISTRIBUTE_*` as this module numbers them (traces store them by name).
const DISTRIBUTE_BLOCK: i64 = 0;
const DISTRIBUTE_CYCLIC: i64 = 1;
const DISTRIBUTE_NONE: i64 = 2;
/// `MPI_DISTRIBUTE_DFLT_DARG` as this module numbers it (block sizes are positive).
const DISTRIBUTE_DFLT_DARG: i64 = -1;

/// The elements of a darray's constant array `name` as this module numbers
/// them: a named constant by `named(name)`, a number as itself.
fn constants(call: &Call<'_>, name: &str, named: fn(&str) -> Option<i64>) -> Option<Vec<i64>> {
    let Value::Array(Some(items)) = call.value(name)? else {
        return None;
    };
    items
        .iter()
        .map(|v| match v {
            Value::Const(_, ConstRef::Plain(v)) => Some(*v),
            Value::Const(set, c) => named(&set.text(*c)?),
            _ => None,
        })
        .collect()
}

fn distribution(name: &str) -> Option<i64> {
    match name {
        "MPI_DISTRIBUTE_BLOCK" => Some(DISTRIBUTE_BLOCK),
        "MPI_DISTRIBUTE_CYCLIC" => Some(DISTRIBUTE_CYCLIC),
        "MPI_DISTRIBUTE_NONE" => Some(DISTRIBUTE_NONE),
        _ => None,
    }
}

fn distribution_arg(name: &str) -> Option<i64> {
    (name == "MPI_DISTRIBUTE_DFLT_DARG").then_some(DISTRIBUTE_DFLT_DARG)
}

/// Size in bytes of a predefined datatype as MPICH 4 on x86-64 Linux
/// reports it (`MPI_Type_size`), by name.
pub fn predefined_size(name: &str) -> Option<u64> {
    Some(match name {
        "MPI_LB" | "MPI_UB" => 0,
        "MPI_BYTE" | "MPI_CHAR" | "MPI_CHARACTER" | "MPI_CXX_BOOL" | "MPI_C_BOOL"
        | "MPI_INT8_T" | "MPI_INTEGER1" | "MPI_PACKED" | "MPI_SIGNED_CHAR" | "MPI_UINT8_T"
        | "MPI_UNSIGNED_CHAR" | "MPI_LOGICAL1" => 1,
        "MPIX_C_FLOAT16" | "MPI_INT16_T" | "MPI_INTEGER2" | "MPI_SHORT" | "MPI_UINT16_T"
        | "MPI_UNSIGNED_SHORT" | "MPI_LOGICAL2" | "MPI_REAL2" => 2,
        "MPI_FLOAT" | "MPI_INT" | "MPI_INT32_T" | "MPI_INTEGER" | "MPI_INTEGER4"
        | "MPI_LOGICAL" | "MPI_REAL" | "MPI_REAL4" | "MPI_UINT32_T" | "MPI_UNSIGNED"
        | "MPI_WCHAR" | "MPI_LOGICAL4" | "MPI_COMPLEX4" => 4,
        "MPI_SHORT_INT" => 6,
        "MPI_2INT"
        | "MPI_2INTEGER"
        | "MPI_2REAL"
        | "MPI_AINT"
        | "MPI_COMPLEX"
        | "MPI_COMPLEX8"
        | "MPI_COUNT"
        | "MPI_CXX_FLOAT_COMPLEX"
        | "MPI_C_FLOAT_COMPLEX"
        | "MPI_DOUBLE"
        | "MPI_DOUBLE_PRECISION"
        | "MPI_FLOAT_INT"
        | "MPI_INT64_T"
        | "MPI_INTEGER8"
        | "MPI_LONG"
        | "MPI_LONG_LONG_INT"
        | "MPI_OFFSET"
        | "MPI_REAL8"
        | "MPI_UINT64_T"
        | "MPI_UNSIGNED_LONG"
        | "MPI_UNSIGNED_LONG_LONG"
        | "MPI_LOGICAL8" => 8,
        "MPI_DOUBLE_INT" | "MPI_LONG_INT" => 12,
        "MPI_2DOUBLE_PRECISION"
        | "MPI_COMPLEX16"
        | "MPI_CXX_DOUBLE_COMPLEX"
        | "MPI_C_DOUBLE_COMPLEX"
        | "MPI_DOUBLE_COMPLEX"
        | "MPI_LONG_DOUBLE"
        | "MPI_REAL16"
        | "MPI_INTEGER16"
        | "MPI_LOGICAL16"
        | "MPI_2COMPLEX" => 16,
        "MPI_LONG_DOUBLE_INT" => 20,
        "MPI_COMPLEX32"
        | "MPI_CXX_LONG_DOUBLE_COMPLEX"
        | "MPI_C_LONG_DOUBLE_COMPLEX"
        | "MPI_2DOUBLE_COMPLEX" => 32,
        _ => return None,
    })
}

/// The user datatype ids a call defines (the types it creates).
pub(crate) fn defined_types(call: &Call<'_>) -> Vec<u64> {
    let user = |h: Option<HandleRef>| match h {
        Some(HandleRef::User(id)) => Some(id),
        _ => None,
    };
    match call.operation() {
        // A new handle for an existing view's types (MPICH duplicates them).
        "File_get_view" => [call.handle("etype"), call.handle("filetype")]
            .into_iter()
            .filter_map(user)
            .collect(),
        // Looked-up predefined types; a user id would be a type of that size.
        "Type_match_size" => user(call.handle("datatype")).into_iter().collect(),
        // Every constructor names its result `newtype`.
        _ if call.func.name.starts_with("MPI_Type_") => {
            user(call.handle("newtype")).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// The size of the type(s) a call defines (see [`defined_types`]), given
/// the sizes of the user types it is built from.
pub(crate) fn defined_size(call: &Call<'_>, user_size: &dyn Fn(u64) -> Option<u64>) -> Option<u64> {
    let size = |name: &str| size_of(call.handle(name)?, user_size);
    let int = |name: &str| u64::try_from(call.int(name)?).ok();
    let sum = |name: &str| -> Option<u64> {
        call.ints(name)?
            .into_iter()
            .try_fold(0u64, |acc, v| acc.checked_add(u64::try_from(v).ok()?))
    };
    let product = |values: &[Option<u64>]| -> Option<u64> {
        values
            .iter()
            .try_fold(1u64, |acc, v| acc.checked_mul((*v)?))
    };
    match call.operation() {
        "Type_contiguous" => product(&[int("count"), size("oldtype")]),
        "Type_vector"
        | "Type_hvector"
        | "Type_create_hvector"
        | "Type_create_indexed_block"
        | "Type_create_hindexed_block" => {
            product(&[int("count"), int("blocklength"), size("oldtype")])
        }
        "Type_indexed" | "Type_hindexed" | "Type_create_hindexed" => {
            product(&[sum("array_of_blocklengths"), size("oldtype")])
        }
        "Type_struct" | "Type_create_struct" => {
            let lengths = call.ints("array_of_blocklengths")?;
            let types = call.handles("array_of_types")?;
            if lengths.len() != types.len() {
                return None;
            }
            lengths.iter().zip(types).try_fold(0u64, |acc, (&n, t)| {
                let bytes = u64::try_from(n).ok()?.checked_mul(size_of(t, user_size)?)?;
                acc.checked_add(bytes)
            })
        }
        "Type_create_subarray" => {
            let subsizes: Vec<Option<u64>> = call
                .ints("array_of_subsizes")?
                .into_iter()
                .map(|s| u64::try_from(s).ok())
                .collect();
            product(&[product(&subsizes), size("oldtype")])
        }
        "Type_create_darray" => product(&[darray_elements(call), size("oldtype")]),
        "Type_create_resized" | "Type_dup" => size("oldtype"),
        "Type_match_size" => int("size"),
        _ => None,
    }
}

/// Elements of `oldtype` in the calling process's part of a distributed
/// array: per dimension, the process's share of a block or cyclic
/// distribution over a row-major process grid.
fn darray_elements(call: &Call<'_>) -> Option<u64> {
    let (size, rank) = (call.int("size")?, call.int("rank")?);
    let gsizes = call.ints("array_of_gsizes")?;
    let distribs = constants(call, "array_of_distribs", distribution)?;
    let dargs = constants(call, "array_of_dargs", distribution_arg)?;
    let psizes = call.ints("array_of_psizes")?;
    let n = gsizes.len();
    if [distribs.len(), dargs.len(), psizes.len()] != [n; 3]
        || psizes.iter().any(|&p| p < 1)
        || psizes.iter().try_fold(1i64, |acc, &p| acc.checked_mul(p)) != Some(size)
        || !(0..size).contains(&rank)
    {
        return None;
    }
    let mut coords = vec![0i64; n];
    let mut r = rank;
    for d in (0..n).rev() {
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    let mut elements = 1u64;
    for d in 0..n {
        let (g, p, c, arg) = (gsizes[d], psizes[d], coords[d], dargs[d]);
        if g < 0 {
            return None;
        }
        let local = match distribs[d] {
            DISTRIBUTE_NONE => g,
            DISTRIBUTE_BLOCK => {
                let block = if arg == DISTRIBUTE_DFLT_DARG {
                    (g + p - 1) / p
                } else {
                    arg
                };
                if block < 1 || block.checked_mul(p)? < g {
                    return None; // erroneous: the blocks do not cover the array
                }
                (g - c * block).clamp(0, block)
            }
            DISTRIBUTE_CYCLIC => {
                let block = if arg == DISTRIBUTE_DFLT_DARG { 1 } else { arg };
                if block < 1 {
                    return None;
                }
                let cycle = block.checked_mul(p)?;
                (g / cycle) * block + (g % cycle - c * block).clamp(0, block)
            }
            _ => return None,
        };
        elements = elements.checked_mul(u64::try_from(local).ok()?)?;
    }
    Some(elements)
}

/// Size of a datatype handle; user types through `user_size`.
pub(crate) fn size_of(h: HandleRef, user_size: &dyn Fn(u64) -> Option<u64>) -> Option<u64> {
    match h {
        HandleRef::Null => None,
        HandleRef::Predefined(id) => {
            predefined_size(predefined(HandleKind::Datatype).get(id as usize)?)
        }
        HandleRef::User(id) => user_size(id),
    }
}

/// The sizes of a rank's user datatypes as of some point of its run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatatypeSizes {
    /// Size of each defined user type (`None`: defined, size unknown).
    user: FxHashMap<u64, Option<u64>>,
}

impl DatatypeSizes {
    /// Takes in the types a call defines, sized from the current table.
    pub fn define(&mut self, sig: &Signature) {
        let call = Call::new(sig);
        let ids = defined_types(&call);
        if ids.is_empty() {
            return;
        }
        let size = defined_size(&call, &|id| self.user.get(&id).copied().flatten());
        for id in ids {
            self.user.insert(id, size);
        }
    }

    /// Sets a user type's size directly.
    pub(crate) fn set(&mut self, id: u64, size: Option<u64>) {
        self.user.insert(id, size);
    }

    /// Size of a datatype, if it is known.
    pub fn size(&self, h: HandleRef) -> Option<u64> {
        size_of(h, &|id| self.user.get(&id).copied().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{int, sig};
    use super::*;
    use mpigram_mpispec::ConstSet;

    fn dtype(name: &str) -> HandleRef {
        let id = predefined(HandleKind::Datatype)
            .iter()
            .position(|n| *n == name)
            .unwrap();
        HandleRef::Predefined(id as u32)
    }

    fn user(id: u64) -> Value {
        Value::Handle(HandleKind::Datatype, HandleRef::User(id))
    }

    fn ints(v: &[i64]) -> Value {
        Value::Array(Some(v.iter().map(|&i| Value::Int(i)).collect()))
    }

    fn order_c() -> Value {
        let set = ConstSet::Order;
        Value::Const(set, ConstRef::Named(set.id("MPI_ORDER_C").unwrap()))
    }

    /// Integers of `set`, those `name` names by name.
    fn consts(set: ConstSet, v: &[i64], name: fn(i64) -> Option<&'static str>) -> Value {
        let item = |i: i64| match name(i) {
            Some(n) => ConstRef::Named(set.id(n).unwrap()),
            None => ConstRef::Plain(i),
        };
        Value::Array(Some(
            v.iter().map(|&i| Value::Const(set, item(i))).collect(),
        ))
    }

    #[test]
    fn every_predefined_datatype_has_its_mpich_size() {
        for name in predefined(HandleKind::Datatype) {
            assert!(predefined_size(name).is_some(), "{name} has no size");
        }
        let sizes = [
            ("MPI_CHAR", 1),
            ("MPI_SHORT_INT", 6),
            ("MPI_INT", 4),
            ("MPI_DOUBLE", 8),
            ("MPI_DOUBLE_INT", 12),
            ("MPI_LONG_DOUBLE", 16),
            ("MPI_LONG_DOUBLE_INT", 20),
            ("MPI_C_LONG_DOUBLE_COMPLEX", 32),
            ("MPI_UB", 0),
        ];
        for (name, size) in sizes {
            assert_eq!(
                DatatypeSizes::default().size(dtype(name)),
                Some(size),
                "{name}"
            );
        }
    }

    /// The layouts of tests/mpi/datatype.c, with MPI_Type_size's answers
    /// recorded in its trace.
    #[test]
    fn derived_types_are_sized_from_their_constructors_arguments() {
        let mut t = DatatypeSizes::default();
        let cases = [
            sig("MPI_Type_contiguous", vec![Value::Int(3), int(), user(0)]),
            sig(
                "MPI_Type_vector",
                vec![Value::Int(3), Value::Int(2), Value::Int(4), int(), user(1)],
            ),
            sig(
                "MPI_Type_indexed",
                vec![
                    Value::Int(3),
                    ints(&[2, 1, 3]),
                    ints(&[0, 4, 7]),
                    int(),
                    user(2),
                ],
            ),
            sig(
                "MPI_Type_create_indexed_block",
                vec![
                    Value::Int(3),
                    Value::Int(2),
                    ints(&[1, 5, 9]),
                    int(),
                    user(3),
                ],
            ),
            sig(
                "MPI_Type_create_subarray",
                vec![
                    Value::Int(2),
                    ints(&[4, 5]),
                    ints(&[2, 3]),
                    ints(&[1, 1]),
                    order_c(),
                    int(),
                    user(4),
                ],
            ),
            sig(
                "MPI_Type_create_resized",
                vec![user(4), Value::Address(0), Value::Address(100), user(5)],
            ),
            sig(
                "MPI_Type_create_struct",
                vec![
                    Value::Int(3),
                    ints(&[1, 1, 3]),
                    ints(&[0, 8, 16]),
                    Value::Array(Some(vec![
                        int(),
                        Value::Handle(HandleKind::Datatype, dtype("MPI_DOUBLE")),
                        Value::Handle(HandleKind::Datatype, dtype("MPI_CHAR")),
                    ])),
                    user(6),
                ],
            ),
            sig("MPI_Type_dup", vec![user(6), user(7)]),
        ];
        for s in &cases {
            t.define(s);
        }
        let expected = [12, 24, 24, 24, 24, 24, 15, 15];
        for (id, size) in expected.iter().enumerate() {
            assert_eq!(t.size(HandleRef::User(id as u64)), Some(*size), "type{id}");
        }
        // The id is reused for another layout: the new definition counts.
        t.define(&sig(
            "MPI_Type_contiguous",
            vec![Value::Int(5), user(1), user(0)],
        ));
        assert_eq!(t.size(HandleRef::User(0)), Some(120));
    }

    #[test]
    fn distributed_arrays_are_sized_per_process() {
        let darray =
            |rank: i64, gsizes: &[i64], distribs: &[i64], dargs: &[i64], psizes: &[i64]| {
                let size: i64 = psizes.iter().product();
                let s = sig(
                    "MPI_Type_create_darray",
                    vec![
                        Value::Int(size),
                        Value::Int(rank),
                        Value::Int(gsizes.len() as i64),
                        ints(gsizes),
                        consts(ConstSet::Distribution, distribs, |d| {
                            [
                                "MPI_DISTRIBUTE_BLOCK",
                                "MPI_DISTRIBUTE_CYCLIC",
                                "MPI_DISTRIBUTE_NONE",
                            ]
                            .into_iter()
                            .find(|n| distribution(n) == Some(d))
                        }),
                        consts(ConstSet::DistributionArg, dargs, |d| {
                            (d == DISTRIBUTE_DFLT_DARG).then_some("MPI_DISTRIBUTE_DFLT_DARG")
                        }),
                        ints(psizes),
                        order_c(),
                        int(),
                        user(0),
                    ],
                );
                let mut t = DatatypeSizes::default();
                t.define(&s);
                t.size(HandleRef::User(0))
            };
        let dflt = DISTRIBUTE_DFLT_DARG;
        let (block, cyclic, none) = (DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC, DISTRIBUTE_NONE);
        // datatype.c: 8 ints in blocks over 2 processes (MPI_Type_size: 16).
        assert_eq!(darray(0, &[8], &[block], &[dflt], &[2]), Some(16));
        // 10 in blocks of 4 over 3: 4, 4, 2.
        let sizes: Vec<_> = (0..3)
            .map(|r| darray(r, &[10], &[block], &[dflt], &[3]))
            .collect();
        assert_eq!(sizes, [Some(16), Some(16), Some(8)]);
        // 10 cyclic(2) over 3: blocks 0,3 | 1,4 | 2 -> 4, 4, 2 elements;
        // cyclic(1): 4, 3, 3.
        let sizes: Vec<_> = (0..3)
            .map(|r| darray(r, &[10], &[cyclic], &[2], &[3]))
            .collect();
        assert_eq!(sizes, [Some(16), Some(16), Some(8)]);
        let sizes: Vec<_> = (0..3)
            .map(|r| darray(r, &[10], &[cyclic], &[dflt], &[3]))
            .collect();
        assert_eq!(sizes, [Some(16), Some(12), Some(12)]);
        // 2-D, row-major process grid 2 x 2: rank 3 is (1, 1); 5 x 6 blocks
        // give it 2 x 3 elements; an undistributed dimension is whole.
        assert_eq!(
            darray(3, &[5, 6], &[block, block], &[dflt, dflt], &[2, 2]),
            Some(2 * 3 * 4)
        );
        assert_eq!(
            darray(1, &[4, 7], &[block, none], &[dflt, dflt], &[2, 1]),
            Some(2 * 7 * 4)
        );
        // Blocks too small to cover the array: erroneous, not sized.
        assert_eq!(darray(0, &[10], &[block], &[2], &[3]), None);
    }

    #[test]
    fn types_built_from_unknown_types_are_unknown() {
        let mut t = DatatypeSizes::default();
        // type9 was never defined (e.g. from a call mpigram cannot size).
        t.define(&sig(
            "MPI_Type_contiguous",
            vec![Value::Int(2), user(9), user(0)],
        ));
        assert_eq!(t.size(HandleRef::User(0)), None);
        t.define(&sig(
            "MPI_Type_create_f90_integer",
            vec![Value::Int(4), user(1)],
        ));
        assert_eq!(t.size(HandleRef::User(1)), None);
        // A negative count is erroneous: unknown, not a wrapped number.
        t.define(&sig(
            "MPI_Type_contiguous",
            vec![Value::Int(-2), int(), user(2)],
        ));
        assert_eq!(t.size(HandleRef::User(2)), None);
        assert_eq!(t.size(HandleRef::Null), None);
    }
}
