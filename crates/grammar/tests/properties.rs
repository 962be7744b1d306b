//! Property tests: whatever goes in comes out, the invariants hold after
//! every push, and loops cost the same space however often they repeat.

use mpigram_grammar::{Grammar, Run, Sequitur, Symbol, merge, union};
use proptest::prelude::*;

/// Builds the grammar of `input`, checking every invariant after every push.
fn build_checked(input: &[u32]) -> Grammar {
    let mut s = Sequitur::new();
    for (i, &t) in input.iter().enumerate() {
        s.push(t);
        if let Err(e) = s.check_invariants() {
            panic!("after push {i} ({t}): {e}");
        }
    }
    let g = s.grammar(0);
    s.check_invariants().unwrap();
    g
}

fn build(input: &[u32]) -> Grammar {
    let mut s = Sequitur::new();
    input.iter().for_each(|&t| s.push(t));
    s.grammar(0)
}

/// A loop nest: terminals and loops of (body, trip count).
#[derive(Clone, Debug)]
enum Shape {
    Call(u32),
    Loop(Vec<Shape>, u32),
}

impl Shape {
    fn emit(&self, out: &mut Vec<u32>) {
        match self {
            Shape::Call(t) => out.push(*t),
            Shape::Loop(body, trips) => {
                for _ in 0..*trips {
                    body.iter().for_each(|s| s.emit(out));
                }
            }
        }
    }

    fn stream(shapes: &[Shape]) -> Vec<u32> {
        let mut out = Vec::new();
        shapes.iter().for_each(|s| s.emit(&mut out));
        out
    }
}

fn shape(alphabet: u32) -> impl Strategy<Value = Shape> {
    let leaf = (0..alphabet).prop_map(Shape::Call);
    leaf.prop_recursive(3, 24, 4, |inner| {
        (prop::collection::vec(inner, 1..4), 1u32..6)
            .prop_map(|(body, trips)| Shape::Loop(body, trips))
    })
}

fn loop_stream() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(shape(6), 1..5).prop_map(|shapes| Shape::stream(&shapes))
}

/// (rules, runs) of `prefix` followed by `body` looped N times, for each N.
fn loop_sizes(prefix: &[u32], body: &[Shape], trips: &[u32]) -> Vec<(usize, usize)> {
    trips
        .iter()
        .map(|&n| {
            let mut input = prefix.to_vec();
            input.extend(Shape::stream(&[Shape::Loop(body.to_vec(), n)]));
            let g = build(&input);
            check_round_trip(&input, &g);
            (g.num_rules(), g.num_runs())
        })
        .collect()
}

fn check_round_trip(input: &[u32], g: &Grammar) {
    assert_eq!(g.stream_len(0), Some(input.len() as u64));
    let out: Vec<u32> = g.expand(0).unwrap().collect();
    assert_eq!(out, input);
    // Counting without expansion agrees with counting the input.
    let mut counts = std::collections::BTreeMap::new();
    input
        .iter()
        .for_each(|&t| *counts.entry(t).or_insert(0u64) += 1);
    assert_eq!(
        g.terminal_counts(g.start(0).unwrap()),
        counts.into_iter().collect::<Vec<_>>()
    );
    // Exact encoding round trip.
    let bytes = g.encode();
    assert_eq!(&Grammar::decode(&bytes).unwrap(), g);
}

/// Every call of the expansion of `rule`, as (rule, run index, terminal).
fn walk_runs(g: &Grammar, rule: u32, out: &mut Vec<(u32, u32, u32)>) {
    for (i, run) in g.rule(rule).iter().enumerate() {
        for _ in 0..run.count {
            match run.symbol {
                Symbol::Terminal(t) => out.push((rule, i as u32, t)),
                Symbol::Rule(r) => walk_runs(g, r, out),
            }
        }
    }
}

