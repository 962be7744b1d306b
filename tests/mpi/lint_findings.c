/* ranks: 2 */
/* Every finding of `mpigram lint`, once each, in a program that works:
 * - objects never freed: a communicator, a group, a datatype, an info
 *   object, an error handler and a persistent request; an MPI_Isend to
 *   MPI_PROC_NULL whose request is never completed;
 * - datatypes created in a loop (one MPI_Type_contiguous and one
 *   MPI_Type_vector per iteration) and never freed;
 * - a storm of 100 8-byte messages from rank 0 to rank 1;
 * - MPI_Wait, MPI_Wait where one MPI_Waitall would do;
 * - both ranks MPI_Send to each other before receiving (works only because
 *   MPICH sends 8 bytes eagerly);
 * - the same MPI_Isend, MPI_Irecv and MPI_Iallreduce 20 times (persistent
 *   requests would do);
 * - 10 MPI_ANY_SOURCE receives that always get rank 0's message. */
#include "common.h"

#define ITERATIONS 20
#define WILDCARD_RECEIVES 10 /* fewer than a storm */

static void errh_fn(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), peer = 1 - rank;

    /* Objects never freed. */
    MPI_Comm dup;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Group group;
    MPI_OK(MPI_Comm_group(dup, &group));
    MPI_Datatype pair;
    MPI_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MPI_OK(MPI_Type_commit(&pair));
    MPI_Info info;
    MPI_OK(MPI_Info_create(&info));
    MPI_OK(MPI_Info_set(info, "lint", "leak"));
    MPI_Errhandler errh;
    MPI_OK(MPI_Comm_create_errhandler(errh_fn, &errh));
    int persistent_buf = 0;
    MPI_Request persistent;
    MPI_OK(MPI_Send_init(&persistent_buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                         &persistent));

    /* Datatypes created in a loop, two per iteration, never freed. */
    int v[4] = {rank, rank, rank, rank}, w[4];
    for (int i = 0; i < 5; i++) {
        MPI_Datatype a, b;
        MPI_OK(MPI_Type_contiguous(4, MPI_INT, &a));
        MPI_OK(MPI_Type_commit(&a));
        MPI_OK(MPI_Type_vector(2, 2, 2, MPI_INT, &b));
        MPI_OK(MPI_Type_commit(&b));
        MPI_OK(MPI_Sendrecv(v, 1, a, peer, 2, w, 4, MPI_INT, peer, 2, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        CHECK_EQ(w[3], peer);
    }

    /* A storm of small messages. */
    long x = 0;
    for (int i = 0; i < 100; i++) {
        if (rank == 0) {
            x = i;
            MPI_OK(MPI_Send(&x, 1, MPI_LONG, 1, 3, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(&x, 1, MPI_LONG, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(x, i);
        }
    }

    /* One at a time where one Waitall would do; the same non-blocking
     * calls every iteration. */
    int out = rank, in = -1, sum = 0, one = 1;
    for (int i = 0; i < ITERATIONS; i++) {
        MPI_Request r[3];
        MPI_OK(MPI_Irecv(&in, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[0]));
        MPI_OK(MPI_Isend(&out, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[1]));
        MPI_OK(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[2]));
        MPI_OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        MPI_OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        MPI_OK(MPI_Wait(&r[2], MPI_STATUS_IGNORE));
        CHECK_EQ(in, peer);
        CHECK_EQ(sum, 2);
    }

    /* Send before receive on both ranks: safe only with eager buffering. */
    long mine = rank, theirs = -1;
    MPI_OK(MPI_Send(&mine, 1, MPI_LONG, peer, 5, MPI_COMM_WORLD));
    MPI_OK(MPI_Recv(&theirs, 1, MPI_LONG, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_EQ(theirs, peer);

    /* Wildcard receives that always match rank 0. */
    for (int i = 0; i < WILDCARD_RECEIVES; i++) {
        if (rank == 0) {
            MPI_OK(MPI_Send(&i, 1, MPI_INT, 1, 6, MPI_COMM_WORLD));
        } else {
            int got = -1;
            MPI_Status st;
            MPI_OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &st));
            CHECK_EQ(st.MPI_SOURCE, 0);
            CHECK_EQ(got, i);
        }
    }

    /* Last: MPICH gives every request completed at once the same handle, so
     * a later Wait on such a request would look like this one's completion. */
    MPI_Request never_completed;
    MPI_OK(MPI_Isend(&persistent_buf, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
                     &never_completed));

    MPI_Finalize();
    return 0;
}
