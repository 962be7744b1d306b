//! Records that grow with the calls of a run (the critical path's
//! back-pointers and segments, the profile's wait states), kept in a
//! temporary file once they outgrow a small buffer, and read back
//! forwards or backwards: the analyses' memory stays bounded however long
//! the run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;

/// A record of fixed size.
pub(crate) trait Record: Sized {
    const SIZE: usize;
    fn put(&self, out: &mut Vec<u8>);
    /// Reads a record from exactly `SIZE` bytes written by `put`.
    fn get(bytes: &[u8]) -> Self;
}

/// Bytes kept in memory before they go to the file.
const BUFFER: usize = 1 << 18;

/// An append-only sequence of records.
pub(crate) struct Spill<T> {
    file: Option<File>,
    /// Bytes in the file.
    stored: u64,
    buffer: Vec<u8>,
    len: u64,
    kind: PhantomData<T>,
}

impl<T: Record> Default for Spill<T> {
    fn default() -> Spill<T> {
        Spill {
            file: None,
            stored: 0,
            buffer: Vec::new(),
            len: 0,
            kind: PhantomData,
        }
    }
}

impl<T: Record> Spill<T> {
    pub(crate) fn push(&mut self, record: &T) -> io::Result<()> {
        if self.buffer.capacity() == 0 {
            self.buffer.reserve_exact(BUFFER + T::SIZE);
        }
        record.put(&mut self.buffer);
        self.len += 1;
        if self.buffer.len() >= BUFFER {
            let file = match &mut self.file {
                Some(f) => f,
                None => self.file.insert(tempfile::tempfile()?),
            };
            file.seek(SeekFrom::End(0))?;
            file.write_all(&self.buffer)?;
            self.stored += self.buffer.len() as u64;
            self.buffer.clear();
        }
        Ok(())
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records in the order they were pushed.
    pub(crate) fn iter(&self) -> Records<'_, T> {
        Records {
            spill: self,
            at: 0,
            end: self.stored + self.buffer.len() as u64,
            chunk: Vec::new(),
            next: 0,
            backwards: false,
            failed: false,
        }
    }

    /// The records last first.
    pub(crate) fn iter_rev(&self) -> Records<'_, T> {
        Records {
            backwards: true,
            ..self.iter()
        }
    }

    /// `len` bytes at `offset` of the whole sequence.
    fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        let mut at = offset;
        let end = offset + len as u64;
        if at < self.stored {
            let file_end = end.min(self.stored);
            let mut file = self.file.as_ref().expect("stored bytes are in the file");
            file.seek(SeekFrom::Start(at))?;
            out.resize((file_end - at) as usize, 0);
            file.read_exact(out)?;
            at = file_end;
        }
        if at < end {
            let from = (at - self.stored) as usize;
            out.extend_from_slice(&self.buffer[from..from + (end - at) as usize]);
        }
        Ok(())
    }
}

/// Records sorted in memory before they go to a run of the file.
const SORT_RUN: usize = 1 << 16;

/// Runs merged at once: each has a reader with a buffer of [`BUFFER`]
/// bytes, so more runs are merged in rounds, [`FAN_IN`] at a time.
const FAN_IN: usize = 16;

impl<T: Record> Spill<T> {
    /// The records sorted by `key` (stable), in memory that does not
    /// grow with them: sorted runs of [`SORT_RUN`] records, merged
    /// [`FAN_IN`] at a time.
    pub(crate) fn sorted<K: Ord>(&self, key: impl Fn(&T) -> K) -> io::Result<Spill<T>> {
        self.sorted_in(key, SORT_RUN, FAN_IN)
    }

    /// [`Spill::sorted`] with runs of `run_len` records merged `fan_in` at a time.
    fn sorted_in<K: Ord>(
        &self,
        key: impl Fn(&T) -> K,
        run_len: usize,
        fan_in: usize,
    ) -> io::Result<Spill<T>> {
        let mut runs: Spill<T> = Spill::default();
        let mut bounds = Vec::new();
        let mut run: Vec<T> = Vec::with_capacity(run_len.min(self.len as usize));
        let mut records = self.iter();
        loop {
            let next = records.next().transpose()?;
            let end = next.is_none();
            if let Some(r) = next {
                run.push(r);
            }
            if run.len() == run_len || (end && !run.is_empty()) {
                run.sort_by_key(&key);
                let start = runs.len;
                for r in run.drain(..) {
                    runs.push(&r)?;
                }
                bounds.push((start, runs.len));
            }
            if end {
                break;
            }
        }
        while bounds.len() > 1 {
            let mut merged = Spill::default();
            let mut merged_bounds = Vec::new();
            for group in bounds.chunks(fan_in) {
                let start = merged.len;
                runs.merge(group, &key, &mut merged)?;
                merged_bounds.push((start, merged.len));
            }
            (runs, bounds) = (merged, merged_bounds);
        }
        Ok(runs)
    }

