/* ranks: 2-4 */
/* MPICH hands out one shared, built-in request handle for every request that
 * is complete when it is created: Isend/Issend/Irsend to MPI_PROC_NULL and
 * small eager Isends share one handle value, Irecv from MPI_PROC_NULL another.
 * Several such requests are outstanding at once here, mixed with real ones,
 * and completed with Waitall and Testsome. Rank 0 prints the handle values in
 * one line; with MPICH the program asserts that they really are equal, so a
 * tracer that keys requests by handle value alone fails on this program. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int out[2] = {payload(rank, 1, 0), payload(rank, 2, 0)}, in[2] = {-1, -1}, null_in[2];
    MPI_Request reqs[9];
    MPI_Status sts[9];

    MPI_Isend(&out[0], 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&out[1], 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &reqs[1]);
    MPI_Issend(&out[0], 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &reqs[2]);
    MPI_Irecv(&null_in[0], 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &reqs[3]);
    MPI_Irecv(&null_in[1], 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &reqs[4]);
    /* One int to a rank on this node goes eagerly and completes at once. */
    MPI_Isend(&out[0], 1, MPI_INT, right, 1, MPI_COMM_WORLD, &reqs[5]);
    MPI_Isend(&out[1], 1, MPI_INT, right, 2, MPI_COMM_WORLD, &reqs[6]);
    /* Real receives, outstanding together with the built-in ones. */
    MPI_Irecv(&in[1], 1, MPI_INT, left, 2, MPI_COMM_WORLD, &reqs[7]);
    MPI_Irecv(&in[0], 1, MPI_INT, left, 1, MPI_COMM_WORLD, &reqs[8]);

    if (rank == 0)
        printf("builtin_request: proc_null_isend=%#x %#x proc_null_issend=%#x "
               "proc_null_irecv=%#x %#x eager_isend=%#x %#x irecv=%#x %#x\n",
               (unsigned)reqs[0], (unsigned)reqs[1], (unsigned)reqs[2], (unsigned)reqs[3],
               (unsigned)reqs[4], (unsigned)reqs[5], (unsigned)reqs[6], (unsigned)reqs[7],
               (unsigned)reqs[8]);
#ifdef MPICH
    CHECK(reqs[0] == reqs[1] && reqs[1] == reqs[2]); /* completed sends */
    CHECK(reqs[3] == reqs[4]);                       /* completed receives */
    CHECK(reqs[0] != reqs[3]);
    CHECK(reqs[5] == reqs[0] && reqs[6] == reqs[0]); /* eager sends: the same handle */
#endif

    /* Sends and PROC_NULL receives by Waitall; the real receives by Testsome. */
    MPI_Waitall(7, reqs, sts);
    for (int i = 0; i < 7; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL);
    /* Empty receives. (Their source and tag are not checked: MPICH 4.0.2 copies
     * them from the shared request's stale status; see proc_null.c.) */
    int count;
    MPI_Get_count(&sts[3], MPI_INT, &count);
    CHECK_EQ(count, 0);
    MPI_Get_count(&sts[4], MPI_INT, &count);
    CHECK_EQ(count, 0);
    int done = 0, outcount, indices[2];
    while (done < 2) {
        MPI_Testsome(2, &reqs[7], &outcount, indices, sts);
        CHECK(outcount != MPI_UNDEFINED);
        for (int k = 0; k < outcount; k++) {
            int tag = indices[k] == 0 ? 2 : 1;
            CHECK_EQ(sts[k].MPI_SOURCE, left);
            CHECK_EQ(sts[k].MPI_TAG, tag);
        }
        done += outcount;
    }
    CHECK(in[0] == payload(left, 1, 0) && in[1] == payload(left, 2, 0));

    MPI_Finalize();
    return 0;
}
