//! `mpigram critical-path` on MPI programs with known answers, each
//! recorded with lossy and lossless timing in one run.

mod common;

use common::{mpigram, one_at_a_time, text, traced};
use mpigram_testkit::{compile, mpi_available};
use serde_json::Value as Json;

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

/// Durations of `rank`'s computation segments on the path, by the call
/// they follow (its number and call site).
fn computations(j: &Json, rank: u32) -> Vec<(u64, String, f64)> {
    j["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["rank"] == rank && s["kind"] == "compute")
        .map(|s| {
            let d = s["end_s"].as_f64().unwrap() - s["start_s"].as_f64().unwrap();
            let site = s["after_site"].as_str().unwrap().to_owned();
            (s["after_seq"].as_u64().unwrap(), site, d)
        })
        .collect()
}

/// `site` names a grammar call site: `R<rule>:<position>`, and the JSON's
/// `rule` and `position` say the same.
fn assert_grammar_site(entry: &Json) {
    let site = entry["site"].as_str().unwrap();
    let (rule, position) = site
        .strip_prefix('R')
        .and_then(|s| s.split_once(':'))
        .unwrap_or_else(|| panic!("{site}"));
    assert_eq!(entry["rule"].as_u64(), rule.parse().ok(), "{entry}");
    assert_eq!(entry["position"].as_u64(), position.parse().ok(), "{entry}");
}

/// Share of the path of each call site (and kind) above `min` of it.
fn main_sites(j: &Json, min: f64) -> Vec<(String, String)> {
    let length = j["length_s"].as_f64().unwrap();
    let mut v: Vec<_> = j["call_sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["time_s"].as_f64().unwrap() >= min * length)
        .map(|s| {
            (
                s["kind"].as_str().unwrap().to_owned(),
                s["site"].as_str().unwrap().to_owned(),
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
    let _one = one_at_a_time();
    let (delayed, delay, rounds) = (1u32, 0.04, 3);
    let dir = traced("critpath_ring", 3, &["1", "40", "3"], "lossy,lossless");
    let j = analyse(&dir, "lossless");
    // Every round's delay, whole, on the delayed rank: after its receives
    // (calls 5, 7, 9, after a barrier at 4).
    let (delays, mut sites): (Vec<u64>, Vec<String>) = computations(&j, delayed)
        .into_iter()
        .filter(|&(after, _, d)| after > 4 && d >= 0.9 * delay)
        .map(|(after, site, _)| (after, site))
        .unzip();
    assert_eq!(delays, vec![5, 7, 9], "{j}");
    // Each after a receive's call site. Three sites, not one: the
    // receive's tag is the round, so the rounds are different calls and the
    // grammar has no loop over them.
    for site in &sites {
        let entry = j["call_sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["kind"] == "compute_after" && s["site"] == site.as_str())
            .unwrap();
        assert_grammar_site(entry);
        assert_eq!(entry["func"], "MPI_Recv", "{entry}");
    }
    sites.sort();
    sites.dedup();
    assert_eq!(sites.len(), rounds as usize, "{sites:?}");
    // The findings name the longest of them.
    let out = mpigram(&["critical-path", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let findings = text(&out.stdout);
    assert!(
        sites.iter().any(|site| findings.contains(&format!(
            "of the path is computation after MPI_Recv {site}\n"
        ))),
        "{findings}"
    );
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
    let _one = one_at_a_time();
    let (slow, slow_s, others_s, iterations) = (0u32, 0.02, 0.002, 5u64);
    let dir = traced("critpath_bsp", 3, &["0", "20", "5"], "lossy,lossless");
    let j = analyse(&dir, "lossless");
    // The loop's computations follow calls 4 (the barrier) to 8 (the
    // fourth Allreduce): the slow rank's are all on the path, the others' none.
    let loop_part = |rank| -> Vec<(u64, String, f64)> {
        computations(&j, rank)
            .into_iter()
            .filter(|&(after, _, _)| (4..4 + iterations).contains(&after))
            .collect()
    };
    let slow_loop = loop_part(slow);
    assert_eq!(slow_loop.len() as u64, iterations, "{slow_loop:?}");
    // The computations after the loop's Allreduce (calls 5 to 8) follow
    // one call site, shared by every iteration and rank.
    let mut loop_sites: Vec<String> = slow_loop
        .iter()
        .filter(|(after, _, _)| *after > 4)
        .map(|(_, site, _)| site.clone())
        .collect();
    assert_eq!(loop_sites.len() as u64, iterations - 1, "{loop_sites:?}");
    loop_sites.dedup();
    assert_eq!(loop_sites.len(), 1, "{loop_sites:?}");
    let after_allreduce = j["call_sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "compute_after" && s["site"] == loop_sites[0].as_str())
        .unwrap();
    assert_eq!(after_allreduce["func"], "MPI_Allreduce");
    assert!(after_allreduce["segments"].as_u64().unwrap() >= iterations - 1);
    assert!(
        slow_loop.iter().all(|&(_, _, d)| d >= 0.9 * slow_s),
        "{slow_loop:?}"
    );
    for other in [1, 2] {
        assert!(
            loop_part(other).iter().all(|&(_, _, d)| d < 0.5 * others_s),
            "{j}"
        );
    }
    assert_eq!(top_rank(&j), slow);
    // The slow rank arrives last at every Allreduce; the others wait
    // there about (20 - 2) ms per iteration each.
    let site = allreduce_site(&j);
    assert_grammar_site(&site);
    assert_eq!(site["site"], loop_sites[0].as_str());
    assert_eq!(site["instances"], iterations);
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
    let _one = one_at_a_time();
    let delay = 0.1;
    let dir = traced("critpath_paper", 4, &["100"], "lossy,lossless");
    let j = analyse(&dir, "lossless");
    // Rank 0's delay follows its first barrier (call 4).
    let delay_on_path = |j: &Json, share: f64| {
        computations(j, 0)
            .iter()
            .any(|&(after, _, d)| after == 4 && d >= share * delay)
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
    let _one = one_at_a_time();
    let dir = traced("critpath_bsp", 2, &["0", "1", "1"], "aggregated");
    let out = mpigram(&["critical-path", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("MPIGRAM_TIMING"), "{err}");
    assert!(out.stdout.is_empty());
}

/// The entry of the waits by call site of the program's one MPI_Allreduce.
fn allreduce_site(j: &Json) -> Json {
    let allreduce: Vec<&Json> = j["waits"]["by_call_site"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["func"] == "MPI_Allreduce")
        .collect();
    assert_eq!(allreduce.len(), 1, "{allreduce:?}");
    allreduce[0].clone()
}

/// The picture's time scale, in pixels per second, from its axis: the
/// positions of the first and last tick and their labels.
fn pixels_per_second(svg: &roxmltree::Document) -> f64 {
    let axis = svg
        .descendants()
        .find(|n| n.attribute("class") == Some("axis"))
        .unwrap();
    let ticks: Vec<(f64, f64)> = axis
        .children()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("middle"))
        .map(|n| {
            let label = n.text().unwrap();
            let (value, unit) = label.split_once(' ').unwrap();
            let scale = match unit {
                "s" => 1.0,
                "ms" => 1e-3,
                "µs" => 1e-6,
                "ns" => 1e-9,
                other => panic!("unit {other}"),
            };
            let x: f64 = n.attribute("x").unwrap().parse().unwrap();
            (x, value.parse::<f64>().unwrap() * scale)
        })
        .collect();
    assert!(ticks.len() >= 3, "{ticks:?}");
    let ((x0, t0), (x1, t1)) = (ticks[0], ticks[ticks.len() - 1]);
    (x1 - x0) / (t1 - t0)
}

/// `class` attribute of `n` starts with `prefix`.
fn classed(n: &roxmltree::Node, prefix: &str) -> bool {
    n.attribute("class").is_some_and(|c| c.starts_with(prefix))
}

fn width(n: &roxmltree::Node) -> f64 {
    n.attribute("width").unwrap().parse().unwrap()
}

#[test]
fn the_picture_of_the_ring_shows_each_rank_and_the_delayed_ranks_computation_on_the_path() {
    let _one = one_at_a_time();
    let (delayed, delay, rounds) = (1u32, 0.04, 3);
    let dir = traced("critpath_ring", 3, &["1", "40", "3"], "lossless");
    // Not inside the trace directory: the tools refuse to write there.
    let pictures = tempfile::tempdir().unwrap();
    let file = pictures.path().join("path.svg");
    let out = mpigram(&[
        "critical-path",
        dir.path().to_str().unwrap(),
        "--json",
        "--svg",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    let svg = std::fs::read_to_string(&file).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert!(doc.descendants().all(|n| !n.has_tag_name("script")));

    // One lane per rank, labelled, each with its calls.
    let lanes: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("lane"))
        .collect();
    let ranks: Vec<&str> = lanes
        .iter()
        .map(|l| l.attribute("data-rank").unwrap())
        .collect();
    assert_eq!(ranks, ["0", "1", "2"]);
    for (lane, rank) in lanes.iter().zip(&ranks) {
        let label = lane.children().find(|n| n.has_tag_name("text")).unwrap();
        assert_eq!(label.text(), Some(format!("rank {rank}").as_str()));
        let p2p = lane.children().filter(|n| classed(n, "call p2p")).count();
        // Each rank sends and receives once per round.
        assert!(p2p >= 2 * rounds, "rank {rank}: {p2p} point-to-point boxes");
    }

    // The path's boxes together are as wide as the path is long, to a
    // pixel per box.
    let px_per_s = pixels_per_second(&doc);
    let path: Vec<_> = doc.descendants().filter(|n| classed(n, "path")).collect();
    assert!(!path.is_empty());
    let drawn: f64 = path.iter().map(width).sum();
    let length = j["length_s"].as_f64().unwrap();
    assert!(
        (drawn - length * px_per_s).abs() <= path.len() as f64 + 1.0,
        "{drawn} px drawn for {length} s at {px_per_s} px/s, {} boxes",
        path.len()
    );
    // The title says how long the path is.
    let title = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("title"))
        .unwrap();
    assert!(
        title
            .text()
            .unwrap()
            .starts_with(&format!("critical path: {:.0} ms", length * 1e3)),
        "{:?}",
        title.text()
    );

    // The delayed rank's computation of every round is on the path: after
    // its receives (calls 5, 7, 9, after a barrier at 4), as the title
    // of each box says.
    let mut delays: Vec<u64> = path
        .iter()
        .filter(|n| {
            n.attribute("class") == Some("path compute")
                && n.attribute("data-rank") == Some(&delayed.to_string())
                && width(n) >= 0.9 * delay * px_per_s
        })
        .filter_map(|n| {
            let title = n.children().find(|c| c.has_tag_name("title")).unwrap();
            let title = title.text().unwrap();
            let after = title.split("computation after call ").nth(1).unwrap();
            // "5 (MPI_Recv R2:0), 40.0 ms"
            let (seq, site) = after.split_once(" (").unwrap();
            let seq: u64 = seq.parse().unwrap();
            // Before the rounds (MPI_Init's start-up on a busy machine
            // may be as long as a delay).
            if seq <= 4 {
                return None;
            }
            let site = site
                .strip_prefix("MPI_Recv ")
                .unwrap_or_else(|| panic!("{title}"));
            let site = site.split_once(')').unwrap().0;
            let in_json = j["segments"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["rank"] == delayed && s["after_seq"] == seq)
                .unwrap();
            assert_eq!(in_json["after_site"], site, "{title}");
            Some(seq)
        })
        .collect();
    delays.sort_unstable();
    assert_eq!(delays, [5, 7, 9], "{svg}");
    assert_eq!(delays.len(), rounds);
    // And the path comes to it from rank 0 and goes on to rank 2.
    let jumps: Vec<(&str, &str)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("jump"))
        .map(|n| {
            (
                n.attribute("data-from").unwrap(),
                n.attribute("data-to").unwrap(),
            )
        })
        .collect();
    assert!(jumps.contains(&("0", "1")), "{jumps:?}");
    assert!(jumps.contains(&("1", "2")), "{jumps:?}");
}

#[test]
fn the_picture_of_a_long_trace_stays_small() {
    let _one = one_at_a_time();
    // 2 x 100,000 Allreduce calls, each far narrower than a pixel.
    let dir = traced("wait_states", 2, &["allreduce", "0", "100000"], "lossless");
    // Not inside the trace directory: the tools refuse to write there.
    let pictures = tempfile::tempdir().unwrap();
    let file = pictures.path().join("path.svg");
    let out = mpigram(&[
        "critical-path",
        dir.path().to_str().unwrap(),
        "--svg",
        file.to_str().unwrap(),
        "--svg-width",
        "600",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = std::fs::read_to_string(&file).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let boxes = |prefix| doc.descendants().filter(|n| classed(n, prefix)).count();
    // At most about two boxes per lane and pixel column.
    assert!(
        boxes("call ") <= 2 * 2 * 602,
        "{} call boxes",
        boxes("call ")
    );
    assert!(boxes("path") <= 2 * 2 * 602, "{} path boxes", boxes("path"));
    // The lanes are drawn: each is tiled by its call boxes from its first
    // call to its last (how many boxes that takes depends on how much of
    // the plot MPI_Init's start-up spans).
    let mut lanes: std::collections::BTreeMap<&str, (f64, f64, f64)> = Default::default();
    for n in doc.descendants().filter(|n| classed(n, "call ")) {
        let x: f64 = n.attribute("x").unwrap().parse().unwrap();
        let lane = lanes
            .entry(n.attribute("y").unwrap())
            .or_insert((f64::MAX, 0.0, 0.0));
        lane.0 = lane.0.min(x);
        lane.1 = lane.1.max(x + width(&n));
        lane.2 += width(&n);
    }
    assert_eq!(lanes.len(), 2, "{lanes:?}");
    for (y, (first, last, covered)) in &lanes {
        assert!(
            *covered >= 0.9 * (last - first) && last - first > 500.0,
            "lane at y={y}: {covered} of {first}..{last} px covered"
        );
    }
    assert!(boxes("call ") > 2 * 10, "{} call boxes", boxes("call "));
    assert!(svg.len() < 1_000_000, "{} bytes", svg.len());
}

/// A run that crashed: rank 1 calls MPI_Abort in a loop of collectives and
/// the launcher kills rank 0 (before its first checkpoint). The killed
/// rank's crash journal kept every call's times, so the analyses have
/// them all: no dependency is left out. (Calls without times, from
/// journals of older versions, are counted as untimed dependencies:
/// `critical_path::tests`.)
#[test]
fn a_crashed_run_is_analysed_with_every_call_timed() {
    // Its ranks would share the two cores with another test's, whose
    // computations' durations the assertions read.
    let _one = one_at_a_time();
    mpi_available().unwrap();
    let exe = compile("crash_abort_loop").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().to_str().unwrap();
    let run = mpigram(&[
        "run",
        "-o",
        trace,
        "-n",
        "2",
        "--timing",
        "lossless",
        "--",
        exe.to_str().unwrap(),
        "300",
    ]);
    assert!(!run.status.success(), "the program aborts");
    let out = mpigram(&["critical-path", trace, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("partial trace"));
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ranks"], 2);
    assert!(j["length_s"].as_f64().unwrap() > 0.0, "{}", j["length_s"]);
    assert_eq!(
        j["graph"]["untimed_dependencies"].as_u64(),
        Some(0),
        "{}",
        j["graph"]
    );
    let out = mpigram(&["profile", trace]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}
