/* ranks: 2-4 */
/* Communicator ids agreed across ranks. The world is split into even and
 * odd ranks, and only the odd half creates two more communicators (kept
 * alive), so the halves hold different numbers of communicators. Then every
 * rank creates communicators with every kind of creating call (dup, split,
 * split_type, create, create_group, idup, Cart_create, Cart_sub,
 * Graph_create, Dist_graph_create_adjacent, Intercomm_create,
 * Intercomm_merge) and calls MPI_Barrier on each new one: the tracer must
 * give each new communicator the same id on every member, so the Barrier
 * calls record equal signatures on every rank. Finally a communicator is
 * created and freed in a loop (its id is reused: one signature). */
#include "common.h"

static void barrier_and_free(MPI_Comm *c)
{
    MPI_Barrier(*c);
    MPI_Comm_free(c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int odd = rank % 2;

    MPI_Comm half, extra[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Comm_split(MPI_COMM_WORLD, odd, rank, &half);
    if (odd) {
        MPI_Comm_dup(half, &extra[0]);
        MPI_Comm_dup(half, &extra[1]);
    }

    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    barrier_and_free(&c);

    MPI_Comm_split(MPI_COMM_WORLD, 0, n - rank, &c);
    barrier_and_free(&c);

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c);
    barrier_and_free(&c);

    MPI_Group world_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_create(MPI_COMM_WORLD, world_group, &c);
    barrier_and_free(&c);
    MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 5, &c);
    barrier_and_free(&c);
    MPI_Group_free(&world_group);

    MPI_Request req;
    MPI_Comm_idup(MPI_COMM_WORLD, &c, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    barrier_and_free(&c);

    int dims[1] = {n}, periods[1] = {1}, remain[1] = {1};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Cart_sub(cart, remain, &c);
    barrier_and_free(&c);
    barrier_and_free(&cart);

    /* A ring: node i's neighbours are i-1 and i+1. */
    int index[64], edges[128];
    for (int i = 0; i < n; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + n - 1) % n;
        edges[2 * i + 1] = (i + 1) % n;
    }
    MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &c);
    barrier_and_free(&c);

    int sources[1] = {(rank + n - 1) % n}, dests[1] = {(rank + 1) % n};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, MPI_UNWEIGHTED, 1, dests,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
    barrier_and_free(&c);

    MPI_Comm inter, merged;
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, odd ? 0 : 1, 3, &inter);
    MPI_Intercomm_merge(inter, odd, &merged);
    barrier_and_free(&merged);
    barrier_and_free(&inter);

    for (int i = 0; i < 10; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        barrier_and_free(&c);
    }

    for (int i = 0; i < 2; i++)
        if (extra[i] != MPI_COMM_NULL)
            MPI_Comm_free(&extra[i]);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
