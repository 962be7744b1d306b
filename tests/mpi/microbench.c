/* ranks: 1-4 */
/* Microbenchmarks for measuring tracer overhead. Rank 0 times, with
 * MPI_Wtime, N iterations (after N/10 warm-up iterations) of:
 *   comm_rank_ns                 one MPI_Comm_rank call
 *   pingpong_half_rtt_ns         half a round trip of an 8-byte MPI_Send/MPI_Recv
 *                                ping-pong between ranks 0 and 1
 *   irecv_isend_waitall_ns       one Irecv + Isend + Waitall(2) exchange of 8 bytes
 *                                between ranks 0 and 1
 *   window_1B_ns_per_message     message rate as OSU's osu_bw measures bandwidth:
 *   window_1KiB_ns_per_message   rank 0 sends a window of 64 MPI_Isend (same buffer,
 *                                tag and size) then one MPI_Waitall, rank 1 posts 64
 *                                MPI_Irecv then one MPI_Waitall and acknowledges the
 *                                window with a 4-byte message; N/64 windows of 1-byte
 *                                and of 1024-byte messages, time per message (the
 *                                bandwidth is the size divided by it)
 *   halo_exchange_ns             one exchange with 4 "neighbours" (the peer, by 4
 *                                tags, each with its own buffer): 4 MPI_Irecv, 4
 *                                MPI_Isend of 8 bytes, one MPI_Waitall of the 8, as a
 *                                2D stencil's halo exchange makes them
 *   heap_temporary_ns            one malloc and free of a block of 32 to 128 bytes, as
 *                                code between MPI calls makes them (no MPI call; the
 *                                tracer's allocation hooks run), on rank 0
 *   heap_temporary_100k_live_ns  the same with 100,000 more blocks allocated and not
 *                                freed
 * and prints one machine-readable line per measurement, "name value". The
 * two-rank measurements need at least 2 ranks and are left out with one;
 * ranks above 1 wait in a barrier.
 *
 * Usage: microbench [N]   (default 10000) */
#include "common.h"

static void report(const char *name, double seconds, long iterations)
{
    printf("%s %.1f\n", name, seconds * 1e9 / (double)iterations);
}

/* Allocates and frees `iters` temporary blocks; returns the time taken. */
static double heap_temporaries(long iters)
{
    volatile char sink = 0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        char *t = malloc(32 + (size_t)(i & 3) * 32);
        CHECK(t != NULL);
        t[0] = (char)i;
        sink += t[0];
        free(t);
    }
    return MPI_Wtime() - t0;
}

static void pingpong(int rank, long iters)
{
    double buf = 0;
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
        }
    }
}

#define WINDOW 64

/* `windows` windows of WINDOW messages of `size` bytes from rank 0 to 1. */
static void windowed(int rank, long windows, int size, char *buf)
{
    MPI_Request reqs[WINDOW];
    char ack[4] = {0};
    for (long w = 0; w < windows; w++) {
        if (rank == 0) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Isend(buf, size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &reqs[j]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int j = 0; j < WINDOW; j++)
                MPI_Irecv(buf, size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &reqs[j]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
        }
    }
}

static void exchange(int rank, long iters)
{
    double out = rank, in = -1;
    int peer = 1 - rank;
    for (long i = 0; i < iters; i++) {
        MPI_Request reqs[2];
        MPI_Irecv(&in, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    }
    CHECK(in == peer);
}

static void halo_exchange(int rank, long iters)
{
    double out[4] = {rank, rank, rank, rank}, in[4] = {-1, -1, -1, -1};
    int peer = 1 - rank;
    for (long i = 0; i < iters; i++) {
        MPI_Request reqs[8];
        for (int k = 0; k < 4; k++)
            MPI_Irecv(&in[k], 1, MPI_DOUBLE, peer, 10 + k, MPI_COMM_WORLD, &reqs[k]);
        for (int k = 0; k < 4; k++)
            MPI_Isend(&out[k], 1, MPI_DOUBLE, peer, 10 + k, MPI_COMM_WORLD, &reqs[4 + k]);
        MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE);
    }
    for (int k = 0; k < 4; k++)
        CHECK(in[k] == peer);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long iters = argc > 1 ? atol(argv[1]) : 10000;
    CHECK_MSG(iters > 0, "N must be positive");
    long warmup = iters / 10;
    int rank = world_rank(), n = world_size();

    if (rank == 0) {
        int r = -1;
        for (long i = 0; i < warmup; i++)
            MPI_Comm_rank(MPI_COMM_WORLD, &r);
        double t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++)
            MPI_Comm_rank(MPI_COMM_WORLD, &r);
        double t = MPI_Wtime() - t0;
        CHECK_EQ(r, 0);
        report("comm_rank_ns", t, iters);

        heap_temporaries(warmup);
        report("heap_temporary_ns", heap_temporaries(iters), iters);
        enum { LIVE = 100000 };
        char **live = malloc(LIVE * sizeof *live);
        CHECK(live != NULL);
        for (long i = 0; i < LIVE; i++) {
            live[i] = malloc(64);
            CHECK(live[i] != NULL);
        }
        heap_temporaries(warmup);
        report("heap_temporary_100k_live_ns", heap_temporaries(iters), iters);
        for (long i = 0; i < LIVE; i++)
            free(live[i]);
        free(live);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (n >= 2 && rank < 2) {
        pingpong(rank, warmup);
        double t0 = MPI_Wtime();
        pingpong(rank, iters);
        double t = MPI_Wtime() - t0;
        if (rank == 0)
            report("pingpong_half_rtt_ns", t, 2 * iters);

        exchange(rank, warmup);
        t0 = MPI_Wtime();
        exchange(rank, iters);
        t = MPI_Wtime() - t0;
        if (rank == 0)
            report("irecv_isend_waitall_ns", t, iters);

        char *buf = malloc(1024);
        CHECK(buf);
        memset(buf, rank, 1024);
        long windows = iters / WINDOW > 0 ? iters / WINDOW : 1;
        int sizes[] = {1, 1024};
        const char *names[] = {"window_1B_ns_per_message", "window_1KiB_ns_per_message"};
        for (int s = 0; s < 2; s++) {
            windowed(rank, windows / 10 + 1, sizes[s], buf);
            t0 = MPI_Wtime();
            windowed(rank, windows, sizes[s], buf);
            t = MPI_Wtime() - t0;
            if (rank == 0)
                report(names[s], t, windows * WINDOW);
        }
        CHECK(rank == 0 || buf[0] == 0);
        free(buf);

        halo_exchange(rank, warmup);
        t0 = MPI_Wtime();
        halo_exchange(rank, iters);
        t = MPI_Wtime() - t0;
        if (rank == 0)
            report("halo_exchange_ns", t, iters);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
