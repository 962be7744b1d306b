/* ranks: 1-4 */
/* One call signature after long computation at one place of the program
 * and after short computation at another, as CG of the NAS benchmarks
 * sends the same message after a matrix-vector product and after a dot
 * product: each iteration makes MPI_Comm_rank, computes LONG ms, joins an
 * MPI_Allreduce of one int, makes MPI_Comm_size, computes SHORT ms and
 * joins the same MPI_Allreduce. Start-up computes START ms before the
 * loop. The Allreduce's sum is checked.
 *
 * Usage: phases [ITERATIONS [LONG_MS [SHORT_MS [START_MS]]]]  (default 5 20 1 50) */
#include "common.h"
#include <stdlib.h>

/* The same call at both places (same buffers: one signature). */
static void allreduce(int rank, int n, int iteration)
{
    static int mine, sum;
    mine = rank + iteration;
    sum = -1;
    MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sum, n * (n - 1) / 2 + n * iteration);
}

int main(int argc, char **argv)
{
    MPI_OK(MPI_Init(&argc, &argv));
    int iterations = argc > 1 ? atoi(argv[1]) : 5;
    double long_s = (argc > 2 ? atof(argv[2]) : 20.0) * 1e-3;
    double short_s = (argc > 3 ? atof(argv[3]) : 1.0) * 1e-3;
    double start_s = (argc > 4 ? atof(argv[4]) : 50.0) * 1e-3;
    CHECK(iterations > 0);
    int rank = world_rank(), n = world_size();
    busy_wait(start_s);
    for (int i = 0; i < iterations; i++) {
        int r = -1, size = -1;
        MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &r));
        busy_wait(long_s);
        allreduce(rank, n, i);
        MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
        busy_wait(short_s);
        allreduce(rank, n, i);
        CHECK_EQ(r, rank);
        CHECK_EQ(size, n);
    }
    MPI_OK(MPI_Finalize());
    return 0;
}
