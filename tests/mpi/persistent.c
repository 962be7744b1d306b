/* ranks: 2-4 */
/* Persistent point-to-point: Send_init, Ssend_init, Bsend_init, Rsend_init
 * and Recv_init on a ring, started with Start and Startall over several
 * iterations (the buffers change between iterations, the requests do not),
 * freed with Request_free at the end. */
#include "common.h"

#define ITERS 5
#define COUNT 4

static void check_round(const int *in, const MPI_Status *st, int left, int tag, int iter)
{
    CHECK_EQ(st->MPI_SOURCE, left);
    CHECK_EQ(st->MPI_TAG, tag);
    for (int i = 0; i < COUNT; i++)
        CHECK_EQ(in[i], payload(left, tag, i) + iter);
}

static void fill(int *out, int rank, int tag, int iter)
{
    for (int i = 0; i < COUNT; i++)
        out[i] = payload(rank, tag, i) + iter;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int out[4][COUNT], in[4][COUNT];
    MPI_Request recv[4], send[4];
    MPI_Status st[4];

    int bufsize = COUNT * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    char *attached = malloc(bufsize);
    MPI_Buffer_attach(attached, bufsize);

    for (int m = 0; m < 4; m++)
        MPI_Recv_init(in[m], COUNT, MPI_INT, left, m, MPI_COMM_WORLD, &recv[m]);
    MPI_Send_init(out[0], COUNT, MPI_INT, right, 0, MPI_COMM_WORLD, &send[0]);
    MPI_Ssend_init(out[1], COUNT, MPI_INT, right, 1, MPI_COMM_WORLD, &send[1]);
    MPI_Bsend_init(out[2], COUNT, MPI_INT, right, 2, MPI_COMM_WORLD, &send[2]);
    MPI_Rsend_init(out[3], COUNT, MPI_INT, right, 3, MPI_COMM_WORLD, &send[3]);

    for (int iter = 0; iter < ITERS; iter++) {
        for (int m = 0; m < 4; m++)
            fill(out[m], rank, m, iter);

        /* Standard, synchronous and buffered: receives and sends with Startall. */
        MPI_Startall(3, recv);
        MPI_Startall(3, send);
        MPI_Waitall(3, send, MPI_STATUSES_IGNORE);
        MPI_Waitall(3, recv, st);
        for (int m = 0; m < 3; m++) {
            check_round(in[m], &st[m], left, m, iter);
            /* A completed persistent request is inactive, not freed. */
            CHECK(recv[m] != MPI_REQUEST_NULL && send[m] != MPI_REQUEST_NULL);
        }

        /* Ready mode: the receive is started before the barrier. */
        MPI_Start(&recv[3]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Start(&send[3]);
        MPI_Wait(&send[3], MPI_STATUS_IGNORE);
        MPI_Wait(&recv[3], &st[3]);
        check_round(in[3], &st[3], left, 3, iter);
    }

    for (int m = 0; m < 4; m++) {
        MPI_Request_free(&recv[m]);
        MPI_Request_free(&send[m]);
        CHECK(recv[m] == MPI_REQUEST_NULL && send[m] == MPI_REQUEST_NULL);
    }
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
    free(attached);
    MPI_Finalize();
    return 0;
}
