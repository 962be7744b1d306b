/* ranks: 2-4 */
/* Calls with known gaps and lengths, for per-call timing: each iteration
 * computes for 0 to 80 microseconds (cycling), then rank 0 sends rank 1 a
 * message (rank 1 waits for it in a blocking receive), every rank passes
 * a value round the ring, and all reduce. Argument: iterations (200). */
#include "common.h"
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int iterations = argc > 1 ? atoi(argv[1]) : 200;
    int right = ring_right(rank, n), left = ring_left(rank, n);
    for (int i = 0; i < iterations; i++) {
        busy_wait(20e-6 * (i % 5));
        if (rank == 0)
            MPI_OK(MPI_Send(&i, 1, MPI_INT, 1, 7, MPI_COMM_WORLD));
        else if (rank == 1) {
            int got = -1;
            MPI_OK(MPI_Recv(&got, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(got, i);
        }
        int out = rank * 1000 + i, in = -1;
        MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, right, 8, &in, 1, MPI_INT, left, 8, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        CHECK_EQ(in, left * 1000 + i);
        int sum = 0;
        MPI_OK(MPI_Allreduce(&i, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK_EQ(sum, i * n);
    }
    MPI_Finalize();
    return 0;
}
