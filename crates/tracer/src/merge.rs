//! The merge at MPI_Finalize: every rank's trace becomes one file.
//!
//! In round k (k = 0, 1, ...) a rank whose number is an odd multiple of
//! 2^k sends everything it holds to the rank 2^k below it and is done; the
//! others receive from the rank 2^k above (if there is one) and absorb it
//! (`mpigram_trace::Trace::absorb`: signature tables united, terminals
//! renumbered, identical grammars stored once). After log2(P) rounds rank
//! 0 holds the whole run; it runs the cross-rank grammar pass and writes
//! `trace.mgr`. Each rank's work grows with the distinct behaviour it
//! receives, not with P.
//!
//! Every rank takes part, even one whose recording was turned off by an
//! internal error (it sends an empty part and forwards what it receives),
//! or the ranks below it would wait forever. The messages run on the
//! tracer's own duplicate of MPI_COMM_WORLD, all completed before
//! PMPI_Finalize. If anything fails — a part that does not decode, a merge
//! error, rank 0 unable to write — every rank writes its own `rank<N>.mgr`
//! instead, so nothing is lost; the tools read either.
//!
//! A rank that wrote parts of its trace out during the run (budget.rs)
//! merges only its last part: its part files stay in the directory, and
//! the readers put them back in front of its calls (the rank's calls in
//! `trace.mgr` say how many precede them).
//!
//! `MPIGRAM_MERGE=0` keeps one file per rank; `MPIGRAM_VERBOSE=1` prints
//! how long each rank's part of finalize took, and how many parts it wrote.

use crate::abi::{Handle, MPI_Comm, MPI_SUCCESS};
use crate::front::front;
use mpigram_format::Codec;
use mpigram_trace::{Ending, RankTrace, Trace};
use std::ffi::{c_int, c_void};

/// Largest message of one MPI_Send (an int count of bytes).
const CHUNK: usize = 1 << 30;

/// Merges all ranks' traces into one file; called by every rank in
/// MPI_Finalize before PMPI_Finalize. The tracer's own work, written out:
/// its allocations are not the application's heap blocks (alloc.rs would
/// track each, and the merge allocates one per signature), nor are the
/// blocks it frees (the free hook would look each up among the
/// application's: 2,500 instructions a signature of a rank's last part).
pub fn at_finalize() {
    crate::call::writing_out(merge_ranks);
}

fn merge_ranks() {
    if crate::call::sits_out() {
        return;
    }
    let started = std::time::Instant::now();
    let own = crate::tracer::with(|t| t.finish());
    let rank = own.as_ref().map_or(0, |t| t.meta.rank);
    // Not where some rank does not run the tracer (census.rs).
    let merge =
        crate::census::whole_job() && std::env::var_os("MPIGRAM_MERGE").is_none_or(|v| v != "0");
    let comm = if merge { dup_world() } else { None };
    let Some(comm) = comm else {
        write_own(own.as_ref());
        return;
    };
    let synced = started.elapsed();
    // The crash journal stays until the calls are in a trace file.
    if merge_over(comm, own) {
        crate::tracer::with(|t| t.discard_journal());
    } else {
        // The trace went into the merge: taken again, as it is now.
        crate::tracer::with(|t| t.write(Ending::Finalized));
    }
    let mut comm = comm;
    // SAFETY: the tracer's own communicator, freed once.
    unsafe { crate::pmpi::MPI_Comm_free()((&raw mut comm).cast()) };
    if std::env::var_os("MPIGRAM_VERBOSE").is_some_and(|v| v != "0") {
        let (parts, peak) =
            crate::tracer::with(|t| (t.parts, t.recorder.peak_bytes)).unwrap_or_default();
        crate::message::say(&format!(
            "rank {rank}: finalize took {:.1} ms ({:.1} ms until every rank arrived); {parts} parts written out, signature table, grammar and per-call times at most {peak} bytes",
            started.elapsed().as_secs_f64() * 1e3,
            synced.as_secs_f64() * 1e3
        ));
    }
}

/// This rank's own `rank<N>.mgr` when there is no merge: the trace taken
/// at finalize (none if recording was turned off).
fn write_own(own: Option<&RankTrace>) {
    let (Some(own), Some(dir)) = (own, crate::tracer::create_output_dir()) else {
        return;
    };
    crate::tracer::with(|t| t.save(&dir, own));
}

fn dup_world() -> Option<MPI_Comm> {
    let mut comm = Handle(0);
    // SAFETY: MPI is initialised (MPI_Finalize has not run yet).
    let rc = unsafe { crate::pmpi::MPI_Comm_dup()(front().MPI_COMM_WORLD, comm.out()) };
    (rc == MPI_SUCCESS).then_some(comm)
}

