//! When two executions of a segment behave alike: the similarity operators
//! of Mohror's trace profiling (PhD thesis, 2010, §4.3), all behind one
//! trait, [`Similarity`].
//!
//! Each operator compares two *measurement vectors* of the same length:
//! a segment's times relative to its start, `[0, call0.start, call0.end,
//! call1.start, ..., segment end]`. Some first transform the vector
//! (the wavelets); all then compute a distance and compare it with a
//! limit:
//!
//! | operator | distance | limit |
//! |---|---|---|
//! | relative difference | max over pairs of \|a−b\| / max(a, b) (0/0 = 0) | T |
//! | absolute difference | max over pairs of \|a−b\| (seconds) | T |
//! | Manhattan, Euclidean, Chebyshev | L1, L2, L∞ of a−b | T × the largest value of both vectors |
//! | average wavelet, Haar wavelet | L2 of the transforms | T × the largest value of both transforms |
//!
//! The wavelet transforms zero-pad the vector to the next power of two and
//! transform it fully: at each level a pair (x, y) gives the trend
//! (x+y)/2 and the detail (y−x)/2 (Haar: both × √2 at every level, which
//! keeps Euclidean distances). "Largest value" is the signed maximum: with
//! these conventions the thesis's Fig. 12 example gives its 17.625.

use std::fmt;
use std::str::FromStr;

/// Whether two measurement vectors of one segment context are alike.
pub trait Similarity: Send + Sync {
    /// The vector the operator compares (by default the measurements).
    fn transform(&self, times: &[f64]) -> Vec<f64> {
        times.to_vec()
    }
    /// How far apart two transformed vectors are.
    fn distance(&self, a: &[f64], b: &[f64]) -> f64;
    /// The largest distance at which they still match.
    fn limit(&self, a: &[f64], b: &[f64]) -> f64;
    /// Whether two transformed vectors match.
    fn similar(&self, a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && self.distance(a, b) <= self.limit(a, b)
    }
}

/// The operators, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    RelDiff,
    AbsDiff,
    Manhattan,
    Euclidean,
    Chebyshev,
    AvgWave,
    HaarWave,
}

