/* ranks: 1-4 */
/* MPI_Comm_split's colour and key where they are the caller's rank on some
 * ranks only or on all: one communicator for all (0, rank), one each (rank,
 * 0) as NPB FT's 1-D layout makes them, one each (rank, rank), and
 * MPI_Comm_split_type with key 0; the last split while rank 1 does not
 * record (MPI_Pcontrol), so the tracer's agreement must still take place. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int size, r;

    MPI_Comm all;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &all);
    MPI_Comm_size(all, &size);
    MPI_Comm_rank(all, &r);
    CHECK_EQ(size, n);
    CHECK_EQ(r, rank);

    MPI_Comm self, self_too;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &self);
    MPI_Comm_size(self, &size);
    CHECK_EQ(size, 1);
    MPI_Comm_split(MPI_COMM_WORLD, rank, rank, &self_too);
    MPI_Comm_size(self_too, &size);
    CHECK_EQ(size, 1);

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &r);
    CHECK_EQ(r, rank); /* one node; ties broken by rank */

    MPI_Comm again;
    if (rank == 1)
        MPI_Pcontrol(0);
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &again);
    if (rank == 1)
        MPI_Pcontrol(1);
    MPI_Comm_rank(again, &r);
    CHECK_EQ(r, rank);

    MPI_Comm_free(&again);
    MPI_Comm_free(&node);
    MPI_Comm_free(&self_too);
    MPI_Comm_free(&self);
    MPI_Comm_free(&all);
    MPI_Finalize();
    return 0;
}