/// `run_predecessors` counts what a walk over the calls finds (inputs
/// small enough that no rule is entered after more than MAX_PREDECESSORS
/// different terminals).
fn check_run_predecessors(g: &Grammar) {
    let start = g.start(0).unwrap();
    let mut calls = Vec::new();
    walk_runs(g, start, &mut calls);
    let mut walked: std::collections::BTreeMap<(u32, u32), std::collections::BTreeMap<u32, u64>> =
        Default::default();
    for w in calls.windows(2) {
        let (rule, i, _) = w[1];
        *walked
            .entry((rule, i))
            .or_default()
            .entry(w[0].2)
            .or_default() += 1;
    }
    let counted: std::collections::BTreeMap<(u32, u32), std::collections::BTreeMap<u32, u64>> = g
        .run_predecessors(start)
        .into_iter()
        .map(|(site, preds)| (site, preds.into_iter().filter(|&(_, k)| k > 0).collect()))
        .filter(|(_, preds): &(_, std::collections::BTreeMap<u32, u64>)| !preds.is_empty())
        .collect();
    assert_eq!(counted, walked);
    // The first occurrence of each run, in order, and the call before it.
    let mut firsts = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, &(rule, run, _)) in calls.iter().enumerate() {
        if seen.insert((rule, run)) {
            firsts.push(((rule, run), i.checked_sub(1).map(|j| calls[j].2)));
        }
    }
    assert_eq!(g.first_runs(start), firsts);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_small_alphabet(input in prop::collection::vec(0u32..4, 0..600)) {
        check_round_trip(&input, &build_checked(&input));
    }

    #[test]
    fn random_large_alphabet(input in prop::collection::vec(0u32..1000, 0..600)) {
        check_round_trip(&input, &build_checked(&input));
    }

    #[test]
    fn run_predecessors_are_the_expansions(input in loop_stream()) {
        check_run_predecessors(&build(&input));
    }

    #[test]
    fn run_predecessors_of_random_streams(input in prop::collection::vec(0u32..6, 1..300)) {
        check_run_predecessors(&build(&input));
    }

    #[test]
    fn nested_loops(input in loop_stream()) {
        check_round_trip(&input, &build_checked(&input));
    }

    /// What `push_repeating` says is true of the input (a terminal it
    /// took as repeating with period p equals the one p back), `recent`
    /// reads the input back, and a loop's iterations after the first two
    /// are all taken so.
    #[test]
    fn repeated_terminals_are_the_ones_a_period_back(input in loop_stream()) {
        let mut s = Sequitur::new();
        let mut taken = 0;
        for (i, &t) in input.iter().enumerate() {
            let period = s.push_repeating(t) as usize;
            if period != 0 {
                prop_assert!(period <= i && input[i - period] == t, "at {}: period {}", i, period);
                taken += 1;
            }
            let back = 1 + i % 7;
            prop_assert_eq!(s.recent(back as u64), (back <= i + 1).then(|| input[i + 1 - back]));
        }
        prop_assert_eq!(s.recent(0), None);
        if input.len() > 100 {
            prop_assert!(taken > 0);
        }
    }

    /// A builder cleared after one stream builds the next as a new one
    /// would, with the same fast path (`push_repeating`'s periods).
    #[test]
    fn a_cleared_builder_is_a_new_one(first in loop_stream(), second in loop_stream()) {
        let mut reused = Sequitur::new();
        first.iter().for_each(|&t| reused.push(t));
        let _ = reused.grammar(0);
        reused.clear();
        let mut fresh = Sequitur::new();
        for (i, &t) in second.iter().enumerate() {
            prop_assert_eq!(reused.push_repeating(t), fresh.push_repeating(t), "at {}", i);
            if let Err(e) = reused.check_invariants() {
                panic!("after push {i} ({t}): {e}");
            }
        }
        prop_assert_eq!(reused.len(), second.len() as u64);
        prop_assert_eq!(reused.grammar(0), fresh.grammar(0));
    }

    #[test]
    fn concatenations(parts in prop::collection::vec(prop_oneof![
        loop_stream(),
        prop::collection::vec(0u32..8, 0..50),
        prop::collection::vec(0u32..1000, 0..50),
    ], 1..5)) {
        let input = parts.concat();
        check_round_trip(&input, &build_checked(&input));
    }

    #[test]
    fn seek_matches_suffix(input in loop_stream(), at in any::<prop::sample::Index>()) {
        let g = build(&input);
        let k = at.index(input.len() + 1) as u64;
        let it = g.expand_from(0, k).unwrap();
        prop_assert_eq!(it.remaining(), input.len() as u64 - k);
        prop_assert_eq!(it.collect::<Vec<_>>(), &input[k as usize..]);
    }

    /// A loop of N iterations whose iterations do not fold into each other
    /// at their seams (the body's last terminal differs from its first)
    /// never grows with N. Loops nested in the body can still make Sequitur
    /// lock onto a small multiple k of the loop's period (the persisted
    /// case: the body `[2 1 (2 2 1)^3]^5 1 9` takes 21 rules at even N and
    /// 20 at odd N), so the size may depend on N mod k, as where seams fold
    /// (below); 120 is a multiple of every k up to 6.
    #[test]
    fn loop_size_does_not_depend_on_trips(mut body in prop::collection::vec(shape(5), 1..4), prefix in prop::collection::vec(5u32..8, 0..3)) {
        // End the body with a terminal found nowhere else: no seam can fold.
        body.push(Shape::Call(9));
        let near = loop_sizes(&prefix, &body, &[120, 121]);
        let far = loop_sizes(&prefix, &body, &[480, 481]);
        prop_assert_eq!(&near, &far);
    }

    /// Where iterations fold at their seams (`... x | x ...` becomes `x^2`),
    /// Sequitur may lock onto a small multiple k of the loop's period, so the
    /// last, partial copy depends on N mod k: the size may vary with N mod k
    /// but never grows with N. 360 is a multiple of every k up to 6.
    #[test]
    fn loop_size_does_not_grow_when_seams_fold(body in prop::collection::vec(shape(5), 1..4), prefix in prop::collection::vec(0u32..5, 0..3)) {
        let near = loop_sizes(&prefix, &body, &[120, 121, 122, 123]);
        let far = loop_sizes(&prefix, &body, &[480, 481, 482, 483]);
        prop_assert_eq!(&near, &far);
    }

    #[test]
    fn decoding_random_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Grammar::decode(&bytes);
        for version in [1u8, 2] {
            let mut with_version = vec![version];
            with_version.extend(&bytes);
            let _ = Grammar::decode(&with_version);
        }
    }

    #[test]
    fn decoding_mutated_encodings_never_panics(input in loop_stream(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4), cut in any::<prop::sample::Index>()) {
        let bytes = build(&input).encode();
        let mut mutated = bytes.clone();
        for (at, b) in flips {
            let i = at.index(mutated.len());
            mutated[i] ^= b | 1;
        }
        if let Ok(g) = Grammar::decode(&mutated) {
            // Whatever decodes is a valid grammar that expands within its stated length.
            for &(stream, _) in g.streams() {
                let n = g.stream_len(stream).unwrap();
                prop_assert_eq!(g.expand(stream).unwrap().take(10_000).count() as u64, n.min(10_000));
            }
        }
        let cut = cut.index(bytes.len());
        prop_assert!(Grammar::decode(&bytes[..cut]).is_err());
    }

    /// Merging 1..64 streams, many identical: every stream expands to its
    /// input, identical inputs share one start rule, and the result encodes.
    #[test]
    fn merge_round_trip(kinds in prop::collection::vec(loop_stream(), 1..6), picks in prop::collection::vec(any::<prop::sample::Index>(), 1..64)) {
        let inputs: Vec<&Vec<u32>> = picks.iter().map(|p| &kinds[p.index(kinds.len())]).collect();
        let parts: Vec<Grammar> = inputs.iter().enumerate()
            .map(|(rank, input)| build(input).with_streams(|_| rank as u32).unwrap())
            .collect();
        let merged = merge(&parts).unwrap();
        prop_assert_eq!(merged.streams().len(), inputs.len());
        for (rank, input) in inputs.iter().enumerate() {
            let out: Vec<u32> = merged.expand(rank as u32).unwrap().collect();
            prop_assert_eq!(&out, *input);
        }
        for a in 0..inputs.len() {
            for b in 0..inputs.len() {
                if inputs[a] == inputs[b] {
                    prop_assert_eq!(merged.start(a as u32), merged.start(b as u32));
                }
            }
        }
        prop_assert_eq!(&Grammar::decode(&merged.encode()).unwrap(), &merged);
        // Merging is associative enough for pairwise rounds: union of halves, then merge.
        let mid = parts.len() / 2;
        let halves = [union(&parts[..mid]).unwrap(), union(&parts[mid..]).unwrap()];
        let staged = merge(&halves).unwrap();
        for (rank, input) in inputs.iter().enumerate() {
            prop_assert!(staged.expand(rank as u32).unwrap().eq(input.iter().copied()));
        }
    }

    /// A stream recorded in parts (some empty) and joined with `prepend`
    /// expands to the parts in order; a stream that shared its start rule
    /// keeps its own calls; the result encodes.
    #[test]
    fn prepended_parts_expand_in_order(parts in prop::collection::vec(loop_stream(), 1..5), last in loop_stream()) {
        let earlier: Vec<Grammar> = parts.iter().map(|p| build(p).with_streams(|_| 3).unwrap()).collect();
        let both = merge(&[
            build(&last).with_streams(|_| 3).unwrap(),
            build(&last).with_streams(|_| 5).unwrap(),
        ]).unwrap();
        let joined = both.prepend(3, &earlier).unwrap();
        let whole: Vec<u32> = parts.iter().flatten().chain(&last).copied().collect();
        prop_assert!(joined.expand(3).unwrap().eq(whole.iter().copied()));
        prop_assert!(joined.expand(5).unwrap().eq(last.iter().copied()));
        prop_assert_eq!(&Grammar::decode(&joined.encode()).unwrap(), &joined);
        prop_assert!(joined.prepend(4, &earlier).is_err());
    }
}

