/* ranks: 2 */
/* Repeated request windows between calls that are all new: each iteration
 * posts an MPI_Irecv and an MPI_Isend to the partner and completes both with
 * one MPI_Waitall (the same signatures every time, which the tracer recalls
 * from its memos), then makes one MPI_Sendrecv whose tag is the iteration
 * (a signature never seen before). Under a small MPIGRAM_MEMORY the tracer
 * writes parts while the memos are warm (crates/tracer/tests/memory.rs).
 *
 * Usage: spill_requests [iterations=100]
 *
 * Self-check: every value received names its sender and iteration. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    int iterations = argc > 1 ? atoi(argv[1]) : 100;
    int peer = 1 - rank;
    for (int i = 0; i < iterations; i++) {
        long out = 1000L * rank + i, in = -1, out2 = out + 1, in2 = -1;
        MPI_Request r[2];
        MPI_Irecv(&in, 1, MPI_LONG, peer, 7, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&out, 1, MPI_LONG, peer, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        CHECK(in == 1000L * peer + i);
        MPI_Sendrecv(&out2, 1, MPI_LONG, peer, 100 + i, &in2, 1, MPI_LONG, peer, 100 + i,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in2 == 1000L * peer + i + 1);
    }
    MPI_Finalize();
    return 0;
}
