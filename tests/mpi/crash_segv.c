/* ranks: 1-4 */
/* expect: signal SIGSEGV */
/* Expected to fail: after some communication every rank writes through a
 * NULL pointer (a real fault, not raise()). The launcher reports the signal.
 * For tests of the tracer's fatal-signal path. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int out = rank, in = -1, sum = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, ring_right(rank, n), 0, &in, 1, MPI_INT, ring_left(rank, n), 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&out, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Both volatile: the compiler can neither see that the pointer is NULL nor
     * drop the store as dead. */
    volatile int *volatile nowhere = NULL;
    *nowhere = sum;
    MPI_Finalize();
    return 0; /* not reached */
}
