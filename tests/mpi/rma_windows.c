/* ranks: 1-4 */
/* The four ways to make an RMA window, each used for a transfer and freed:
 * Win_create on user memory, Win_allocate, Win_allocate_shared with
 * Win_shared_query (direct load/store into a neighbour's segment), and
 * Win_create_dynamic with Win_attach/Win_detach. Also window attributes
 * (base, size, displacement unit, flavor), Win_get_group and window names. */
#include "common.h"

/* 32 bytes: Win_allocate sizes must be multiples of 16 bytes on MPICH 4.0.2
 * (see rma_ops.c). */
#define SLOTS 8

static int flavor(MPI_Win win)
{
    int *value, flag;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &value, &flag);
    CHECK(flag);
    return *value;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    MPI_Win win;
    int flag;

    /* Win_create on malloc'ed memory; Put to the right neighbour. */
    int *mem = calloc(SLOTS, sizeof(int));
    MPI_Win_create(mem, SLOTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    void *base;
    MPI_Aint *size;
    int *disp_unit;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == mem);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
    CHECK(flag && *size == SLOTS * (MPI_Aint)sizeof(int));
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &disp_unit, &flag);
    CHECK(flag && *disp_unit == (int)sizeof(int));
    CHECK_EQ(flavor(win), MPI_WIN_FLAVOR_CREATE);
    MPI_Group group;
    int gsize;
    MPI_Win_get_group(win, &group);
    MPI_Group_size(group, &gsize);
    CHECK_EQ(gsize, n);
    MPI_Group_free(&group);
    MPI_Win_set_name(win, "mpigram-created");
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Win_get_name(win, name, &len);
    CHECK(strcmp(name, "mpigram-created") == 0);

    int value = payload(rank, 1, 0);
    MPI_Win_fence(0, win);
    MPI_Put(&value, 1, MPI_INT, right, 3, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK_EQ(mem[3], payload(left, 1, 0));
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL);
    free(mem);

    /* Win_allocate: MPI owns the memory; Get from the left neighbour. */
    int *amem;
    MPI_Win_allocate(SLOTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &amem, &win);
    CHECK_EQ(flavor(win), MPI_WIN_FLAVOR_ALLOCATE);
    for (int i = 0; i < SLOTS; i++)
        amem[i] = payload(rank, 2, i);
    int got[2] = {-1, -1};
    MPI_Win_fence(0, win);
    MPI_Get(got, 2, MPI_INT, left, 4, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(got[0] == payload(left, 2, 4) && got[1] == payload(left, 2, 5));
    MPI_Win_free(&win);

    /* Win_allocate_shared: every rank of the node can load/store the others'
     * segments directly once Win_shared_query gave their addresses. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int nrank, nsize;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int *smem;
    MPI_Win_allocate_shared(SLOTS * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &smem, &win);
    CHECK_EQ(flavor(win), MPI_WIN_FLAVOR_SHARED);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    for (int i = 0; i < SLOTS; i++)
        smem[i] = payload(nrank, 3, i);
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    MPI_Aint qsize;
    int qdisp;
    int *theirs;
    int peer = ring_left(nrank, nsize);
    MPI_Win_shared_query(win, peer, &qsize, &qdisp, &theirs);
    CHECK(qsize == SLOTS * (MPI_Aint)sizeof(int) && qdisp == (int)sizeof(int));
    for (int i = 0; i < SLOTS; i++)
        CHECK_EQ(theirs[i], payload(peer, 3, i));
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);

    /* Win_create_dynamic: memory attached after creation, addressed by its
     * absolute address (exchanged with Allgather). */
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK_EQ(flavor(win), MPI_WIN_FLAVOR_DYNAMIC);
    int *dmem = calloc(SLOTS, sizeof(int));
    MPI_Win_attach(win, dmem, SLOTS * sizeof(int));
    MPI_Aint mine, addrs[64];
    MPI_Get_address(&dmem[2], &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    value = payload(rank, 4, 0);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Put(&value, 1, MPI_INT, right, addrs[right], 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win); /* make remote updates visible */
    CHECK_EQ(dmem[2], payload(left, 4, 0));
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD); /* nobody detaches memory a peer still targets */
    MPI_Win_detach(win, dmem);
    MPI_Win_free(&win);
    free(dmem);

    MPI_Finalize();
    return 0;
}
