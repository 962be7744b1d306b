/* ranks: 2-4 */
/* Wildcard receives. Every rank r > 0 sends two messages to rank 0 with tags
 * 10r and 10r+1; rank 0 takes them with MPI_ANY_SOURCE/MPI_ANY_TAG and checks
 * from the status who sent what (and that one sender's messages do not
 * overtake each other). Then rank 0 answers each rank, which receives with a
 * fixed source and MPI_ANY_TAG, and a final round uses an Irecv with both
 * wildcards completed by Wait. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    MPI_Status st;
    int value;

    if (rank == 0) {
        int next_tag[64] = {0}; /* per sender: how many of its messages arrived */
        for (int k = 0; k < 2 * (n - 1); k++) {
            MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int src = st.MPI_SOURCE;
            CHECK_MSG(src > 0 && src < n, "bad source %d", src);
            CHECK_EQ(st.MPI_TAG, 10 * src + next_tag[src]);
            CHECK_EQ(value, payload(src, st.MPI_TAG, 0));
            int count;
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK_EQ(count, 1);
            next_tag[src]++;
        }
        for (int src = 1; src < n; src++)
            CHECK_EQ(next_tag[src], 2);
        for (int dst = 1; dst < n; dst++) {
            value = payload(0, 50 + dst, 0);
            MPI_Send(&value, 1, MPI_INT, dst, 50 + dst, MPI_COMM_WORLD);
        }
    } else {
        for (int k = 0; k < 2; k++) {
            value = payload(rank, 10 * rank + k, 0);
            MPI_Send(&value, 1, MPI_INT, 0, 10 * rank + k, MPI_COMM_WORLD);
        }
        MPI_Recv(&value, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK_EQ(st.MPI_SOURCE, 0);
        CHECK_EQ(st.MPI_TAG, 50 + rank);
        CHECK_EQ(value, payload(0, 50 + rank, 0));
    }

    /* Ring shift received with both wildcards through Irecv + Wait. */
    MPI_Request req;
    int in = -1, out = payload(rank, 7, 0);
    MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
    MPI_Send(&out, 1, MPI_INT, ring_right(rank, n), 7, MPI_COMM_WORLD);
    MPI_Wait(&req, &st);
    CHECK_EQ(st.MPI_SOURCE, ring_left(rank, n));
    CHECK_EQ(st.MPI_TAG, 7);
    CHECK_EQ(in, payload(ring_left(rank, n), 7, 0));

    MPI_Finalize();
    return 0;
}