fn three_nested_loops(outer: u32, middle: u32, inner: u32) -> Vec<u32> {
    let mut out = vec![9];
    for _ in 0..outer {
        out.extend_from_slice(&[1]);
        for _ in 0..middle {
            out.extend([2, 3]);
            for _ in 0..inner {
                out.extend([4, 5, 6]);
            }
            out.push(7);
        }
    }
    out.push(8);
    out
}

#[test]
fn three_nested_loops_cost_the_same_at_any_size() {
    let small = three_nested_loops(10, 10, 10);
    let large = three_nested_loops(100, 100, 100);
    let (gs, gl) = (build_checked(&small), build(&large));
    check_round_trip(&small, &gs);
    check_round_trip(&large, &gl);
    assert_eq!(
        gl.total_terminal_counts().iter().find(|&&(t, _)| t == 4),
        Some(&(4, 1_000_000))
    );
    assert_eq!(
        (gs.num_rules(), gs.num_runs()),
        (gl.num_rules(), gl.num_runs()),
        "\n{gs}\n{gl}"
    );
    // Only the varints of the three trip counts may grow.
    assert!(gl.encode().len() <= gs.encode().len() + 3);
}

#[test]
fn pilgrim_example_grammar() {
    // "a b a b c d c d" -> S -> A^2 B^2; A -> a b; B -> c d (the Pilgrim slides'
    // example without its leading "a": here "a a" folds to "a^2" first, and
    // digrams carry counts, so that "a" stays outside the loop).
    let g = build_checked(&[0, 1, 0, 1, 2, 3, 2, 3]);
    let body = g.rule(g.start(0).unwrap());
    let rule_body = |run: &Run| match run.symbol {
        Symbol::Rule(r) => g.rule(r).to_vec(),
        Symbol::Terminal(_) => panic!("expected a rule in {g}"),
    };
    assert_eq!(body.len(), 2, "{g}");
    assert_eq!(
        (body[0].count, rule_body(&body[0])),
        (2, vec![Run::terminal(0), Run::terminal(1)])
    );
    assert_eq!(
        (body[1].count, rule_body(&body[1])),
        (2, vec![Run::terminal(2), Run::terminal(3)])
    );
    // With the leading "a" the grammar is as small: 7 runs either way.
    let g = build_checked(&[0, 0, 1, 0, 1, 2, 3, 2, 3]);
    assert_eq!(g.num_runs(), 7, "{g}");
}

