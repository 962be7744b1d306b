//! A picture of the critical path over the timeline, as plain SVG (no
//! scripts, no external resources): one lane per rank with each MPI call a
//! box coloured by its function family and computation the gaps between
//! them, a time axis, and the critical path drawn on top — its segments
//! outlined, its jumps between ranks (the communication it follows) as
//! arrows.
//!
//! The drawing stays bounded however long the trace is: calls narrower
//! than a pixel merge into one box per lane and pixel column, and so do
//! path segments, so a lane holds at most about two boxes per pixel
//! column of the plot.

use super::{Activity, Analysis, RankCalls, Segment};
use rustc_hash::FxHashSet;
use std::fmt::Write as _;
use std::io::{self, Write};

/// How the picture is laid out.
#[derive(Clone, Copy, Debug)]
pub struct SvgOptions {
    /// Width of the plot (the time axis) in pixels; labels and margins
    /// come on top.
    pub plot_width: u32,
}

impl Default for SvgOptions {
    fn default() -> SvgOptions {
        SvgOptions { plot_width: 1200 }
    }
}

/// The groups of MPI functions the picture colours apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    PointToPoint,
    Collective,
    /// Completion of requests: MPI_Wait*, MPI_Test*.
    Wait,
    /// Remote memory access and its synchronisation (MPI_Win_*, MPI_Put, ...).
    OneSided,
    Other,
}

impl Family {
    const ALL: [Family; 5] = [
        Family::PointToPoint,
        Family::Collective,
        Family::Wait,
        Family::OneSided,
        Family::Other,
    ];

    /// The family of the MPI function `func`.
    pub fn of(func: &str) -> Family {
        let f = func.strip_suffix("_c").unwrap_or(func);
        let Some(op) = f.strip_prefix("MPI_") else {
            return Family::Other;
        };
        const ONE_SIDED: [&str; 9] = [
            "Put",
            "Get",
            "Accumulate",
            "Get_accumulate",
            "Fetch_and_op",
            "Compare_and_swap",
            "Rput",
            "Rget",
            "Raccumulate",
        ];
        if op.starts_with("Win_") || ONE_SIDED.contains(&op) || op == "Rget_accumulate" {
            return Family::OneSided;
        }
        if op.starts_with("Wait") || op.starts_with("Test") {
            return Family::Wait;
        }
        // Non-blocking (MPI_Iallreduce) and persistent (MPI_Allreduce_init)
        // collectives are collectives too.
        let base = op.strip_suffix("_init").unwrap_or(op);
        let base = mpigram_mpispec::blocking_operation(base).unwrap_or_else(|| base.to_owned());
        if crate::stats::traffic::is_collective(&base) || base == "Reduce_local" {
            return Family::Collective;
        }
        let base = base.to_ascii_lowercase();
        let p2p = ["send", "recv", "probe", "start"];
        if p2p.iter().any(|w| base.contains(w)) || base == "request_free" {
            return Family::PointToPoint;
        }
        Family::Other
    }

