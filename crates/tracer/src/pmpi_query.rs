//! Questions the tracer asks MPI itself, through PMPI (never traced).

use crate::abi::{MPI_Comm, MPI_SUCCESS};
use crate::objects::CommInfo;
use std::ffi::{c_char, c_int};

/// The caller's rank in `comm`, its size, and whether it is an
/// inter-communicator (then also the remote group's size).
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
    })
}

/// MPI_Get_library_version's text (legal at any time).
pub fn library_version() -> String {
    let mut buf = vec![0 as c_char; crate::abi::MPI_MAX_LIBRARY_VERSION_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: buf holds MPI_MAX_LIBRARY_VERSION_STRING characters.
    if unsafe { crate::pmpi::MPI_Get_library_version()(buf.as_mut_ptr(), &mut len) } != MPI_SUCCESS
    {
        return String::new();
    }
    let bytes: Vec<u8> = buf[..(len.max(0) as usize).min(buf.len())]
        .iter()
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_owned()
}
