/* ranks: 1-4 */
/* RMA synchronisation modes on a Win_create window: fence (with assertions),
 * Win_lock/Win_unlock (exclusive and shared) with Win_flush, and
 * post-start-complete-wait (generalised active target) with Win_post,
 * Win_start, Win_complete, Win_wait and Win_test. */
#include "common.h"

enum { FENCE_SLOT, COUNTER_SLOT, PSCW_SLOT, PSCW_TEST_SLOT, SLOTS };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int mem[SLOTS] = {0};
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    /* Fence epochs with assertions. */
    int value = payload(rank, 1, 0);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    MPI_Put(&value, 1, MPI_INT, right, FENCE_SLOT, 1, MPI_INT, win);
    MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOSUCCEED, win);
    CHECK_EQ(mem[FENCE_SLOT], payload(left, 1, 0));

    /* Exclusive lock: read-modify-write of rank 0's counter, one rank at a time. */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    int counter = -1;
    MPI_Get(&counter, 1, MPI_INT, 0, COUNTER_SLOT, 1, MPI_INT, win);
    MPI_Win_flush(0, win);
    counter += 1;
    MPI_Put(&counter, 1, MPI_INT, 0, COUNTER_SLOT, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Shared lock: everyone reads the final count. */
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get(&counter, 1, MPI_INT, 0, COUNTER_SLOT, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
    CHECK_EQ(counter, n);

    /* PSCW: I expose my window to my left neighbour and access my right one. */
    MPI_Group world, from_left, to_right;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &from_left);
    MPI_Group_incl(world, 1, &right, &to_right);
    for (int round = 0; round < 2; round++) {
        int slot = round == 0 ? PSCW_SLOT : PSCW_TEST_SLOT;
        value = payload(rank, 2 + round, 0);
        MPI_Win_post(from_left, 0, win);
        MPI_Win_start(to_right, 0, win);
        MPI_Put(&value, 1, MPI_INT, right, slot, 1, MPI_INT, win);
        MPI_Win_complete(win);
        if (round == 0) {
            MPI_Win_wait(win);
        } else {
            int done = 0;
            while (!done)
                MPI_Win_test(win, &done);
        }
        CHECK_EQ(mem[slot], payload(left, 2 + round, 0));
    }
    MPI_Group_free(&from_left);
    MPI_Group_free(&to_right);
    MPI_Group_free(&world);

    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
