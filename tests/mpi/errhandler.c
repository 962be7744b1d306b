/* ranks: 1-4 */
/* Error handling: Comm_get_errhandler, Comm_set_errhandler(MPI_ERRORS_RETURN)
 * on a duplicate of the world; erroneous calls (invalid rank, tag, count)
 * that return error codes, checked with Error_class and
 * Error_string; a user handler from Comm_create_errhandler that sees the
 * error (and Comm_call_errhandler); user error classes/codes/strings
 * (Add_error_class/code/string); Errhandler_free. The world keeps
 * MPI_ERRORS_ARE_FATAL throughout. */
#include "common.h"

static int handled, last_code;

static void record(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handled++;
    last_code = *code;
}

static void expect_class(int rc, int want)
{
    CHECK_MSG(rc != MPI_SUCCESS, "erroneous call succeeded");
    int cls, len;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    CHECK_EQ(cls, want);
    MPI_Error_string(rc, text, &len);
    CHECK(len > 0 && len == (int)strlen(text));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = world_size();
    int value = 1;

    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_get_errhandler(comm, &eh);
    CHECK(eh == MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    expect_class(MPI_Send(&value, 1, MPI_INT, n, 0, comm), MPI_ERR_RANK);
    expect_class(MPI_Send(&value, 1, MPI_INT, 0, -5, comm), MPI_ERR_TAG);
    expect_class(MPI_Send(&value, -1, MPI_INT, 0, 0, comm), MPI_ERR_COUNT);
    MPI_Request req;
    expect_class(MPI_Irecv(&value, 1, MPI_INT, n + 3, 0, comm, &req), MPI_ERR_RANK);
    /* The communicator still works after the errors. */
    int sum = 0;
    MPI_OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK_EQ(sum, n);

    /* A user handler: called with the code, after which the call returns it. */
    MPI_Errhandler mine;
    MPI_Comm_create_errhandler(record, &mine);
    MPI_Comm_set_errhandler(comm, mine);
    int rc = MPI_Send(&value, 1, MPI_INT, n, 0, comm);
    CHECK_EQ(handled, 1);
    CHECK_EQ(last_code, rc);
    expect_class(rc, MPI_ERR_RANK);

    /* A user-defined error class, code and string, raised by hand. */
    int cls, code, got_class, len;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Add_error_class(&cls);
    MPI_Add_error_code(cls, &code);
    MPI_Add_error_string(code, "mpigram test error");
    MPI_Error_class(code, &got_class);
    CHECK_EQ(got_class, cls);
    MPI_Error_string(code, text, &len);
    CHECK(strcmp(text, "mpigram test error") == 0);
    MPI_Comm_call_errhandler(comm, code);
    CHECK_EQ(handled, 2);
    CHECK_EQ(last_code, code);

    MPI_Errhandler_free(&mine);
    CHECK(mine == MPI_ERRHANDLER_NULL);
    MPI_Comm_free(&comm); /* the handler lives until its last user goes */
    MPI_Finalize();
    return 0;
}
