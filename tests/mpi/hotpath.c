/* ranks: 1 */
/* The calls whose cost the tracer's hot path is judged by, for counting
 * instructions with callgrind (scripts/bench-instructions): each function
 * below makes WINDOW calls of one kind, and callgrind counts what runs
 * inside it (`--toggle-collect=measured_rounds`, inclusive cost per
 * function), traced and untraced; the difference divided by the calls is
 * what the tracer adds per call. One round is
 *   comm_rank_calls   WINDOW MPI_Comm_rank calls (a repeated call)
 *   irecv_window      WINDOW MPI_Irecv from self, same buffer and tag
 *   isend_window      WINDOW MPI_Isend to self, same buffer and tag
 *   waitall_window    one MPI_Waitall on the 2 x WINDOW requests
 * as in OSU's osu_bw (a window of 64 outstanding sends, then one wait), and
 * WINDOW / 8 halo exchanges with 4 neighbours (self, by 4 tags):
 *   halo_posts        MPI_Irecv from each, then MPI_Isend to each (8 calls
 *                     of 8 call sites that take turns)
 *   halo_waitall      one MPI_Waitall on the exchange's 8 requests.
 * Warm-up rounds come first, outside the measured function, so that the
 * measured calls repeat signatures the tracer has seen.
 *
 * Usage: hotpath [ROUNDS] [multiple]   (default 20 rounds; "multiple": the
 * program asks for MPI_THREAD_MULTIPLE, as mpi4py does by default, and the
 * tracer records its calls as calls that may overlap) */
#include "common.h"

#define WINDOW 64
#define WARMUP 4

static double *in, *out;
static MPI_Request requests[2 * WINDOW];

__attribute__((noinline)) void comm_rank_calls(void)
{
    int r = -1;
    for (int i = 0; i < WINDOW; i++)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    CHECK_EQ(r, 0);
}

__attribute__((noinline)) void irecv_window(void)
{
    for (int i = 0; i < WINDOW; i++)
        MPI_Irecv(in, 1, MPI_DOUBLE, 0, 100, MPI_COMM_WORLD, &requests[i]);
}

__attribute__((noinline)) void isend_window(void)
{
    for (int i = 0; i < WINDOW; i++)
        MPI_Isend(out, 1, MPI_DOUBLE, 0, 100, MPI_COMM_WORLD, &requests[WINDOW + i]);
}

__attribute__((noinline)) void waitall_window(void)
{
    MPI_Waitall(2 * WINDOW, requests, MPI_STATUSES_IGNORE);
}

static double halo_in[4];
static MPI_Request halo[8];

__attribute__((noinline)) void halo_posts(void)
{
    for (int k = 0; k < 4; k++)
        MPI_Irecv(&halo_in[k], 1, MPI_DOUBLE, 0, 10 + k, MPI_COMM_WORLD, &halo[k]);
    for (int k = 0; k < 4; k++)
        MPI_Isend(out, 1, MPI_DOUBLE, 0, 10 + k, MPI_COMM_WORLD, &halo[4 + k]);
}

__attribute__((noinline)) void halo_waitall(void)
{
    MPI_Waitall(8, halo, MPI_STATUSES_IGNORE);
}

static void round_of_calls(void)
{
    comm_rank_calls();
    irecv_window();
    isend_window();
    waitall_window();
    CHECK(*in == 1.5);
    for (int i = 0; i < WINDOW / 8; i++) {
        halo_posts();
        halo_waitall();
        for (int k = 0; k < 4; k++)
            CHECK(halo_in[k] == 1.5);
    }
}

__attribute__((noinline)) void measured_rounds(long rounds)
{
    for (long i = 0; i < rounds; i++)
        round_of_calls();
}

int main(int argc, char **argv)
{
    int multiple = argc > 2 && strcmp(argv[2], "multiple") == 0;
    if (multiple) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        CHECK_MSG(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
    } else {
        MPI_Init(&argc, &argv);
    }
    long rounds = argc > 1 ? atol(argv[1]) : 20;
    CHECK_MSG(rounds > 0, "ROUNDS must be positive");
    in = malloc(sizeof *in);
    out = malloc(sizeof *out);
    CHECK(in && out);
    *out = 1.5;
    /* As programs do before their loops: the rank, then the size. The
     * loop's MPI_Comm_rank then has two other calls as its first
     * predecessors (the tracer sums the gaps before a call by the call
     * before it; a signature that follows itself must not fall back to a
     * slower path for it). */
    int rank = -1, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(rank == 0 && size == 1);
    for (int i = 0; i < WARMUP; i++)
        round_of_calls();
    measured_rounds(rounds);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
