/* ranks: 2-4 */
/* A token passed around a ring; one rank computes (busy-waits) before
 * passing it on, so that rank's delay is on the critical path of every
 * round. Each rank adds its rank to the token; rank 0 checks the sum.
 *
 * Usage: critpath_ring [DELAYED_RANK [DELAY_MS [ROUNDS]]]  (default 1 40 3) */
#include "common.h"
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_OK(MPI_Init(&argc, &argv));
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int delayed = argc > 1 ? atoi(argv[1]) : 1;
    double delay = (argc > 2 ? atof(argv[2]) : 40.0) * 1e-3;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    CHECK(delayed >= 0 && delayed < n);
    int left = ring_left(rank, n), right = ring_right(rank, n);
    /* Start together: the ranks' start-up is no part of the ring. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < rounds; round++) {
        int token = 0;
        if (rank == 0) {
            if (rank == delayed)
                busy_wait(delay);
            MPI_OK(MPI_Send(&token, 1, MPI_INT, right, round, MPI_COMM_WORLD));
            MPI_OK(MPI_Recv(&token, 1, MPI_INT, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(token, n * (n - 1) / 2);
        } else {
            MPI_OK(MPI_Recv(&token, 1, MPI_INT, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (rank == delayed)
                busy_wait(delay);
            token += rank;
            MPI_OK(MPI_Send(&token, 1, MPI_INT, right, round, MPI_COMM_WORLD));
        }
    }
    MPI_OK(MPI_Finalize());
    return 0;
}
