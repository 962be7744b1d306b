//! Interning byte strings: each distinct string gets a number, found again
//! by hash and a short comparison. Call signatures and request-pool keys
//! are interned on every traced call, so lookups avoid allocation and
//! library calls.

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;

#[derive(Default)]
pub struct Interner {
    /// Numbers of the strings and their hashes, by hash: growing the table
    /// re-hashes from the stored hash, without reading every string.
    index: HashTable<(u64, u32)>,
    strings: Vec<Box<[u8]>>,
    /// Bytes the strings' allocations take (with the allocator's header
    /// and rounding).
    string_bytes: usize,
}

impl Interner {
    /// The number of `bytes`, and whether it was new.
    #[inline]
    pub fn intern(&mut self, bytes: &[u8]) -> (u32, bool) {
        let h = hash(bytes);
        let strings = &self.strings;
        let found = self
            .index
            .find(h, |&(eh, n)| eh == h && same(&strings[n as usize], bytes));
        if let Some(&(_, n)) = found {
            return (n, false);
        }
        let n = self.strings.len() as u32;
        self.strings.push(bytes.into());
        // glibc's chunk: the size plus an 8-byte header, in 16-byte steps,
        // at least 32.
        self.string_bytes += (bytes.len() + 8).next_multiple_of(16).max(32);
        self.index.insert_unique(h, (h, n), |&(eh, _)| eh);
        (n, true)
    }

    /// The string numbered `n`.
    pub fn get(&self, n: u32) -> Option<&[u8]> {
        self.strings.get(n as usize).map(|s| &**s)
    }

    pub fn strings(&self) -> &[Box<[u8]>] {
        &self.strings
    }

    /// The strings, in number order, leaving the interner empty.
    pub fn take_strings(&mut self) -> Vec<Box<[u8]>> {
        self.index.clear();
        self.string_bytes = 0;
        std::mem::take(&mut self.strings)
    }

    /// Makes room for `more` strings without growing (re-hashing) the index.
    pub fn reserve(&mut self, more: usize) {
        self.strings.reserve(more);
        self.index.reserve(more, |&(h, _)| h);
    }

    /// Bytes of memory the interner uses: the strings, their list and the
    /// index (at its capacity: a hash table touches all of it).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.string_bytes
            + self.strings.len() * size_of::<Box<[u8]>>()
            + self.index.capacity() * 8 / 7 * (size_of::<(u64, u32)>() + 1)
    }
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

fn hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
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
        assert!(same(b"0123456789abcdef!", b"0123456789abcdef!"));
        assert!(!same(b"0123456789abcdef!", b"0123456789abcdef?"));
        assert!(!same(b"01234567", b"01234568"));
    }
}
