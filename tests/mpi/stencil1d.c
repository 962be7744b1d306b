/* ranks: 1-4 */
/* A 1D domain decomposition, the shape of program whose benchmark
 * `gen-bench --ranks N` makes for another number of ranks: every rank
 * exchanges halos with its left and right neighbours (MPI_PROC_NULL at the
 * ends of the line), passes a token once around a ring (periodic
 * neighbours), gathers every rank's block on rank 0 with MPI_Gatherv
 * (per-rank counts and evenly spaced displacements) and exchanges a block
 * with every rank with MPI_Alltoallv; every 5th iteration an MPI_Allreduce
 * sums the field.
 *
 * Usage: stencil1d [iterations]   (default 20)
 *
 * Self-check: ghost cells hold the neighbours' edge values, the token
 * comes back with the sum of the ranks, the gathered blocks and the
 * all-to-all blocks name their senders, and the sum is the serial sum. */
#include "common.h"

#define N 64 /* points per rank */

int main(int argc, char **argv)
{
    MPI_OK(MPI_Init(&argc, &argv));
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    CHECK_MSG(iters >= 0, "iterations must be >= 0");
    int rank = world_rank(), n = world_size();
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < n - 1 ? rank + 1 : MPI_PROC_NULL;

    double *u = calloc(N + 2, sizeof(double));
    double *all = calloc((size_t)N * n, sizeof(double));
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
    int *out = malloc(sizeof(int) * 2 * n), *in = malloc(sizeof(int) * 2 * n);
    int *blocks = malloc(sizeof(int) * n), *offsets = malloc(sizeof(int) * n);
    for (int r = 0; r < n; r++) {
        counts[r] = N;
        displs[r] = r * N;
        blocks[r] = 2;
        offsets[r] = 2 * r;
    }
    for (int i = 1; i <= N; i++)
        u[i] = rank * N + i;

    for (int iter = 0; iter < iters; iter++) {
        MPI_OK(MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[N + 1], 1, MPI_DOUBLE, right, 0,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Sendrecv(&u[N], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (left != MPI_PROC_NULL)
            CHECK_EQ(u[0], (double)(left * N + N));
        if (right != MPI_PROC_NULL)
            CHECK_EQ(u[N + 1], (double)(right * N + 1));

        int token = rank, got = -1;
        MPI_OK(MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % n, 2, &got, 1, MPI_INT,
                            (rank + n - 1) % n, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(got, (rank + n - 1) % n);

        MPI_OK(MPI_Gatherv(&u[1], N, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                           MPI_COMM_WORLD));
        if (rank == 0)
            for (int r = 0; r < n; r++)
                CHECK_EQ(all[r * N], (double)(r * N + 1));

        for (int r = 0; r < n; r++) {
            out[2 * r] = rank;
            out[2 * r + 1] = r;
        }
        MPI_OK(MPI_Alltoallv(out, blocks, offsets, MPI_INT, in, blocks, offsets, MPI_INT,
                             MPI_COMM_WORLD));
        for (int r = 0; r < n; r++)
            CHECK(in[2 * r] == r && in[2 * r + 1] == rank);

        if (iter % 5 == 4) {
            double local = 0, total = 0;
            for (int i = 1; i <= N; i++)
                local += u[i];
            MPI_OK(MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
            double points = (double)N * n;
            CHECK_EQ(total, points * (points + 1) / 2);
        }
    }

    free(u);
    free(all);
    free(counts);
    free(displs);
    free(out);
    free(in);
    free(blocks);
    free(offsets);
    MPI_OK(MPI_Finalize());
    return 0;
}
