/* ranks: 2-4 */
/* Blocking point-to-point on a ring: Send/Recv, Ssend, Bsend (with
 * Buffer_attach/Buffer_detach), Rsend, Sendrecv, Sendrecv_replace.
 * Every message carries payload(sender, tag, i); the receiver checks data,
 * status source/tag and Get_count. */
#include "common.h"

#define COUNT 8

enum mode { STANDARD, SYNCHRONOUS, BUFFERED };

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

static void send_mode(enum mode m, const int *buf, int dest, int tag)
{
    switch (m) {
    case STANDARD:
        MPI_Send(buf, COUNT, MPI_INT, dest, tag, MPI_COMM_WORLD);
        break;
    case SYNCHRONOUS:
        MPI_Ssend(buf, COUNT, MPI_INT, dest, tag, MPI_COMM_WORLD);
        break;
    case BUFFERED:
        MPI_Bsend(buf, COUNT, MPI_INT, dest, tag, MPI_COMM_WORLD);
        break;
    }
}

/* Pass one message around the ring. Even ranks send first, odd ranks receive
 * first, so even synchronous sends cannot all block at once. */
static void ring_pass(enum mode m, int tag)
{
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int out[COUNT], in[COUNT];
    MPI_Status st;
    fill(out, rank, tag);
    if (rank % 2 == 0) {
        send_mode(m, out, right, tag);
        MPI_Recv(in, COUNT, MPI_INT, left, tag, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(in, COUNT, MPI_INT, left, tag, MPI_COMM_WORLD, &st);
        send_mode(m, out, right, tag);
    }
    check_message(in, &st, left, tag);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int out[COUNT], in[COUNT];
    MPI_Status st;

    ring_pass(STANDARD, 1);
    ring_pass(SYNCHRONOUS, 2);

    /* Buffered: room for two messages, so every rank can send before receiving. */
    int bufsize = 2 * (COUNT * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *attached = malloc(bufsize);
    MPI_Buffer_attach(attached, bufsize);
    ring_pass(BUFFERED, 3);
    fill(out, rank, 4);
    MPI_Bsend(out, COUNT, MPI_INT, right, 4, MPI_COMM_WORLD);
    MPI_Recv(in, COUNT, MPI_INT, left, 4, MPI_COMM_WORLD, &st);
    check_message(in, &st, left, 4);
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size); /* waits for buffered sends */
    CHECK(detached == attached);
    CHECK_EQ(detached_size, bufsize);
    free(attached);

    /* Ready send: the receive is posted before the barrier, the send after it. */
    MPI_Request req;
    MPI_Irecv(in, COUNT, MPI_INT, left, 5, MPI_COMM_WORLD, &req);
    MPI_Barrier(MPI_COMM_WORLD);
    fill(out, rank, 5);
    MPI_Rsend(out, COUNT, MPI_INT, right, 5, MPI_COMM_WORLD);
    MPI_Wait(&req, &st);
    check_message(in, &st, left, 5);

    /* Sendrecv: shift right by one. */
    fill(out, rank, 6);
    MPI_Sendrecv(out, COUNT, MPI_INT, right, 6, in, COUNT, MPI_INT, left, 6, MPI_COMM_WORLD, &st);
    check_message(in, &st, left, 6);

    /* Sendrecv_replace: shift left by one, in place. */
    int buf[COUNT];
    fill(buf, rank, 7);
    MPI_Sendrecv_replace(buf, COUNT, MPI_INT, left, 7, right, 7, MPI_COMM_WORLD, &st);
    check_message(buf, &st, right, 7);

    MPI_Finalize();
    return 0;
}
