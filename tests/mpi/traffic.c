/* ranks: 2-4 */
/* Point-to-point and collective traffic of known sizes, for `mpigram stats`:
 * per rank r of n, ITER times: a ring MPI_Send of (r + 1) * 100 ints to the
 * right neighbour (MPI_Recv from the left with a status), an MPI_Isend of 50
 * doubles to rank r + 2 (MPI_Irecv from r - 2), and a persistent send of 7
 * ints to the right and receive from the left started by MPI_Startall. Then
 * once: MPI_Sendrecv of one vector(4, 2, 3, MPI_INT) (8 ints) to the left,
 * MPI_Send of 1000 ints to MPI_PROC_NULL, MPI_Send of 5 chars to the right on
 * a duplicate of MPI_COMM_WORLD, MPI_Bcast of 10 doubles from rank 0,
 * MPI_Allreduce of 4 ints, MPI_Alltoall of 2 ints per rank. */
#include "common.h"

#define ITER 10
#define RING_MAX (4 * 100)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    need_ranks(2);
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int far = (rank + 2) % n, from_far = (rank + 2 * n - 2) % n;

    static int ring_out[RING_MAX], ring_in[RING_MAX];
    double far_out[50], far_in[50];
    int pers_out[7], pers_in[7];
    for (int i = 0; i < RING_MAX; i++)
        ring_out[i] = payload(rank, 0, i % 100);
    for (int i = 0; i < 50; i++)
        far_out[i] = rank + i;
    for (int i = 0; i < 7; i++)
        pers_out[i] = payload(rank, 2, i);

    MPI_Request pers[2];
    MPI_Send_init(pers_out, 7, MPI_INT, right, 2, MPI_COMM_WORLD, &pers[0]);
    MPI_Recv_init(pers_in, 7, MPI_INT, left, 2, MPI_COMM_WORLD, &pers[1]);

    for (int it = 0; it < ITER; it++) {
        /* Rank 0 starts the ring, the others pass it on: no deadlock. */
        MPI_Status status;
        int ring_count = (rank + 1) * 100, left_count = (left + 1) * 100;
        if (rank == 0)
            MPI_Send(ring_out, ring_count, MPI_INT, right, 0, MPI_COMM_WORLD);
        MPI_Recv(ring_in, RING_MAX, MPI_INT, left, 0, MPI_COMM_WORLD, &status);
        if (rank != 0)
            MPI_Send(ring_out, ring_count, MPI_INT, right, 0, MPI_COMM_WORLD);
        int got;
        MPI_Get_count(&status, MPI_INT, &got);
        CHECK_EQ(got, left_count);
        CHECK_EQ(ring_in[left_count - 1], payload(left, 0, 99));

        MPI_Request reqs[2];
        MPI_Irecv(far_in, 50, MPI_DOUBLE, from_far, 1, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(far_out, 50, MPI_DOUBLE, far, 1, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        CHECK(far_in[49] == from_far + 49);

        MPI_Startall(2, pers);
        MPI_Waitall(2, pers, MPI_STATUSES_IGNORE);
        CHECK_EQ(pers_in[6], payload(left, 2, 6));
    }
    MPI_Request_free(&pers[0]);
    MPI_Request_free(&pers[1]);

    MPI_Datatype vec;
    MPI_Type_vector(4, 2, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Sendrecv(ring_out, 1, vec, left, 3, ring_in, 8, MPI_INT, right, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK_EQ(ring_in[2], payload(right, 0, 3));
    MPI_Type_free(&vec);

    MPI_Send(ring_out, 1000, MPI_INT, MPI_PROC_NULL, 4, MPI_COMM_WORLD);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    char word[5] = {'h', 'e', 'l', 'l', 'o'}, heard[5];
    MPI_Request r;
    MPI_Irecv(heard, 5, MPI_CHAR, left, 5, dup, &r);
    MPI_Send(word, 5, MPI_CHAR, right, 5, dup);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(heard[4] == 'o');
    MPI_Comm_free(&dup);

    double b[10];
    for (int i = 0; i < 10; i++)
        b[i] = rank == 0 ? i : -1;
    MPI_Bcast(b, 10, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(b[9] == 9);
    int four[4] = {rank, rank, rank, rank}, sums[4];
    MPI_Allreduce(four, sums, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(sums[3], n * (n - 1) / 2);
    int a2a_out[8], a2a_in[8];
    for (int i = 0; i < 2 * n; i++)
        a2a_out[i] = payload(rank, 6, i);
    MPI_Alltoall(a2a_out, 2, MPI_INT, a2a_in, 2, MPI_INT, MPI_COMM_WORLD);
    CHECK_EQ(a2a_in[2 * (n - 1)], payload(n - 1, 6, 2 * rank));

    MPI_Finalize();
    return 0;
}