/// A loop body of three calls, repeated: from its third iteration on
/// every push is taken as repeating the body (period 3).
#[test]
fn a_loop_body_repeats_with_its_length_as_period() {
    let mut s = Sequitur::new();
    let n = 1 << 17;
    let periods: Vec<u64> = (0..n).map(|i| s.push_repeating([7, 8, 9][i % 3])).collect();
    assert!(periods[..6].iter().all(|&p| p == 0), "{:?}", &periods[..9]);
    assert!(periods[7..].iter().all(|&p| p == 3), "{:?}", &periods[..9]);
    assert_eq!(s.recent(3), Some([7, 8, 9][(n - 3) % 3]));
    assert_eq!(
        s.recent(1 << 16),
        Some([7, 8, 9][(n - (1 << 16)) % 3]),
        "within the history"
    );
    assert_eq!(s.recent((1 << 16) + 1), None, "beyond it");
}

/// An outer loop whose body ends with an inner loop (a time step: calls,
/// then a halo exchange's iterations): from its fourth iteration on every
/// push is taken as repeating the whole body, not only the inner loop's.
#[test]
fn an_outer_loop_ending_in_an_inner_one_repeats_with_its_body_as_period() {
    let mut body: Vec<u32> = vec![1; 5];
    body.extend(100..110);
    for _ in 0..4 {
        body.extend([400, 401, 402]);
    }
    let input: Vec<u32> = body.iter().copied().cycle().take(body.len() * 20).collect();
    let mut s = Sequitur::new();
    let periods: Vec<u64> = input.iter().map(|&t| s.push_repeating(t)).collect();
    let from = 3 * body.len();
    assert!(
        periods[from..].iter().all(|&p| p == body.len() as u64),
        "{:?}",
        &periods[from..from + body.len()]
    );
    check_round_trip(&input, &s.grammar(0));
}

