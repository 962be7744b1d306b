//! The profile for people (findings first, then detail) and as JSON.

use super::sites::CallSite;
use super::waits::WaitKind;
use super::{LateTotal, Profile, WaitTotal};
use crate::timeline::Source;
use mpigram_grammar::Symbol;
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::fmt::Write;
use std::io;

/// A call site in the JSON output.
#[derive(Serialize)]
struct SiteJson {
    rule: u32,
    position: u32,
    name: String,
}

impl SiteJson {
    fn of(site: CallSite) -> SiteJson {
        SiteJson {
            rule: site.rule,
            position: site.position,
            name: site.to_string(),
        }
    }
}

/// One wait state in the JSON output.
#[derive(Serialize)]
struct WaitStateJson {
    kind: &'static str,
    rank: u32,
    peer: Option<u32>,
    func: &'static str,
    call_site: Option<SiteJson>,
    seq: u64,
    start_s: f64,
    severity_s: f64,
}

/// A finding: a cause of waiting worth a look.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// A rank arriving last at a collective's call site.
    Late(LateTotal),
    /// A rank waiting at a call site.
    Wait(WaitTotal),
}

impl Finding {
    pub fn cost_s(&self) -> f64 {
        match self {
            Finding::Late(l) => l.cost_s,
            Finding::Wait(w) => w.severity_s,
        }
    }

    /// One sentence.
    pub fn sentence(&self) -> String {
        match self {
            Finding::Late(l) => {
                let role = if l.func.contains("Bcast") || l.func.contains("Scatter") {
                    "arrives late as the root"
                } else {
                    "arrives last"
                };
                format!(
                    "rank {} {role} at the {} ({}) in {} of its executions ({}/{}), costing the other ranks {} in total",
                    l.rank,
                    l.func,
                    site(l.site),
                    percent(l.count, l.executions),
                    l.count,
                    l.executions,
                    duration(l.cost_s)
                )
            }
            Finding::Wait(w) => {
                let whom = match w.peers.as_slice() {
                    [] => String::new(),
                    [p] => format!(" for rank {p}"),
                    [p, rest @ ..] => format!(" for rank {p} (and {} more)", rest.len()),
                };
                let why = match w.kind {
                    WaitKind::LateSender => "its message is sent late",
                    WaitKind::LateReceiver => "its receive is posted late",
                    WaitKind::EarlyReduce => "the root enters before the others send",
                    WaitKind::BarrierCompletion => "the barrier completes late on it",
                    WaitKind::WaitAtBarrier | WaitKind::WaitAtNxN | WaitKind::WaitAtFence => {
                        "it arrives before the others"
                    }
                    WaitKind::LateBroadcast => "the root arrives late",
                    WaitKind::LatePost => "the target exposes its window late",
                    WaitKind::EarlyWait => "the origin completes its accesses late",
                };
                format!(
                    "rank {} waits {} in {} ({}){whom} in {} of its executions ({}/{}): {} ({why})",
                    w.rank,
                    duration(w.severity_s),
                    w.func,
                    site(w.site),
                    percent(w.count, w.executions),
                    w.count,
                    w.executions,
                    w.kind.describe(),
                )
            }
        }
    }
}

impl Profile {
    /// Causes of waiting costing at least `min_share` of the run, costliest
    /// first: ranks arriving last at collectives, and waits at point-to-point
    /// calls and rooted collectives (a wait at a barrier or N×N collective
    /// is shown through the rank that arrived last).
    pub fn findings(&self) -> Vec<Finding> {
        let floor = self.options.min_share * self.run_s;
        let mut out: Vec<Finding> = self
            .late_totals
            .iter()
            .filter(|l| l.cost_s >= floor && l.cost_s > 0.0)
            .cloned()
            .map(Finding::Late)
            .chain(
                self.wait_totals
                    .iter()
                    .filter(|w| {
                        !matches!(
                            w.kind,
                            WaitKind::WaitAtBarrier | WaitKind::WaitAtNxN | WaitKind::LateBroadcast
                        ) && w.severity_s >= floor
                            && w.severity_s > 0.0
                    })
                    .cloned()
                    .map(Finding::Wait),
            )
            .collect();
        out.sort_by(|a, b| b.cost_s().total_cmp(&a.cost_s()));
        out
    }

