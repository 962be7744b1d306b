//! What every critical-path report must hold, whatever the trace: no
//! negative durations, waits within the call they were waited in, sums
//! that add up, and imbalances as `waits.rs` defines them. Checked on every
//! analysis in debug builds (so on every trace the test suite analyses).

use super::waits::InstanceWaits;
use super::{Analysis, RankWaits};

impl Analysis {
    /// The first property the report breaks, if any.
    pub fn check(&self) -> Result<(), String> {
        let p = &self.path;
        if p.length_ns < 0 || p.wall_ns < 0 {
            return Err(format!(
                "negative path length {} or wall time {}",
                p.length_ns, p.wall_ns
            ));
        }
        if let Some(s) = p.segments.iter().find(|s| s.end_ns < s.start_ns) {
            return Err(format!("a segment ends before it starts: {s:?}"));
        }
        let by_rank = p.by_rank_compute_ns.iter().chain(&p.by_rank_mpi_ns);
        if let Some((r, ns)) = by_rank.clone().find(|(_, ns)| *ns < 0) {
            return Err(format!("rank {r}: negative time on the path, {ns} ns"));
        }
        let on_path: i64 = by_rank.map(|(_, ns)| ns).sum();
        let segments: i64 = p.segments.iter().map(|s| s.duration_ns()).sum();
        if on_path != segments {
            return Err(format!(
                "the ranks' times on the path add up to {on_path} ns, its segments to {segments}"
            ));
        }
        let w = &self.waits;
        let mut sums = vec![RankWaits::default(); w.by_rank.len()];
        let mut total = RankWaits::default();
        for inst in &w.instances {
            check_instance(inst)?;
            for c in &inst.calls {
                let (wb, wa) = (c.wait_before_ns, c.wait_after_ns);
                let i = w.by_rank.iter().position(|(r, _)| *r == c.rank);
                for s in i.map(|i| &mut sums[i]).into_iter().chain([&mut total]) {
                    s.wait_before_ns += wb;
                    s.wait_after_ns += wa;
                    s.exec_ns += inst.exec_ns;
                    s.calls += 1;
                }
            }
        }
        // The sums are of every instance; only the first ones are kept in
        // detail (`Waits::instance` checks each one as it is weighed).
        let all_kept = w.instances.len() == w.instance_count;
        for ((r, got), want) in w.by_rank.iter().zip(&sums) {
            if all_kept
                && (
                    got.wait_before_ns,
                    got.wait_after_ns,
                    got.exec_ns,
                    got.calls,
                ) != (
                    want.wait_before_ns,
                    want.wait_after_ns,
                    want.exec_ns,
                    want.calls,
                )
            {
                return Err(format!(
                    "rank {r}: waits {got:?} are not the sums of its calls' {want:?}"
                ));
            }
            check_imbalance(got).map_err(|e| format!("rank {r}: {e}"))?;
        }
        let t = &w.total;
        if all_kept
            && (t.wait_before_ns, t.wait_after_ns, t.exec_ns, t.calls)
                != (
                    total.wait_before_ns,
                    total.wait_after_ns,
                    total.exec_ns,
                    total.calls,
                )
        {
            return Err(format!("the run's waits {t:?} are not the sums {total:?}"));
        }
        check_imbalance(t).map_err(|e| format!("the run: {e}"))?;
        for site in &w.by_site {
            check_imbalance(&site.waits).map_err(|e| format!("call site {}: {e}", site.site))?;
        }
        Ok(())
    }
}

/// No negative execution, and each process's waits and the execution fit
/// in its time in the collective.
pub(super) fn check_instance(inst: &InstanceWaits) -> Result<(), String> {
    if inst.exec_ns < 0 {
        return Err(format!(
            "collective instance {}: negative execution time {} ns",
            inst.instance, inst.exec_ns
        ));
    }
    for c in &inst.calls {
        let (wb, wa) = (c.wait_before_ns, c.wait_after_ns);
        if wb < 0 || wa < 0 || wb + wa + inst.exec_ns > c.duration_ns {
            return Err(format!(
                "rank {} call {}: waits {wb} + {wa} ns and execution {} ns do not fit in its {} ns",
                c.rank, c.seq, inst.exec_ns, c.duration_ns
            ));
        }
    }
    Ok(())
}

/// Σ(wb + wa) / Σ exec where there was execution, nothing where there
/// was none, and never negative.
fn check_imbalance(w: &RankWaits) -> Result<(), String> {
    if w.wait_before_ns < 0 || w.wait_after_ns < 0 || w.exec_ns < 0 {
        return Err(format!("negative sums {w:?}"));
    }
    let want = (w.exec_ns > 0).then(|| w.wait_ns() as f64 / w.exec_ns as f64);
    if w.imbalance() != want || w.imbalance().is_some_and(|i| i.is_nan() || i < 0.0) {
        return Err(format!("imbalance {:?} of {w:?}", w.imbalance()));
    }
    Ok(())
}
