//! Valid inputs to start from: call signatures of real MPI functions with
//! every kind of parameter value, and a rank trace built from them.

use mpigram_grammar::Sequitur;
use mpigram_mpispec::{
    BufferRef, ConstRef, Coords, Enc, FUNCS, FuncId, HandleRef, Rank, RequestRef, Signature,
    Status, Value, func_by_name,
};
use mpigram_trace::timing::{Bins, ColumnWriter, DEFAULT_BASE, ExactWriter, LossyClock};
use mpigram_trace::{
    Bases, CallStats, CallTimes, ClockSync, CommEntry, Ending, Gaps, PairGap, RankMeta, RankTrace,
    Timing, Trace,
};
use proptest::prelude::*;
use std::sync::OnceLock;

/// Any value a writer may produce for a parameter encoded as `enc`. Ids
/// stay below 2^40 and ranks within C ints, as the tracer's do (the
/// encodings add tag bits above them).
pub fn arb_value(enc: Enc) -> BoxedStrategy<Value> {
    let id = || 0u64..1 << 40;
    let int = || any::<i32>().prop_map(i64::from);
    let rank = || {
        prop_oneof![
            Just(Rank::ProcNull),
            Just(Rank::AnySource),
            Just(Rank::Root),
            any::<i32>().prop_map(|r| Rank::Relative(r.into())),
            any::<i32>().prop_map(|r| Rank::Absolute(r.into())),
        ]
    };
    match enc {
        Enc::Int => any::<i64>().prop_map(Value::Int).boxed(),
        Enc::Tag => int().prop_map(Value::Tag).boxed(),
        Enc::Address => any::<i64>().prop_map(Value::Address).boxed(),
        Enc::Rank => rank().prop_map(Value::Rank).boxed(),
        // The caller's own rank, or a C int or constant.
        Enc::OwnRank(inner) => {
            let other = match inner {
                Enc::Int => int().prop_map(Value::Int).boxed(),
                other => arb_value(*other),
            };
            prop_oneof![Just(Value::Rank(Rank::Relative(0))), other].boxed()
        }
        Enc::Const(set) => {
            let n = set.names().len() as u32;
            let named = if set.is_flags() {
                (0..1u64 << n).prop_map(ConstRef::Flags).boxed()
            } else {
                (0..n).prop_map(ConstRef::Named).boxed()
            };
            prop_oneof![named, int().prop_map(ConstRef::Plain)]
                .prop_map(move |c| Value::Const(set, c))
                .boxed()
        }
        Enc::Handle(kind) => prop_oneof![
            Just(HandleRef::Null),
            any::<u32>().prop_map(HandleRef::Predefined),
            id().prop_map(HandleRef::User),
        ]
        .prop_map(move |h| Value::Handle(kind, h))
        .boxed(),
        Enc::Request => prop_oneof![
            Just(RequestRef::Null),
            (id(), any::<u64>()).prop_map(|(pool, index)| RequestRef::Pooled { pool, index }),
        ]
        .prop_map(Value::Request)
        .boxed(),
        Enc::Status => prop_oneof![
            Just(Value::Status(None)),
            Just(Value::UndefinedStatus),
            (rank(), int(), any::<u64>(), any::<bool>(), int()).prop_map(
                |(source, tag, count, cancelled, error)| {
                    Value::Status(Some(Status {
                        source,
                        tag,
                        count,
                        cancelled,
                        error,
                    }))
                }
            ),
        ]
        .boxed(),
        Enc::Buffer => prop_oneof![
            Just(BufferRef::Null),
            Just(BufferRef::InPlace),
            (id(), any::<u64>()).prop_map(|(id, offset)| BufferRef::Segment { id, offset }),
        ]
        .prop_map(Value::Buffer)
        .boxed(),
        Enc::Str => prop::option::of(prop::collection::vec(any::<u8>(), 0..12))
            .prop_map(Value::Str)
            .boxed(),
        Enc::Callback => prop::option::of(id()).prop_map(Value::Callback).boxed(),
        Enc::Array(elem) => prop::option::of(prop::collection::vec(arb_value(*elem), 0..5))
            .prop_map(Value::Array)
            .boxed(),
        Enc::Coords => prop::option::of(prop_oneof![
            prop::collection::vec(any::<i64>(), 0..4).prop_map(Coords::Absolute),
            prop::collection::vec((any::<i64>(), any::<i64>()), 0..4).prop_map(|v| {
                let (dims, offsets) = v.into_iter().unzip();
                Coords::Relative { dims, offsets }
            }),
        ])
        .prop_map(Value::Coords)
        .boxed(),
    }
}

