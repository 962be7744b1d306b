/* ranks: 1-4 */
/* expect: signal SIGSEGV */
/* Expected to fail: after some communication every rank writes through a
 * NULL pointer (a real fault, not raise()). The launcher reports the signal.
 * For tests of the tracer's fatal-signal path. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int sum = communicate_before_crashing();
    /* Both volatile: the compiler can neither see that the pointer is NULL nor
     * drop the store as dead. */
    volatile int *volatile nowhere = NULL;
    *nowhere = sum;
    MPI_Finalize();
    return 0; /* not reached */
}
