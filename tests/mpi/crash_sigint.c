/* ranks: 1-4 */
/* expect: signal SIGINT */
/* Expected to fail: after some communication every rank sends itself SIGINT
 * (as Ctrl-C would). The launcher reports the signal. For tests of the
 * tracer's SIGINT path. */
#include "common.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int out = rank, in = -1, sum = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, ring_right(rank, n), 0, &in, 1, MPI_INT, ring_left(rank, n), 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&out, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    kill(getpid(), SIGINT);
    pause(); /* the signal is delivered before kill() returns; never woken */
    MPI_Finalize();
    return 0;
}