/// The merge rounds over `comm`; whether `trace.mgr` was written (the same
/// answer on every rank).
fn merge_over(comm: MPI_Comm, own: Option<RankTrace>) -> bool {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: a valid communicator, local outputs.
    unsafe {
        crate::pmpi::MPI_Comm_rank()(comm, &mut rank);
        crate::pmpi::MPI_Comm_size()(comm, &mut size);
    }
    let mut part = own.map(Trace::from_rank);
    let mut ok = true;
    let mut step = 1;
    while step < size {
        if rank % (2 * step) != 0 {
            let bytes = match part.take().map(|p| p.to_bytes(Codec::Raw)) {
                Some(Ok(bytes)) => bytes,
                Some(Err(e)) => {
                    crate::message::say(&format!(
                        "cannot encode the trace of rank {rank}'s group: {e}"
                    ));
                    ok = false;
                    Vec::new()
                }
                None => Vec::new(),
            };
            ok &= send(&bytes, rank - step, comm);
            break;
        }
        if rank + step < size {
            match recv(rank + step, comm) {
                Some(bytes) if bytes.is_empty() => {}
                Some(bytes) => {
                    let name = format!("the traces of ranks {}..", rank + step);
                    let result = Trace::from_bytes(bytes, &name)
                        .map_err(|e| e.to_string())
                        .and_then(|t| match &mut part {
                            Some(p) => p.absorb(t),
                            None => {
                                part = Some(t);
                                Ok(())
                            }
                        });
                    if let Err(e) = result {
                        crate::message::say(&format!("merging {name} failed: {e}"));
                        ok = false;
                    }
                }
                None => ok = false,
            }
        }
        step *= 2;
    }
    // Every rank learns whether the merge held everything ...
    let all_ok = all(ok, comm);
    // ... and rank 0 writes it.
    let mut written = c_int::from(false);
    if rank == 0 && all_ok {
        written = c_int::from(part.is_some_and(write_run));
    }
    // SAFETY: an int broadcast on the tracer's communicator.
    let rc =
        unsafe { crate::pmpi::MPI_Bcast()((&raw mut written).cast(), 1, front().MPI_INT, 0, comm) };
    rc == MPI_SUCCESS && written != 0
}

/// Rank 0: the final grammar pass, then `trace.mgr`.
fn write_run(mut trace: Trace) -> bool {
    if let Err(e) = trace.share() {
        crate::message::say(&format!("the final merge pass failed: {e}"));
        return false;
    }
    let Some(dir) = crate::tracer::create_output_dir() else {
        return false;
    };
    trace.rank_stats = crate::tracer::rank_stats_from_env();
    match trace.write(&dir) {
        Ok(_) => true,
        Err(e) => {
            crate::message::say(&format!("cannot write the trace: {e}"));
            false
        }
    }
}

/// Whether `ok` holds on every rank.
fn all(ok: bool, comm: MPI_Comm) -> bool {
    let mine = c_int::from(ok);
    let mut min: c_int = 0;
    // SAFETY: one int each way.
    let rc = unsafe {
        crate::pmpi::MPI_Allreduce()(
            (&raw const mine).cast(),
            (&raw mut min).cast(),
            1,
            front().MPI_INT,
            front().MPI_MIN,
            comm,
        )
    };
    rc == MPI_SUCCESS && min != 0
}

/// Sends `bytes` (its length first, then chunks).
fn send(bytes: &[u8], to: c_int, comm: MPI_Comm) -> bool {
    let len = bytes.len() as u64;
    // SAFETY: sends from live buffers of the given sizes.
    unsafe {
        let send = crate::pmpi::MPI_Send();
        if send(
            (&raw const len).cast(),
            1,
            front().MPI_UINT64_T,
            to,
            0,
            comm,
        ) != MPI_SUCCESS
        {
            return false;
        }
        bytes.chunks(CHUNK).all(|chunk| {
            send(
                chunk.as_ptr().cast::<c_void>(),
                chunk.len() as c_int,
                front().MPI_BYTE,
                to,
                0,
                comm,
            ) == MPI_SUCCESS
        })
    }
}

/// Receives what [`send`] sent.
fn recv(from: c_int, comm: MPI_Comm) -> Option<Vec<u8>> {
    let mut len = 0u64;
    // SAFETY: receives into live buffers of the given sizes.
    unsafe {
        let recv = crate::pmpi::MPI_Recv();
        let status = std::ptr::without_provenance_mut(front().status_ignore);
        if recv(
            (&raw mut len).cast(),
            1,
            front().MPI_UINT64_T,
            from,
            0,
            comm,
            status,
        ) != MPI_SUCCESS
        {
            return None;
        }
        let mut bytes = vec![0u8; usize::try_from(len).ok()?];
        for chunk in bytes.chunks_mut(CHUNK) {
            let rc = recv(
                chunk.as_mut_ptr().cast(),
                chunk.len() as c_int,
                front().MPI_BYTE,
                from,
                0,
                comm,
                status,
            );
            if rc != MPI_SUCCESS {
                return None;
            }
        }
        Some(bytes)
    }
}
