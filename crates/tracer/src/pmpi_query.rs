//! Questions the tracer asks MPI itself, through PMPI (never traced).

use crate::abi::{Handle, MPI_Comm, MPI_SUCCESS};
use crate::front::front;
use crate::objects::CommInfo;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The caller's rank in `comm`, its size, whether it is an
/// inter-communicator (then also the remote group's size), and the world
/// rank of its group's first member (see `CommInfo`).
pub fn comm_info(comm: MPI_Comm) -> Option<CommInfo> {
    let (mut rank, mut size, mut inter, mut remote_size) = (0, 0, 0, 0);
    // SAFETY: PMPI calls on a communicator the caller knows to be valid,
    // writing to local integers.
    unsafe {
        if crate::pmpi::MPI_Comm_rank()(comm, &mut rank) != MPI_SUCCESS
            || crate::pmpi::MPI_Comm_size()(comm, &mut size) != MPI_SUCCESS
            || crate::pmpi::MPI_Comm_test_inter()(comm, &mut inter) != MPI_SUCCESS
        {
            return None;
        }
        if inter != 0 && crate::pmpi::MPI_Comm_remote_size()(comm, &mut remote_size) != MPI_SUCCESS
        {
            return None;
        }
    }
    Some(CommInfo {
        rank,
        size,
        remote_size,
        inter: inter != 0,
        leader: leader(comm),
        instance: 0,
    })
}

/// Whether MPI_COMM_WORLD may be used: MPI_Init was called (a program
/// that uses only MPI Sessions has no world, and asking about it is a
/// fatal error).
static WORLD_READY: AtomicBool = AtomicBool::new(false);

/// MPI_Init returned: MPI_COMM_WORLD is valid.
pub fn world_ready() {
    WORLD_READY.store(true, Relaxed);
}

/// The MPI_COMM_WORLD rank of the first member of `comm`'s (local) group;
/// -1 when it is not in the world (a spawned or connected process, a
/// Sessions-only program) or MPI cannot say.
fn leader(comm: MPI_Comm) -> i32 {
    if !WORLD_READY.load(Relaxed) {
        return -1;
    }
    let (mut group, mut world_group) = (Handle(0), Handle(0));
    let (first, mut in_world) = (0, -1);
    // SAFETY: PMPI calls on a valid communicator and the groups they
    // return, which are freed before returning; results go to locals.
    unsafe {
        if crate::pmpi::MPI_Comm_group()(comm, group.out()) != MPI_SUCCESS {
            return -1;
        }
        if crate::pmpi::MPI_Comm_group()(front().MPI_COMM_WORLD, world_group.out()) == MPI_SUCCESS {
            let ok = crate::pmpi::MPI_Group_translate_ranks()(
                group,
                1,
                &first,
                world_group,
                &mut in_world,
            );
            if ok != MPI_SUCCESS || in_world == front().ints.MPI_UNDEFINED {
                in_world = -1;
            }
            crate::pmpi::MPI_Group_free()((&raw mut world_group).cast());
        }
        crate::pmpi::MPI_Group_free()((&raw mut group).cast());
    }
    in_world
}
