/* ranks: 2-4 */
/* needs: mpi4 */
/* Wait states of known size for `mpigram profile`: one rank is made late
 * by a busy-wait of DELAY_MS milliseconds (on the clock, without MPI calls)
 * before its part of each of ITERATIONS iterations.
 *
 *   wait_states [MODE [DELAY_MS=20] [ITERATIONS=10]]
 *
 * Without arguments, every mode in turn, with DELAY_MS 1 and 3 iterations.
 *   late_sender    rank 1 waits, then MPI_Send to rank 0, which is already
 *                  in MPI_Recv: rank 0 waits DELAY_MS per iteration.
 *   late_receiver  rank 0 MPI_Ssend to rank 1, which waits before its
 *                  MPI_Recv: rank 0 waits DELAY_MS per iteration.
 *   exchange       ranks 0 and 1 swap a message with MPI_Irecv, MPI_Isend and
 *                  MPI_Waitall; rank 1 waits DELAY_MS first: rank 0's
 *                  Waitall waits for a late sender (and its own standard
 *                  send is no late receiver).
 *   barrier        the last rank waits before MPI_Barrier: every other rank
 *                  waits DELAY_MS per iteration.
 *   allreduce      the same before an MPI_Allreduce (sum checked).
 *   nxn            the same before an MPI_Alltoall (data checked).
 *   iallreduce     the same before an MPI_Iallreduce, completed by MPI_Wait:
 *                  the others wait in MPI_Wait.
 *   persistent     the same before the MPI_Start of a persistent
 *                  MPI_Allreduce_init, completed by MPI_Wait.
 *   fence          the last rank waits before an MPI_Win_fence: the others, in
 *                  the fence already, wait DELAY_MS per iteration.
 *   late_post      rank 1 (the target) waits before MPI_Win_post: rank 0
 *                  (the origin), in MPI_Win_start or MPI_Win_complete,
 *                  waits DELAY_MS per iteration.
 *   early_wait     rank 0 (the origin) waits between MPI_Win_start and its
 *                  MPI_Put: rank 1 (the target), in MPI_Win_wait, waits
 *                  DELAY_MS per iteration.
 *   early_reduce   every rank r but the root (0) waits r x DELAY_MS before
 *                  MPI_Reduce: the root, in MPI_Reduce already, waits
 *                  DELAY_MS per iteration for rank 1, the first to send.
 *   late_broadcast the root (0) waits before MPI_Bcast: every other rank,
 *                  in MPI_Bcast already, waits DELAY_MS per iteration.
 *                  (Both start each iteration with an MPI_Barrier: a rooted
 *                  collective returns on its ranks at different times, and
 *                  the delay must start together on all.)
 *
 * Ranks other than 0 and 1 take no part in the point-to-point modes. */
