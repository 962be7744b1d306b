/* ranks: 1-4 */
/* expect: signal SIGBUS */
/* Expected to fail: after some communication every rank writes to a shared
 * mapping past the end of its (empty) file, a real SIGBUS (not raise()). The
 * launcher reports the signal. For tests of the tracer's fatal-signal path. */
#include "common.h"
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int sum = communicate_before_crashing();
    FILE *empty = tmpfile();
    CHECK(empty != NULL);
    volatile int *past_the_end =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(empty), 0);
    CHECK(past_the_end != MAP_FAILED);
    *past_the_end = sum;
    MPI_Finalize();
    return 0; /* not reached */
}
