//! Communicator ids agreed by the members of each new communicator, so
//! that equal calls on different ranks encode to equal bytes even when the
//! ranks hold different sets of communicators (a split whose halves then
//! create different numbers of sub-communicators, say).
//!
//! When a call creates a communicator, every member contributes the bitmap
//! of communicator ids it has in use; a bitwise-OR all-reduce over the new
//! communicator gives the ids in use anywhere among the members, and each
//! member names the communicator by the smallest id free everywhere. Ids
//! are reused once freed, so a loop that creates and frees a communicator
//! records the same id every iteration.
//!
//! - An inter-communicator is agreed over the intra-communicator of both
//!   groups (MPI_Intercomm_merge), freed at once.
//! - MPI_Comm_idup's communicator may not be used before its request
//!   completes, and blocking in the call could deadlock a valid program.
//!   So the idup call starts a non-blocking all-reduce over the *parent*
//!   (which every member of the new communicator belongs to) and names the
//!   communicator by its local id; when the request completes, the
//!   communicator takes the agreed id (the same one unless the members'
//!   id use differed).
//! - Communicators from MPI_Comm_spawn, connect/accept and join are not
//!   agreed: their other side may be a process without the tracer, which
//!   would never join the all-reduce.
//!
//! The same all-reduce names the communicator's instance for the trace's
//! readers: the first member contributes its world rank and a serial
//! number, so every member logs the same `instance`, different from every
//! other creation's, and the readers translate ranks in the communicator
//! to world ranks from the members' logs.
//!
//! MPI_Comm_split's colour and key (and MPI_Comm_split_type's key) are
//! recorded as "the caller's rank" only where they are the caller's rank
//! on *every* rank of the parent ([`own_ranks`]: a bitwise-OR all-reduce
//! over the parent, which every rank of it calls the split on): with
//! `MPI_Comm_split(comm, 0, rank)`, colour 0 is rank 0's own rank but the
//! number 0 elsewhere, and recording it as the number on every rank keeps
//! one call for all. The encoding alone cannot tell, for it sees one rank.
//!
//! Every member must take part, or the others wait forever: agreement runs
//! whether or not recording is paused (MPI_Pcontrol) or was turned off by
//! an internal error; only `MPIGRAM_OFF` (set for the whole job) and calls
//! the MPI library makes to itself skip it. The messages use the new
//! communicator's (or parent's) collective context, which the application
//! cannot have used yet for this operation, and every one is completed
//! ([`finish_all`] at MPI_Finalize).

use crate::abi::{Handle, HandleSlot, MPI_Comm, MPI_Request, MPI_SUCCESS};
use crate::front::front;
use mpigram_mpispec::HandleKind;
use std::ffi::c_int;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Words of the exchanged bitmap: ids 0..=510; the last bit says that some
/// member has an id above that in use (then the local id is kept).
const WORDS: usize = 8;
const OVERFLOW: u64 = 1 << 63;

/// The exchanged words: the bitmap, then the instance word.
type Bits = [u64; WORDS + 1];

/// What the members of a new communicator agreed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agreed {
    /// The communicator's id; `None` if some member's ids overflow the bitmap.
    pub id: Option<u64>,
    /// `(world rank + 1) << 32 | serial` of the first member: the same on
    /// every member and unique to this creation; 0 if unknown.
    pub instance: u64,
}

/// Serial numbers of the creations this process was first member of.
static SERIAL: AtomicU32 = AtomicU32::new(0);

/// This process's contribution: the communicator ids it has in use, and
/// the instance word if it is the first member of the reducing
/// communicator `comm`.
fn local_bits(comm: MPI_Comm) -> Bits {
    let mut bits = [0; WORDS + 1];
    let mut rank: c_int = -1;
    // SAFETY: PMPI_Comm_rank on a valid communicator, into a local.
    let first =
        unsafe { crate::pmpi::MPI_Comm_rank()(comm, &mut rank) } == MPI_SUCCESS && rank == 0;
    crate::tracer::with(|t| {
        for (w, &used) in t.objects.comm_ids_in_use().iter().enumerate() {
            match bits[..WORDS].get_mut(w) {
                Some(b) => *b = used,
                None if used != 0 => bits[WORDS - 1] |= OVERFLOW,
                None => {}
            }
        }
        if first {
            // A program of sessions has no MPI_COMM_WORLD: its launcher's
            // rank is the one it would have.
            let me = t.world_rank().unwrap_or_else(crate::census::launcher_rank);
            let serial = SERIAL.fetch_add(1, Relaxed);
            bits[WORDS] = (u64::from(me) + 1) << 32 | u64::from(serial);
        }
    });
    bits
}

