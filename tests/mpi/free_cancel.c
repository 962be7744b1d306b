/* ranks: 1-4 */
/* Request_free on an active Isend (the message still arrives), Cancel of a
 * posted Irecv that nothing will match (Test_cancelled says so), and
 * Request_get_status on a pending and a completed receive. */
#include "common.h"

#define COUNT 1000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    static int out[COUNT], in[COUNT];
    MPI_Request req;
    MPI_Status st;

    /* Free the send request while the send is in flight; the matching receive
     * is how the sender knows it completed. The buffer is not reused. */
    for (int i = 0; i < COUNT; i++)
        out[i] = payload(rank, 1, i % 100);
    MPI_Isend(out, COUNT, MPI_INT, right, 1, MPI_COMM_WORLD, &req);
    MPI_Request_free(&req);
    CHECK(req == MPI_REQUEST_NULL);
    MPI_Recv(in, COUNT, MPI_INT, left, 1, MPI_COMM_WORLD, &st);
    for (int i = 0; i < COUNT; i++)
        CHECK_EQ(in[i], payload(left, 1, i % 100));

    /* Cancel receives nothing will match: one with a fixed source, one from
     * MPI_ANY_SOURCE (no rank ever sends tags 77 or 78). */
    int flag = 1;
    MPI_Irecv(in, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &req);
    MPI_Request_get_status(req, &flag, &st);
    CHECK(!flag);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag);
    MPI_Irecv(in, 1, MPI_INT, MPI_ANY_SOURCE, 78, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    flag = 0;
    while (!flag)
        MPI_Test(&req, &flag, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag);

    /* A receive that does complete is not cancelled; get_status leaves it alive. */
    int value = payload(rank, 2, 0), got = -1;
    MPI_Irecv(&got, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &req);
    MPI_Send(&value, 1, MPI_INT, right, 2, MPI_COMM_WORLD);
    flag = 0;
    while (!flag)
        MPI_Request_get_status(req, &flag, &st);
    CHECK(req != MPI_REQUEST_NULL);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag);
    CHECK_EQ(got, payload(left, 2, 0));

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