    /// Merges the sorted runs `bounds` (by index) into `out`, by (key,
    /// run): stable.
    fn merge<K: Ord>(
        &self,
        bounds: &[(u64, u64)],
        key: impl Fn(&T) -> K,
        out: &mut Spill<T>,
    ) -> io::Result<()> {
        let mut readers: Vec<Records<'_, T>> = bounds
            .iter()
            .map(|&(from, to)| self.range(from, to))
            .collect();
        let mut heads: Vec<Option<T>> = Vec::with_capacity(readers.len());
        for r in &mut readers {
            heads.push(r.next().transpose()?);
        }
        let mut heap: BinaryHeap<Reverse<(K, usize)>> = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|h| Reverse((key(h), i))))
            .collect();
        while let Some(Reverse((_, i))) = heap.pop() {
            let record = heads[i].take().expect("a head");
            out.push(&record)?;
            heads[i] = readers[i].next().transpose()?;
            if let Some(h) = &heads[i] {
                heap.push(Reverse((key(h), i)));
            }
        }
        Ok(())
    }

    /// The records `from..to` (by index).
    fn range(&self, from: u64, to: u64) -> Records<'_, T> {
        let size = T::SIZE as u64;
        Records {
            at: from * size,
            end: to * size,
            ..self.iter()
        }
    }
}

/// Reads a [`Spill`] a chunk at a time.
pub(crate) struct Records<'s, T> {
    spill: &'s Spill<T>,
    /// The unread bytes are `at..end`.
    at: u64,
    end: u64,
    chunk: Vec<u8>,
    /// Next record's offset in `chunk`.
    next: usize,
    backwards: bool,
    failed: bool,
}

impl<T: Record> Iterator for Records<'_, T> {
    type Item = io::Result<T>;

    fn next(&mut self) -> Option<io::Result<T>> {
        let size = T::SIZE;
        if self.failed {
            return None;
        }
        if self.backwards {
            if self.next == 0 {
                if self.at == self.end {
                    return None;
                }
                let len = ((self.end - self.at) as usize).min(BUFFER / size * size);
                let from = self.end - len as u64;
                if let Err(e) = self.spill.read(from, len, &mut self.chunk) {
                    self.failed = true;
                    return Some(Err(e));
                }
                self.end = from;
                self.next = len;
            }
            self.next -= size;
            Some(Ok(T::get(&self.chunk[self.next..self.next + size])))
        } else {
            if self.next == self.chunk.len() {
                if self.at == self.end {
                    return None;
                }
                let len = ((self.end - self.at) as usize).min(BUFFER / size * size);
                if let Err(e) = self.spill.read(self.at, len, &mut self.chunk) {
                    self.failed = true;
                    return Some(Err(e));
                }
                self.at += len as u64;
                self.next = 0;
            }
            self.next += size;
            Some(Ok(T::get(&self.chunk[self.next - size..self.next])))
        }
    }
}

/// Little-endian fields of records.
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(crate) fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Record for (u32, i64) {
        const SIZE: usize = 12;
        fn put(&self, out: &mut Vec<u8>) {
            put_u32(out, self.0);
            put_i64(out, self.1);
        }
        fn get(b: &[u8]) -> Self {
            (u32_at(b, 0), i64_at(b, 4))
        }
    }

    #[test]
    fn records_past_the_buffer_read_back_both_ways() {
        let mut s: Spill<(u32, i64)> = Spill::default();
        let n = 3 * BUFFER / 12 + 17;
        for i in 0..n {
            s.push(&(i as u32, -(i as i64) * 3)).unwrap();
        }
        assert!(s.file.is_some(), "some went to the file");
        assert_eq!(s.len(), n as u64);
        let forward: Vec<(u32, i64)> = s.iter().map(Result::unwrap).collect();
        assert_eq!(forward.len(), n);
        assert!(
            forward
                .iter()
                .enumerate()
                .all(|(i, r)| *r == (i as u32, -(i as i64) * 3))
        );
        let backward: Vec<(u32, i64)> = s.iter_rev().map(Result::unwrap).collect();
        // Sorted by the second field, descending, ties in pushed order.
        let mut expected = forward.clone();
        expected.sort_by_key(|r| (r.1 % 7, r.0 % 3));
        // In one run or two, and in 66 runs merged 4 at a time, in rounds.
        for (run_len, fan_in) in [(SORT_RUN, FAN_IN), (1000, 4)] {
            let sorted: Vec<(u32, i64)> = s
                .sorted_in(|r| (r.1 % 7, r.0 % 3), run_len, fan_in)
                .unwrap()
                .iter()
                .map(Result::unwrap)
                .collect();
            assert_eq!(sorted, expected);
        }
        assert_eq!(backward.into_iter().rev().collect::<Vec<_>>(), forward);
        let small: Spill<(u32, i64)> = Spill::default();
        assert_eq!(small.iter().count(), 0);
        assert!(small.is_empty());
    }
}
