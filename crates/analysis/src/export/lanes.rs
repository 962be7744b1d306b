//! Lanes for overlapping intervals: a timeline track shows slices that
//! nest, so requests in flight at once (which overlap without nesting) go
//! to separate lanes, each interval to the lowest lane free at its start.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The lane of each interval `(start, end)`, given in order of start, and
/// the number of lanes. An interval may start where another ends.
pub(super) fn assign_lanes(intervals: &[(u64, u64)]) -> (Vec<usize>, usize) {
    let mut busy: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new(); // (end, lane)
    let mut free: BinaryHeap<Reverse<usize>> = BinaryHeap::new();
    let mut lanes = Vec::with_capacity(intervals.len());
    let mut count = 0;
    for &(start, end) in intervals {
        while let Some(&Reverse((busy_until, lane))) = busy.peek() {
            if busy_until > start {
                break;
            }
            busy.pop();
            free.push(Reverse(lane));
        }
        let lane = match free.pop() {
            Some(Reverse(lane)) => lane,
            None => {
                count += 1;
                count - 1
            }
        };
        busy.push(Reverse((end.max(start), lane)));
        lanes.push(lane);
    }
    (lanes, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_intervals_get_separate_lanes_and_lanes_are_reused() {
        let intervals = [
            (0, 10),
            (2, 5),
            (3, 12),
            (5, 6),
            (10, 20),
            (13, 14),
            (30, 31),
        ];
        let (lanes, count) = assign_lanes(&intervals);
        assert_eq!(lanes, vec![0, 1, 2, 1, 0, 1, 0]);
        assert_eq!(count, 3);
        // No two intervals of one lane overlap.
        for (i, a) in intervals.iter().enumerate() {
            for (j, b) in intervals.iter().enumerate().skip(i + 1) {
                if lanes[i] == lanes[j] {
                    assert!(a.1 <= b.0 || b.1 <= a.0, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn no_intervals_no_lanes() {
        assert_eq!(assign_lanes(&[]), (vec![], 0));
    }
}
