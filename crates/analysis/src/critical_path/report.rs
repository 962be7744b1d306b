//! The analysis as JSON and as text for a person: findings first, then detail.

use super::{Activity, Analysis, Segment, SiteTime};
use crate::sites::CallSite;
use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use std::fmt::Write;
use std::io;

/// One segment of the path in the JSON output.
#[derive(Serialize)]
struct SegmentJson {
    rank: u32,
    kind: &'static str,
    start_s: f64,
    end_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    func: Option<&'static str>,
    /// The call site of an MPI segment's call (`R2:0`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "grammar_site"
    )]
    site: Option<CallSite>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    after_seq: Option<u32>,
    /// The call site of the call a computation segment follows.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "grammar_site"
    )]
    after_site: Option<CallSite>,
}

/// A call site as its name (`"R2:0"`), written without building a string
/// (a path has millions of segments).
fn grammar_site<S: serde::Serializer>(site: &Option<CallSite>, out: S) -> Result<S::Ok, S::Error> {
    match site {
        Some(site) => out.collect_str(site),
        None => out.serialize_none(),
    }
}

impl SegmentJson {
    fn new(rank: u32, start_ns: i64, end_ns: i64) -> SegmentJson {
        SegmentJson {
            rank,
            kind: "",
            start_s: s(start_ns),
            end_s: s(end_ns),
            func: None,
            site: None,
            seq: None,
            after_seq: None,
            after_site: None,
        }
    }
}

fn s(ns: i64) -> f64 {
    ns as f64 * 1e-9
}

fn ratio(v: Option<f64>) -> Json {
    v.map_or(Json::Null, |v| json!(v))
}

impl Analysis {
    /// A call site as people read it: `MPI_Allreduce R5:2` (function,
    /// grammar rule and position).
    pub fn site_name(&self, site: u32) -> String {
        self.sites.name(site)
    }

    /// The call site of call `seq` of `rank`.
    pub fn call_site(&self, rank: u32, seq: u32) -> Option<u32> {
        let i = self
            .timelines
            .binary_search_by_key(&rank, |r| r.rank)
            .ok()?;
        self.timelines[i].sites.get(seq as usize).copied()
    }

    /// What a segment of the path does, as people read it:
    /// `MPI_Recv R2:0 (call 5)`, `computation after call 5 (MPI_Recv R2:0)`.
    pub fn activity_name(&self, seg: &Segment) -> String {
        self.activity_at(seg, u32::MAX)
    }

    /// The call site of the call a computation segment follows: as kept
    /// with the segment, else from the ranks' calls in memory.
    fn after_site(&self, seg: &Segment, kept: u32) -> Option<u32> {
        match seg.activity {
            Activity::Computation { after } if kept == u32::MAX => self.call_site(seg.rank, after),
            Activity::Computation { .. } => Some(kept),
            Activity::Call { .. } => None,
        }
    }

    /// [`Analysis::activity_name`], with the site kept with the segment.
    fn activity_at(&self, seg: &Segment, after_site: u32) -> String {
        match seg.activity {
            Activity::Computation { after } => match self.after_site(seg, after_site) {
                Some(site) => format!("computation after call {after} ({})", self.site_name(site)),
                None => format!("computation after call {after}"),
            },
            Activity::Call { seq, site } => format!("{} (call {seq})", self.site_name(site)),
        }
    }

    /// `func`, `site` (`"R2:0"`), `rule` and `position` of a call site.
    fn site_fields(&self, site: u32) -> Map<String, Json> {
        let at = self.sites.site(site);
        let mut o = Map::new();
        o.insert("func".into(), json!(self.sites.func(site)));
        o.insert("site".into(), json!(at.map(|s| s.to_string())));
        o.insert("rule".into(), json!(at.map(|s| s.rule)));
        o.insert("position".into(), json!(at.map(|s| s.position)));
        o
    }

