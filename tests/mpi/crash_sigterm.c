/* ranks: 1-4 */
/* expect: signal SIGTERM */
/* Expected to fail: after some communication every rank sends itself SIGTERM
 * (as a batch system would). The launcher reports the signal. For tests of
 * the tracer's SIGTERM path. Each rank says so on stderr first: the launcher
 * may report another status (a rank it hung up while cleaning up), and the
 * test kit then goes by this. */
#include "common.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    communicate_before_crashing();
    fprintf(stderr, "crash_sigterm: sends itself signal %d\n", SIGTERM);
    fflush(stderr);
    kill(getpid(), SIGTERM);
    pause(); /* the signal is delivered before kill() returns; never woken */
    MPI_Finalize();
    return 0;
}
