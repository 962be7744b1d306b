//! The digram index: for every digram in the grammar, the node where it
//! starts. A slot holds the node id and a 32-bit hash of its digram (8
//! bytes, against 32 for a map keyed by the digram), so the table stays in
//! cache longer and grows without reading any node.
//!
//! Contract with the builder: an indexed node's digram (its value and count,
//! and its successor's) never changes while it is indexed — the builder
//! removes the entry first.

use super::Node;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

#[derive(Default)]
pub(super) struct DigramIndex {
    /// (node, hash of its digram).
    table: HashTable<(u32, u32)>,
}

/// The digram starting at `n`: both values and both counts.
#[inline]
fn digram(nodes: &[Node], n: u32) -> (u32, u32, u64, u64) {
    let a = nodes[n as usize];
    let b = nodes[a.next as usize];
    (a.value, b.value, a.exp, b.exp)
}

/// A 32-bit hash of the digram at `n`.
#[inline]
fn hash(nodes: &[Node], n: u32) -> u32 {
    let (a, b, ea, eb) = digram(nodes, n);
    // Two rounds of multiply-xorshift (as in splitmix64's finaliser).
    let mut x = (u64::from(a) << 32 | u64::from(b))
        ^ ea.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ eb.rotate_left(29);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x >> 32) as u32
}

/// The table's 64-bit hash from the stored 32 bits: the bucket comes from
/// the low bits, the control byte from the high ones.
#[inline]
fn spread(h: u32) -> u64 {
    u64::from(h) << 32 | u64::from(h)
}

impl DigramIndex {
    /// Makes room for `more` digrams.
    pub(super) fn reserve(&mut self, more: usize) {
        self.table.reserve(more, |&(_, hm)| spread(hm));
    }

    /// Makes room for `more` digrams in an empty index and faults its
    /// pages in: filled with placeholders once, then emptied.
    pub(super) fn prepare(&mut self, more: usize) {
        debug_assert_eq!(self.table.len(), 0);
        if self.table.try_reserve(more, |&(_, hm)| spread(hm)).is_err() {
            return;
        }
        for h in 0..more as u32 {
            let h = h.wrapping_mul(0x9e37_79b9);
            self.table
                .insert_unique(spread(h), (0, h), |&(_, hm)| spread(hm));
        }
        self.clear();
    }

    /// Forgets every digram, keeping the table's memory.
    pub(super) fn clear(&mut self) {
        self.table.clear();
    }

    /// Bytes of the table: a slot and a control byte per bucket (the table
    /// fills at most 7 of 8 buckets).
    pub(super) fn heap_bytes(&self) -> usize {
        self.table.capacity() * 8 / 7 * (std::mem::size_of::<(u32, u32)>() + 1)
    }

    /// The other node where `n`'s digram occurs, or `None` after indexing `n`.
    #[inline]
    pub(super) fn find_or_insert(&mut self, nodes: &[Node], n: u32) -> Option<u32> {
        let d = digram(nodes, n);
        let h = hash(nodes, n);
        let same = |&(m, hm): &(u32, u32)| hm == h && digram(nodes, m) == d;
        match self.table.entry(spread(h), same, |&(_, hm)| spread(hm)) {
            Entry::Occupied(e) => Some(e.get().0).filter(|&m| m != n),
            Entry::Vacant(e) => {
                e.insert((n, h));
                None
            }
        }
    }

    /// Removes `n`'s digram if the index points at `n`.
    #[inline]
    pub(super) fn remove(&mut self, nodes: &[Node], n: u32) {
        if let Ok(e) = self
            .table
            .find_entry(spread(hash(nodes, n)), |&(m, _)| m == n)
        {
            e.remove();
        }
    }

    /// Where `n`'s digram is indexed, if anywhere.
    pub(super) fn get(&self, nodes: &[Node], n: u32) -> Option<u32> {
        let d = digram(nodes, n);
        let h = hash(nodes, n);
        self.table
            .find(spread(h), |&(m, hm)| hm == h && digram(nodes, m) == d)
            .map(|&(m, _)| m)
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }
}
