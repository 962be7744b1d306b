/* ranks: 1-2 */
/* A run that stays alive until told to end: after MPI_Init and a barrier,
 * rank 0 waits (at most 60 s) until the file named by argv[1] exists; a
 * second barrier, then MPI_Finalize. Without an argument it does not wait.
 * For tests of what happens while a traced run is alive. */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0 && argc > 1) {
        for (int i = 0; i < 6000 && access(argv[1], F_OK) != 0; i++)
            usleep(10000);
        CHECK_MSG(access(argv[1], F_OK) == 0, "%s never appeared", argv[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
