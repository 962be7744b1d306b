/* ranks: 1-4 */
/* 2D 5-point Jacobi sweep with a NON-periodic halo exchange on a px x py
 * process grid from MPI_Dims_create: each iteration posts Irecv/Isend to the
 * four neighbours (MPI_PROC_NULL at the domain edges, whose ghost cells keep
 * the boundary value) and completes them with one Waitall; every 10th
 * iteration an MPI_Allreduce sums the field.
 *
 * Usage: halo2d [iterations]   (default 100)
 *
 * Self-check: every rank also runs the same sweep serially on the whole
 * domain. The distributed field must equal it exactly (same operations in the
 * same order), and each Allreduce must match the serial sum. Rank 0 prints one
 * summary line. */
#include "common.h"

#define NX 32 /* interior points per rank, dimension 0 (rows) */
#define NY 32 /* dimension 1 (columns) */
#define BOUNDARY 1.0

/* One Jacobi sweep over the rows x cols interior of u (with a one-cell ghost
 * ring) into v. Shared by the distributed and the serial computation. */
static void sweep(const double *u, double *v, int rows, int cols)
{
    int stride = cols + 2;
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j <= cols; j++)
            v[i * stride + j] = 0.25 * (u[(i - 1) * stride + j] + u[(i + 1) * stride + j] +
                                        u[i * stride + j - 1] + u[i * stride + j + 1]);
}

static double initial(int gi, int gj) { return ((gi * 7 + gj * 13) % 17) / 17.0; }

static double interior_sum(const double *u, int rows, int cols)
{
    double s = 0;
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j <= cols; j++)
            s += u[i * (cols + 2) + j];
    return s;
}

/* rows x cols interior, ghosts at the boundary value, interior from initial(). */
static double *field(int rows, int cols, int gi0, int gj0)
{
    double *u = malloc(sizeof(double) * (rows + 2) * (cols + 2));
    for (int i = 0; i < rows + 2; i++)
        for (int j = 0; j < cols + 2; j++)
            u[i * (cols + 2) + j] = (i == 0 || j == 0 || i == rows + 1 || j == cols + 1)
                                        ? BOUNDARY
                                        : initial(gi0 + i - 1, gj0 + j - 1);
    return u;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    CHECK_MSG(iters >= 0, "iterations must be >= 0");
    int n = world_size();
    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    MPI_Dims_create(n, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    int rank;
    MPI_Comm_rank(grid, &rank);
    MPI_Cart_coords(grid, rank, 2, coords);
    int up, down, left, right;
    MPI_Cart_shift(grid, 0, 1, &up, &down);
    MPI_Cart_shift(grid, 1, 1, &left, &right);

    MPI_Datatype column;
    MPI_Type_vector(NX, 1, NY + 2, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);

    /* Two buffers each, swapped every sweep. Edge ghosts hold BOUNDARY in both
     * and are never received into; inner ghosts are received before use. */
    double *u = field(NX, NY, coords[0] * NX, coords[1] * NY), *v = field(NX, NY, 0, 0);
    int GX = dims[0] * NX, GY = dims[1] * NY;
    double *g = field(GX, GY, 0, 0), *h = field(GX, GY, 0, 0);
#define AT(a, i, j) (&(a)[(i) * (NY + 2) + (j)])

    for (int iter = 0; iter < iters; iter++) {
        /* Tag = direction of travel: 0 towards lower coordinates, 1 higher
         * (+2 for dimension 1). */
        MPI_Request reqs[8];
        MPI_Irecv(AT(u, 0, 1), NY, MPI_DOUBLE, up, 1, grid, &reqs[0]);
        MPI_Irecv(AT(u, NX + 1, 1), NY, MPI_DOUBLE, down, 0, grid, &reqs[1]);
        MPI_Irecv(AT(u, 1, 0), 1, column, left, 3, grid, &reqs[2]);
        MPI_Irecv(AT(u, 1, NY + 1), 1, column, right, 2, grid, &reqs[3]);
        MPI_Isend(AT(u, 1, 1), NY, MPI_DOUBLE, up, 0, grid, &reqs[4]);
        MPI_Isend(AT(u, NX, 1), NY, MPI_DOUBLE, down, 1, grid, &reqs[5]);
        MPI_Isend(AT(u, 1, 1), 1, column, left, 2, grid, &reqs[6]);
        MPI_Isend(AT(u, 1, NY), 1, column, right, 3, grid, &reqs[7]);
        MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE);

        sweep(u, v, NX, NY);
        double *t = u;
        u = v;
        v = t;

        sweep(g, h, GX, GY);
        t = g;
        g = h;
        h = t;

        if (iter % 10 == 9) {
            double local = interior_sum(u, NX, NY), total = 0, serial = interior_sum(g, GX, GY);
            MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, grid);
            CHECK_MSG(total - serial < 1e-9 * serial && serial - total < 1e-9 * serial,
                      "iteration %d: sum %.17g, serial %.17g", iter, total, serial);
        }
    }

    for (int i = 1; i <= NX; i++)
        for (int j = 1; j <= NY; j++) {
            double serial = g[(coords[0] * NX + i) * (GY + 2) + coords[1] * NY + j];
            CHECK_MSG(*AT(u, i, j) == serial, "point (%d,%d): %.17g, serial %.17g", i, j,
                      *AT(u, i, j), serial);
        }
    if (rank == 0)
        printf("halo2d: %dx%d ranks, %dx%d points, %d iterations, sum %.6f\n", dims[0], dims[1], GX,
               GY, iters, interior_sum(g, GX, GY));

    free(u);
    free(v);
    free(g);
    free(h);
    MPI_Type_free(&column);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
