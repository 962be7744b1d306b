/* ranks: 1-4 */
/* 3D 7-point Jacobi sweep with a PERIODIC halo exchange on a px x py x pz
 * process grid from MPI_Dims_create: each iteration posts Irecv/Isend of the
 * six faces (subarray datatypes) and completes them with one Waitall; every
 * 10th iteration an MPI_Allreduce sums the field. Along a dimension with one
 * or two ranks a rank is its own or its only neighbour on both sides; tags
 * (the direction of travel) keep the messages apart.
 *
 * Usage: halo3d [iterations]   (default 100)
 *
 * Self-check as in halo2d.c: a serial sweep of the whole periodic domain on
 * every rank must match exactly. Rank 0 prints one summary line. */
#include "common.h"

#define N 12 /* interior points per rank along each dimension */

/* Index into a box with a one-cell ghost layer, interior extents e[0..2]. */
static inline int at(const int *e, int i, int j, int k)
{
    return (i * (e[1] + 2) + j) * (e[2] + 2) + k;
}

/* One 7-point sweep over the interior of u into v. */
static void sweep(const double *u, double *v, const int *e)
{
    int si = (e[1] + 2) * (e[2] + 2), sj = e[2] + 2;
    for (int i = 1; i <= e[0]; i++)
        for (int j = 1; j <= e[1]; j++)
            for (int k = 1; k <= e[2]; k++) {
                int c = at(e, i, j, k);
                v[c] = (u[c - si] + u[c + si] + u[c - sj] + u[c + sj] + u[c - 1] + u[c + 1]) *
                       (1.0 / 6.0);
            }
}

static double initial(int gi, int gj, int gk) { return ((gi * 7 + gj * 13 + gk * 5) % 23) / 23.0; }

static double *box(const int *e, const int *origin)
{
    double *u = calloc((size_t)(e[0] + 2) * (e[1] + 2) * (e[2] + 2), sizeof(double));
    for (int i = 1; i <= e[0]; i++)
        for (int j = 1; j <= e[1]; j++)
            for (int k = 1; k <= e[2]; k++)
                u[at(e, i, j, k)] =
                    initial(origin[0] + i - 1, origin[1] + j - 1, origin[2] + k - 1);
    return u;
}

static double interior_sum(const double *u, const int *e)
{
    double s = 0;
    for (int i = 1; i <= e[0]; i++)
        for (int j = 1; j <= e[1]; j++)
            for (int k = 1; k <= e[2]; k++)
                s += u[at(e, i, j, k)];
    return s;
}

/* Serial periodic boundary: copy opposite interior faces into the ghosts. */
static void wrap(double *g, const int *e)
{
    for (int i = 0; i <= e[0] + 1; i++)
        for (int j = 0; j <= e[1] + 1; j++)
            for (int k = 0; k <= e[2] + 1; k++) {
                int w[3] = {i, j, k};
                int ghost = 0;
                for (int d = 0; d < 3; d++) {
                    if (w[d] == 0) {
                        w[d] = e[d];
                        ghost = 1;
                    } else if (w[d] == e[d] + 1) {
                        w[d] = 1;
                        ghost = 1;
                    }
                }
                if (ghost)
                    g[at(e, i, j, k)] = g[at(e, w[0], w[1], w[2])];
            }
}

/* Face of the local box along dimension d at plane index p (0..N+1). */
static MPI_Datatype face(int d, int p)
{
    int sizes[3] = {N + 2, N + 2, N + 2}, sub[3] = {N, N, N}, starts[3] = {1, 1, 1};
    sub[d] = 1;
    starts[d] = p;
    MPI_Datatype t;
    MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    CHECK_MSG(iters >= 0, "iterations must be >= 0");
    int n = world_size();
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, coords[3];
    MPI_Dims_create(n, 3, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &grid);
    int rank;
    MPI_Comm_rank(grid, &rank);
    MPI_Cart_coords(grid, rank, 3, coords);

    int lo[3], hi[3];
    MPI_Datatype send_lo[3], send_hi[3], recv_lo[3], recv_hi[3];
    for (int d = 0; d < 3; d++) {
        MPI_Cart_shift(grid, d, 1, &lo[d], &hi[d]);
        send_lo[d] = face(d, 1);
        send_hi[d] = face(d, N);
        recv_lo[d] = face(d, 0);
        recv_hi[d] = face(d, N + 1);
    }

    int e[3] = {N, N, N}, origin[3], ge[3], zero[3] = {0, 0, 0};
    for (int d = 0; d < 3; d++) {
        origin[d] = coords[d] * N;
        ge[d] = dims[d] * N;
    }
    double *u = box(e, origin), *v = box(e, origin);
    double *g = box(ge, zero), *h = box(ge, zero);

    for (int iter = 0; iter < iters; iter++) {
        /* Tag 2d: travelling to lower coordinates in dimension d; 2d+1: higher. */
        MPI_Request reqs[12];
        int r = 0;
        for (int d = 0; d < 3; d++) {
            MPI_Irecv(u, 1, recv_lo[d], lo[d], 2 * d + 1, grid, &reqs[r++]);
            MPI_Irecv(u, 1, recv_hi[d], hi[d], 2 * d, grid, &reqs[r++]);
        }
        for (int d = 0; d < 3; d++) {
            MPI_Isend(u, 1, send_lo[d], lo[d], 2 * d, grid, &reqs[r++]);
            MPI_Isend(u, 1, send_hi[d], hi[d], 2 * d + 1, grid, &reqs[r++]);
        }
        MPI_Waitall(12, reqs, MPI_STATUSES_IGNORE);
        sweep(u, v, e);
        double *t = u;
        u = v;
        v = t;

        wrap(g, ge);
        sweep(g, h, ge);
        t = g;
        g = h;
        h = t;

        if (iter % 10 == 9) {
            double local = interior_sum(u, e), total = 0, serial = interior_sum(g, ge);
            MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, grid);
            CHECK_MSG(total - serial < 1e-9 * serial && serial - total < 1e-9 * serial,
                      "iteration %d: sum %.17g, serial %.17g", iter, total, serial);
        }
    }

    for (int i = 1; i <= N; i++)
        for (int j = 1; j <= N; j++)
            for (int k = 1; k <= N; k++) {
                double mine = u[at(e, i, j, k)];
                double serial = g[at(ge, origin[0] + i, origin[1] + j, origin[2] + k)];
                CHECK_MSG(mine == serial, "point (%d,%d,%d): %.17g, serial %.17g", i, j, k, mine,
                          serial);
            }
    if (rank == 0)
        printf("halo3d: %dx%dx%d ranks, %dx%dx%d points, %d iterations, sum %.6f\n", dims[0],
               dims[1], dims[2], ge[0], ge[1], ge[2], iters, interior_sum(g, ge));

    for (int d = 0; d < 3; d++) {
        MPI_Type_free(&send_lo[d]);
        MPI_Type_free(&send_hi[d]);
        MPI_Type_free(&recv_lo[d]);
        MPI_Type_free(&recv_hi[d]);
    }
    free(u);
    free(v);
    free(g);
    free(h);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
