/* ranks: 2 */
/* Windows of messages completed by one MPI_Waitall that records statuses,
 * as OSU's osu_bw receiver does: rank 0 sends a window of WINDOW messages,
 * rank 1 posts WINDOW receives (MPI_ANY_TAG, room for two ints) and waits
 * on all of them with a statuses array. The receives' signatures are the
 * same every window; their statuses are not always: in every fifth window
 * the last message carries two ints and tag 8 instead of one int and tag
 * 7. The tracer recalls a Waitall only when its statuses are the last
 * one's (crates/tracer/tests/behaviour.rs).
 *
 * Usage: window_statuses [windows=20]
 *
 * Self-check: every status has the source, tag and count sent. */
#include "common.h"

#define WINDOW 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank();
    CHECK(world_size() == 2);
    int windows = argc > 1 ? atoi(argv[1]) : 20;
    int out[2] = {1, 2}, in[WINDOW][2];
    MPI_Request r[WINDOW];
    MPI_Status statuses[WINDOW];
    for (int w = 0; w < windows; w++) {
        int odd = w % 5 == 4;
        if (rank == 0) {
            for (int i = 0; i < WINDOW; i++) {
                int last = odd && i == WINDOW - 1;
                MPI_Isend(out, last ? 2 : 1, MPI_INT, 1, last ? 8 : 7, MPI_COMM_WORLD, &r[i]);
            }
            MPI_Waitall(WINDOW, r, statuses);
        } else {
            for (int i = 0; i < WINDOW; i++)
                MPI_Irecv(in[i], 2, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r[i]);
            MPI_Waitall(WINDOW, r, statuses);
            for (int i = 0; i < WINDOW; i++) {
                int last = odd && i == WINDOW - 1, count = -1;
                MPI_Get_count(&statuses[i], MPI_INT, &count);
                CHECK_EQ(statuses[i].MPI_SOURCE, 0);
                CHECK_EQ(statuses[i].MPI_TAG, last ? 8 : 7);
                CHECK_EQ(count, last ? 2 : 1);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