    /// The analysis as one JSON object, written to `out`. The path's
    /// segments (millions on a long run) are written one at a time, not
    /// built as a JSON tree first.
    pub fn write_json(&self, out: &mut impl io::Write) -> io::Result<()> {
        let segments = self
            .path
            .segments
            .iter_kept()
            .map(|kept| (kept.segment, kept.after_site));
        let mut written = 0;
        let segments = segments
            .inspect(|_| written += 1)
            .map(|(seg, kept)| match seg.activity {
                Activity::Computation { after } => SegmentJson {
                    kind: "compute",
                    after_seq: Some(after),
                    after_site: self
                        .after_site(&seg, kept)
                        .and_then(|site| self.sites.site(site)),
                    ..SegmentJson::new(seg.rank, seg.start_ns, seg.end_ns)
                },
                Activity::Call { seq, site } => SegmentJson {
                    kind: "mpi",
                    func: Some(self.sites.func(site)),
                    site: self.sites.site(site),
                    seq: Some(seq),
                    ..SegmentJson::new(seg.rank, seg.start_ns, seg.end_ns)
                },
            });
        crate::json::write_with_array(out, &self.summary_json(), "segments", segments)?;
        if written != self.path.segments.len() {
            return Err(io::Error::other(
                "the critical path's segments could not be read back from their temporary file",
            ));
        }
        Ok(())
    }

    /// Everything but the path's segments.
    fn summary_json(&self) -> Json {
        let p = &self.path;
        let by_rank = |v: &[(u32, i64)]| {
            let mut m = Map::new();
            for &(r, ns) in v {
                m.insert(r.to_string(), json!(s(ns)));
            }
            Json::Object(m)
        };
        let sites: Vec<Json> = p.sites.iter().map(|t| self.site_json(t)).collect();
        let w = &self.waits;
        let waits_json = |x: &super::RankWaits| {
            json!({
                "wait_before_s": s(x.wait_before_ns),
                "wait_after_s": s(x.wait_after_ns),
                "exec_s": s(x.exec_ns),
                "compute_s": s(x.compute_ns),
                "calls": x.calls,
                "imbalance": ratio(x.imbalance()),
                "imbalance_with_compute": ratio(x.imbalance_with_compute()),
            })
        };
        let mut out = json!({
            "length_s": s(p.length_ns),
            "wall_s": s(p.wall_ns),
            "ranks": self.ranks,
            "calls": self.calls,
            "by_rank_compute_s": by_rank(&p.by_rank_compute_ns),
            "by_rank_mpi_s": by_rank(&p.by_rank_mpi_ns),
            "call_sites": sites,
            "waits": {
                "total": waits_json(&w.total),
                "by_rank": w.by_rank.iter().map(|(r, x)| {
                    let mut o = waits_json(x);
                    o["rank"] = json!(r);
                    o
                }).collect::<Vec<_>>(),
                "by_call_site": w.by_site.iter().map(|c| {
                    let mut o = waits_json(&c.waits);
                    if let Json::Object(o) = &mut o {
                        o.extend(self.site_fields(c.site));
                    }
                    o["instances"] = json!(c.instances);
                    o["last_rank"] = json!(c.last_rank);
                    o["last_count"] = json!(c.last_count);
                    o
                }).collect::<Vec<_>>(),
                "instances": w.instance_count,
                "untimed_instances": w.untimed,
            },
            "graph": {
                "vertices": p.vertices,
                "edges": p.edges,
                "untimed_dependencies": p.untimed_dependencies,
            },
            "unmatched": {
                "point_to_point": self.unmatched[0],
                "collective": self.unmatched[1],
                "one_sided": self.unmatched[2],
            },
        });
        if let Some(h) = &self.heuristic {
            out["heuristic"] = json!({
                "compute_s": s(h.compute_ns),
                "groups": h.groups,
                "by_rank_compute_s": by_rank(&h.by_rank_compute_ns),
                "exact_compute_s": s(h.exact_compute_ns),
                "agreement_s": s(h.agreement_ns),
                "missed": h.missed(),
                "share_deviation": h.share_deviation(p),
            });
        }
        out
    }

    fn site_json(&self, t: &SiteTime) -> Json {
        let mut o = self.site_fields(t.site);
        o.insert(
            "kind".into(),
            json!(if t.computation {
                "compute_after"
            } else {
                "mpi"
            }),
        );
        o.insert("time_s".into(), json!(s(t.ns)));
        o.insert("segments".into(), json!(t.count));
        Json::Object(o)
    }

