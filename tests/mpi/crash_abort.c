/* ranks: 2-4 */
/* expect: abort 42 */
/* Expected to fail: after some communication, rank 1 calls
 * MPI_Abort(MPI_COMM_WORLD, 42) while the other ranks wait in an MPI_Recv
 * that nobody will match; the launcher kills them and exits non-zero. For
 * tests that the tracer leaves a readable, partial trace behind. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int out = rank, in = -1, sum = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, ring_right(rank, n), 0, &in, 1, MPI_INT, ring_left(rank, n), 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&out, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 42);
    MPI_Recv(&in, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0; /* not reached */
}