#include "common.h"
static void run(const char *mode, double delay, int iterations)
{
    int rank = world_rank(), n = world_size();
    if (strcmp(mode, "late_sender") == 0) {
        for (int i = 0; i < iterations; i++) {
            int v = -1;
            if (rank == 1) {
                busy_wait(delay);
                v = payload(1, 0, i);
                MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
            } else if (rank == 0) {
                MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK_EQ(v, payload(1, 0, i));
            }
        }
    } else if (strcmp(mode, "late_receiver") == 0) {
        for (int i = 0; i < iterations; i++) {
            int v = -1;
            if (rank == 0) {
                v = payload(0, 0, i);
                MPI_Ssend(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            } else if (rank == 1) {
                busy_wait(delay);
                MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK_EQ(v, payload(0, 0, i));
            }
        }
    } else if (strcmp(mode, "exchange") == 0) {
        for (int i = 0; i < iterations; i++) {
            if (rank > 1)
                continue;
            int peer = 1 - rank, in = -1, out = payload(rank, peer, i);
            MPI_Request reqs[2];
            if (rank == 1)
                busy_wait(delay);
            MPI_Irecv(&in, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &reqs[0]);
            MPI_Isend(&out, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &reqs[1]);
            MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
            CHECK_EQ(in, payload(peer, rank, i));
        }
    } else if (strcmp(mode, "barrier") == 0) {
        for (int i = 0; i < iterations; i++) {
            if (rank == n - 1)
                busy_wait(delay);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "allreduce") == 0) {
        for (int i = 0; i < iterations; i++) {
            if (rank == n - 1)
                busy_wait(delay);
            int v = rank + i, sum = -1;
            MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK_EQ(sum, n * (n - 1) / 2 + n * i);
        }
    } else if (strcmp(mode, "iallreduce") == 0 || strcmp(mode, "persistent") == 0) {
        int persistent = strcmp(mode, "persistent") == 0, v = 0, sum = -1;
        MPI_Request req;
        if (persistent)
            MPI_Allreduce_init(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &req);
        for (int i = 0; i < iterations; i++) {
            if (rank == n - 1)
                busy_wait(delay);
            v = rank + i;
            if (persistent)
                MPI_Start(&req);
            else
                MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK_EQ(sum, n * (n - 1) / 2 + n * i);
        }
        if (persistent)
            MPI_Request_free(&req);
    } else if (strcmp(mode, "nxn") == 0) {
        int send[4], recv[4];
        CHECK(n <= 4);
        for (int i = 0; i < iterations; i++) {
            if (rank == n - 1)
                busy_wait(delay);
            for (int to = 0; to < n; to++)
                send[to] = payload(rank, to, i);
            MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
            for (int from = 0; from < n; from++)
                CHECK_EQ(recv[from], payload(from, rank, i));
        }
    } else if (strcmp(mode, "fence") == 0) {
        /* Iterations alternate between two cells: the next iteration's
         * put may land before this one's value is read. */
        int cell[2] = {-1, -1};
        MPI_Win win;
        MPI_Win_create(cell, sizeof cell, sizeof cell[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_fence(0, win);
        for (int i = 0; i < iterations; i++) {
            if (rank == n - 1)
                busy_wait(delay);
            int v = payload(rank, (rank + 1) % n, i);
            MPI_Put(&v, 1, MPI_INT, (rank + 1) % n, i % 2, 1, MPI_INT, win);
            MPI_Win_fence(0, win);
            CHECK_EQ(cell[i % 2], payload((rank + n - 1) % n, rank, i));
        }
        MPI_Win_free(&win);
    } else if (strcmp(mode, "late_post") == 0 || strcmp(mode, "early_wait") == 0) {
        int late_post = strcmp(mode, "late_post") == 0, cell = -1;
        MPI_Win win;
        MPI_Group world, peer;
        MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        int other = 1 - rank;
        if (rank <= 1)
            MPI_Group_incl(world, 1, &other, &peer);
        for (int i = 0; i < iterations && rank <= 1; i++) {
            if (rank == 1) { /* the target */
                if (late_post)
                    busy_wait(delay);
                MPI_Win_post(peer, 0, win);
                MPI_Win_wait(win);
                CHECK_EQ(cell, payload(0, 1, i));
            } else { /* the origin */
                int v = payload(0, 1, i);
                MPI_Win_start(peer, 0, win);
                if (!late_post)
                    busy_wait(delay);
                MPI_Put(&v, 1, MPI_INT, 1, 0, 1, MPI_INT, win);
                MPI_Win_complete(win);
            }
        }
        if (rank <= 1)
            MPI_Group_free(&peer);
        MPI_Group_free(&world);
        MPI_Win_free(&win);
    } else if (strcmp(mode, "early_reduce") == 0) {
        for (int i = 0; i < iterations; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            busy_wait(delay * rank);
            int v = rank + i, sum = -1;
            MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0)
                CHECK_EQ(sum, n * (n - 1) / 2 + n * i);
        }
    } else if (strcmp(mode, "late_broadcast") == 0) {
        for (int i = 0; i < iterations; i++) {
            int v = -1;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                busy_wait(delay);
                v = payload(0, 0, i);
            }
            MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
            CHECK_EQ(v, payload(0, 0, i));
        }
    } else {
        CHECK_MSG(0,
                  "unknown mode %s (late_sender, late_receiver, exchange, barrier, allreduce, nxn, "
                  "iallreduce, persistent, fence, late_post, early_wait, early_reduce, "
                  "late_broadcast)",
                  mode);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    if (argc < 2) {
        const char *modes[] = {"late_sender", "late_receiver", "exchange", "barrier",
                               "allreduce",   "nxn",           "iallreduce",
                               "persistent",  "fence",         "late_post",
                               "early_wait",  "early_reduce",  "late_broadcast"};
        for (int m = 0; m < (int)(sizeof modes / sizeof *modes); m++)
            run(modes[m], 1e-3, 3);
    } else {
        double delay = (argc > 2 ? atof(argv[2]) : 20.0) * 1e-3;
        int iterations = argc > 3 ? atoi(argv[3]) : 10;
        CHECK(delay >= 0 && iterations > 0);
        run(argv[1], delay, iterations);
    }
    MPI_Finalize();
    return 0;
}