    /// The report for people: findings first, then wait states, behaviour
    /// classes and rank groups.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let o = &self.options;
        let _ = writeln!(
            s,
            "{} ranks, {} calls, {} from first call to last; classes by {} ({} within a rank, {} across); {} times",
            self.ranks.len(),
            self.calls,
            duration(self.run_s),
            o.method,
            o.within,
            o.across,
            source_name(o.source)
        );
        let _ = writeln!(s);
        let findings = self.findings();
        let _ = writeln!(s, "Top findings");
        if findings.is_empty() {
            let _ = writeln!(
                s,
                "  no rank waits for another for {:.0}% of the run or more",
                o.min_share * 100.0
            );
        }
        for (i, f) in findings.iter().take(10).enumerate() {
            let _ = writeln!(s, "  {}. {}", i + 1, f.sentence());
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Wait states by kind, call site and rank (costliest first)"
        );
        if self.wait_totals.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for w in self.wait_totals.iter().take(20) {
            let peers = if w.peers.is_empty() {
                String::new()
            } else {
                let p: Vec<String> = w.peers.iter().take(4).map(u32::to_string).collect();
                format!(" for {}", p.join(","))
            };
            let _ = writeln!(
                s,
                "  {:<18} {:<16} {:<8} rank {:<4}{:<10} {:>6}/{:<6} calls {:>10}",
                w.kind.describe(),
                w.func,
                site(w.site),
                w.rank,
                peers,
                w.count,
                w.executions,
                duration(w.severity_s)
            );
        }
        if self.wait_totals.len() > 20 {
            let _ = writeln!(
                s,
                "  ... {} more (--json lists all)",
                self.wait_totals.len() - 20
            );
        }
        if self.unmatched > 0 {
            let _ = writeln!(
                s,
                "  ({} point-to-point operations matched nothing and are not analysed)",
                self.unmatched
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Behaviour classes of loop iterations (contexts by time spent; share of executions)"
        );
        let mut order: Vec<usize> = (0..self.contexts.len()).collect();
        order.sort_by(|&a, &b| {
            self.contexts[b]
                .total_s
                .total_cmp(&self.contexts[a].total_s)
        });
        if order.is_empty() {
            let _ = writeln!(s, "  no loops");
        }
        for &i in order.iter().take(10) {
            let c = &self.contexts[i];
            let _ = writeln!(
                s,
                "  {} [{}], {} executions, {}:",
                context_name(&c.path),
                self.context_funcs[i].join(" "),
                c.executions,
                duration(c.total_s)
            );
            let shown = c.classes.len().min(5);
            for class in &c.classes[..shown] {
                let _ = writeln!(
                    s,
                    "    {:>5.1}%  {:>6} executions, mean {:>10}, ranks {}",
                    class.share * 100.0,
                    class.executions,
                    duration(class.mean_duration_s()),
                    ranges(&class.ranks)
                );
            }
            if c.classes.len() > shown {
                let _ = writeln!(s, "    ... {} more classes", c.classes.len() - shown);
            }
            if c.unmatched > 0 {
                let _ = writeln!(
                    s,
                    "    ({} executions matched no class within the threshold)",
                    c.unmatched
                );
            }
        }
        if order.len() > 10 {
            let _ = writeln!(
                s,
                "  ... {} more contexts (--json lists all)",
                order.len() - 10
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Rank groups (ranks whose iterations fall into the same classes): {}",
            self.rank_groups.len()
        );
        for g in self.rank_groups.iter().take(20) {
            let _ = writeln!(s, "  ranks {}", ranges(g));
        }
        s
    }

    /// The profile as JSON.
    /// The profile as one JSON object, written to `out`; the wait states
    /// (one per waiting call, millions on a long run) are written one at
    /// a time, last.
    pub fn write_json(&self, out: &mut impl io::Write) -> io::Result<()> {
        let wait_states = self.wait_states.iter().map(|w| WaitStateJson {
            kind: w.kind.name(),
            rank: w.rank,
            peer: w.peer,
            func: w.func,
            call_site: w.site.map(SiteJson::of),
            seq: w.seq,
            start_s: w.start_s,
            severity_s: w.severity_s,
        });
        crate::json::write_with_array(out, &self.summary_json(), "wait_states", wait_states)
    }

    /// Everything but the wait states.
    fn summary_json(&self) -> Json {
        let o = &self.options;
        let site_json = |s: Option<CallSite>| json!(s.map(SiteJson::of));
        json!({
            "ranks": self.ranks,
            "calls": self.calls,
            "run_s": self.run_s,
            "method": o.method.name(),
            "threshold_within": o.within,
            "threshold_across": o.across,
            "times": source_name(o.source),
            "timing_bound_s": self.timing_bound_s.iter()
                .map(|(r, b)| json!({"rank": r, "bound_s": b})).collect::<Vec<_>>(),
            "findings": self.findings().iter().map(|f| {
                let mut v = match f {
                    Finding::Late(l) => json!({
                        "kind": "late_arrival", "rank": l.rank, "func": l.func,
                        "call_site": site_json(l.site), "count": l.count,
                        "executions": l.executions, "cost_s": l.cost_s,
                    }),
                    Finding::Wait(w) => json!({
                        "kind": w.kind.name(), "rank": w.rank, "func": w.func,
                        "call_site": site_json(w.site), "count": w.count,
                        "executions": w.executions, "cost_s": w.severity_s,
                        "peers": w.peers,
                    }),
                };
                v["text"] = json!(f.sentence());
                v
            }).collect::<Vec<_>>(),
            "wait_totals": self.wait_totals.iter().map(|w| json!({
                "kind": w.kind.name(),
                "rank": w.rank,
                "func": w.func,
                "call_site": site_json(w.site),
                "count": w.count,
                "executions": w.executions,
                "severity_s": w.severity_s,
                "peers": w.peers,
            })).collect::<Vec<_>>(),
            "late_arrivals": self.late_totals.iter().map(|l| json!({
                "rank": l.rank,
                "func": l.func,
                "call_site": site_json(l.site),
                "count": l.count,
                "executions": l.executions,
                "cost_s": l.cost_s,
            })).collect::<Vec<_>>(),
            "contexts": self.contexts.iter().zip(&self.context_funcs).map(|(c, funcs)| json!({
                "context": context_name(&c.path),
                "funcs": funcs,
                "executions": c.executions,
                "total_s": c.total_s,
                "unmatched": c.unmatched,
                "classes": c.classes.iter().map(|k| json!({
                    "executions": k.executions,
                    "share": k.share,
                    "mean_duration_s": k.mean_duration_s(),
                    "ranks": k.ranks,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "rank_groups": self.rank_groups,
            "unmatched_operations": self.unmatched,
        })
    }
}

fn source_name(source: Source) -> &'static str {
    match source {
        Source::Best => "best recorded",
        Source::Lossy => "lossy",
        Source::Lossless => "lossless",
    }
}

/// `R4/R0`, `R4/t7` (a loop of one call).
pub fn context_name(path: &[Symbol]) -> String {
    path.iter()
        .map(|s| match s {
            Symbol::Rule(r) => format!("R{r}"),
            Symbol::Terminal(t) => format!("t{t}"),
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn site(s: Option<CallSite>) -> String {
    s.map_or_else(|| "?".to_owned(), |s| s.to_string())
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "?%".to_owned();
    }
    format!("{:.0}%", part as f64 * 100.0 / whole as f64)
}

/// `1.20 s`, `3.4 ms`, `12 µs`.
pub fn duration(s: f64) -> String {
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.2} s")
    } else if a >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else if a >= 1e-6 {
        format!("{:.0} µs", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

/// `0-3, 5, 7-8`.
fn ranges(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            ranks[i].to_string()
        } else {
            format!("{}-{}", ranks[i], ranks[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_rank_ranges_read_at_a_glance() {
        assert_eq!(duration(1.234), "1.23 s");
        assert_eq!(duration(0.0034), "3.4 ms");
        assert_eq!(duration(12e-6), "12 µs");
        assert_eq!(ranges(&[0, 1, 2, 3, 5, 7, 8]), "0-3, 5, 7-8");
        assert_eq!(
            context_name(&[Symbol::Rule(4), Symbol::Terminal(7)]),
            "R4/t7"
        );
    }

    #[test]
    fn a_late_arrival_reads_as_a_sentence() {
        let f = Finding::Late(LateTotal {
            rank: 3,
            func: "MPI_Allreduce",
            site: Some(CallSite {
                rule: 5,
                position: 2,
            }),
            count: 80,
            executions: 100,
            cost_s: 1.2,
        });
        assert_eq!(
            f.sentence(),
            "rank 3 arrives last at the MPI_Allreduce (R5:2) in 80% of its executions (80/100), costing the other ranks 1.20 s in total"
        );
    }
}
