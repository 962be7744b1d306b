//! The call memo: a call whose raw arguments (return code, inputs and the
//! outputs MPI wrote) equal those of the previous call of its function has
//! the same signature, as long as no object was created, freed or first
//! seen in between (`Objects::epoch`), nor, if it passes buffers, a memory
//! block freed (`segments::generation`). Its terminal is then found by
//! comparing a few words, without encoding the signature or hashing it.
//!
//! The raw arguments come from a key pass of the wrapper's own encoding
//! closure (`Encoder` with a key): the one description of each function's
//! parameters serves both. Calls that create or free objects, complete
//! requests or pass strings are never memoised (the key pass says so once,
//! and the function is not keyed again).
//!
//! A call that creates a request (MPI_Isend, MPI_Irecv, ...) encodes the
//! request as (pool, index): the pool follows from the other arguments, and
//! the index is the smallest free one of the pool at that moment. The memo
//! keeps the terminal of each index, so a window of 64 MPI_Isend calls,
//! each with another index, finds all 64 terminals this way.

use crate::encoder::{Encoder, request_kind};
use crate::objects::{Objects, RequestInfo};
use mpigram_mpispec::FuncId;
use std::ffi::c_int;

/// The raw arguments of one call, as a key pass collects them: written
/// over the previous call's, noting whether any word differs.
#[derive(Default)]
pub struct ArgKey {
    words: Vec<u64>,
    /// Words written by this key pass.
    len: usize,
    /// A word differs from the previous call's.
    differs: bool,
    /// False if the call cannot be memoised.
    pub cacheable: bool,
    /// The call passes buffers (their segments may change).
    pub buffers: bool,
    /// The handle of the request the call created (not part of the words).
    pub request: Option<u64>,
}

impl ArgKey {
    #[inline(always)]
    pub fn push(&mut self, word: u64) {
        match self.words.get_mut(self.len) {
            Some(w) => {
                self.differs |= *w != word;
                *w = word;
            }
            None => {
                self.words.push(word);
                self.differs = true;
            }
        }
        self.len += 1;
    }

    #[inline(always)]
    fn start(&mut self, ret: c_int) {
        self.len = 0;
        self.differs = false;
        self.cacheable = true;
        self.buffers = false;
        self.request = None;
        self.push(u64::from(ret as u32));
    }

    #[inline(always)]
    fn finish(&mut self) {
        if self.len != self.words.len() {
            self.differs = true;
            self.words.truncate(self.len);
        }
    }

    /// What must not change for calls with this key to encode alike.
    #[inline(always)]
    fn epoch(&self, objects: &Objects) -> u64 {
        let generation = if self.buffers {
            crate::segments::generation()
        } else {
            0
        };
        objects.epoch().wrapping_add(generation)
    }
}

/// What the last call of one function encoded to.
#[derive(Default)]
struct Memo {
    /// Its raw arguments.
    key: ArgKey,
    /// `terminal` (and `by_index`) hold for `key` at `epoch`.
    remembered: bool,
    /// `ArgKey::epoch` after it was encoded.
    epoch: u64,
    terminal: u32,
    /// For a call that created a request: its pool, and the terminal for
    /// each index of the pool (`UNKNOWN` where not seen yet).
    pool: Option<u64>,
    by_index: Vec<u32>,
    /// The function's calls are never memoised.
    never: bool,
}

const UNKNOWN: u32 = u32::MAX;

/// One memo per function.
#[derive(Default)]
pub struct CallMemo {
    memos: Vec<Memo>,
}

