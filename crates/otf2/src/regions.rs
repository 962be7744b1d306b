//! A region per MPI function, and what OTF2 calls each function: its
//! region role and, for collectives, its operation.

use mpigram_otf2_sys as sys;
use rustc_hash::FxHashMap;

/// The regions of the functions an export met, numbered in order of first use.
#[derive(Default)]
pub(crate) struct Regions {
    ids: FxHashMap<&'static str, u32>,
    names: Vec<&'static str>,
}

impl Regions {
    /// The region of `func`.
    pub(crate) fn of(&mut self, func: &'static str) -> u32 {
        let next = self.names.len() as u32;
        *self.ids.entry(func).or_insert_with(|| {
            self.names.push(func);
            next
        })
    }

    /// The functions, by region.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names.iter().copied()
    }
}

/// Point-to-point operations, by their blocking names.
const POINT_TO_POINT: [&str; 14] = [
    "Send",
    "Bsend",
    "Ssend",
    "Rsend",
    "Recv",
    "Sendrecv",
    "Sendrecv_replace",
    "Probe",
    "Mprobe",
    "Mrecv",
    "Psend",
    "Precv",
    "Improbe",
    "Iprobe",
];

/// `MPI_Iallreduce_c` -> `Allreduce`; `MPI_Send_init` -> `Send`;
/// `MPI_Isendrecv` -> `Sendrecv`; `MPI_Info_set` stays `Info_set`.
fn operation(func: &str) -> String {
    let name = func.strip_prefix("MPI_").unwrap_or(func);
    let name = name.strip_suffix("_c").unwrap_or(name);
    let name = name.strip_suffix("_init").unwrap_or(name);
    if let Some(blocking) = mpigram_mpispec::blocking_operation(name)
        && (POINT_TO_POINT.contains(&blocking.as_str()) || collective(&blocking).is_some())
    {
        return blocking;
    }
    name.to_owned()
}

/// The OTF2 collective operation of a collective MPI function; None for
/// those OTF2 has none for (neighbourhood collectives, window calls).
pub(crate) fn collective_op(func: &str) -> Option<sys::OTF2_CollectiveOp> {
    collective(&operation(func))
}

/// The OTF2 collective operation of a blocking operation name (`Allreduce`).
fn collective(operation: &str) -> Option<sys::OTF2_CollectiveOp> {
    Some(match operation {
        "Barrier" => sys::OTF2_COLLECTIVE_OP_BARRIER,
        "Bcast" => sys::OTF2_COLLECTIVE_OP_BCAST,
        "Gather" => sys::OTF2_COLLECTIVE_OP_GATHER,
        "Gatherv" => sys::OTF2_COLLECTIVE_OP_GATHERV,
        "Scatter" => sys::OTF2_COLLECTIVE_OP_SCATTER,
        "Scatterv" => sys::OTF2_COLLECTIVE_OP_SCATTERV,
        "Allgather" => sys::OTF2_COLLECTIVE_OP_ALLGATHER,
        "Allgatherv" => sys::OTF2_COLLECTIVE_OP_ALLGATHERV,
        "Alltoall" => sys::OTF2_COLLECTIVE_OP_ALLTOALL,
        "Alltoallv" => sys::OTF2_COLLECTIVE_OP_ALLTOALLV,
        "Alltoallw" => sys::OTF2_COLLECTIVE_OP_ALLTOALLW,
        "Allreduce" => sys::OTF2_COLLECTIVE_OP_ALLREDUCE,
        "Reduce" => sys::OTF2_COLLECTIVE_OP_REDUCE,
        "Reduce_scatter" => sys::OTF2_COLLECTIVE_OP_REDUCE_SCATTER,
        "Reduce_scatter_block" => sys::OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK,
        "Scan" => sys::OTF2_COLLECTIVE_OP_SCAN,
        "Exscan" => sys::OTF2_COLLECTIVE_OP_EXSCAN,
        "Comm_dup" | "Comm_dup_with_info" | "Comm_split" | "Comm_split_type" | "Comm_create" => {
            sys::OTF2_COLLECTIVE_OP_CREATE_HANDLE
        }
        _ => return None,
    })
}

