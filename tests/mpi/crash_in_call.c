/* ranks: 2 */
/* expect: signal SIGKILL */
/* Expected to fail: after some communication rank 0 sends its process id to
 * rank 1 and waits in an MPI_Recv that nobody will match, while rank 1 ends
 * the job in the way argv[1] says:
 *   kill (default): it sends rank 0 SIGKILL (rank 0 dies blocked in
 *     MPI_Recv), then sleeps until the launcher kills it;
 *   fatal: it calls MPI_Send with an invalid destination under the world's
 *     MPI_ERRORS_ARE_FATAL: MPI ends the job inside that call;
 *   exit: the same under an error handler that calls exit(3);
 *   abort: the same under an error handler that calls abort().
 * The launcher kills rank 0 in the last three. For tests that a rank that
 * ends inside an MPI call names the call. */
#include "common.h"
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void exit_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
    exit(3);
}

static void abort_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
    abort();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    const char *mode = argc > 1 ? argv[1] : "kill";
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    if (strcmp(mode, "exit") == 0)
        MPI_Comm_create_errhandler(exit_handler, &handler);
    else if (strcmp(mode, "abort") == 0)
        MPI_Comm_create_errhandler(abort_handler, &handler);
    if (handler != MPI_ERRHANDLER_NULL)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
    communicate_before_crashing();
    int pid = (int)getpid(), x = 0;
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (world_rank() == 0) {
        MPI_Recv(&x, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "kill") == 0) {
        sleep(2); /* rank 0 is in MPI_Recv by then */
        kill((pid_t)pid, SIGKILL);
        sleep(60);
    } else {
        MPI_Send(&x, 1, MPI_INT, world_size() + 5, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0; /* not reached */
}