impl CallMemo {
    /// The terminal of a call of `func` that returned `ret`, if it equals
    /// the function's last call; then a request it created is entered in
    /// `objects`, as encoding it would have. `None`: encode the call, then
    /// [`remember`](CallMemo::remember) it.
    #[inline(always)]
    pub fn recall(
        &mut self,
        func: FuncId,
        ret: c_int,
        objects: &mut Objects,
        out: &mut Vec<u8>,
        request_comms: &mut Vec<RequestInfo>,
        encode: &impl Fn(&mut Encoder),
    ) -> Option<u32> {
        let f = func as usize;
        if f >= self.memos.len() {
            self.memos.resize_with(f + 1, Memo::default);
        }
        let memo = &mut self.memos[f];
        if memo.never {
            return None;
        }
        memo.key.start(ret);
        let comm = {
            let mut e = Encoder::new(out, objects, func, ret, request_comms, Some(&mut memo.key));
            encode(&mut e);
            e.comm
        };
        memo.key.finish();
        if !memo.key.cacheable {
            memo.never = true;
            return None;
        }
        if memo.key.differs || memo.epoch != memo.key.epoch(objects) {
            memo.remembered = false;
        }
        if !memo.remembered {
            return None;
        }
        match (memo.pool, memo.key.request) {
            (None, None) => Some(memo.terminal),
            (Some(pool), Some(h)) => {
                let index = objects.next_request_index(pool);
                let terminal = *memo.by_index.get(index as usize)?;
                if terminal == UNKNOWN {
                    return None;
                }
                objects.add_request(pool, index, h, request_kind(func), comm, None);
                Some(terminal)
            }
            _ => None,
        }
    }

