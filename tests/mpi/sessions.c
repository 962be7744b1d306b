/* ranks: 1-4 */
/* needs: mpi4 */
/* The MPI 4.0 Sessions model, with no MPI_Init at all: MPI_Session_init,
 * Session_get_num_psets / get_nth_pset / get_pset_info, Group_from_session_pset
 * ("mpi://WORLD"), Comm_create_from_group, communication on the new
 * communicator (Sendrecv around a ring, Allreduce, Barrier), the frees and
 * MPI_Session_finalize. MPI_Initialized stays false throughout. */
#include "common.h"

int main(void)
{
    MPI_Session session;
    MPI_OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));

    int npsets = 0, found_world = 0;
    MPI_OK(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &npsets));
    CHECK(npsets >= 2); /* mpi://WORLD and mpi://SELF at least */
    for (int i = 0; i < npsets; i++) {
        char name[256];
        int len = sizeof name;
        MPI_OK(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, &len, name));
        found_world |= strcmp(name, "mpi://WORLD") == 0;
    }
    CHECK(found_world);

    MPI_Info info;
    char size_text[32];
    int buflen = sizeof size_text, flag;
    MPI_OK(MPI_Session_get_pset_info(session, "mpi://WORLD", &info));
    MPI_Info_get_string(info, "mpi_size", &buflen, size_text, &flag);
    CHECK(flag);
    MPI_Info_free(&info);

    MPI_Group group;
    MPI_Comm comm;
    MPI_OK(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    MPI_OK(MPI_Comm_create_from_group(group, "org.mpigram.tests.sessions", MPI_INFO_NULL,
                                      MPI_ERRORS_RETURN, &comm));
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    CHECK_EQ(n, atoi(size_text));

    int out = payload(rank, 1, 0), in = -1, sum = -1;
    MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, ring_right(rank, n), 1, &in, 1, MPI_INT,
                        ring_left(rank, n), 1, comm, MPI_STATUS_IGNORE));
    CHECK_EQ(in, payload(ring_left(rank, n), 1, 0));
    MPI_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK_EQ(sum, n * (n - 1) / 2);
    MPI_OK(MPI_Barrier(comm));

    int initialized = 1;
    MPI_Initialized(&initialized);
    CHECK(!initialized);

    MPI_Comm_free(&comm);
    MPI_Group_free(&group);
    MPI_OK(MPI_Session_finalize(&session));
    CHECK(session == MPI_SESSION_NULL);
    return 0;
}