/// A valid signature of any MPI function mpigram knows.
pub fn arb_signature() -> impl Strategy<Value = Signature> {
    (0..FUNCS.len()).prop_flat_map(|f| {
        let args: Vec<_> = FUNCS[f].params.iter().map(|p| arb_value(p.enc)).collect();
        (any::<i32>(), args).prop_map(move |(ret, args)| Signature {
            func: f as FuncId,
            ret: ret.into(),
            args,
        })
    })
}

/// A fixed value for a parameter, varied by `seed` so that the samples
/// hold every kind of value (nulls, constants, user objects, arrays).
fn example_value(enc: Enc, seed: u64) -> Value {
    let pick = seed % 3;
    match enc {
        Enc::Int => Value::Int(seed as i64 * 7 - 3),
        Enc::Tag => Value::Tag(if pick == 0 { -1 } else { seed as i64 }),
        Enc::Address => Value::Address(1 << (seed % 40)),
        Enc::Const(set) => Value::Const(
            set,
            match (pick, set.is_flags()) {
                (0, _) => ConstRef::Plain(seed as i64),
                (_, true) => ConstRef::Flags(seed % (1 << set.names().len())),
                (_, false) => ConstRef::Named((seed % set.names().len() as u64) as u32),
            },
        ),
        Enc::Rank => Value::Rank(match pick {
            0 => Rank::Relative(1),
            1 => Rank::ProcNull,
            _ => Rank::Absolute(seed as i64),
        }),
        Enc::Handle(kind) => Value::Handle(
            kind,
            match pick {
                0 => HandleRef::Predefined(seed as u32 % 4),
                1 => HandleRef::User(seed),
                _ => HandleRef::Null,
            },
        ),
        Enc::Request => Value::Request(match pick {
            0 => RequestRef::Null,
            _ => RequestRef::Pooled {
                pool: seed,
                index: pick,
            },
        }),
        Enc::Status => match pick {
            0 => Value::Status(None),
            1 => Value::UndefinedStatus,
            _ => Value::Status(Some(Status {
                source: Rank::Relative(-1),
                tag: seed as i64,
                count: 8 * seed,
                cancelled: seed % 2 == 0,
                error: (seed % 2) as i64,
            })),
        },
        Enc::Buffer => Value::Buffer(match pick {
            0 => BufferRef::InPlace,
            _ => BufferRef::Segment {
                id: seed,
                offset: 64 * pick,
            },
        }),
        Enc::Str => Value::Str((pick != 1).then(|| format!("key{seed}").into_bytes())),
        Enc::Callback => Value::Callback((pick != 1).then_some(seed)),
        Enc::Array(elem) => Value::Array((pick != 1).then(|| {
            (0..pick + 1)
                .map(|i| example_value(*elem, seed + i))
                .collect()
        })),
        Enc::OwnRank(_) if pick == 0 => Value::Rank(Rank::Relative(0)),
        Enc::OwnRank(inner) => example_value(*inner, seed),
        Enc::Coords => Value::Coords(match pick {
            0 => Some(Coords::Absolute(vec![seed as i64, 1])),
            1 => None,
            _ => Some(Coords::Relative {
                dims: vec![4, seed as i64 + 1],
                offsets: vec![0, -1],
            }),
        }),
    }
}

/// Functions of the sample trace: point-to-point, completion of arrays of
/// requests and statuses, collectives with arrays, communicator and
/// topology creation, strings and callbacks.
const SAMPLE_FUNCS: &[&str] = &[
    "MPI_Comm_rank",
    "MPI_Isend",
    "MPI_Irecv",
    "MPI_Waitall",
    "MPI_Recv",
    "MPI_Allreduce",
    "MPI_Alltoallv",
    "MPI_Comm_split",
    "MPI_Cart_create",
    "MPI_Testsome",
    "MPI_Info_set",
    "MPI_Comm_create_keyval",
];