/// What the all-reduced words say.
fn agreed(all: &Bits) -> Agreed {
    Agreed {
        id: smallest_free(all),
        instance: all[WORDS],
    }
}

/// The smallest id free on every member, unless some member overflows
/// the bitmap.
fn smallest_free(all: &Bits) -> Option<u64> {
    if all[WORDS - 1] & OVERFLOW != 0 {
        return None;
    }
    all[..WORDS]
        .iter()
        .enumerate()
        .find(|(_, w)| **w != u64::MAX)
        .map(|(w, bits)| w as u64 * 64 + u64::from((!bits).trailing_zeros()))
}

/// Agrees on the id of the communicator a blocking call wrote to
/// `newcomm`; `None` if the call failed, gave MPI_COMM_NULL or the
/// exchange failed.
///
/// # Safety
/// `newcomm` is NULL or valid for reads when `ret` is MPI_SUCCESS.
pub unsafe fn created(ret: c_int, newcomm: *const HandleSlot) -> Option<Agreed> {
    if !crate::census::whole_job() {
        // A member without the tracer would never join the all-reduce.
        return None;
    }
    let comm = unsafe { new_comm(ret, newcomm) }?;
    let mut all: Bits = [0; WORDS + 1];
    let mut inter: c_int = 0;
    // SAFETY: PMPI calls on a valid communicator with local buffers of
    // WORDS elements.
    let rc = unsafe {
        if crate::pmpi::MPI_Comm_test_inter()(comm, &mut inter) != MPI_SUCCESS {
            return None;
        }
        if inter == 0 {
            bor(&local_bits(comm), &mut all, comm)
        } else {
            let mut merged = Handle(0);
            if crate::pmpi::MPI_Intercomm_merge()(comm, 0, merged.out()) != MPI_SUCCESS {
                return None;
            }
            let rc = bor(&local_bits(merged), &mut all, merged);
            crate::pmpi::MPI_Comm_free()((&raw mut merged).cast());
            rc
        }
    };
    (rc == MPI_SUCCESS).then(|| agreed(&all))
}

/// # Safety
/// As for [`created`].
unsafe fn new_comm(ret: c_int, newcomm: *const HandleSlot) -> Option<MPI_Comm> {
    if ret != MPI_SUCCESS || newcomm.is_null() {
        return None;
    }
    let comm = unsafe { front().read(HandleKind::Comm as usize, newcomm, 0) };
    (comm != front().null(HandleKind::Comm)).then_some(Handle(comm as usize))
}

/// The bitwise OR of every rank's `mine` over `comm`, into `all` (as long).
///
/// # Safety
/// `comm` is a valid intra-communicator.
unsafe fn bor(mine: &[u64], all: &mut [u64], comm: MPI_Comm) -> c_int {
    debug_assert_eq!(mine.len(), all.len());
    unsafe {
        crate::pmpi::MPI_Allreduce()(
            mine.as_ptr().cast(),
            all.as_mut_ptr().cast(),
            mine.len() as c_int,
            front().MPI_UINT64_T,
            front().MPI_BOR,
            comm,
        )
    }
}

/// Whether each of `values`, arguments of a call over the communicator
/// `comm` that are often the caller's rank in it (MPI_Comm_split's colour
/// and key), is the caller's rank on every rank of `comm`: then, and only
/// then, they are recorded as such. All false if the call failed, `comm`
/// is an inter-communicator (no own rank then) or not every rank runs the
/// tracer (a rank without it would never join the all-reduce).
///
/// # Safety
/// `comm` is the communicator the call was made on.
pub unsafe fn own_ranks<const N: usize>(ret: c_int, comm: MPI_Comm, values: [i64; N]) -> [bool; N] {
    let mut own = [false; N];
    if ret != MPI_SUCCESS || !crate::census::whole_job() {
        return own;
    }
    let (mut inter, mut rank): (c_int, c_int) = (0, -1);
    // Bit i of a rank's word: values[i] is not its rank. OR-ed over comm.
    let mut others: u64 = 0;
    // SAFETY: PMPI calls on the call's communicator, into locals.
    let rc = unsafe {
        if crate::pmpi::MPI_Comm_test_inter()(comm, &mut inter) != MPI_SUCCESS || inter != 0 {
            return own;
        }
        if crate::pmpi::MPI_Comm_rank()(comm, &mut rank) != MPI_SUCCESS {
            return own;
        }
        let mine = values
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v != i64::from(rank))
            .fold(0u64, |bits, (i, _)| bits | 1 << i);
        bor(&[mine], std::slice::from_mut(&mut others), comm)
    };
    if rc == MPI_SUCCESS {
        for (i, own) in own.iter_mut().enumerate() {
            *own = others & 1 << i == 0;
        }
    }
    own
}