/// The region role of an MPI function.
pub(crate) fn role(func: &str) -> sys::OTF2_RegionRole {
    match collective_op(func) {
        Some(sys::OTF2_COLLECTIVE_OP_BARRIER) => sys::OTF2_REGION_ROLE_BARRIER,
        Some(
            sys::OTF2_COLLECTIVE_OP_BCAST
            | sys::OTF2_COLLECTIVE_OP_SCATTER
            | sys::OTF2_COLLECTIVE_OP_SCATTERV,
        ) => sys::OTF2_REGION_ROLE_COLL_ONE2ALL,
        Some(
            sys::OTF2_COLLECTIVE_OP_GATHER
            | sys::OTF2_COLLECTIVE_OP_GATHERV
            | sys::OTF2_COLLECTIVE_OP_REDUCE,
        ) => sys::OTF2_REGION_ROLE_COLL_ALL2ONE,
        Some(
            sys::OTF2_COLLECTIVE_OP_SCAN
            | sys::OTF2_COLLECTIVE_OP_EXSCAN
            | sys::OTF2_COLLECTIVE_OP_CREATE_HANDLE,
        ) => sys::OTF2_REGION_ROLE_COLL_OTHER,
        Some(_) => sys::OTF2_REGION_ROLE_COLL_ALL2ALL,
        None if POINT_TO_POINT.contains(&operation(func).as_str()) => {
            sys::OTF2_REGION_ROLE_POINT2POINT
        }
        None if operation(func).starts_with("Neighbor_") => sys::OTF2_REGION_ROLE_COLL_OTHER,
        None => sys::OTF2_REGION_ROLE_FUNCTION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_have_their_otf2_roles_and_operations() {
        assert_eq!(
            collective_op("MPI_Allreduce"),
            Some(sys::OTF2_COLLECTIVE_OP_ALLREDUCE)
        );
        assert_eq!(
            collective_op("MPI_Iallreduce"),
            Some(sys::OTF2_COLLECTIVE_OP_ALLREDUCE)
        );
        assert_eq!(
            collective_op("MPI_Bcast_init"),
            Some(sys::OTF2_COLLECTIVE_OP_BCAST)
        );
        assert_eq!(
            collective_op("MPI_Reduce_scatter_block_c"),
            Some(sys::OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK)
        );
        assert_eq!(collective_op("MPI_Neighbor_alltoall"), None);
        assert_eq!(collective_op("MPI_Win_fence"), None);
        assert_eq!(role("MPI_Barrier"), sys::OTF2_REGION_ROLE_BARRIER);
        assert_eq!(role("MPI_Bcast"), sys::OTF2_REGION_ROLE_COLL_ONE2ALL);
        assert_eq!(role("MPI_Reduce"), sys::OTF2_REGION_ROLE_COLL_ALL2ONE);
        assert_eq!(role("MPI_Alltoallv"), sys::OTF2_REGION_ROLE_COLL_ALL2ALL);
        assert_eq!(role("MPI_Isend"), sys::OTF2_REGION_ROLE_POINT2POINT);
        assert_eq!(role("MPI_Irecv"), sys::OTF2_REGION_ROLE_POINT2POINT);
        assert_eq!(role("MPI_Send_init"), sys::OTF2_REGION_ROLE_POINT2POINT);
        assert_eq!(role("MPI_Iprobe"), sys::OTF2_REGION_ROLE_POINT2POINT);
        assert_eq!(role("MPI_Isendrecv"), sys::OTF2_REGION_ROLE_POINT2POINT);
        assert_eq!(role("MPI_Imrecv"), sys::OTF2_REGION_ROLE_POINT2POINT);
        assert_eq!(role("MPI_Init"), sys::OTF2_REGION_ROLE_FUNCTION);
        assert_eq!(role("MPI_Info_create"), sys::OTF2_REGION_ROLE_FUNCTION);
        assert_eq!(role("MPI_Intercomm_create"), sys::OTF2_REGION_ROLE_FUNCTION);
        assert_eq!(role("MPI_Wait"), sys::OTF2_REGION_ROLE_FUNCTION);
    }
}
