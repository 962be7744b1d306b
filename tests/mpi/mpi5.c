/* ranks: 1-2 */
/* needs: mpi5 */
/* Functions of MPI 5.0 that MPICH 4 lacks (MPICH 5 has them): status
 * fields through MPI_Status_get/set_source/tag/error, handles to and from
 * integers (MPI_Comm_toint/fromint), the communicator's own buffer for
 * buffered sends (MPI_Comm_attach_buffer, MPI_Comm_flush_buffer,
 * MPI_Comm_detach_buffer), MPI_Buffer_flush, MPI_Type_get_value_index,
 * and removing a user error string, code and class. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Status st;
    MPI_Status_set_source(&st, 3);
    MPI_Status_set_tag(&st, 17);
    MPI_Status_set_error(&st, MPI_SUCCESS);
    int source = -1, tag = -1, error = -1;
    MPI_Status_get_source(&st, &source);
    MPI_Status_get_tag(&st, &tag);
    MPI_Status_get_error(&st, &error);
    CHECK_MSG(source == 3 && tag == 17 && error == MPI_SUCCESS, "status fields %d %d %d", source, tag,
          error);

    int world = MPI_Comm_toint(MPI_COMM_WORLD);
    CHECK(MPI_Comm_fromint(world) == MPI_COMM_WORLD);

    static char buffer[1 << 12];
    MPI_Comm_attach_buffer(MPI_COMM_WORLD, buffer, sizeof buffer);
    int value = rank, got = -1;
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Request req;
    MPI_Irecv(&got, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &req);
    MPI_Bsend(&value, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK_EQ(got, from);
    MPI_Comm_flush_buffer(MPI_COMM_WORLD);
    void *detached;
    int detached_size;
    MPI_Comm_detach_buffer(MPI_COMM_WORLD, &detached, &detached_size);
    CHECK_MSG(detached == buffer && detached_size == (int)sizeof buffer, "detached %d bytes",
          detached_size);
    MPI_Buffer_flush();

    MPI_Datatype pair;
    MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &pair);
    CHECK(pair == MPI_DOUBLE_INT);

    int class, code;
    MPI_Add_error_class(&class);
    MPI_Add_error_code(class, &code);
    MPI_Add_error_string(code, "mpigram's test error");
    MPI_Remove_error_string(code);
    MPI_Remove_error_code(code);
    MPI_Remove_error_class(class);

    MPI_Finalize();
    return 0;
}
