/* ranks: 1-4 */
/* expect: signal SIGINT */
/* Expected to fail: after some communication every rank sends itself SIGINT
 * (as Ctrl-C would). The launcher reports the signal. For tests of the
 * tracer's SIGINT path. Each rank says so on stderr first: the launcher may
 * report another status (a rank it hung up while cleaning up), and the test
 * kit then goes by this. */
#include "common.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    communicate_before_crashing();
    fprintf(stderr, "crash_sigint: sends itself signal %d\n", SIGINT);
    fflush(stderr);
    kill(getpid(), SIGINT);
    pause(); /* the signal is delivered before kill() returns; never woken */
    MPI_Finalize();
    return 0;
}
