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
    communicate_before_crashing();
    if (world_rank() == 1)
        MPI_Abort(MPI_COMM_WORLD, 42);
    int in = -1;
    MPI_Recv(&in, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0; /* not reached */
}