    /// Findings first, then per-rank and per-site detail.
    pub fn to_text(&self) -> String {
        let p = &self.path;
        let mut o = String::new();
        let pct = |part: i64, whole: i64| {
            if whole > 0 {
                100.0 * part as f64 / whole as f64
            } else {
                0.0
            }
        };
        let compute: i64 = p.by_rank_compute_ns.iter().map(|x| x.1).sum();
        let _ = writeln!(
            o,
            "Critical path: {:.6} s of a {:.6} s run; computation {:.0}%, MPI {:.0}%.",
            s(p.length_ns),
            s(p.wall_ns),
            pct(compute, p.length_ns),
            pct(p.length_ns - compute, p.length_ns)
        );
        let mut ranks: Vec<_> = p.by_rank_compute_ns.iter().filter(|x| x.1 > 0).collect();
        ranks.sort_by_key(|x| std::cmp::Reverse(x.1));
        for &&(r, ns) in ranks.iter().take(3) {
            let _ = writeln!(
                o,
                "  rank {r} computes {:.0}% of the path ({:.6} s)",
                pct(ns, p.length_ns),
                s(ns)
            );
        }
        for t in p.sites.iter().take(3) {
            let what = if t.computation {
                "computation after"
            } else {
                "inside"
            };
            let _ = writeln!(
                o,
                "  {:.6} s ({:.0}%) of the path is {what} {}",
                s(t.ns),
                pct(t.ns, p.length_ns),
                self.site_name(t.site)
            );
        }
        for c in self
            .waits
            .by_site
            .iter()
            .take(3)
            .filter(|c| c.waits.wait_ns() > 0)
        {
            let _ = writeln!(
                o,
                "  rank {} arrives last at {} in {:.0}% of {} instances; ranks wait {:.6} s there in total (imbalance {})",
                c.last_rank,
                self.site_name(c.site),
                pct(c.last_count as i64, c.instances as i64),
                c.instances,
                s(c.waits.wait_ns()),
                c.waits
                    .imbalance()
                    .map_or("-".into(), |i| format!("{i:.3}")),
            );
        }
        if let Some(h) = &self.heuristic {
            let _ = writeln!(
                o,
                "Interval grouping (heuristic): {:.6} s of computation in {} groups; it misses {:.1}% of the exact path's computation; rank shares differ by up to {:.1} points.",
                s(h.compute_ns),
                h.groups,
                100.0 * h.missed(),
                100.0 * h.share_deviation(p)
            );
        }
        if self.unmatched.iter().any(|&n| n > 0) || p.untimed_dependencies > 0 {
            let _ = writeln!(
                o,
                "Not in the graph: {} point-to-point, {} collective, {} one-sided operations unmatched; {} dependencies on untimed calls.",
                self.unmatched[0], self.unmatched[1], self.unmatched[2], p.untimed_dependencies
            );
        }

        let _ = writeln!(o, "\nBy rank (seconds):");
        let _ = writeln!(
            o,
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}",
            "rank", "path_comp", "path_mpi", "wait_before", "wait_after", "coll_exec", "imbalance"
        );
        let w = &self.waits;
        for ((&(r, c), &(_, m)), (_, x)) in p
            .by_rank_compute_ns
            .iter()
            .zip(&p.by_rank_mpi_ns)
            .zip(&w.by_rank)
        {
            let _ = writeln!(
                o,
                "{r:>6} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>10}",
                s(c),
                s(m),
                s(x.wait_before_ns),
                s(x.wait_after_ns),
                s(x.exec_ns),
                x.imbalance().map_or("-".into(), |i| format!("{i:.4}"))
            );
        }
        let t = &w.total;
        let _ = writeln!(
            o,
            "{:>6} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>10}",
            "all",
            s(compute),
            s(p.length_ns - compute),
            s(t.wait_before_ns),
            s(t.wait_after_ns),
            s(t.exec_ns),
            t.imbalance().map_or("-".into(), |i| format!("{i:.4}"))
        );
        let _ = writeln!(o, "\nCall sites on the path:");
        for t in p.sites.iter().take(15) {
            let _ = writeln!(
                o,
                "{:>12.6} s {:>6} x  {}{}",
                s(t.ns),
                t.count,
                if t.computation { "after " } else { "" },
                self.site_name(t.site)
            );
        }
        let _ = writeln!(
            o,
            "\nPath ({} segments, first 20; --json for all):",
            p.segments.len()
        );
        for kept in p.segments.iter_kept().take(20) {
            let seg = kept.segment;
            let what = self.activity_at(&seg, kept.after_site);
            let _ = writeln!(
                o,
                "  rank {:>3} {:>12.6} .. {:>12.6}  {what}",
                seg.rank,
                s(seg.start_ns),
                s(seg.end_ns)
            );
        }
        let _ = writeln!(
            o,
            "\nGraph: {} vertices, {} edges; {} collective instances.",
            p.vertices, p.edges, w.instance_count
        );
        o
    }
}
