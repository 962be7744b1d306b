//! The tracer's clock: the CPU's time-stamp counter where it is constant
//! (about 11 ns to read here, against 28 ns for clock_gettime), converted
//! to nanoseconds from two (ticks, CLOCK_MONOTONIC) reference points.

use std::sync::OnceLock;

/// Current time in clock ticks.
#[inline]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // The two halves joined here, not where the compiler would put
        // it: across the MPI call of a wrapper's fast path, halves kept
        // apart would take two of the registers the call must preserve.
        let ticks: u64;
        // SAFETY: rdtsc has no preconditions on x86_64; rdx is clobbered.
        unsafe {
            std::arch::asm!(
                "rdtsc",
                "shl rdx, 32",
                "or rax, rdx",
                out("rax") ticks,
                out("rdx") _,
                options(nomem, nostack),
            );
        }
        ticks
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// CLOCK_MONOTONIC in nanoseconds (shifted as `MPIGRAM_TEST_CLOCK_SHIFT`
/// says).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    ns.wrapping_add_signed(*SHIFT.get_or_init(test_shift))
}

static SHIFT: OnceLock<i64> = OnceLock::new();

/// For testing clock alignment on one machine, where all ranks share a
/// clock: `MPIGRAM_TEST_CLOCK_SHIFT=R=NS` moves the clock of world rank R
/// (as the launcher's `PMI_RANK` gives it, before MPI_Init) by NS
/// nanoseconds, as if it ran on a node whose clock differs.
pub fn test_shift() -> i64 {
    let (Ok(spec), Ok(me)) = (
        std::env::var("MPIGRAM_TEST_CLOCK_SHIFT"),
        std::env::var("PMI_RANK"),
    ) else {
        return 0;
    };
    spec.split_once('=')
        .filter(|(rank, _)| rank.trim() == me.trim())
        .and_then(|(_, ns)| ns.trim().parse().ok())
        .unwrap_or(0)
}

/// A (ticks, nanoseconds) pair read back to back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockPoint {
    pub ticks: u64,
    pub ns: u64,
}

impl ClockPoint {
    pub fn now() -> ClockPoint {
        ClockPoint {
            ticks: now(),
            ns: monotonic_ns(),
        }
    }

    /// Nanoseconds per tick from this point to `later`; 1 if they are too
    /// close to tell.
    pub fn ns_per_tick(self, later: ClockPoint) -> f64 {
        let (ns, ticks) = (
            later.ns.saturating_sub(self.ns),
            later.ticks.saturating_sub(self.ticks),
        );
        if ns == 0 || ticks == 0 {
            return 1.0;
        }
        ns as f64 / ticks as f64
    }
}