#[test]
fn a_million_repeats_of_one_terminal_is_one_run() {
    let mut s = Sequitur::new();
    for _ in 0..1_000_000 {
        s.push(42);
    }
    let g = s.grammar(0);
    assert_eq!(
        g.rule(g.start(0).unwrap()),
        &[Run::new(Symbol::Terminal(42), 1_000_000)]
    );
    assert!(g.encode().len() < 16);
}

#[test]
fn grammar_can_be_taken_while_pushing_continues() {
    let input: Vec<u32> = three_nested_loops(3, 4, 5);
    let mut s = Sequitur::new();
    for (i, &t) in input.iter().enumerate() {
        s.push(t);
        if i % 37 == 0 {
            let g = s.grammar(0);
            assert!(g.expand(0).unwrap().eq(input[..=i].iter().copied()));
            s.check_invariants().unwrap();
        }
    }
}

#[test]
fn snapshots_leave_the_builder_as_it_was() {
    let input: Vec<u32> = three_nested_loops(3, 4, 5)
        .into_iter()
        .chain([7, 7, 8])
        .collect();
    let mut s = Sequitur::new();
    for (i, &t) in input.iter().enumerate() {
        s.push(t);
        if i % 7 == 0 {
            let g = s.snapshot(0);
            assert!(
                g.expand(0).unwrap().eq(input[..=i].iter().copied()),
                "after push {i}"
            );
        }
    }
    s.check_invariants().unwrap();
    assert_eq!(
        s.grammar(0),
        build(&input),
        "pushing went on as without snapshots"
    );
}

#[test]
fn counts_per_rule_and_total_across_streams() {
    let a = build(&three_nested_loops(2, 3, 4))
        .with_streams(|_| 0)
        .unwrap();
    let b = build(&[1, 1, 1]).with_streams(|_| 1).unwrap();
    let c = build(&three_nested_loops(2, 3, 4))
        .with_streams(|_| 2)
        .unwrap();
    let m = merge(&[a, b, c]).unwrap();
    assert_eq!(m.start(0), m.start(2));
    assert_eq!(
        m.total_len(),
        2 * (three_nested_loops(2, 3, 4).len() as u64) + 3
    );
    let total: std::collections::BTreeMap<u32, u64> =
        m.total_terminal_counts().into_iter().collect();
    assert_eq!(total[&4], 2 * 2 * 3 * 4);
    assert_eq!(total[&1], 2 * 2 + 3);
    let uses = m.rule_uses(m.start(0).unwrap());
    assert_eq!(uses[m.start(0).unwrap() as usize], 1);
}

/// Found by fuzzing: a few bytes of stream progression declare up to 2^24
/// streams, listed in memory at 8 bytes each before anything else is
/// checked. A reader that knows how many streams to expect refuses more
/// before listing them.
#[test]
fn a_stream_limit_refuses_progressions_before_listing_them() {
    // Version 1; one rule of one run (terminal 0); one group: rule 0, one
    // progression (first 0, stride 1, len).
    let with_len = |len: &[u8]| {
        let mut b = vec![1u8, 1, 1, 0, 1, 0, 1, 0, 1];
        b.extend(len);
        b
    };
    let three = Grammar::decode_streams(&with_len(&[3]), 3).unwrap();
    assert_eq!(three.streams(), &[(0, 0), (1, 0), (2, 0)]);
    assert_eq!(Grammar::decode(&with_len(&[3])).unwrap(), three);
    assert!(Grammar::decode_streams(&with_len(&[3]), 2).is_err());
    // 2^24 streams from 13 bytes.
    let huge = with_len(&[0x80, 0x80, 0x80, 0x08]);
    let e = Grammar::decode_streams(&huge, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "grammar data, byte 7: bad stream progression"
    );
}
