/* ranks: 1-4 */
/* expect: exit 3 */
/* Expected to fail: after some communication every rank calls exit(3)
 * without MPI_Finalize. For tests of the tracer's exit-without-finalize path. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    communicate_before_crashing();
    exit(3);
}
