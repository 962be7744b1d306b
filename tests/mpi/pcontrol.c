/* ranks: 1-4 */
/* MPI_Pcontrol as a tool switch: level 0 pauses recording, level 1 resumes
 * it. Between the two, each rank makes 5 MPI_Comm_size calls that a tracer
 * must not record; before and after, 3 and 2 MPI_Comm_rank calls that it
 * must. A communicator duplicated while paused is used after resuming, so
 * the tracer meets an object it never saw created. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    for (int i = 0; i < 3; i++)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Pcontrol(0);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int i = 0; i < 5; i++)
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Pcontrol(1);
    for (int i = 0; i < 2; i++)
        MPI_Comm_rank(dup, &rank);
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
    CHECK_EQ(sum, size);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
