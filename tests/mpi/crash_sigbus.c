/* ranks: 1-4 */
/* expect: signal SIGBUS */
/* Expected to fail: after some communication every rank reads a shared
 * mapping past the end of its (empty) file, a real SIGBUS (not raise()). The
 * launcher reports the signal. For tests of the tracer's fatal-signal path. */
#include "common.h"
#include <sys/mman.h>
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
    FILE *empty = tmpfile();
    CHECK(empty != NULL);
    volatile int *past_the_end =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(empty), 0);
    CHECK(past_the_end != MAP_FAILED);
    *past_the_end = sum;
    MPI_Finalize();
    return 0; /* not reached */
}
