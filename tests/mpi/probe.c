/* ranks: 2-4 */
/* Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv and Get_count/Get_elements.
 * Every rank first sends its messages to its right neighbour with Isend, then
 * inspects and receives what its left neighbour sent. */
#include "common.h"

enum { T_PROBE = 1, T_IPROBE, T_PAIRS, T_PARTIAL, T_MPROBE, T_IMPROBE, T_NEVER = 99 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    MPI_Datatype pair; /* two ints: Get_count and Get_elements differ for it */
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);

    int ints[7], pairs[6], partial[5], mprobed[3], improbed[4];
    double doubles[5];
    for (int i = 0; i < 7; i++)
        ints[i] = payload(rank, T_PROBE, i);
    for (int i = 0; i < 5; i++)
        doubles[i] = rank + i / 4.0;
    for (int i = 0; i < 6; i++)
        pairs[i] = payload(rank, T_PAIRS, i);
    for (int i = 0; i < 5; i++)
        partial[i] = payload(rank, T_PARTIAL, i);
    for (int i = 0; i < 3; i++)
        mprobed[i] = payload(rank, T_MPROBE, i);
    for (int i = 0; i < 4; i++)
        improbed[i] = payload(rank, T_IMPROBE, i);

    MPI_Request sends[6];
    MPI_Isend(ints, 7, MPI_INT, right, T_PROBE, MPI_COMM_WORLD, &sends[0]);
    MPI_Isend(doubles, 5, MPI_DOUBLE, right, T_IPROBE, MPI_COMM_WORLD, &sends[1]);
    MPI_Isend(pairs, 3, pair, right, T_PAIRS, MPI_COMM_WORLD, &sends[2]);
    MPI_Isend(partial, 5, MPI_INT, right, T_PARTIAL, MPI_COMM_WORLD, &sends[3]);
    MPI_Isend(mprobed, 3, MPI_INT, right, T_MPROBE, MPI_COMM_WORLD, &sends[4]);
    MPI_Isend(improbed, 4, MPI_INT, right, T_IMPROBE, MPI_COMM_WORLD, &sends[5]);

    MPI_Status st;
    int count, elements, flag;
    int in[16];
    double din[5];

    /* Nothing is ever sent with T_NEVER. */
    MPI_Iprobe(left, T_NEVER, MPI_COMM_WORLD, &flag, &st);
    CHECK(!flag);

    /* Probe (with wildcards), then receive exactly what it announced. */
    MPI_Probe(MPI_ANY_SOURCE, T_PROBE, MPI_COMM_WORLD, &st);
    CHECK_EQ(st.MPI_SOURCE, left);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, 7);
    MPI_Recv(in, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
    for (int i = 0; i < 7; i++)
        CHECK_EQ(in[i], payload(left, T_PROBE, i));

    /* Iprobe until the message is there. */
    flag = 0;
    while (!flag)
        MPI_Iprobe(left, T_IPROBE, MPI_COMM_WORLD, &flag, &st);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK_EQ(count, 5);
    MPI_Recv(din, 5, MPI_DOUBLE, left, T_IPROBE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 5; i++)
        CHECK(din[i] == left + i / 4.0);

    /* Derived type: 3 pairs are 3 items but 6 basic elements. */
    MPI_Probe(left, T_PAIRS, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, pair, &count);
    MPI_Get_elements(&st, pair, &elements);
    CHECK_EQ(count, 3);
    CHECK_EQ(elements, 6);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, 6);
    MPI_Recv(in, 3, pair, left, T_PAIRS, MPI_COMM_WORLD, &st);
    MPI_Get_elements(&st, pair, &elements);
    CHECK_EQ(elements, 6);

    /* 5 ints are not a whole number of pairs. */
    MPI_Recv(in, 3, pair, left, T_PARTIAL, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, pair, &count);
    MPI_Get_elements(&st, pair, &elements);
    CHECK_EQ(count, MPI_UNDEFINED);
    CHECK_EQ(elements, 5);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(in[i], payload(left, T_PARTIAL, i));

    /* Matched probe: the message is taken off the queue by Mprobe itself. */
    MPI_Message msg;
    MPI_Mprobe(left, T_MPROBE, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg != MPI_MESSAGE_NULL);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, 3);
    MPI_Iprobe(left, T_MPROBE, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag);
    MPI_Mrecv(in, count, MPI_INT, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NULL);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(in[i], payload(left, T_MPROBE, i));

    flag = 0;
    while (!flag)
        MPI_Improbe(MPI_ANY_SOURCE, T_IMPROBE, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK_EQ(st.MPI_SOURCE, left);
    MPI_Request req;
    MPI_Imrecv(in, 4, MPI_INT, &msg, &req);
    MPI_Wait(&req, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(in[i], payload(left, T_IMPROBE, i));

    /* Matched probe of MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. */
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC);
    MPI_Mrecv(in, 1, MPI_INT, &msg, &st);
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag && msg == MPI_MESSAGE_NO_PROC);
    MPI_Imrecv(in, 1, MPI_INT, &msg, &req);
    MPI_Wait(&req, &st);
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);

    MPI_Waitall(6, sends, MPI_STATUSES_IGNORE);
    MPI_Type_free(&pair);
    MPI_Finalize();
    return 0;
}
