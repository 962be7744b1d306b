//! Message sizes in power-of-two buckets.

/// Number of buckets: 0 bytes, then `[2^(i-1), 2^i - 1]` for i in 1..=64.
pub const BUCKETS: usize = 65;

/// How many messages (point-to-point sends) and collective operations had
/// each size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// Point-to-point messages by bucket ([`bucket`]).
    pub p2p: [u64; BUCKETS],
    /// Collective operations by bucket: each counts the larger of what the
    /// calling rank sends and receives.
    pub collective: [u64; BUCKETS],
    /// Messages and collective operations of unknown size.
    pub p2p_unknown: u64,
    pub collective_unknown: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            p2p: [0; BUCKETS],
            collective: [0; BUCKETS],
            p2p_unknown: 0,
            collective_unknown: 0,
        }
    }
}

/// The bucket of a size in bytes: 0 for 0 bytes, else 1 + ⌊log2 bytes⌋.
pub fn bucket(bytes: u64) -> usize {
    (u64::BITS - bytes.leading_zeros()) as usize
}

/// The smallest and largest size of bucket `i`.
pub fn bucket_range(i: usize) -> (u64, u64) {
    match i {
        0 => (0, 0),
        _ => {
            let low = 1u64 << (i - 1);
            (low, low.saturating_sub(1).saturating_add(low))
        }
    }
}

impl Histogram {
    pub(crate) fn add_p2p(&mut self, bytes: Option<u64>, n: u64) {
        match bytes {
            Some(b) => self.p2p[bucket(b)] += n,
            None => self.p2p_unknown += n,
        }
    }

    pub(crate) fn add_collective(&mut self, bytes: Option<u64>, n: u64) {
        match bytes {
            Some(b) => self.collective[bucket(b)] += n,
            None => self.collective_unknown += n,
        }
    }

    /// The buckets from the first to the last non-empty one:
    /// (bucket, p2p, collective).
    pub fn rows(&self) -> Vec<(usize, u64, u64)> {
        let used = |i: &usize| self.p2p[*i] + self.collective[*i] > 0;
        let (Some(first), Some(last)) = ((0..BUCKETS).find(used), (0..BUCKETS).rev().find(used))
        else {
            return Vec::new();
        };
        (first..=last)
            .map(|i| (i, self.p2p[i], self.collective[i]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fall_in_power_of_two_buckets() {
        let cases = [
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 2),
            (4, 3),
            (1023, 10),
            (1024, 11),
            (1025, 11),
            (u64::MAX, 64),
        ];
        for (bytes, b) in cases {
            assert_eq!(bucket(bytes), b, "{bytes} bytes");
            let (low, high) = bucket_range(b);
            assert!(low <= bytes && bytes <= high, "{bytes} in {low}..={high}");
        }
        assert_eq!(bucket_range(11), (1024, 2047));
        assert_eq!(bucket_range(64), (1 << 63, u64::MAX));
        // The buckets tile the sizes: each starts after the previous ends.
        for i in 1..BUCKETS {
            assert_eq!(bucket_range(i).0, bucket_range(i - 1).1 + 1);
        }
    }

    #[test]
    fn rows_span_the_used_buckets() {
        let mut h = Histogram::default();
        assert!(h.rows().is_empty());
        h.add_p2p(Some(8), 3);
        h.add_p2p(Some(100), 2);
        h.add_collective(Some(9), 1);
        h.add_collective(None, 4);
        assert_eq!(
            h.rows(),
            [(4, 3, 1), (5, 0, 0), (6, 0, 0), (7, 2, 0)],
            "8 B and 9 B share [8, 15]; 100 B is in [64, 127]"
        );
        assert_eq!(h.collective_unknown, 4);
    }
}
