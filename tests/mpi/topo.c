/* ranks: 1-4 */
/* needs: mpi4 */
/* Process topologies: Dims_create, Cart_create (periodic in x, not in y),
 * Cart_coords/Cart_rank/Cart_get/Cartdim_get, Cart_shift, Cart_sub;
 * Graph_create with Graph_neighbors(_count)/Graphdims_get; Dist_graph_create
 * and Dist_graph_create_adjacent (a directed ring) with Dist_graph_neighbors;
 * Topo_test; and the neighbourhood collectives (blocking, non-blocking and
 * persistent) on those topologies. */
#include "common.h"

#define NONE (-1)

/* Neighbor_allgather on a 2D Cartesian communicator receives, per dimension,
 * from the -1 then the +1 neighbour; MPI_PROC_NULL slots stay untouched. */
static void check_cart_allgather(MPI_Comm cart, const int *recv)
{
    for (int d = 0; d < 2; d++) {
        int src, dst;
        MPI_Cart_shift(cart, d, 1, &src, &dst);
        CHECK_EQ(recv[2 * d], src == MPI_PROC_NULL ? NONE : src);
        CHECK_EQ(recv[2 * d + 1], dst == MPI_PROC_NULL ? NONE : dst);
    }
}

static void cartesian(int rank, int n)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0}, coords[2];
    MPI_Dims_create(n, 2, dims);
    CHECK_EQ(dims[0] * dims[1], n);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int kind, ndims, r;
    MPI_Topo_test(cart, &kind);
    CHECK_EQ(kind, MPI_CART);
    MPI_Cartdim_get(cart, &ndims);
    CHECK_EQ(ndims, 2);
    MPI_Cart_coords(cart, rank, 2, coords);
    MPI_Cart_rank(cart, coords, &r);
    CHECK_EQ(r, rank);                               /* no reordering */
    CHECK_EQ(rank, coords[0] * dims[1] + coords[1]); /* row-major */
    int gdims[2], gperiods[2], gcoords[2];
    MPI_Cart_get(cart, 2, gdims, gperiods, gcoords);
    CHECK(gdims[0] == dims[0] && gperiods[0] == 1 && gperiods[1] == 0);
    CHECK(gcoords[0] == coords[0] && gcoords[1] == coords[1]);

    int src, dst, c[2];
    MPI_Cart_shift(cart, 0, 1, &src, &dst); /* periodic: always a neighbour */
    c[0] = (coords[0] + 1) % dims[0];
    c[1] = coords[1];
    MPI_Cart_rank(cart, c, &r);
    CHECK_EQ(dst, r);
    MPI_Cart_shift(cart, 1, 1, &src, &dst); /* open: edges have none */
    CHECK_EQ(src, coords[1] == 0 ? MPI_PROC_NULL : rank - 1);
    CHECK_EQ(dst, coords[1] == dims[1] - 1 ? MPI_PROC_NULL : rank + 1);

    int remain[2] = {0, 1}, size;
    MPI_Comm row;
    MPI_Cart_sub(cart, remain, &row);
    MPI_Comm_size(row, &size);
    MPI_Comm_rank(row, &r);
    CHECK_EQ(size, dims[1]);
    CHECK_EQ(r, coords[1]);

    int recv[4] = {NONE, NONE, NONE, NONE};
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, recv, 1, MPI_INT, cart);
    check_cart_allgather(cart, recv);
    MPI_Request req;
    int recv2[4] = {NONE, NONE, NONE, NONE};
    MPI_Ineighbor_allgather(&rank, 1, MPI_INT, recv2, 1, MPI_INT, cart, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_cart_allgather(cart, recv2);

    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);
}

