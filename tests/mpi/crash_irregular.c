/* ranks: 2-4 */
/* expect: abort 42 */
/* Expected to fail: every rank runs N iterations (argv[1], default 1000) of a
 * ring MPI_Sendrecv whose tag is the iteration number (every call a signature
 * never seen before, as in irregular.c), then rank 1 calls
 * MPI_Abort(MPI_COMM_WORLD, 42) while the other ranks wait in an MPI_Recv that
 * nobody will match; the launcher kills them (SIGKILL). For tests that a rank
 * killed after writing parts of its trace out (a small MPIGRAM_MEMORY) is
 * recovered whole: its parts, its crash journal's checkpoint and tail. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    long iterations = argc > 1 ? atol(argv[1]) : 1000;
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    for (long i = 0; i < iterations; i++) {
        int tag = (int)i + 1;
        long long out = i * n + rank, in = -1;
        MPI_Sendrecv(&out, 1, MPI_LONG_LONG, right, tag, &in, 1, MPI_LONG_LONG, left, tag,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_MSG(in == i * n + left, "iteration %ld: received %lld from rank %d", i, in, left);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 42);
    int dummy;
    MPI_Recv(&dummy, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0; /* not reached */
}