/// Sets of arguments each of [`SAMPLE_FUNCS`] is called with: enough
/// distinct signatures (at least 256) for a whole-run file to store them
/// as SIGNATURE_DELTAS.
const SAMPLE_VARIANTS: u64 = 24;

/// Signatures of `SAMPLE_FUNCS`, each with up to `SAMPLE_VARIANTS`
/// sets of arguments (a function with few parameters gives some set
/// twice, kept once: a table's signatures are distinct).
pub fn sample_signatures() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, name) in SAMPLE_FUNCS.iter().enumerate() {
        let (id, f) = func_by_name(name).expect("a function of the MPI standard");
        for variant in 0..SAMPLE_VARIANTS {
            let seed = i as u64 * SAMPLE_VARIANTS + variant;
            let args = f
                .params
                .iter()
                .enumerate()
                .map(|(p, param)| example_value(param.enc, seed + p as u64))
                .collect();
            let signature = Signature {
                func: id,
                ret: (variant % 2) as i64 * 15,
                args,
            }
            .encode();
            if !out.contains(&signature) {
                out.push(signature);
            }
        }
    }
    out
}

/// A complete rank trace over [`sample_signatures`]: a prologue, a nested
/// loop, an epilogue, aggregated timing for every signature, lossy and
/// lossless per-call timing, two communicators.
pub fn sample_rank_trace(rank: u32) -> RankTrace {
    let signatures = sample_signatures();
    let n = signatures.len() as u32;
    let mut s = Sequitur::new();
    let mut calls = 0u64;
    let mut push = |t: u32| {
        s.push(t);
        calls += 1;
    };
    (0..4).for_each(&mut push);
    for step in 0..30 {
        for _ in 0..4 {
            (4..10).for_each(&mut push);
        }
        push(10 + step % 3);
    }
    (13..n).for_each(&mut push);
    let stats = (0..u64::from(n))
        .map(|t| CallStats {
            count: t + 1,
            total_ns: 1000 * t,
            min_ns: t,
            max_ns: 10 * t,
            gap_ns: 3 * t,
        })
        .collect();
    let comm = |seq, comm, size| CommEntry {
        seq,
        comm,
        rank,
        size,
        remote_size: 0,
        inter: false,
        leader: 0,
        instance: 0,
    };
    RankTrace {
        meta: RankMeta {
            rank,
            world_size: 2,
            pid: 4242,
            host: "node7".into(),
            mpi_library: "MPICH Version: 4.0.2".into(),
            timing: Timing {
                lossy: Some(Bases {
                    default: DEFAULT_BASE,
                    by_func: vec![("MPI_Barrier".into(), 1.5)],
                }),
                lossless: true,
            },
            calls,
            start_ns: 1_000,
            end_ns: 9_000_000,
            ending: Ending::Finalized,
            recorder_allocations: 17,
            ns_per_tick: 0.4,
            cpus: 0,
            cpu_share: None,
            clock_sync: vec![
                ClockSync {
                    at_ns: 2_000,
                    offset_ns: -300,
                    error_ns: 40,
                },
                ClockSync {
                    at_ns: 8_000_000,
                    offset_ns: -350,
                    error_ns: 45,
                },
            ],
            run: 0,
            lost: mpigram_trace::Lost::None,
            ended_in: None,
        },
        signatures,
        grammar: s.grammar(rank),
        stats,
        // The loop's first call follows the prologue once, the loop's last
        // call after that; its first call after the prologue's long gap.
        gaps: Gaps {
            pairs: vec![
                PairGap {
                    terminal: 4,
                    pred: 3,
                    gap_ns: 7,
                },
                PairGap {
                    terminal: 4,
                    pred: 9,
                    gap_ns: 5,
                },
            ],
            firsts: vec![(4, 7)],
        },
        comms: vec![comm(7, 0, 2), comm(9, 1, 1)],
        times: sample_times(rank, calls),
    }
}