/* Undirected ring as an MPI-1 graph: 0, 1 or 2 neighbours per node. */
static void graph(int rank, int n)
{
    int index[64], edges[128], e = 0;
    for (int i = 0; i < n; i++) {
        if (n == 2)
            edges[e++] = 1 - i;
        else if (n > 2) {
            edges[e++] = ring_right(i, n);
            edges[e++] = ring_left(i, n);
        }
        index[i] = e;
    }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g);
    int kind, nnodes, nedges, count, nbrs[2];
    MPI_Topo_test(g, &kind);
    CHECK_EQ(kind, MPI_GRAPH);
    MPI_Graphdims_get(g, &nnodes, &nedges);
    CHECK(nnodes == n && nedges == e);
    MPI_Graph_neighbors_count(g, rank, &count);
    CHECK_EQ(count, n == 1 ? 0 : n == 2 ? 1 : 2);
    MPI_Graph_neighbors(g, rank, 2, nbrs);
    int recv[2] = {NONE, NONE};
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, recv, 1, MPI_INT, g);
    for (int k = 0; k < count; k++)
        CHECK_EQ(recv[k], nbrs[k]);
    MPI_Comm_free(&g);
}

/* Directed ring: receive from the left, send to the right. */
static void dist_graph(int rank, int n)
{
    int left = ring_left(rank, n), right = ring_right(rank, n);
    int one = 1;
    MPI_Comm adj, built;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &one, 1, &right, &one, MPI_INFO_NULL,
                                   0, &adj);
    int kind, indeg, outdeg, weighted, src, srcw, dst, dstw;
    MPI_Topo_test(adj, &kind);
    CHECK_EQ(kind, MPI_DIST_GRAPH);
    MPI_Dist_graph_neighbors_count(adj, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted);
    MPI_Dist_graph_neighbors(adj, 1, &src, &srcw, 1, &dst, &dstw);
    CHECK(src == left && dst == right && srcw == 1 && dstw == 1);

    /* The same ring, each rank naming one of its outgoing edges. */
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &one, &right, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                          &built);
    MPI_Dist_graph_neighbors_count(built, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && !weighted);

    int got = NONE;
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, &got, 1, MPI_INT, built);
    CHECK_EQ(got, left);

    int out[3], in[4] = {NONE, NONE, NONE, NONE};
    for (int i = 0; i < 3; i++)
        out[i] = payload(rank, 1, i);
    int two = 2, disp1 = 1, zero = 0, three = 3;
    MPI_Neighbor_allgatherv(out, 2, MPI_INT, in, &two, &disp1, MPI_INT, adj);
    CHECK(in[0] == NONE && in[1] == payload(left, 1, 0) && in[2] == payload(left, 1, 1));

    MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, adj);
    CHECK_EQ(in[0], payload(left, 1, 0));

    MPI_Neighbor_alltoallv(out, &three, &zero, MPI_INT, in, &three, &disp1, MPI_INT, adj);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(in[1 + i], payload(left, 1, i));

    /* alltoallw: three ints sent as one derived element, received as ints. */
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_commit(&triple);
    MPI_Aint bytes0 = 0, bytes4 = 4 * sizeof(int);
    int in_w[8] = {NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE};
    MPI_Datatype ints = MPI_INT;
    MPI_Neighbor_alltoallw(out, &one, &bytes0, &triple, in_w, &three, &bytes4, &ints, adj);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(in_w[4 + i], payload(left, 1, i));
    MPI_Type_free(&triple);

    MPI_Request req;
    in[0] = NONE;
    MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, adj, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK_EQ(in[0], payload(left, 1, 0));

    /* Persistent: started twice with fresh data. */
    MPI_Neighbor_alltoall_init(out, 1, MPI_INT, in, 1, MPI_INT, adj, MPI_INFO_NULL, &req);
    for (int iter = 0; iter < 2; iter++) {
        out[0] = payload(rank, 2 + iter, 0);
        in[0] = NONE;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK_EQ(in[0], payload(left, 2 + iter, 0));
    }
    MPI_Request_free(&req);

    MPI_Comm_free(&built);
    MPI_Comm_free(&adj);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    cartesian(rank, n);
    graph(rank, n);
    dist_graph(rank, n);
    MPI_Finalize();
    return 0;
}
