/* ranks: 2-4 */
/* expect: abort 42 */
/* Expected to fail: every rank runs N iterations (argv[1], default 1000) of
 * collectives whose arguments change with the iteration, then rank 1 calls
 * MPI_Abort(MPI_COMM_WORLD, 42) while the other ranks wait in an MPI_Recv that
 * nobody will match; the launcher kills them (SIGKILL). Every call before the
 * abort has the same arguments on every rank (no ranks among them), so each
 * killed rank's calls are rank 1's without its MPI_Abort. An MPI_Barrier
 * follows every B-th iteration (argv[2], default 10; 0: none; -1: the
 * iterations k*k - 1, so that the calls never repeat with one period and the
 * journal records them rather than counting repetitions). For tests that a
 * long run's crash journal, across checkpoints, loses nothing. */
#include "common.h"

static int is_square(long n)
{
    long k = 0;
    while (k * k < n)
        k++;
    return k * k == n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    long iterations = argc > 1 ? atol(argv[1]) : 1000;
    long barrier_every = argc > 2 ? atol(argv[2]) : 10;
    int rank = world_rank(), n = world_size();
    int in[3] = {1, 2, 3}, sum[3] = {0, 0, 0};
    for (long i = 0; i < iterations; i++) {
        int count = (int)(i % 3) + 1;
        MPI_Allreduce(in, sum, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK_EQ(sum[count - 1], count * n);
        int barrier = barrier_every > 0 ? i % barrier_every == barrier_every - 1
                                         : barrier_every < 0 && is_square(i + 1);
        if (barrier)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 42);
    MPI_Recv(in, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0; /* not reached */
}
