/* ranks: 1-4 */
/* needs: removed */
/* MPI-1 functions removed from the standard (MPI 3.0) that MPICH 4.0.2 still
 * exports and declares in mpi.h: MPI_Address, MPI_Type_struct,
 * MPI_Type_hvector, MPI_Type_hindexed, MPI_Type_extent, MPI_Type_lb,
 * MPI_Type_ub, MPI_Errhandler_create/set/get, MPI_Keyval_create/free,
 * MPI_Attr_put/get/delete. The types they build are used in a ring transfer. */
#include "common.h"
#include <stddef.h>

struct cell {
    int id;
    double weight;
};

static int handled;
static void on_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
    handled++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);

    /* MPI_Address + MPI_Type_struct describe a struct cell. */
    struct cell cells[2], in[2];
    MPI_Aint base, addr_id, addr_weight;
    MPI_Address(&cells[0], &base);
    MPI_Address(&cells[0].id, &addr_id);
    MPI_Address(&cells[0].weight, &addr_weight);
    CHECK(addr_weight - base == offsetof(struct cell, weight));
    int lens[2] = {1, 1};
    MPI_Aint displs[2] = {addr_id - base, addr_weight - base};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, cell;
    MPI_Type_struct(2, lens, displs, types, &cell);
    MPI_Type_commit(&cell);
    MPI_Aint extent, lb, ub;
    MPI_Type_extent(cell, &extent);
    MPI_Type_lb(cell, &lb);
    MPI_Type_ub(cell, &ub);
    CHECK(lb == 0 && extent == sizeof(struct cell) && ub == lb + extent);
    for (int i = 0; i < 2; i++) {
        cells[i].id = payload(rank, 1, i);
        cells[i].weight = rank + 0.25 * i;
    }
    MPI_Sendrecv(cells, 2, cell, right, 1, in, 2, cell, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2; i++)
        CHECK(in[i].id == payload(left, 1, i) && in[i].weight == left + 0.25 * i);

    /* MPI_Type_hvector / MPI_Type_hindexed: strides and offsets in bytes. */
    int src[12], got[6];
    for (int i = 0; i < 12; i++)
        src[i] = payload(rank, 2, i);
    MPI_Datatype hvec, hidx;
    MPI_Type_hvector(3, 2, 4 * sizeof(int), MPI_INT, &hvec); /* 0 1 4 5 8 9 */
    int hlens[2] = {1, 2};
    MPI_Aint hdispls[2] = {2 * sizeof(int), 6 * sizeof(int)}; /* 2 6 7 */
    MPI_Type_hindexed(2, hlens, hdispls, MPI_INT, &hidx);
    MPI_Type_commit(&hvec);
    MPI_Type_commit(&hidx);
    MPI_Sendrecv(src, 1, hvec, right, 2, got, 6, MPI_INT, left, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int want_hvec[6] = {0, 1, 4, 5, 8, 9};
    for (int k = 0; k < 6; k++)
        CHECK_EQ(got[k], payload(left, 2, want_hvec[k]));
    MPI_Sendrecv(src, 1, hidx, right, 3, got, 3, MPI_INT, left, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(got[0] == payload(left, 2, 2) && got[1] == payload(left, 2, 6) &&
          got[2] == payload(left, 2, 7));

    /* MPI_Errhandler_create/set/get on a duplicate communicator. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Errhandler eh, current;
    MPI_Errhandler_create(on_error, &eh);
    MPI_Errhandler_set(comm, eh);
    MPI_Errhandler_get(comm, &current);
    CHECK(current == eh);
    MPI_Errhandler_free(&current);
    int value = 0;
    int rc = MPI_Send(&value, 1, MPI_INT, n, 0, comm); /* invalid rank */
    CHECK(rc != MPI_SUCCESS && handled == 1);
    MPI_Errhandler_free(&eh);

    /* MPI_Keyval_create / MPI_Attr_put / get / delete / MPI_Keyval_free. */
    static int attr = 17;
    int key, flag;
    int *got_attr;
    MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &key, NULL);
    MPI_Attr_put(comm, key, &attr);
    MPI_Attr_get(comm, key, &got_attr, &flag);
    CHECK(flag && *got_attr == 17);
    MPI_Attr_delete(comm, key);
    MPI_Attr_get(comm, key, &got_attr, &flag);
    CHECK(!flag);
    MPI_Keyval_free(&key);

    MPI_Comm_free(&comm);
    MPI_Type_free(&cell);
    MPI_Type_free(&hvec);
    MPI_Type_free(&hidx);
    MPI_Finalize();
    return 0;
}