    /// The call [`recall`](CallMemo::recall) did not know was encoded to
    /// `terminal`, creating the request `created` (pool, index) if any.
    pub fn remember(
        &mut self,
        func: FuncId,
        objects: &Objects,
        terminal: u32,
        created: Option<(u64, u64)>,
    ) {
        let Some(memo) = self.memos.get_mut(func as usize) else {
            return;
        };
        if memo.never {
            return;
        }
        let epoch = memo.key.epoch(objects);
        let pool = created.map(|(pool, _)| pool);
        if !memo.remembered || memo.epoch != epoch || memo.pool != pool {
            memo.by_index.clear();
            memo.pool = pool;
        }
        memo.remembered = true;
        memo.epoch = epoch;
        memo.terminal = terminal;
        if let Some((_, index)) = created {
            let i = index as usize;
            if i >= memo.by_index.len() {
                memo.by_index.resize(i + 1, UNKNOWN);
            }
            memo.by_index[i] = terminal;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{MPI_COMM_WORLD, MPI_SUCCESS};
    use crate::encoder::IntoHandle;
    use mpigram_mpispec::{HandleKind, RequestRef, func};

    /// Encodes the way MPI_Comm_rank's wrapper does, with `rank` as output.
    fn recall(memo: &mut CallMemo, objects: &mut Objects, comm: u64, rank: i64) -> Option<u32> {
        let (mut out, mut comms) = (Vec::new(), Vec::new());
        memo.recall(
            func::MPI_Comm_rank,
            MPI_SUCCESS,
            objects,
            &mut out,
            &mut comms,
            &|e: &mut Encoder| {
                e.handle(HandleKind::Comm, comm);
                e.int(rank);
            },
        )
    }

    #[test]
    fn a_repeated_call_is_recalled_until_its_arguments_or_the_objects_change() {
        let (mut memo, mut objects) = (CallMemo::default(), Objects::default());
        let world = MPI_COMM_WORLD.into_handle();
        assert_eq!(recall(&mut memo, &mut objects, world, 0), None);
        memo.remember(func::MPI_Comm_rank, &objects, 7, None);
        assert_eq!(recall(&mut memo, &mut objects, world, 0), Some(7));
        assert_eq!(
            recall(&mut memo, &mut objects, world, 1),
            None,
            "another output"
        );
        memo.remember(func::MPI_Comm_rank, &objects, 8, None);
        assert_eq!(recall(&mut memo, &mut objects, world, 1), Some(8));
        objects.create(HandleKind::Group, 5);
        assert_eq!(
            recall(&mut memo, &mut objects, world, 1),
            None,
            "an object was created"
        );
    }

    #[test]
    fn calls_that_free_objects_are_never_recalled() {
        let (mut memo, mut objects) = (CallMemo::default(), Objects::default());
        let (mut out, mut comms) = (Vec::new(), Vec::new());
        let free = |e: &mut Encoder| e.free_handle(HandleKind::Group, 5);
        for _ in 0..2 {
            let known = memo.recall(
                func::MPI_Group_free,
                MPI_SUCCESS,
                &mut objects,
                &mut out,
                &mut comms,
                &free,
            );
            assert_eq!(known, None);
            memo.remember(func::MPI_Group_free, &objects, 3, None);
        }
    }

    /// Encodes as MPI_Isend's wrapper does (one argument and the request).
    fn isend(
        memo: &mut CallMemo,
        objects: &mut Objects,
        h: crate::abi::MPI_Request,
    ) -> Option<u32> {
        let (mut out, mut comms, request) = (Vec::new(), Vec::new(), [h]);
        memo.recall(
            func::MPI_Isend,
            MPI_SUCCESS,
            objects,
            &mut out,
            &mut comms,
            &|e: &mut Encoder| unsafe {
                e.int(1);
                e.new_request(request.as_ptr());
            },
        )
    }

    #[test]
    fn each_request_index_of_a_pool_has_its_own_terminal() {
        let (mut memo, mut objects) = (CallMemo::default(), Objects::default());
        let kind = request_kind(func::MPI_Isend);
        // A window of two requests, numbered as the full encoding does.
        assert_eq!(isend(&mut memo, &mut objects, 100), None);
        let RequestRef::Pooled { pool, index: 0 } =
            objects.create_request(100, b"isend", kind, None, None)
        else {
            panic!("not the first index of a pool");
        };
        memo.remember(func::MPI_Isend, &objects, 10, Some((pool, 0)));
        assert_eq!(
            isend(&mut memo, &mut objects, 101),
            None,
            "index 1 not seen yet"
        );
        objects.create_request(101, b"isend", kind, None, None);
        memo.remember(func::MPI_Isend, &objects, 11, Some((pool, 1)));
        objects.complete_request(100);
        objects.complete_request(101);
        // The next window finds both terminals, and enters the requests.
        assert_eq!(isend(&mut memo, &mut objects, 102), Some(10));
        assert_eq!(isend(&mut memo, &mut objects, 103), Some(11));
        assert_eq!(
            objects.complete_request(103).id,
            RequestRef::Pooled { pool, index: 1 }
        );
    }

    #[test]
    fn a_freed_memory_block_forgets_calls_with_buffers_only() {
        let (mut memo, mut objects) = (CallMemo::default(), Objects::default());
        let (mut out, mut comms) = (Vec::new(), Vec::new());
        let buffer = [0u8; 8];
        let mut send = |memo: &mut CallMemo, objects: &mut Objects| {
            memo.recall(
                func::MPI_Send,
                MPI_SUCCESS,
                objects,
                &mut out,
                &mut comms,
                &|e: &mut Encoder| e.buffer(buffer.as_ptr().cast()),
            )
        };
        assert_eq!(send(&mut memo, &mut objects), None);
        memo.remember(func::MPI_Send, &objects, 4, None);
        assert_eq!(send(&mut memo, &mut objects), Some(4));
        let world = MPI_COMM_WORLD.into_handle();
        assert_eq!(recall(&mut memo, &mut objects, world, 0), None);
        memo.remember(func::MPI_Comm_rank, &objects, 5, None);
        // Its block might have been the buffer's.
        crate::segments::allocated(0x1000, 64);
        crate::segments::freed(0x1000);
        assert_eq!(send(&mut memo, &mut objects), None);
        assert_eq!(recall(&mut memo, &mut objects, world, 0), Some(5));
    }
}
