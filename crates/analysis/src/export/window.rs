//! Which part of a run a timeline shows: some ranks, and the calls between
//! two times or two call numbers (`mpigram export --ranks --from --to`),
//! so that a window of a long run opens in a viewer.

use std::str::FromStr;

/// One end of a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Seconds from the run's start.
    Seconds(f64),
    /// A call number (`seq`), on each rank.
    Call(u64),
}

impl FromStr for Bound {
    type Err = String;

    /// `2.5s`, `300ms`, `40us` or `15ns`: a time from the run's start; a
    /// plain integer: a call number.
    fn from_str(s: &str) -> Result<Bound, String> {
        let s = s.trim();
        for (unit, per_second) in [("ms", 1e3), ("us", 1e6), ("ns", 1e9), ("s", 1.0)] {
            if let Some(number) = s.strip_suffix(unit) {
                let v: f64 = number
                    .trim()
                    .parse()
                    .map_err(|_| format!("{s:?} is not a time (2.5s, 300ms, 40us, 15ns)"))?;
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!(
                        "{s:?}: a time from the run's start is not negative"
                    ));
                }
                return Ok(Bound::Seconds(v / per_second));
            }
        }
        s.parse().map(Bound::Call).map_err(|_| {
            format!("{s:?} is neither a call number nor a time with its unit (2.5s, 300ms)")
        })
    }
}

/// The ranks and calls a timeline shows; the default shows everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    /// Only these ranks (`None`: every rank).
    pub ranks: Option<Vec<u32>>,
    /// Calls that end at or after this (a time), or from this call number on.
    pub from: Option<Bound>,
    /// Calls that start at or before this (a time), or before this call number.
    pub to: Option<Bound>,
}

impl Window {
    /// Whether the window shows rank `rank`.
    pub fn has_rank(&self, rank: u32) -> bool {
        self.ranks.as_ref().is_none_or(|r| r.contains(&rank))
    }

    /// Whether the window shows call `seq` of rank `rank`, from `start_ns`
    /// to `end_ns` after the run's start.
    pub fn shows(&self, rank: u32, seq: u64, start_ns: u64, end_ns: u64) -> bool {
        let ns = |s: f64| s * 1e9;
        let after_from = match self.from {
            None => true,
            Some(Bound::Call(c)) => seq >= c,
            Some(Bound::Seconds(s)) => end_ns as f64 >= ns(s),
        };
        let before_to = match self.to {
            None => true,
            Some(Bound::Call(c)) => seq < c,
            Some(Bound::Seconds(s)) => start_ns as f64 <= ns(s),
        };
        self.has_rank(rank) && after_from && before_to
    }

    /// Whether it shows everything.
    pub fn is_all(&self) -> bool {
        *self == Window::default()
    }
}

/// Ranks as `0-3,8,10-11`.
pub fn parse_ranks(s: &str) -> Result<Vec<u32>, String> {
    let mut ranks = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let number = |n: &str| {
            n.trim()
                .parse::<u32>()
                .map_err(|_| format!("{item:?} is not a rank or a range of ranks (0-3)"))
        };
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("{item:?}: the range is empty"));
                }
                ranks.extend(a..=b);
            }
            None => ranks.push(number(item)?),
        }
    }
    if ranks.is_empty() {
        return Err("no ranks".into());
    }
    ranks.sort_unstable();
    ranks.dedup();
    Ok(ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_ranks_parse_and_bad_ones_are_refused() {
        assert_eq!("2.5s".parse(), Ok(Bound::Seconds(2.5)));
        assert_eq!("300ms".parse(), Ok(Bound::Seconds(0.3)));
        assert_eq!("40us".parse(), Ok(Bound::Seconds(40e-6)));
        assert_eq!("1000".parse(), Ok(Bound::Call(1000)));
        for bad in ["", "x", "-1s", "1.5", "3h"] {
            assert!(bad.parse::<Bound>().is_err(), "{bad}");
        }
        assert_eq!(parse_ranks("3,0-2, 2"), Ok(vec![0, 1, 2, 3]));
        for bad in ["", "a", "3-1", "1-"] {
            assert!(parse_ranks(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_window_shows_the_calls_that_overlap_it_on_its_ranks() {
        let w = Window {
            ranks: Some(vec![1, 2]),
            from: Some(Bound::Seconds(1.0)),
            to: Some(Bound::Seconds(2.0)),
        };
        let s = 1_000_000_000;
        assert!(w.shows(1, 0, s / 2, s)); // ends as the window opens
        assert!(w.shows(2, 9, 2 * s, 3 * s)); // starts as it closes
        assert!(!w.shows(1, 0, 0, s - 1));
        assert!(!w.shows(1, 0, 2 * s + 1, 3 * s));
        assert!(!w.shows(0, 5, s, s), "rank 0 is not shown");
        let calls = Window {
            from: Some(Bound::Call(10)),
            to: Some(Bound::Call(20)),
            ..Window::default()
        };
        assert!(calls.shows(7, 10, 0, 0) && calls.shows(7, 19, 0, 0));
        assert!(!calls.shows(7, 9, 0, 0) && !calls.shows(7, 20, 0, 0));
        assert!(Window::default().is_all() && !calls.is_all());
    }
}
