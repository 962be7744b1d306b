/* ranks: 2-4 */
/* Non-blocking point-to-point on a ring: Isend, Issend, Ibsend, Irsend, each
 * matched by an Irecv posted first, completed with Wait, Waitall and Test. */
#include "common.h"

#define COUNT 16

static void fill(int *buf, int sender, int tag)
{
    for (int i = 0; i < COUNT; i++)
        buf[i] = payload(sender, tag, i);
}

static void check_message(const int *buf, const MPI_Status *st, int sender, int tag)
{
    int count;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK_EQ(count, COUNT);
    CHECK_EQ(st->MPI_SOURCE, sender);
    CHECK_EQ(st->MPI_TAG, tag);
    for (int i = 0; i < COUNT; i++)
        CHECK_EQ(buf[i], payload(sender, tag, i));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int out[4][COUNT], in[4][COUNT];
    MPI_Request reqs[8];
    MPI_Status st[8];

    /* Standard and synchronous, completed together with Waitall. */
    MPI_Irecv(in[0], COUNT, MPI_INT, left, 1, MPI_COMM_WORLD, &reqs[0]);
    MPI_Irecv(in[1], COUNT, MPI_INT, left, 2, MPI_COMM_WORLD, &reqs[1]);
    fill(out[0], rank, 1);
    fill(out[1], rank, 2);
    MPI_Isend(out[0], COUNT, MPI_INT, right, 1, MPI_COMM_WORLD, &reqs[2]);
    MPI_Issend(out[1], COUNT, MPI_INT, right, 2, MPI_COMM_WORLD, &reqs[3]);
    MPI_Waitall(4, reqs, st);
    check_message(in[0], &st[0], left, 1);
    check_message(in[1], &st[1], left, 2);
    for (int i = 0; i < 4; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL);

    /* Buffered, completed with a Test loop on the receive and Wait on the send. */
    int bufsize = COUNT * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    char *attached = malloc(bufsize);
    MPI_Buffer_attach(attached, bufsize);
    MPI_Irecv(in[2], COUNT, MPI_INT, left, 3, MPI_COMM_WORLD, &reqs[0]);
    fill(out[2], rank, 3);
    MPI_Ibsend(out[2], COUNT, MPI_INT, right, 3, MPI_COMM_WORLD, &reqs[1]);
    int done = 0;
    while (!done)
        MPI_Test(&reqs[0], &done, &st[0]);
    check_message(in[2], &st[0], left, 3);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
    free(attached);

    /* Ready: the receive must be posted before any peer's Irsend starts. */
    MPI_Irecv(in[3], COUNT, MPI_INT, left, 4, MPI_COMM_WORLD, &reqs[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    fill(out[3], rank, 4);
    MPI_Irsend(out[3], COUNT, MPI_INT, right, 4, MPI_COMM_WORLD, &reqs[1]);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[0], &st[0]);
    check_message(in[3], &st[0], left, 4);

    MPI_Finalize();
    return 0;
}