/// [`own_ranks`] for a call that is not recorded: the other ranks do not
/// know, and take part in the all-reduce.
///
/// # Safety
/// As for [`own_ranks`].
pub unsafe fn unrecorded_own_ranks<const N: usize>(ret: c_int, comm: MPI_Comm, values: [i64; N]) {
    if crate::call::may_agree() {
        unsafe { own_ranks(ret, comm, values) };
    }
}

/// A created communicator that was not recorded (recording paused or off):
/// its members still agree, and the tracer remembers the id for later use.
///
/// # Safety
/// As for [`created`].
pub unsafe fn unrecorded(ret: c_int, newcomm: *const HandleSlot) {
    if !crate::call::may_agree() {
        return;
    }
    if let Some(agreed) = unsafe { created(ret, newcomm) } {
        let comm = unsafe { front().read(HandleKind::Comm as usize, newcomm, 0) };
        crate::tracer::with(|t| t.objects.create_comm(comm, Some(agreed)));
    }
}

/// An agreement in flight for a communicator from MPI_Comm_idup.
struct Pending {
    /// The new communicator's value.
    comm: u64,
    request: MPI_Request,
    /// Buffers of the non-blocking all-reduce, boxed: they must not move.
    mine: Box<Bits>,
    all: Box<Bits>,
}

// SAFETY: handles are plain words; the buffers are owned.
unsafe impl Send for Pending {}

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// MPI_Comm_idup over `parent` wrote `newcomm`: starts the agreement.
///
/// # Safety
/// As for [`created`].
pub unsafe fn start(ret: c_int, parent: MPI_Comm, newcomm: *const HandleSlot) {
    if !crate::census::whole_job() {
        return;
    }
    let Some(comm) = (unsafe { new_comm(ret, newcomm) }) else {
        return;
    };
    let mut inter: c_int = 0;
    // SAFETY: the parent is valid (the call succeeded).
    if unsafe { crate::pmpi::MPI_Comm_test_inter()(parent, &mut inter) } != MPI_SUCCESS
        || inter != 0
    {
        // An all-reduce over an inter-communicator gives each group the
        // other's bits only: the local id is kept.
        return;
    }
    let mut p = Pending {
        comm: front().value(HandleKind::Comm, comm),
        request: front().MPI_REQUEST_NULL,
        mine: Box::new(local_bits(parent)),
        all: Box::new([0; WORDS + 1]),
    };
    // SAFETY: the boxed buffers live in PENDING until the request completes.
    let rc = unsafe {
        crate::pmpi::MPI_Iallreduce()(
            p.mine.as_ptr().cast(),
            p.all.as_mut_ptr().cast(),
            (WORDS + 1) as c_int,
            front().MPI_UINT64_T,
            front().MPI_BOR,
            parent,
            p.request.out(),
        )
    };
    if rc == MPI_SUCCESS {
        lock().push(p);
    }
}

/// MPI_Comm_idup in a call that is not recorded: members still agree.
///
/// # Safety
/// As for [`created`].
pub unsafe fn start_unrecorded(ret: c_int, parent: MPI_Comm, newcomm: *const HandleSlot) {
    if crate::call::may_agree() {
        unsafe { start(ret, parent, newcomm) };
    }
}

/// The request of MPI_Comm_idup for `comm` completed: what was agreed, if
/// the agreement was started.
pub fn finish(comm: u64) -> Option<Agreed> {
    let mut pending = lock();
    let i = pending.iter().position(|p| p.comm == comm)?;
    let mut p = pending.swap_remove(i);
    drop(pending);
    complete(&mut p).then(|| agreed(&p.all))
}

/// Completes every agreement still in flight (MPI_Finalize): the tracer
/// leaves no message behind.
pub fn finish_all() {
    let pending = std::mem::take(&mut *lock());
    for mut p in pending {
        complete(&mut p);
    }
}

fn complete(p: &mut Pending) -> bool {
    // SAFETY: a request the tracer started, with buffers still alive.
    let ignore = std::ptr::without_provenance_mut(front().status_ignore);
    unsafe { crate::pmpi::MPI_Wait()((&raw mut p.request).cast(), ignore) == MPI_SUCCESS }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Pending>> {
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_id_free_on_every_member_is_chosen() {
        let mut all = [0; WORDS + 1];
        assert_eq!(smallest_free(&all), Some(0));
        all[0] = 0b1011;
        assert_eq!(smallest_free(&all), Some(2));
        all[0] = u64::MAX;
        all[1] = 1;
        assert_eq!(smallest_free(&all), Some(65));
        all[WORDS - 1] = OVERFLOW;
        assert_eq!(
            smallest_free(&all),
            None,
            "a member has ids beyond the bitmap"
        );
    }
}
