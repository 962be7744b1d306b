/* ranks: 1-4 */
/* Every blocking collective, including the v/w variants, some with
 * MPI_IN_PLACE: Barrier, Bcast, Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v/w), Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan;
 * plus Reduce_local, MPI_MAXLOC and a user-defined operation (Op_create). */
#include "coll_cases.h"

/* Commutative user op: element-wise maximum of absolute values. */
static void absmax(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++) {
        int x = abs(a[i]), y = abs(b[i]);
        b[i] = x > y ? x : y;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    static coll_case c;

    MPI_Barrier(comm);

    setup_bcast(&c, comm);
    MPI_Bcast(c.send, 4, MPI_INT, c.root, comm);
    check_bcast(&c);

    setup_gather(&c, comm, 0);
    MPI_Gather(c.send, 2, MPI_INT, c.recv, 2, MPI_INT, c.root, comm);
    check_gather(&c);
    setup_gather(&c, comm, 1);
    MPI_Gather(c.r == c.root ? MPI_IN_PLACE : c.send, 2, MPI_INT, c.recv, 2, MPI_INT, c.root, comm);
    check_gather(&c);

    setup_gatherv(&c, comm);
    MPI_Gatherv(c.send, c.r + 1, MPI_INT, c.recv, c.rcounts, c.rdispls, MPI_INT, c.root, comm);
    check_gatherv(&c);

    setup_scatter(&c, comm);
    MPI_Scatter(c.send, 2, MPI_INT, c.recv, 2, MPI_INT, c.root, comm);
    check_scatter(&c, 0);
    setup_scatter(&c, comm);
    MPI_Scatter(c.send, 2, MPI_INT, c.r == c.root ? MPI_IN_PLACE : c.recv, 2, MPI_INT, c.root,
                comm);
    check_scatter(&c, 1);

    setup_scatterv(&c, comm);
    MPI_Scatterv(c.send, c.scounts, c.sdispls, MPI_INT, c.recv, c.r + 1, MPI_INT, c.root, comm);
    check_scatterv(&c);

    setup_gather(&c, comm, 0);
    MPI_Allgather(c.send, 2, MPI_INT, c.recv, 2, MPI_INT, comm);
    check_allgather(&c);
    setup_gather(&c, comm, 1);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.recv, 2, MPI_INT, comm);
    check_allgather(&c);

    setup_gatherv(&c, comm);
    MPI_Allgatherv(c.send, c.r + 1, MPI_INT, c.recv, c.rcounts, c.rdispls, MPI_INT, comm);
    check_allgatherv(&c);

    setup_alltoall(&c, comm, 0);
    MPI_Alltoall(c.send, 1, MPI_INT, c.recv, 1, MPI_INT, comm);
    check_alltoall(&c);
    setup_alltoall(&c, comm, 1);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.recv, 1, MPI_INT, comm);
    check_alltoall(&c);

    setup_alltoallv(&c, comm, 0);
    MPI_Alltoallv(c.send, c.scounts, c.sdispls, MPI_INT, c.recv, c.rcounts, c.rdispls, MPI_INT,
                  comm);
    check_alltoallv(&c);

    setup_alltoallv(&c, comm, 1);
    MPI_Alltoallw(c.send, c.scounts, c.sdispls, c.types, c.recv, c.rcounts, c.rdispls, c.types,
                  comm);
    check_alltoallv(&c);

    setup_reduce(&c, comm, 0);
    MPI_Reduce(c.send, c.recv, 3, MPI_INT, MPI_SUM, c.root, comm);
    check_reduce(&c);
    setup_reduce(&c, comm, 1);
    MPI_Reduce(c.r == c.root ? MPI_IN_PLACE : c.send, c.recv, 3, MPI_INT, MPI_SUM, c.root, comm);
    check_reduce(&c);

    setup_reduce(&c, comm, 0);
    MPI_Allreduce(c.send, c.recv, 3, MPI_INT, MPI_SUM, comm);
    check_allreduce(&c);
    setup_reduce(&c, comm, 1);
    MPI_Allreduce(MPI_IN_PLACE, c.recv, 3, MPI_INT, MPI_SUM, comm);
    check_allreduce(&c);

    setup_reduce_scatter(&c, comm);
    MPI_Reduce_scatter(c.send, c.recv, c.rcounts, MPI_INT, MPI_SUM, comm);
    check_reduce_scatter(&c);

    setup_reduce_scatter_block(&c, comm, 0);
    MPI_Reduce_scatter_block(c.send, c.recv, 2, MPI_INT, MPI_SUM, comm);
    check_reduce_scatter_block(&c);
    setup_reduce_scatter_block(&c, comm, 1);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, c.recv, 2, MPI_INT, MPI_SUM, comm);
    check_reduce_scatter_block(&c);

    setup_scan(&c, comm, 0);
    MPI_Scan(c.send, c.recv, 2, MPI_INT, MPI_SUM, comm);
    check_scan(&c);
    setup_scan(&c, comm, 1);
    MPI_Scan(MPI_IN_PLACE, c.recv, 2, MPI_INT, MPI_SUM, comm);
    check_scan(&c);

    setup_scan(&c, comm, 0);
    MPI_Exscan(c.send, c.recv, 2, MPI_INT, MPI_SUM, comm);
    check_exscan(&c);

    /* Reduce_local: no communication, inout = in op inout. */
    int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    MPI_Reduce_local(a, b, 3, MPI_INT, MPI_SUM);
    CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33);

    /* MAXLOC on (value, index) pairs: the largest value is the last rank's. */
    struct {
        int value, index;
    } mine = {10 * c.r, c.r}, top;
    MPI_Allreduce(&mine, &top, 1, MPI_2INT, MPI_MAXLOC, comm);
    CHECK(top.value == 10 * (c.n - 1) && top.index == c.n - 1);

    /* User-defined operation, also through Reduce_local. */
    MPI_Op op;
    MPI_Op_create(absmax, 1, &op);
    /* Rank 0's values are positive: with one rank the op is never applied. */
    int x[2] = {c.r, c.r % 2 ? -(10 + c.r) : 10 + c.r}, y[2];
    MPI_Allreduce(x, y, 2, MPI_INT, op, comm);
    CHECK_EQ(y[0], c.n - 1);
    CHECK_EQ(y[1], 10 + c.n - 1);
    int commutative = 0;
    MPI_Op_commutative(op, &commutative);
    CHECK(commutative);
    int p[2] = {-5, 1}, q[2] = {3, -4};
    MPI_Reduce_local(p, q, 2, MPI_INT, op);
    CHECK(q[0] == 5 && q[1] == 4);
    MPI_Op_free(&op);
    CHECK(op == MPI_OP_NULL);

    MPI_Finalize();
    return 0;
}