/// Per-call timing of `calls` calls: regular with some jitter, coded lossy
/// (base [`DEFAULT_BASE`]) and exactly.
fn sample_times(rank: u32, calls: u64) -> CallTimes {
    let bins = Bins::new(DEFAULT_BASE).expect("the default base is valid");
    let (mut clock, mut codes, mut exact) = (
        LossyClock::default(),
        ColumnWriter::default(),
        ExactWriter::default(),
    );
    let mut now = u64::from(rank);
    for k in 0..calls {
        let start = now + 100 + k % 7;
        now = start + 2_000 + (k * k) % 300;
        let (i, d) = clock.encode(&bins, start, now);
        codes.push(i.into(), d.into());
        exact.push(start, now);
    }
    CallTimes {
        lossy: codes.bytes(),
        exact: exact.bytes(),
    }
}

/// Rank `rank`'s (0 or 1) sample trace as the tracer's writer makes its
/// file, `rank<N>.mgr`.
pub fn sample_rank_file(rank: u32) -> &'static [u8] {
    static FILES: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    let files = FILES.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        [0, 1].map(|r| {
            let path = sample_rank_trace(r).write(dir.path()).expect("written");
            std::fs::read(path).expect("read back")
        })
    });
    &files[rank as usize]
}

/// The two sample ranks merged as at MPI_Finalize, as `trace.mgr` bytes.
pub fn sample_run_file() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut run = Trace::from_rank(sample_rank_trace(0));
        run.absorb(Trace::from_rank(sample_rank_trace(1)))
            .expect("two ranks merge");
        run.share().expect("shared");
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::read(run.write(dir.path()).expect("written")).expect("read back")
    })
}

/// The two sample ranks with aggregated timing only (calls counted as the
/// grammar has them), merged and summarised as by default, with gaps by
/// predecessor and a first call kept (rank timing 4), as `trace.mgr` bytes.
pub fn sample_summary_file() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let rank = |r: u32| {
            let mut t = sample_rank_trace(r);
            t.meta.timing = Timing::default();
            t.times = CallTimes::default();
            let start = t.grammar.start(r).expect("the rank's stream");
            for (term, count) in t.grammar.terminal_counts(start) {
                t.stats[term as usize].count = count;
            }
            // Signature 4 follows 3 once and 9 after: 4 ms of the 9 ms run.
            t.stats[4].gap_ns = 4_000_000;
            t.gaps = Gaps {
                pairs: vec![
                    PairGap {
                        terminal: 4,
                        pred: 3,
                        gap_ns: 3_000_000,
                    },
                    PairGap {
                        terminal: 4,
                        pred: 9,
                        gap_ns: 1_000_000,
                    },
                ],
                firsts: vec![(4, 2_500_000)],
            };
            Trace::from_rank(t)
        };
        let mut run = rank(0);
        run.absorb(rank(1)).expect("two ranks merge");
        run.share().expect("shared");
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::read(run.write(dir.path()).expect("written")).expect("read back")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_mpispec::decode_signature;

    #[test]
    fn the_summary_sample_keeps_its_gaps_summarised() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trace.mgr"), sample_summary_file()).unwrap();
        let t = Trace::open(dir.path()).unwrap();
        assert_eq!(t.rank_stats, mpigram_trace::RankStats::Summary);
        for part in &t.ranks {
            assert_eq!(part.gaps.pairs.len(), 2, "rank {}", part.meta.rank);
            assert!(part.gaps.first(4).is_some(), "rank {}", part.meta.rank);
        }
    }

    #[test]
    fn samples_decode_and_cover_every_kind_of_value() {
        let distinct: std::collections::HashSet<_> = sample_signatures().into_iter().collect();
        assert!(distinct.len() >= 256, "{} signatures", distinct.len());
        let mut kinds = std::collections::HashSet::new();
        for bytes in sample_signatures() {
            let sig = decode_signature(&bytes).expect("a sample decodes");
            assert_eq!(sig.encode(), bytes);
            for v in &sig.args {
                kinds.insert(std::mem::discriminant(v));
                if let Value::Array(Some(items)) = v {
                    kinds.extend(items.iter().map(std::mem::discriminant));
                }
            }
        }
        // Int, Rank, Tag, Address, Const, Handle, Request, Status,
        // UndefinedStatus, Buffer, Str, Callback, Array.
        assert_eq!(kinds.len(), 13);
        let t = sample_rank_trace(0);
        assert_eq!(t.grammar.total_len(), t.meta.calls);
        assert!(t.grammar.num_rules() > 1, "the sample has loops");
    }
}
