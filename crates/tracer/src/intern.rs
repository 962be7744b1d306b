//! Interning byte strings: each distinct string gets a number, found again
//! by hash and a short comparison. Call signatures and request-pool keys
//! are interned on every traced call, so lookups avoid allocation and
//! library calls.

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;

#[derive(Default)]
pub struct Interner {
    /// Numbers of the strings and 32 bits of their hashes, by hash:
    /// growing the table re-hashes from the stored bits, without reading
    /// every string. 8 bytes a slot, not 16: at 10^5 signatures and more
    /// the table is past the caches, and it takes half the new pages as it
    /// grows.
    index: HashTable<(u32, u32)>,
    /// The strings, one after another: a string costs its bytes and an
    /// end, not an allocation (10^6 signatures of a part were 10^6
    /// mallocs, and as many frees when the part was written).
    bytes: Vec<u8>,
    /// Where each string ends in `bytes`.
    ends: Vec<usize>,
}

impl Interner {
    /// The number of `bytes`, and whether it was new.
    #[inline]
    pub fn intern(&mut self, bytes: &[u8]) -> (u32, bool) {
        let h = hash(bytes);
        let found = self.index.find(spread(h), |&(eh, n)| {
            eh == h && same(string(&self.bytes, &self.ends, n), bytes)
        });
        if let Some(&(_, n)) = found {
            return (n, false);
        }
        let n = self.ends.len() as u32;
        self.bytes.extend_from_slice(bytes);
        self.ends.push(self.bytes.len());
        self.index
            .insert_unique(spread(h), (h, n), |&(eh, _)| spread(eh));
        (n, true)
    }

    /// Makes room in an empty interner for `strings` strings of `bytes`
    /// bytes in all, and faults its pages in now (`Recorder::prepare`):
    /// the index is filled with placeholders once and emptied, so that its
    /// buckets' pages are touched too.
    pub fn prepare(&mut self, strings: usize, bytes: usize) {
        debug_assert!(self.is_empty());
        fault_in(&mut self.bytes, bytes, 0);
        fault_in(&mut self.ends, strings, 0);
        if self
            .index
            .try_reserve(strings, |&(h, _)| spread(h))
            .is_err()
        {
            return;
        }
        for i in 0..strings as u32 {
            let h = i.wrapping_mul(0x9e37_79b9);
            self.index
                .insert_unique(spread(h), (h, u32::MAX), |&(eh, _)| spread(eh));
        }
        self.index.clear();
    }

    /// The string numbered `n`.
    #[inline]
    pub fn get(&self, n: u32) -> Option<&[u8]> {
        ((n as usize) < self.ends.len()).then(|| string(&self.bytes, &self.ends, n))
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of all the strings.
    pub fn string_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The strings, in number order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        (0..self.ends.len() as u32).map(|n| string(&self.bytes, &self.ends, n))
    }

    /// Forgets every string, keeping the memory.
    pub fn clear(&mut self) {
        self.index.clear();
        self.bytes.clear();
        self.ends.clear();
    }

    /// Bytes of memory the interner uses: the strings, their ends and the
    /// index (at their capacity: a hash table touches all of it, and the
    /// others are filled as they go).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.bytes.capacity()
            + self.ends.capacity() * size_of::<usize>()
            + self.index.capacity() * 8 / 7 * (size_of::<(u32, u32)>() + 1)
    }
}

/// Makes room for `more` elements in `v` and faults its pages in now: the
/// room is filled with `value`, then emptied (the memory stays `v`'s).
/// Where the memory is not to be had, nothing changes.
pub fn fault_in<T: Copy>(v: &mut Vec<T>, more: usize, value: T) {
    if v.try_reserve(more).is_ok() {
        let len = v.len();
        v.resize(len + more, value);
        v.truncate(len);
    }
}

/// String `n` of an interner's `bytes` and `ends` (`n` < `ends.len()`).
#[inline]
fn string<'a>(bytes: &'a [u8], ends: &[usize], n: u32) -> &'a [u8] {
    let n = n as usize;
    let start = if n == 0 { 0 } else { ends[n - 1] };
    &bytes[start..ends[n]]
}

/// Byte-slice equality without a call to memcmp: the strings are a few
/// bytes long.
#[inline]
pub fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut a8, mut b8) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in a8.by_ref().zip(b8.by_ref()) {
        if u64::from_ne_bytes(x.try_into().unwrap()) != u64::from_ne_bytes(y.try_into().unwrap()) {
            return false;
        }
    }
    a8.remainder()
        .iter()
        .zip(b8.remainder())
        .all(|(x, y)| x == y)
}

/// 32 bits of the hash of `bytes` (its two halves folded).
fn hash(bytes: &[u8]) -> u32 {
    let mut h = FxHasher::default();
    h.write(bytes);
    let h = h.finish();
    (h ^ h >> 32) as u32
}

/// The index's 64-bit hash from the stored 32 bits: the bucket comes from
/// the low bits, the control byte from the high ones.
#[inline]
fn spread(h: u32) -> u64 {
    u64::from(h) << 32 | u64::from(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_get_equal_numbers() {
        let mut i = Interner::default();
        assert_eq!(i.intern(b"MPI_Send 1 2"), (0, true));
        assert_eq!(i.intern(b"MPI_Recv"), (1, true));
        assert_eq!(i.intern(b"MPI_Send 1 2"), (0, false));
        assert_eq!(i.intern(b""), (2, true));
        assert_eq!(i.get(1), Some(&b"MPI_Recv"[..]));
        assert_eq!((i.get(2), i.get(3)), (Some(&b""[..]), None));
        let all: Vec<&[u8]> = i.iter().collect();
        assert_eq!(all, [&b"MPI_Send 1 2"[..], b"MPI_Recv", b""]);
        assert_eq!((i.iter().len(), i.string_bytes()), (3, 20));
        i.clear();
        assert!(i.is_empty() && i.get(0).is_none());
        assert_eq!(i.intern(b"MPI_Recv"), (0, true));
        assert!(same(b"0123456789abcdef!", b"0123456789abcdef!"));
        assert!(!same(b"0123456789abcdef!", b"0123456789abcdef?"));
        assert!(!same(b"01234567", b"01234568"));
    }

    /// Through the index's growth (and after room made for some), every
    /// string keeps its number and is found again by it.
    #[test]
    fn many_strings_keep_their_numbers() {
        let mut i = Interner::default();
        i.prepare(1_000, 8_000);
        let key = |k: u32| format!("MPI_Isend {k} {}", k % 7).into_bytes();
        for k in 0..50_000 {
            assert_eq!(i.intern(&key(k)), (k, true));
        }
        for k in (0..50_000).step_by(7) {
            assert_eq!(i.intern(&key(k)), (k, false));
            assert_eq!(i.get(k), Some(&key(k)[..]));
        }
        assert_eq!(i.iter().len(), 50_000);
    }
}
