/* ranks: 1-4 */
/* One-sided operations in a passive-target epoch (Win_lock_all ...
 * Win_unlock_all) on a Win_allocate window: Put, Get, Accumulate (MPI_SUM,
 * MPI_REPLACE), Get_accumulate (MPI_SUM, MPI_NO_OP), Fetch_and_op,
 * Compare_and_swap, Rput, Rget; completed with Win_flush, Win_flush_local,
 * Win_flush_all, Win_flush_local_all and request Waits. Rank 0's window holds
 * the shared counters; everyone targets it. */
#include "common.h"

enum { PUT_SLOT, ACC_SLOT, GACC_SLOT, FOP_SLOT, CAS_SLOT, RPUT_SLOT, REPLACE_SLOT };

/* Window size in ints. It must stay a multiple of 16 bytes: with several ranks
 * on a node, MPICH 4.0.2 sends RMA on a Win_allocate window of any other size
 * to the wrong address (measured: 28 bytes per rank puts rank 0's Put to rank
 * 1 into rank 0's own window at byte 16). */
#define SLOTS 8

/* Make every rank's earlier RMA visible in every window before reading. */
static void sync_all(MPI_Win win)
{
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
}

/* The values all ranks fetched from a shared counter that each incremented
 * once must be 0 .. n-1 in some order. */
static void check_permutation(int fetched)
{
    int n = world_size(), all[64], seen[64] = {0};
    MPI_Allgather(&fetched, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(all[i] >= 0 && all[i] < n && !seen[all[i]], "fetched %d twice or out of range",
                  all[i]);
        seen[all[i]] = 1;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(SLOTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < SLOTS; i++)
        mem[i] = 0;
    mem[CAS_SLOT] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    /* Put to the right, Get it back from there. */
    int value = payload(rank, 1, 0), got = -1;
    MPI_Put(&value, 1, MPI_INT, right, PUT_SLOT, 1, MPI_INT, win);
    MPI_Win_flush(right, win);
    MPI_Get(&got, 1, MPI_INT, right, PUT_SLOT, 1, MPI_INT, win);
    MPI_Win_flush_local(right, win);
    CHECK_EQ(got, value);
    sync_all(win);
    CHECK_EQ(mem[PUT_SLOT], payload(left, 1, 0));

    /* Accumulate: rank 0's counter ends at 1 + 2 + ... + n. */
    int one_based = rank + 1;
    MPI_Accumulate(&one_based, 1, MPI_INT, 0, ACC_SLOT, 1, MPI_INT, MPI_SUM, win);

    /* Get_accumulate and Fetch_and_op: each adds 1 and sees a distinct old value. */
    int one = 1, old_gacc = -1, old_fop = -1;
    MPI_Get_accumulate(&one, 1, MPI_INT, &old_gacc, 1, MPI_INT, 0, GACC_SLOT, 1, MPI_INT, MPI_SUM,
                       win);
    MPI_Fetch_and_op(&one, &old_fop, MPI_INT, 0, FOP_SLOT, MPI_SUM, win);

    /* Compare_and_swap: exactly one rank replaces the initial -1. */
    int minus_one = -1, old_cas = 0;
    MPI_Compare_and_swap(&rank, &minus_one, &old_cas, MPI_INT, 0, CAS_SLOT, win);

    /* Rput / Rget complete through their requests. */
    MPI_Request req;
    value = payload(rank, 2, 0);
    MPI_Rput(&value, 1, MPI_INT, right, RPUT_SLOT, 1, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE); /* local completion: value may be reused */
    MPI_Win_flush_local_all(win);
    sync_all(win);

    check_permutation(old_gacc);
    check_permutation(old_fop);
    int won = old_cas == -1, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(winners, 1);
    if (rank == 0) {
        CHECK_EQ(mem[ACC_SLOT], n * (n + 1) / 2);
        CHECK_EQ(mem[GACC_SLOT], n);
        CHECK_EQ(mem[FOP_SLOT], n);
        CHECK(mem[CAS_SLOT] >= 0 && mem[CAS_SLOT] < n);
    }
    CHECK_EQ(mem[RPUT_SLOT], payload(left, 2, 0));

    got = -1;
    MPI_Rget(&got, 1, MPI_INT, left, RPUT_SLOT, 1, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK_EQ(got, payload(ring_left(left, n), 2, 0));

    /* Atomic read (MPI_NO_OP) of the accumulated counter; MPI_REPLACE write. */
    int dummy = 0, read = -1;
    MPI_Get_accumulate(&dummy, 1, MPI_INT, &read, 1, MPI_INT, 0, ACC_SLOT, 1, MPI_INT, MPI_NO_OP,
                       win);
    MPI_Win_flush(0, win);
    CHECK_EQ(read, n * (n + 1) / 2);
    value = payload(rank, 3, 0);
    MPI_Accumulate(&value, 1, MPI_INT, right, REPLACE_SLOT, 1, MPI_INT, MPI_REPLACE, win);
    sync_all(win);
    CHECK_EQ(mem[REPLACE_SLOT], payload(left, 3, 0));

    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
