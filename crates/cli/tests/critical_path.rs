//! `mpigram critical-path` on MPI programs with known answers, each
//! recorded with lossy and lossless timing in one run.

mod common;

use common::{mpigram, text};
use mpigram_testkit::{compile, mpi_available};
use serde_json::Value as Json;

/// Traces `program ARGS` on `ranks` ranks with `timing`.
fn traced(program: &str, ranks: u32, args: &[&str], timing: &str) -> tempfile::TempDir {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = ranks.to_string();
    let mut run = vec![
        "run",
        "-o",
        dir.path().to_str().unwrap(),
        "-n",
        &n,
        "--timing",
        timing,
        "--",
    ];
    run.push(exe.to_str().unwrap());
    run.extend(args);
    let out = mpigram(&run);
    assert!(out.status.success(), "{program}: {}", text(&out.stderr));
    dir
}

fn analyse(dir: &tempfile::TempDir, times: &str) -> Json {
    let out = mpigram(&[
        "critical-path",
        dir.path().to_str().unwrap(),
        "--json",
        "--heuristic",
        "--times",
        times,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn compute(j: &Json, rank: u32) -> f64 {
    j["by_rank_compute_s"][rank.to_string()].as_f64().unwrap()
}

/// The rank with the most computation on the path.
fn top_rank(j: &Json) -> u32 {
    let m = j["by_rank_compute_s"].as_object().unwrap();
    let (rank, _) = m
        .iter()
        .max_by(|a, b| a.1.as_f64().unwrap().total_cmp(&b.1.as_f64().unwrap()))
        .unwrap();
    rank.parse().unwrap()
}

/// Durations of `rank`'s computation segments on the path, by the call they follow.
fn computations(j: &Json, rank: u32) -> Vec<(u64, f64)> {
    j["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["rank"] == rank && s["kind"] == "compute")
        .map(|s| {
            let d = s["end_s"].as_f64().unwrap() - s["start_s"].as_f64().unwrap();
            (s["after_seq"].as_u64().unwrap(), d)
        })
        .collect()
}

/// Share of the path of each call site (and kind) above `min` of it.
fn main_sites(j: &Json, min: f64) -> Vec<(String, u64)> {
    let length = j["length_s"].as_f64().unwrap();
    let mut v: Vec<_> = j["call_sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["time_s"].as_f64().unwrap() >= min * length)
        .map(|s| {
            (
                s["kind"].as_str().unwrap().to_owned(),
                s["site"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The lossy analysis finds what the lossless one finds: the same rank
/// computing most on the path, the same call sites making up the path
/// (each of at least 12% of it in one is at least 8% in the other: lossy
/// times are within 10%), a length within lossy timing's bound (base 1.1).
fn assert_same_findings(exact: &Json, lossy: &Json) {
    assert_eq!(top_rank(exact), top_rank(lossy));
    for (a, b) in [(exact, lossy), (lossy, exact)] {
        let wide = main_sites(b, 0.08);
        for site in main_sites(a, 0.12) {
            assert!(wide.contains(&site), "{site:?} not in {wide:?}");
        }
    }
    assert!(!main_sites(exact, 0.12).is_empty());
    let (a, b) = (
        exact["length_s"].as_f64().unwrap(),
        lossy["length_s"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 0.1 * a, "lossless {a} s, lossy {b} s");
}

#[test]
fn the_delay_of_one_rank_in_a_ring_is_on_the_path() {
    let (delayed, delay, rounds) = (1u32, 0.04, 3);
    let dir = traced("critpath_ring", 3, &["1", "40", "3"], "lossy,lossless");
    let j = analyse(&dir, "lossless");
    // Every round's delay, whole, on the delayed rank: after its receives
    // (calls 5, 7, 9, after a barrier at 4).
    let delays: Vec<u64> = computations(&j, delayed)
        .into_iter()
        .filter(|&(_, d)| d >= 0.9 * delay)
        .map(|(after, _)| after)
        .filter(|after| *after > 4)
        .collect();
    assert_eq!(delays, vec![5, 7, 9], "{j}");
    assert!(compute(&j, delayed) >= 0.95 * delay * rounds as f64, "{j}");
    assert_eq!(top_rank(&j), delayed);
    let length = j["length_s"].as_f64().unwrap();
    assert!(length <= j["wall_s"].as_f64().unwrap() + 1e-9);
    assert!(length >= delay * rounds as f64);
    assert_eq!(j["unmatched"]["point_to_point"], 0);
    assert_same_findings(&j, &analyse(&dir, "lossy"));
}

#[test]
fn the_slow_rank_of_a_bulk_synchronous_loop_dominates_the_path() {
    let (slow, slow_s, others_s, iterations) = (0u32, 0.02, 0.002, 5u64);
    let dir = traced("critpath_bsp", 3, &["0", "20", "5"], "lossy,lossless");
    let j = analyse(&dir, "lossless");
    // The loop's computations follow calls 4 (the barrier) to 8 (the
    // fourth Allreduce): the slow rank's are all on the path, the others' none.
    let loop_part = |rank| -> Vec<(u64, f64)> {
        computations(&j, rank)
            .into_iter()
            .filter(|&(after, _)| (4..4 + iterations).contains(&after))
            .collect()
    };
    let slow_loop = loop_part(slow);
    assert_eq!(slow_loop.len() as u64, iterations, "{slow_loop:?}");
    assert!(
        slow_loop.iter().all(|&(_, d)| d >= 0.9 * slow_s),
        "{slow_loop:?}"
    );
    for other in [1, 2] {
        assert!(
            loop_part(other).iter().all(|&(_, d)| d < 0.5 * others_s),
            "{j}"
        );
    }
    assert_eq!(top_rank(&j), slow);
    // The slow rank arrives last at every Allreduce; the others wait
    // there about (20 - 2) ms per iteration each.
    let site = allreduce_site(&j);
    assert_eq!(site["last_rank"], slow);
    assert_eq!(site["last_count"], iterations);
    let expected = 2.0 * iterations as f64 * (slow_s - others_s);
    let waited = site["wait_before_s"].as_f64().unwrap();
    // Three ranks share two cores: a descheduled rank's computation
    // stretches (the slow one's adds waiting, the others' removes some).
    // Seen from 89% to 124% of the injected waiting.
    assert!(
        (0.75 * expected..=1.5 * expected).contains(&waited),
        "{waited} s, {expected} s expected"
    );
    let by_rank = j["waits"]["by_rank"].as_array().unwrap();
    assert!(by_rank[0]["wait_before_s"].as_f64().unwrap() < 0.1 * waited);
    // Interval grouping finds the slow rank's iterations as well.
    let h = &j["heuristic"];
    assert!(h["by_rank_compute_s"]["0"].as_f64().unwrap() >= 0.9 * slow_s * iterations as f64);
    assert_same_findings(&j, &analyse(&dir, "lossy"));
}

/// The paper's §5.3 collective test: rank 0 arrives late at the
/// collective, ranks 1-3 wait for it, so their imbalance is far above rank
/// 0's (the paper's table: 1.43, 1.43, 1.42 against 0.019), and rank 0's
/// computation is on the path.
#[test]
fn the_papers_four_rank_collective_example() {
    let delay = 0.1;
    let dir = traced("critpath_paper", 4, &["100"], "lossy,lossless");
    let j = analyse(&dir, "lossless");
    // Rank 0's delay follows its first barrier (call 4).
    let delay_on_path = |j: &Json, share: f64| {
        computations(j, 0)
            .iter()
            .any(|&(after, d)| after == 4 && d >= share * delay)
    };
    assert!(delay_on_path(&j, 0.95), "{j}");
    let site = allreduce_site(&j);
    assert_eq!(site["last_rank"], 0);
    let waited = site["wait_before_s"].as_f64().unwrap();
    assert!(
        (waited - 3.0 * delay).abs() <= 0.2 * 3.0 * delay,
        "{waited}"
    );
    let by_rank = j["waits"]["by_rank"].as_array().unwrap();
    let imbalance = |r: usize| by_rank[r]["imbalance"].as_f64().unwrap();
    for r in 1..4 {
        assert!(imbalance(r) > 2.0 * imbalance(0), "{by_rank:?}");
    }
    let lossy = analyse(&dir, "lossy");
    assert!(delay_on_path(&lossy, 0.9), "{lossy}");
}

#[test]
fn an_aggregated_timing_trace_fails_in_one_line_naming_mpigram_timing() {
    let dir = traced("critpath_bsp", 2, &["0", "1", "1"], "aggregated");
    let out = mpigram(&["critical-path", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("MPIGRAM_TIMING"), "{err}");
    assert!(out.stdout.is_empty());
}

/// The MPI_Allreduce's entry of the waits by call site.
fn allreduce_site(j: &Json) -> Json {
    j["waits"]["by_call_site"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["func"] == "MPI_Allreduce")
        .cloned()
        .unwrap()
}
