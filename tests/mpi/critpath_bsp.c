/* ranks: 2-4 */
/* A bulk-synchronous loop: every iteration each rank computes (busy-waits)
 * then joins an MPI_Allreduce; one rank computes much longer than the
 * others, so its computation makes up the critical path. The Allreduce's
 * sum is checked. A barrier before the loop aligns the ranks' start.
 *
 * Usage: critpath_bsp [SLOW_RANK [SLOW_MS [ITERATIONS]]]  (default: last rank, 20, 5;
 * the other ranks compute 2 ms) */
#include "common.h"
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_OK(MPI_Init(&argc, &argv));
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int slow = argc > 1 ? atoi(argv[1]) : n - 1;
    double slow_time = (argc > 2 ? atof(argv[2]) : 20.0) * 1e-3;
    int iterations = argc > 3 ? atoi(argv[3]) : 5;
    CHECK(slow >= 0 && slow < n);
    /* Start together: the ranks' start-up is no part of the loop. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < iterations; i++) {
        busy_wait(rank == slow ? slow_time : 2e-3);
        int mine = rank + i, sum = -1;
        MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK_EQ(sum, n * (n - 1) / 2 + n * i);
    }
    MPI_OK(MPI_Finalize());
    return 0;
}
