//! The invariants of the builder, checked in full (for tests).

use super::{FREE, MANY, NIL, RULE_BIT, START, Sequitur};

impl Sequitur {
    /// Verifies every invariant of the builder; O(size). For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        if !self.work.is_empty() {
            return Err("work list not empty".into());
        }
        let live = |r: u32| (r as usize) < self.rules.len() && self.rules[r as usize].guard != NIL;
        let mut uses = vec![0u32; self.rules.len()];
        let mut max_use_exp = vec![0u64; self.rules.len()];
        let mut digrams = 0usize;
        // Nodes each terminal below `lone`'s length occurs in, and the last.
        let mut occurrences = vec![(0u32, NIL); self.lone.len()];
        for (id, slot) in self.rules.iter().enumerate() {
            if slot.guard == NIL {
                continue;
            }
            let id = id as u32;
            let guard = self.nodes[slot.guard as usize];
            if guard.exp != 0 || guard.value != RULE_BIT | id {
                return Err(format!("rule {id}: bad guard"));
            }
            let (mut count, mut len, mut last_exp) = (0u64, 0u64, 0u64);
            let mut n = guard.next;
            while n != slot.guard {
                let node = self.nodes[n as usize];
                if node.value == FREE || node.exp == 0 {
                    return Err(format!("rule {id}: free or guard node {n} in body"));
                }
                if self.nodes[node.next as usize].prev != n {
                    return Err(format!("rule {id}: broken links at {n}"));
                }
                if node.value & RULE_BIT != 0 {
                    let r = node.value & !RULE_BIT;
                    if !live(r) || r == START {
                        return Err(format!("rule {id}: refers to dead rule {r}"));
                    }
                    uses[r as usize] += 1;
                    max_use_exp[r as usize] = max_use_exp[r as usize].max(node.exp);
                } else if let Some(o) = occurrences.get_mut(node.value as usize) {
                    *o = (o.0 + 1, n);
                }
                len += self.value_len(node.value) * node.exp;
                if !self.is_guard(node.next) {
                    let next = self.nodes[node.next as usize];
                    if next.value == node.value {
                        return Err(format!("rule {id}: equal adjacent symbols at {n}"));
                    }
                    if self.indexed(n) {
                        digrams += 1;
                        if self.index.get(&self.nodes, n) != Some(n) {
                            return Err(format!(
                                "rule {id}: digram at {n} is repeated or not indexed"
                            ));
                        }
                    } else if self.index.get(&self.nodes, n).is_some() {
                        return Err(format!(
                            "rule {id}: digram at {n}, of a lone terminal, is indexed"
                        ));
                    }
                }
                count += 1;
                last_exp = node.exp;
                n = node.next;
            }
            if id == START {
                let expected = self.accepted_from;
                if len != expected {
                    return Err(format!(
                        "start rule expands to {len} terminals, expected {expected}"
                    ));
                }
            } else {
                if count == 0 || (count == 1 && last_exp < 2) {
                    return Err(format!("rule {id}: body too short"));
                }
                if len != slot.len {
                    return Err(format!(
                        "rule {id}: length {} but expands to {len}",
                        slot.len
                    ));
                }
            }
        }
        if digrams != self.index.len() {
            return Err(format!(
                "{} digrams indexed, {digrams} in the grammar",
                self.index.len()
            ));
        }
        for (t, (&lone, &(count, last))) in self.lone.iter().zip(&occurrences).enumerate() {
            let fits = match lone {
                0 => count == 0,
                MANY => true,
                node => count == 1 && last == node,
            };
            if !fits {
                return Err(format!(
                    "terminal {t}: lone says {lone}, but it occurs in {count} nodes (the last {last})"
                ));
            }
        }
        for (id, slot) in self.rules.iter().enumerate() {
            if slot.guard == NIL {
                continue;
            }
            if slot.uses != uses[id] {
                return Err(format!(
                    "rule {id}: {} uses recorded, {} found",
                    slot.uses, uses[id]
                ));
            }
            if id as u32 != START && uses[id] < 2 && max_use_exp[id] < 2 {
                return Err(format!("rule {id}: used once (rule utility)"));
            }
        }
        if self.period != self.tail_period() {
            return Err("repeat period out of date".into());
        }
        Ok(())
    }
}