    /// CSS class of its boxes.
    fn class(self) -> &'static str {
        match self {
            Family::PointToPoint => "p2p",
            Family::Collective => "collective",
            Family::Wait => "wait",
            Family::OneSided => "one-sided",
            Family::Other => "other",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Family::PointToPoint => "point-to-point",
            Family::Collective => "collective",
            Family::Wait => "wait / test",
            Family::OneSided => "one-sided",
            Family::Other => "other MPI",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Family::PointToPoint => "#4e79a7",
            Family::Collective => "#59a14f",
            Family::Wait => "#edc948",
            Family::OneSided => "#b07aa1",
            Family::Other => "#a0a0a0",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Colour of the critical path.
const PATH_COLOUR: &str = "#d62728";
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 48.0;
const LANE_HEIGHT: f64 = 26.0;
const LANE_GAP: f64 = 8.0;

/// What one picture holds, for callers that report it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SvgSummary {
    /// Boxes of calls (merged ones count once).
    pub call_boxes: usize,
    /// Boxes of path segments.
    pub path_boxes: usize,
    /// Arrows of the path's jumps between ranks.
    pub jumps: usize,
}

/// Maps times to the plot's x coordinates.
#[derive(Clone, Copy)]
struct Scale {
    t0: i64,
    px_per_ns: f64,
    width: f64,
}

impl Scale {
    fn x(&self, t: i64) -> f64 {
        ((t - self.t0) as f64 * self.px_per_ns).clamp(0.0, self.width)
    }
}

/// Writes the picture of `analysis`'s critical path over its ranks'
/// calls to `out`.
pub fn write_svg(
    analysis: &Analysis,
    options: &SvgOptions,
    out: &mut dyn Write,
) -> io::Result<SvgSummary> {
    let path = &analysis.path;
    let ranks = &analysis.timelines;
    let width = f64::from(options.plot_width.max(100));
    let first = ranks
        .iter()
        .filter_map(|r| r.spans.first())
        .map(|s| s.start_ns);
    let last = ranks
        .iter()
        .filter_map(|r| r.spans.last())
        .map(|s| s.end_ns);
    let seg_first = path.segments.iter().map(|s| s.start_ns);
    let seg_last = path.segments.iter().map(|s| s.end_ns);
    let t0 = first.chain(seg_first).min().unwrap_or(0);
    let t1 = last.chain(seg_last).max().unwrap_or(0).max(t0 + 1);
    let scale = Scale {
        t0,
        px_per_ns: width / (t1 - t0) as f64,
        width,
    };
    let lane_of = |rank: u32| ranks.iter().position(|r| r.rank == rank);
    let lane_y = |lane: usize| TOP + lane as f64 * (LANE_HEIGHT + LANE_GAP);
    let lanes_bottom = lane_y(ranks.len()) - LANE_GAP;
    let axis_y = lanes_bottom + 6.0;
    let legend_y = axis_y + 40.0;
    let total_width = LEFT + width + RIGHT;
    let total_height = legend_y + 24.0;
    let mut summary = SvgSummary::default();
    let mut s = String::new();

    let _ = writeln!(
        s,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#,
        w = num(total_width),
        h = num(total_height),
    );
    s.push_str("<style>\n");
    for f in Family::ALL {
        let _ = writeln!(s, ".{} {{ fill: {} }}", f.class(), f.colour());
    }
    let _ = writeln!(
        s,
        ".lane-bg {{ fill: #f7f7f7 }}\n\
         .path {{ fill: {PATH_COLOUR}; fill-opacity: 0.18; stroke: {PATH_COLOUR}; stroke-width: 2.5 }}\n\
         .path.call {{ fill-opacity: 0.45 }}\n\
         .jump {{ stroke: {PATH_COLOUR}; stroke-width: 1.5; fill: none }}\n\
         .tick {{ stroke: #555 }}\n\
         .grid {{ stroke: #ddd; stroke-width: 0.5 }}"
    );
    s.push_str("</style>\n");
    let _ = writeln!(
        s,
        r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{PATH_COLOUR}"/></marker></defs>"#
    );
    let share = if path.wall_ns > 0 {
        format!(
            " ({:.0}% of the run's {})",
            100.0 * path.length_ns as f64 / path.wall_ns as f64,
            duration(path.wall_ns)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        r#"<text class="title" x="{x}" y="20" font-size="15" font-weight="bold">critical path: {len}{share}; {ranks} ranks, {calls} calls</text>"#,
        x = num(LEFT),
        len = duration(path.length_ns),
        ranks = analysis.ranks,
        calls = analysis.calls,
    );
    let _ = writeln!(
        s,
        r##"<text x="{x}" y="36" fill="#555">computation is the space between calls; the path is outlined in red, its jumps between ranks are arrows; calls narrower than a pixel are merged</text>"##,
        x = num(LEFT),
    );

    // Grid lines behind the lanes.
    let ticks = ticks(t0, t1, width);
    s.push_str("<g class=\"grid\">\n");
    for &(t, _) in &ticks {
        let x = LEFT + scale.x(t);
        let _ = writeln!(
            s,
            r#"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}"/>"#,
            x = num(x),
            y0 = num(TOP - 4.0),
            y1 = num(axis_y),
        );
    }
    s.push_str("</g>\n");
    out.write_all(s.as_bytes())?;
    s.clear();

    // Lanes: each rank's calls.
    for (lane, r) in ranks.iter().enumerate() {
        let y = lane_y(lane);
        let _ = writeln!(s, r#"<g class="lane" data-rank="{}">"#, r.rank);
        let _ = writeln!(
            s,
            r#"<text class="label" x="{x}" y="{ty}" text-anchor="end">rank {rank}</text>"#,
            x = num(LEFT - 10.0),
            ty = num(y + LANE_HEIGHT / 2.0 + 4.0),
            rank = r.rank,
        );
        let _ = writeln!(
            s,
            r#"<rect class="lane-bg" x="{x}" y="{y}" width="{w}" height="{h}"/>"#,
            x = num(LEFT),
            y = num(y),
            w = num(width),
            h = num(LANE_HEIGHT),
        );
        for b in call_boxes(r, analysis, &scale) {
            summary.call_boxes += 1;
            let _ = write!(
                s,
                r#"<rect class="call {class}" x="{x}" y="{y}" width="{w}" height="{h}""#,
                class = b.family.class(),
                x = num(LEFT + b.x),
                y = num(y + 3.0),
                w = num(b.width),
                h = num(LANE_HEIGHT - 6.0),
            );
            if b.calls > 1 {
                let _ = write!(s, r#" fill-opacity="{}""#, num(b.opacity));
            }
            let _ = writeln!(s, "><title>{}</title></rect>", escape(&b.title));
        }
        s.push_str("</g>\n");
        out.write_all(s.as_bytes())?;
        s.clear();
    }

    // The path on top.
    s.push_str("<g class=\"critical-path\">\n");
    let boxes = path_boxes(
        path.segments.iter(),
        ranks.len(),
        &lane_of,
        analysis,
        &scale,
    );
    for b in &boxes {
        summary.path_boxes += 1;
        let y = lane_y(b.lane);
        let _ = writeln!(
            s,
            r#"<rect class="path {kind}" data-rank="{rank}" x="{x}" y="{y}" width="{w}" height="{h}"><title>{title}</title></rect>"#,
            kind = if b.compute { "compute" } else { "call" },
            rank = ranks[b.lane].rank,
            x = num(LEFT + b.x),
            y = num(y + 1.0),
            w = num(b.width),
            h = num(LANE_HEIGHT - 2.0),
            title = escape(&b.title),
        );
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    // Jumps: where consecutive segments are on different ranks, one arrow
    // per pixel column and pair of lanes.
    let mut drawn: FxHashSet<(i64, usize, usize)> = FxHashSet::default();
    for (a, b) in path.segments.jumps() {
        let (Some(from), Some(to)) = (lane_of(a.rank), lane_of(b.rank)) else {
            continue;
        };
        let (x1, x2) = (scale.x(a.end_ns), scale.x(b.start_ns));
        if !drawn.insert((x1.floor() as i64, from, to)) {
            continue;
        }
        summary.jumps += 1;
        let mid = |lane| lane_y(lane) + LANE_HEIGHT / 2.0;
        let _ = writeln!(
            s,
            r#"<line class="jump" data-from="{fr}" data-to="{tr}" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" marker-end="url(#arrow)"/>"#,
            fr = a.rank,
            tr = b.rank,
            x1 = num(LEFT + x1),
            y1 = num(mid(from)),
            x2 = num(LEFT + x2),
            y2 = num(mid(to)),
        );
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    s.push_str("</g>\n");

    // The time axis.
    s.push_str("<g class=\"axis\">\n");
    let _ = writeln!(
        s,
        r#"<line class="tick" x1="{x1}" y1="{y}" x2="{x2}" y2="{y}"/>"#,
        x1 = num(LEFT),
        x2 = num(LEFT + width),
        y = num(axis_y),
    );
    for (t, label) in &ticks {
        let x = LEFT + scale.x(*t);
        let _ = writeln!(
            s,
            r#"<line class="tick" x1="{x}" y1="{y0}" x2="{x}" y2="{y1}"/><text x="{x}" y="{ty}" text-anchor="middle">{label}</text>"#,
            x = num(x),
            y0 = num(axis_y),
            y1 = num(axis_y + 5.0),
            ty = num(axis_y + 18.0),
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{x}" y="{y}" text-anchor="end" fill="#555">time from the run's start</text>"##,
        x = num(LEFT + width),
        y = num(axis_y + 32.0),
    );
    s.push_str("</g>\n");

    // The legend.
    s.push_str("<g class=\"legend\">\n");
    let mut x = LEFT;
    let y = legend_y;
    for f in Family::ALL {
        let _ = writeln!(
            s,
            r#"<rect class="{class}" x="{x}" y="{y}" width="14" height="12"/><text x="{tx}" y="{ty}">{name}</text>"#,
            class = f.class(),
            x = num(x),
            y = num(y),
            tx = num(x + 19.0),
            ty = num(y + 10.5),
            name = f.describe(),
        );
        x += 25.0 + 7.0 * f.describe().len() as f64;
    }
    let _ = writeln!(
        s,
        r#"<rect x="{x}" y="{y}" width="14" height="12" fill="{PATH_COLOUR}" fill-opacity="0.18" stroke="{PATH_COLOUR}" stroke-width="2.5"/><text x="{tx}" y="{ty}">on the critical path</text>"#,
        x = num(x),
        y = num(y),
        tx = num(x + 19.0),
        ty = num(y + 10.5),
    );
    x += 160.0;
    let _ = writeln!(
        s,
        r#"<line x1="{x}" y1="{ly}" x2="{x2}" y2="{ly}" stroke="{PATH_COLOUR}" stroke-width="1.5" marker-end="url(#arrow)"/><text x="{tx}" y="{ty}">the path moves to another rank</text>"#,
        x = num(x),
        x2 = num(x + 24.0),
        ly = num(y + 6.0),
        tx = num(x + 30.0),
        ty = num(y + 10.5),
    );
    s.push_str("</g>\n</svg>\n");
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(summary)
}

/// A box on a lane, in plot coordinates.
struct CallBox {
    x: f64,
    width: f64,
    family: Family,
    /// Calls merged into it.
    calls: u64,
    /// For merged boxes: the share of the pixel spent in MPI.
    opacity: f64,
    title: String,
}

/// Calls narrower than a pixel, gathered per pixel column.
struct Column {
    column: i64,
    calls: u64,
    ns: [i64; 5],
    first_seq: u64,
}

impl Column {
    fn into_box(self, scale: &Scale) -> CallBox {
        let family = Family::ALL
            .into_iter()
            .max_by_key(|f| (self.ns[f.index()], std::cmp::Reverse(f.index())))
            .unwrap_or(Family::Other);
        let busy: i64 = self.ns.iter().sum();
        let x = (self.column as f64).clamp(0.0, scale.width - 1.0);
        CallBox {
            x,
            width: 1.0,
            family,
            calls: self.calls,
            opacity: (busy as f64 * scale.px_per_ns).clamp(0.3, 1.0),
            title: format!(
                "{} calls from call {}, {} in MPI, mostly {}",
                self.calls,
                self.first_seq,
                duration(busy),
                family.describe()
            ),
        }
    }
}

/// The boxes of one rank's calls: each call at least a pixel wide on its
/// own, narrower ones merged per pixel column.
fn call_boxes(r: &RankCalls, analysis: &Analysis, scale: &Scale) -> Vec<CallBox> {
    let mut out = Vec::new();
    let mut column: Option<Column> = None;
    for (seq, span) in r.spans.iter().enumerate() {
        let func = r
            .sites
            .get(seq)
            .map_or("?", |&site| analysis.sites.func(site));
        let family = Family::of(func);
        let (x0, x1) = (scale.x(span.start_ns), scale.x(span.end_ns));
        if x1 - x0 >= 1.0 {
            out.extend(column.take().map(|c| c.into_box(scale)));
            out.push(CallBox {
                x: x0,
                width: x1 - x0,
                family,
                calls: 1,
                opacity: 1.0,
                title: format!(
                    "{} (call {seq}), {}",
                    r.sites
                        .get(seq)
                        .map_or("?".into(), |&site| analysis.site_name(site)),
                    duration(span.end_ns - span.start_ns)
                ),
            });
            continue;
        }
        let col = x0.floor() as i64;
        if column.as_ref().is_some_and(|c| c.column != col) {
            out.extend(column.take().map(|c| c.into_box(scale)));
        }
        let c = column.get_or_insert(Column {
            column: col,
            calls: 0,
            ns: [0; 5],
            first_seq: seq as u64,
        });
        c.calls += 1;
        c.ns[family.index()] += (span.end_ns - span.start_ns).max(0);
    }
    out.extend(column.map(|c| c.into_box(scale)));
    out
}

/// A box of the path on a lane.
struct PathBox {
    lane: usize,
    x: f64,
    width: f64,
    compute: bool,
    title: String,
}

/// Path segments narrower than a pixel, gathered per lane and column.
struct PathColumn {
    column: i64,
    x: f64,
    width: f64,
    compute_ns: i64,
    call_ns: i64,
    segments: u64,
}

impl PathColumn {
    fn into_box(self, lane: usize) -> PathBox {
        PathBox {
            lane,
            x: self.x,
            width: self.width,
            compute: self.compute_ns >= self.call_ns,
            title: format!(
                "{} path segments: {} computing, {} in MPI",
                self.segments,
                duration(self.compute_ns),
                duration(self.call_ns)
            ),
        }
    }
}

/// The boxes of the path: each segment at least a pixel wide on its own,
/// narrower ones merged per lane and pixel column (a merged box is as wide
/// as its segments together, but at least a pixel, to be seen).
fn path_boxes(
    segments: impl Iterator<Item = Segment>,
    lanes: usize,
    lane_of: &dyn Fn(u32) -> Option<usize>,
    analysis: &Analysis,
    scale: &Scale,
) -> Vec<PathBox> {
    let mut out = Vec::new();
    let mut open: Vec<Option<PathColumn>> = (0..lanes).map(|_| None).collect();
    for seg in segments {
        let seg = &seg;
        let Some(lane) = lane_of(seg.rank) else {
            continue;
        };
        let (x0, x1) = (scale.x(seg.start_ns), scale.x(seg.end_ns));
        let compute = matches!(seg.activity, Activity::Computation { .. });
        if x1 - x0 >= 1.0 {
            out.extend(open[lane].take().map(|c| c.into_box(lane)));
            let what = analysis.activity_name(seg);
            out.push(PathBox {
                lane,
                x: x0,
                width: x1 - x0,
                compute,
                title: format!(
                    "critical path on rank {}: {what}, {}",
                    seg.rank,
                    duration(seg.duration_ns())
                ),
            });
            continue;
        }
        let col = x0.floor() as i64;
        if open[lane].as_ref().is_some_and(|c| c.column != col) {
            out.extend(open[lane].take().map(|c| c.into_box(lane)));
        }
        let c = open[lane].get_or_insert(PathColumn {
            column: col,
            x: x0,
            width: 0.0,
            compute_ns: 0,
            call_ns: 0,
            segments: 0,
        });
        c.segments += 1;
        c.width = (c.width + x1 - x0).min(scale.width - c.x);
        if compute {
            c.compute_ns += seg.duration_ns();
        } else {
            c.call_ns += seg.duration_ns();
        }
    }
    for (lane, c) in open.into_iter().enumerate() {
        out.extend(c.map(|c| c.into_box(lane)));
    }
    for b in &mut out {
        if b.width < 1.0 {
            b.width = 1.0;
            b.x = b.x.min(scale.width - 1.0);
        }
    }
    out
}

/// Axis ticks between `t0` and `t1` (ns) about every 80 pixels, at round
/// times (1, 2 or 5 times a power of ten), with their labels.
fn ticks(t0: i64, t1: i64, width: f64) -> Vec<(i64, String)> {
    let span = (t1 - t0).max(1) as f64;
    let wanted = (width / 80.0).max(2.0);
    let raw = span / wanted;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * power)
        .max(1.0);
    // The unit of the axis's largest time, so that labels stay short.
    let (unit, name) = match t1.max(t0.abs()) {
        t if t >= 1_000_000_000 => (1e9, "s"),
        t if t >= 1_000_000 => (1e6, "ms"),
        t if t >= 1_000 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    // Enough decimals for the step in that unit.
    let decimals = (-(step / unit).log10().floor()).max(0.0) as usize;
    let first = (t0 as f64 / step).ceil() as i64;
    let last = (t1 as f64 / step).floor() as i64;
    (first..=last)
        .map(|k| {
            let t = (k as f64 * step).round() as i64;
            (t, format!("{:.*} {name}", decimals, t as f64 / unit))
        })
        .collect()
}

/// A duration for people: ns, µs, ms or s with three significant digits.
fn duration(ns: i64) -> String {
    let v = ns as f64;
    let (value, unit) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "s"),
        a if a >= 1e6 => (v / 1e6, "ms"),
        a if a >= 1e3 => (v / 1e3, "µs"),
        _ => (v, "ns"),
    };
    let decimals = match value.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        _ => 2,
    };
    format!("{value:.decimals$} {unit}")
}

/// A coordinate with two decimals, without trailing zeros.
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critical_path::{CallSites, CriticalPath, WaitStats};
    use crate::sites::CallSite;
    use crate::timeline::Span;

    #[test]
    fn functions_fall_into_their_families() {
        use Family::*;
        for (func, family) in [
            ("MPI_Send", PointToPoint),
            ("MPI_Irecv", PointToPoint),
            ("MPI_Sendrecv_replace", PointToPoint),
            ("MPI_Improbe", PointToPoint),
            ("MPI_Startall", PointToPoint),
            ("MPI_Send_c", PointToPoint),
            ("MPI_Allreduce", Collective),
            ("MPI_Iallreduce", Collective),
            ("MPI_Bcast_init", Collective),
            ("MPI_Ialltoallw", Collective),
            ("MPI_Barrier", Collective),
            ("MPI_Ineighbor_allgather", Collective),
            ("MPI_Waitall", Wait),
            ("MPI_Testsome", Wait),
            ("MPI_Win_fence", OneSided),
            ("MPI_Win_wait", OneSided),
            ("MPI_Put", OneSided),
            ("MPI_Rget_accumulate", OneSided),
            ("MPI_Init", Other),
            ("MPI_Comm_rank", Other),
            ("MPI_Info_get", Other),
            ("?", Other),
        ] {
            assert_eq!(Family::of(func), family, "{func}");
        }
    }

    #[test]
    fn ticks_are_round_and_labelled_in_a_readable_unit() {
        let t = ticks(0, 130_000_000, 1200.0);
        assert_eq!(t.first().unwrap(), &(0, "0 ms".to_owned()));
        assert_eq!(t[1], (10_000_000, "10 ms".to_owned()));
        assert_eq!(t.len(), 14);
        let t = ticks(1_500_000_000, 4_000_000_000, 600.0);
        assert_eq!(t[0], (1_500_000_000, "1.5 s".to_owned()));
        assert_eq!(t[1], (2_000_000_000, "2.0 s".to_owned()));
        let t = ticks(0, 3_000, 1200.0);
        assert_eq!(t[1], (200, "0.2 µs".to_owned()));
        let t = ticks(0, 800, 1200.0);
        assert_eq!(t[1], (100, "100 ns".to_owned()));
        assert_eq!(duration(40_123_456), "40.1 ms");
        assert_eq!(duration(1_500), "1.50 µs");
        assert_eq!(num(12.0), "12");
        assert_eq!(num(0.126), "0.13");
        assert_eq!(num(-0.001), "0");
    }

    fn analysis(segments: Vec<Segment>, timelines: Vec<RankCalls>) -> Analysis {
        let length_ns = segments.iter().map(|s| s.duration_ns()).sum();
        Analysis {
            path: CriticalPath {
                length_ns,
                wall_ns: length_ns,
                segments: segments.into(),
                ..CriticalPath::default()
            },
            waits: WaitStats::default(),
            heuristic: None,
            // Call sites 0 to 3 at R0:0 to R0:3.
            sites: CallSites {
                sites: ["MPI_Send", "MPI_Recv", "MPI_Allreduce", "MPI_Waitall"]
                    .into_iter()
                    .zip(0..)
                    .map(|(func, position)| Some((CallSite { rule: 0, position }, func)))
                    .collect(),
            },
            unmatched: [0; 3],
            ranks: timelines.len(),
            calls: 0,
            timelines,
        }
    }

    /// `calls` calls of 10 ns, 90 ns apart, on each of two ranks.
    fn many_calls(calls: usize) -> Vec<RankCalls> {
        (0..2)
            .map(|rank| RankCalls {
                rank,
                spans: (0..calls as i64)
                    .map(|k| Span {
                        start_ns: 100 * k,
                        end_ns: 100 * k + 10,
                    })
                    .collect(),
                sites: (0..calls as u32).map(|k| k % 4).collect(),
            })
            .collect()
    }

    #[test]
    fn narrow_calls_and_segments_merge_into_one_box_per_lane_and_pixel_column() {
        let calls = 500_000;
        let ranks = many_calls(calls);
        // A path alternating between the ranks every call.
        let segments: Vec<Segment> = (0..calls as u32)
            .map(|k| Segment {
                rank: k % 2,
                activity: Activity::Call { seq: k, site: 0 },
                start_ns: 100 * i64::from(k),
                end_ns: 100 * i64::from(k) + 10,
            })
            .collect();
        let a = analysis(segments, ranks);
        let mut out = Vec::new();
        let options = SvgOptions { plot_width: 800 };
        let summary = write_svg(&a, &options, &mut out).unwrap();
        // At most one box per lane and column (plus the last column's edge).
        assert!(summary.call_boxes <= 2 * 801, "{summary:?}");
        assert!(summary.path_boxes <= 2 * 801, "{summary:?}");
        assert!(summary.jumps <= 2 * 801, "{summary:?}");
        assert!(summary.call_boxes >= 2 * 790, "{summary:?}");
        assert!(out.len() < 1_500_000, "{} bytes", out.len());
        let text = String::from_utf8(out).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        assert_eq!(doc.root_element().tag_name().name(), "svg");
    }

    #[test]
    fn wide_calls_keep_their_own_boxes_and_the_path_its_width() {
        let ranks = vec![RankCalls {
            rank: 0,
            spans: vec![
                Span {
                    start_ns: 0,
                    end_ns: 1_000,
                },
                Span {
                    start_ns: 9_000,
                    end_ns: 10_000,
                },
            ],
            sites: vec![0, 2],
        }];
        let segments = vec![
            Segment {
                rank: 0,
                activity: Activity::Computation { after: 0 },
                start_ns: 1_000,
                end_ns: 9_000,
            },
            Segment {
                rank: 0,
                activity: Activity::Call { seq: 1, site: 2 },
                start_ns: 9_000,
                end_ns: 10_000,
            },
        ];
        let a = analysis(segments, ranks);
        let mut out = Vec::new();
        let summary = write_svg(&a, &SvgOptions { plot_width: 1000 }, &mut out).unwrap();
        assert_eq!(
            summary,
            SvgSummary {
                call_boxes: 2,
                path_boxes: 2,
                jumps: 0
            }
        );
        let text = String::from_utf8(out).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        let widths: Vec<(String, f64)> = doc
            .descendants()
            .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("path")))
            .map(|n| {
                (
                    n.attribute("class").unwrap().to_owned(),
                    n.attribute("width").unwrap().parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            widths,
            [
                ("path compute".to_owned(), 800.0),
                ("path call".into(), 100.0)
            ]
        );
        assert!(text.contains("<title>MPI_Allreduce R0:2 (call 1), 1.00 µs</title>"));
        assert!(text.contains(
            "<title>critical path on rank 0: computation after call 0 (MPI_Send R0:0), 8.00 µs</title>"
        ));
        assert!(text.contains("critical path: 9.00 µs"));
    }
}
