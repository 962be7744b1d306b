//! The columns of the block of per-call times being filled
//! (`mpigram_trace::timing::OpenColumn`): buffers of a fixed size, on the
//! heap until the crash journal opens, then in its mapping, where a killed
//! rank leaves them (see "Per-call times" in `mpigram_trace::journal`).
//! So each call's times are written once, and survive the rank.

use mpigram_trace::timing::{OPEN_COLUMN_BYTES, OpenColumn};
use mpigram_varint::MAX_VARINT_LEN;

pub struct FixedColumn {
    /// [`OPEN_COLUMN_BYTES`] bytes: `heap`'s, or the journal mapping's.
    at: *mut u8,
    len: usize,
    heap: Option<Box<[u8]>>,
}

impl FixedColumn {
    pub fn on_heap() -> FixedColumn {
        let mut heap = vec![0u8; OPEN_COLUMN_BYTES].into_boxed_slice();
        FixedColumn {
            at: heap.as_mut_ptr(),
            len: 0,
            heap: Some(heap),
        }
    }

    /// Goes on in `to`, its bytes so far copied there.
    ///
    /// # Safety
    /// `to` is valid for reads and writes of [`OPEN_COLUMN_BYTES`] for the
    /// rest of the process, and nothing else uses them.
    pub unsafe fn move_to(&mut self, to: *mut u8) {
        // SAFETY: `len` bytes are ours at `at`, and fit at `to`.
        unsafe { std::ptr::copy_nonoverlapping(self.at, to, self.len) };
        self.at = to;
        self.heap = None;
    }

    /// Goes on on the heap, its bytes so far copied there: what it left
    /// where it was stays as it was.
    pub fn move_to_heap(&mut self) {
        let mut heap = vec![0u8; OPEN_COLUMN_BYTES].into_boxed_slice();
        heap[..self.len].copy_from_slice(self.bytes());
        self.at = heap.as_mut_ptr();
        self.heap = Some(heap);
    }
}

impl OpenColumn for FixedColumn {
    #[inline(always)]
    fn put(&mut self, v: u64) {
        // The column writer ends its block before it lacks room
        // (`OpenColumn::put`); this keeps a writer that did not in bounds.
        if self.room() < MAX_VARINT_LEN {
            return;
        }
        // SAFETY: MAX_VARINT_LEN bytes from `len` are within the buffer.
        self.len += unsafe { mpigram_varint::write_varint(self.at.add(self.len), v) };
    }

    #[inline(always)]
    fn put_byte(&mut self, b: u8) {
        // A token a call of a block is fewer bytes than the buffer's; this
        // keeps a writer that put more in bounds.
        if self.len >= OPEN_COLUMN_BYTES {
            return;
        }
        // SAFETY: `len` is within the buffer.
        unsafe { self.at.add(self.len).write(b) };
        self.len += 1;
    }

    #[inline(always)]
    fn room(&self) -> usize {
        OPEN_COLUMN_BYTES - self.len
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes at `at` were written.
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }

    fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_varint::ByteReader;

    /// Varints of every length read back, before and after the column
    /// moves to another buffer and back to the heap; a full column takes
    /// nothing more.
    #[test]
    fn varints_read_back_wherever_the_column_is() {
        let values = [0, 0x7f, 0x80, 0x3fff, 0x4000, 1 << 40, u64::MAX];
        let mut column = FixedColumn::on_heap();
        values.iter().for_each(|&v| column.put(v));
        let mut elsewhere = vec![0u8; OPEN_COLUMN_BYTES];
        // SAFETY: `elsewhere` outlives the column's use of it below.
        unsafe { column.move_to(elsewhere.as_mut_ptr()) };
        values.iter().for_each(|&v| column.put(v));
        column.move_to_heap();
        column.put(5);
        let mut r = ByteReader::new(column.bytes());
        let read: Vec<u64> = std::iter::from_fn(|| r.u64().ok()).collect();
        let expected: Vec<u64> = values.iter().chain(&values).chain(&[5]).copied().collect();
        assert_eq!(read, expected);
        // What it left in `elsewhere` stays.
        let mut r = ByteReader::new(&elsewhere);
        assert_eq!(r.u64(), Ok(0));
        column.clear();
        assert!(column.bytes().is_empty());
        while column.room() >= MAX_VARINT_LEN {
            column.put(u64::MAX);
        }
        let full = column.bytes().len();
        assert!(full > OPEN_COLUMN_BYTES - MAX_VARINT_LEN && full <= OPEN_COLUMN_BYTES);
        column.put(1);
        assert_eq!(column.bytes().len(), full, "nothing past a full column");
    }
}