impl Method {
    pub const ALL: [Method; 7] = [
        Method::RelDiff,
        Method::AbsDiff,
        Method::Manhattan,
        Method::Euclidean,
        Method::Chebyshev,
        Method::AvgWave,
        Method::HaarWave,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::RelDiff => "rel-diff",
            Method::AbsDiff => "abs-diff",
            Method::Manhattan => "manhattan",
            Method::Euclidean => "euclidean",
            Method::Chebyshev => "chebyshev",
            Method::AvgWave => "avg-wave",
            Method::HaarWave => "haar-wave",
        }
    }

    /// The operator with threshold `threshold`.
    pub fn with_threshold(self, threshold: f64) -> Box<dyn Similarity> {
        match self {
            Method::RelDiff => Box::new(RelDiff { threshold }),
            Method::AbsDiff => Box::new(AbsDiff { threshold }),
            Method::Manhattan => Box::new(Minkowski::manhattan(threshold)),
            Method::Euclidean => Box::new(Minkowski::euclidean(threshold)),
            Method::Chebyshev => Box::new(Minkowski::chebyshev(threshold)),
            Method::AvgWave => Box::new(Wavelet::average(threshold)),
            Method::HaarWave => Box::new(Wavelet::haar(threshold)),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Method, String> {
        let wanted = s.to_ascii_lowercase().replace('_', "-");
        Method::ALL
            .into_iter()
            .find(|m| m.name() == wanted || m.name().replace('-', "") == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown similarity method {s:?} (one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Relative difference (thesis Eq. 1): every pair within `threshold` of
/// the larger value.
pub struct RelDiff {
    pub threshold: f64,
}

impl Similarity for RelDiff {
    fn distance(&self, a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| {
                let larger = x.abs().max(y.abs());
                if larger == 0.0 {
                    0.0
                } else {
                    (x - y).abs() / larger
                }
            })
            .fold(0.0, f64::max)
    }

    fn limit(&self, _: &[f64], _: &[f64]) -> f64 {
        self.threshold
    }
}

/// Absolute difference: every pair within `threshold` (in the vectors'
/// unit, seconds here).
pub struct AbsDiff {
    pub threshold: f64,
}

impl Similarity for AbsDiff {
    fn distance(&self, a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    }

    fn limit(&self, _: &[f64], _: &[f64]) -> f64 {
        self.threshold
    }
}

/// Minkowski distance of order `order` (thesis Eq. 2; infinity:
/// Chebyshev) within `threshold` × the largest value of both vectors.
pub struct Minkowski {
    pub order: f64,
    pub threshold: f64,
}

impl Minkowski {
    pub fn manhattan(threshold: f64) -> Minkowski {
        Minkowski {
            order: 1.0,
            threshold,
        }
    }

    pub fn euclidean(threshold: f64) -> Minkowski {
        Minkowski {
            order: 2.0,
            threshold,
        }
    }

    pub fn chebyshev(threshold: f64) -> Minkowski {
        Minkowski {
            order: f64::INFINITY,
            threshold,
        }
    }
}

impl Similarity for Minkowski {
    fn distance(&self, a: &[f64], b: &[f64]) -> f64 {
        let diffs = a.iter().zip(b).map(|(x, y)| (x - y).abs());
        if self.order.is_infinite() {
            diffs.fold(0.0, f64::max)
        } else if self.order == 1.0 {
            diffs.sum()
        } else if self.order == 2.0 {
            diffs.map(|d| d * d).sum::<f64>().sqrt()
        } else {
            diffs
                .map(|d| d.powf(self.order))
                .sum::<f64>()
                .powf(1.0 / self.order)
        }
    }

    fn limit(&self, a: &[f64], b: &[f64]) -> f64 {
        self.threshold * largest(a, b)
    }
}

/// A wavelet transform of the measurements, compared by Euclidean distance
/// within `threshold` × the largest transformed value.
pub struct Wavelet {
    /// Factor on trends and details at every level: 1/2 for the average
    /// transform, 1/√2 for Haar's.
    scale: f64,
    pub threshold: f64,
}

impl Wavelet {
    pub fn average(threshold: f64) -> Wavelet {
        Wavelet {
            scale: 0.5,
            threshold,
        }
    }

    pub fn haar(threshold: f64) -> Wavelet {
        Wavelet {
            scale: std::f64::consts::FRAC_1_SQRT_2,
            threshold,
        }
    }
}

impl Similarity for Wavelet {
    /// Zero-padded to the next power of two, then fully transformed:
    /// `[overall trend, coarsest detail, ..., finest details]`.
    fn transform(&self, times: &[f64]) -> Vec<f64> {
        let n = times.len().next_power_of_two();
        let mut v = times.to_vec();
        v.resize(n, 0.0);
        let mut scratch = vec![0.0; n];
        let mut len = n;
        while len > 1 {
            let half = len / 2;
            for i in 0..half {
                let (x, y) = (v[2 * i], v[2 * i + 1]);
                scratch[i] = (x + y) * self.scale;
                scratch[half + i] = (y - x) * self.scale;
            }
            v[..len].copy_from_slice(&scratch[..len]);
            len = half;
        }
        v
    }

    fn distance(&self, a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f64>()
            .sqrt()
    }

    fn limit(&self, a: &[f64], b: &[f64]) -> f64 {
        self.threshold * largest(a, b)
    }
}

/// The largest (signed) value of both vectors; 0 for empty ones.
fn largest(a: &[f64], b: &[f64]) -> f64 {
    a.iter().chain(b).copied().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Thesis Fig. 9: three executions of segment main.1, as
    // (end, do_work.start, do_work.end, MPI_Barrier.start, MPI_Barrier.end).
    const S0: [f64; 5] = [50.0, 1.0, 20.0, 21.0, 49.0];
    const S1: [f64; 5] = [51.0, 1.0, 40.0, 41.0, 50.0];
    const S2: [f64; 5] = [49.0, 1.0, 17.0, 18.0, 48.0];

    /// The wavelet input of Fig. 12: `[0, events..., end]`.
    fn wave_input(s: &[f64; 5]) -> Vec<f64> {
        let mut v = vec![0.0];
        v.extend_from_slice(&s[1..]);
        v.push(s[0]);
        v
    }

    fn close(got: f64, want: f64, tolerance: f64) {
        assert!(
            (got - want).abs() <= tolerance,
            "got {got}, expected {want} ± {tolerance}"
        );
    }

    #[test]
    fn minkowski_distances_of_the_thesis_example() {
        let (m, e, c) = (
            Minkowski::manhattan(0.2),
            Minkowski::euclidean(0.2),
            Minkowski::chebyshev(0.2),
        );
        // s2 against s1: 50, 32.65, 23 over a limit of 0.2 × 51.
        close(m.distance(&S2, &S1), 50.0, 1e-12);
        close(e.distance(&S2, &S1), 32.65, 0.005);
        close(c.distance(&S2, &S1), 23.0, 1e-12);
        for op in [&m, &e, &c] {
            close(op.limit(&S2, &S1), 10.2, 1e-12);
            assert!(!op.similar(&S2, &S1));
        }
        // s2 against s0: 8, 4.47, 3 over a limit of 0.2 × 50: all match.
        close(m.distance(&S2, &S0), 8.0, 1e-12);
        close(e.distance(&S2, &S0), 4.47, 0.005);
        close(c.distance(&S2, &S0), 3.0, 1e-12);
        for op in [&m, &e, &c] {
            close(op.limit(&S2, &S0), 10.0, 1e-12);
            assert!(op.similar(&S2, &S0));
        }
    }

    #[test]
    fn general_minkowski_orders_lie_between_manhattan_and_chebyshev() {
        let m3 = Minkowski {
            order: 3.0,
            threshold: 0.2,
        };
        // Differences 2, 0, 23, 23, 2 for s2 against s1.
        let want = (8.0f64 + 2.0 * 12167.0 + 8.0).powf(1.0 / 3.0);
        close(m3.distance(&S2, &S1), want, 1e-9);
    }

    #[test]
    fn relative_difference_of_the_thesis_example() {
        let op = RelDiff { threshold: 0.5 };
        // do_work's end: |17 - 40| / 40 is the largest, above 0.5.
        close(op.distance(&S2, &S1), 23.0 / 40.0, 1e-12);
        assert!(!op.similar(&S2, &S1));
        // Against s0: 3 / 20 at do_work's end.
        close(op.distance(&S2, &S0), 3.0 / 20.0, 1e-12);
        assert!(op.similar(&S2, &S0));
        // 0/0 at the segment start counts as equal.
        close(op.distance(&[0.0, 1.0], &[0.0, 1.0]), 0.0, 0.0);
    }

    #[test]
    fn absolute_difference_of_the_thesis_example() {
        let op = AbsDiff { threshold: 20.0 };
        // do_work's ends are 23 apart: no match; s0 and s2 differ by 3 at most.
        assert!(!op.similar(&S2, &S1));
        close(op.distance(&S2, &S0), 3.0, 0.0);
        assert!(op.similar(&S2, &S0));
    }

    #[test]
    fn average_wavelet_of_the_thesis_example() {
        let op = Wavelet::average(0.2);
        let (a, b) = (
            op.transform(&wave_input(&S0)),
            op.transform(&wave_input(&S2)),
        );
        // [0,1,20,21,49,50,0,0]: trends 0.5 20.5 49.5 0, then 10.5 24.75, then 17.625.
        assert_eq!(a, [17.625, 7.125, 10.0, -24.75, 0.5, 0.5, 0.5, 0.0]);
        // Fig. 12's step-3 trends for s2 are 9 and 24.25.
        assert_eq!(b[0], (9.0 + 24.25) / 2.0);
        close(op.distance(&a, &b), 1.936, 0.0005);
        close(op.limit(&a, &b), 3.525, 1e-12);
        assert!(op.similar(&a, &b));
        // s1 ends do_work at 40: the transforms are too far apart.
        let c = op.transform(&wave_input(&S1));
        assert!(!op.similar(&a, &c));
    }

    #[test]
    fn haar_wavelet_keeps_euclidean_distances() {
        let haar = Wavelet::haar(0.2);
        let (x, y) = (wave_input(&S0), wave_input(&S2));
        let (a, b) = (haar.transform(&x), haar.transform(&y));
        // Orthonormal: the distance of the transforms is that of the inputs.
        let plain = Minkowski::euclidean(0.2).distance(&x, &y);
        close(haar.distance(&a, &b), plain, 1e-9);
        // The differences are 0, 0, 3, 3, 1, 1: the 4.47 of the Minkowski example.
        close(plain, 20f64.sqrt(), 1e-12);
        // The first coefficient is the sum / √8 (√2 at each of 3 levels).
        close(a[0], x.iter().sum::<f64>() / 8f64.sqrt(), 1e-12);
        assert!(haar.similar(&a, &b));
    }

    #[test]
    fn methods_parse_by_name() {
        assert_eq!("avg-wave".parse::<Method>(), Ok(Method::AvgWave));
        assert_eq!("avgWave".parse::<Method>(), Ok(Method::AvgWave));
        assert_eq!("haar_wave".parse::<Method>(), Ok(Method::HaarWave));
        assert_eq!("Euclidean".parse::<Method>(), Ok(Method::Euclidean));
        assert!("cosine".parse::<Method>().unwrap_err().contains("avg-wave"));
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>(), Ok(m));
        }
    }
}
