/* ranks: 1-4 */
/* expect: exit 3 */
/* Expected to fail: after some communication every rank calls exit(3)
 * without MPI_Finalize. For tests of the tracer's exit-without-finalize path.
 * Each rank says so on stderr first: the launcher may report another status
 * (a rank it hung up while cleaning up), and the test kit then goes by this. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    communicate_before_crashing();
    fprintf(stderr, "crash_exit: exits with status 3\n");
    fflush(stderr);
    exit(3);
}
