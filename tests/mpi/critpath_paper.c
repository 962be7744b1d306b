/* ranks: 2-4 */
/* The synthetic collective test of the critical-path paper (its §5.3):
 * four ranks (any from 2 work), three calls each after MPI_Init, rank 0 arriving late at the
 * collective so that ranks 1-3 wait for it. Here: a barrier, rank 0
 * computing (busy-waiting) DELAY_MS, an MPI_Allreduce whose sum is
 * checked, and a barrier.
 *
 * Usage: critpath_paper [DELAY_MS]  (default 100) */
#include "common.h"
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_OK(MPI_Init(&argc, &argv));
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    double delay = (argc > 1 ? atof(argv[1]) : 100.0) * 1e-3;
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        busy_wait(delay);
    int mine = rank + 1, sum = 0;
    MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, n * (n + 1) / 2);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Finalize());
    return 0;
}
