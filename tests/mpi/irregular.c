/* ranks: 1-4 */
/* An irregular stream: a ring exchange whose tag changes with the
 * iteration, so that the tracer sees call signatures it has never seen
 * before. Each iteration is one MPI_Sendrecv of one 64-bit value to the right
 * neighbour and from the left one (oneself on one rank). With K = 1 the tag is
 * the iteration number: no two calls have the same signature and the tracer's
 * memory and trace grow with every call. With K > 1 only every K-th iteration
 * gets a new tag and the others use tag 0: K-1 of K calls repeat one signature.
 * With D > 0 the tags are drawn from D values instead (1..D), in a fixed
 * pseudo-random order, the same on every rank: D signatures, in an order that
 * never repeats, so that the grammar grows with every call and the signature
 * table does not.
 * It is the worst case of the grammar compression, for benchmarking
 * (scripts/bench-irregular) and for checking that the tracer stays exact on it.
 *
 * Usage: irregular [iterations=1000] [K=1] [D=0]
 *
 * Self-check: each received value names its sender and iteration, and the
 * status carries the tag that was sent. Rank 0 prints one line:
 *   irregular ranks=R iterations=N k=K ns_per_call=T finalize_ms=F loop_rss_kb=L peak_rss_kb=P
 *             loop_faults=M
 * with the loop's wall time per call (MPI_Wtime), the wall time of
 * MPI_Finalize (where a tracer writes its trace), the process's peak
 * resident memory (VmHWM) before MPI_Finalize and after it, and the page
 * faults the process took in the loop (getrusage's minor faults). */
#include "common.h"
#include <sys/resource.h>
#include <time.h>

/* Minor page faults the process has taken so far. */
static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : -1;
}

/* VmHWM of /proc/self/status in kB, or -1 where there is none. */
static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long iters = argc > 1 ? atol(argv[1]) : 1000;
    long k = argc > 2 ? atol(argv[2]) : 1;
    long d = argc > 3 ? atol(argv[3]) : 0;
    CHECK_MSG(iters >= 0, "iterations must be >= 0");
    CHECK_MSG(k >= 1, "K must be >= 1");
    CHECK_MSG(d >= 0 && d < 1000000, "D must be in 0..999999");
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    int *tag_ub, found;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    CHECK_MSG(found && iters / k + 1 <= *tag_ub, "%ld new tags do not fit under MPI_TAG_UB",
              iters / k + 1);

    MPI_Barrier(MPI_COMM_WORLD);
    long faults0 = minor_faults();
    double t0 = MPI_Wtime();
    unsigned long long draw = 88172645463325252ULL; /* xorshift64 */
    for (long i = 0; i < iters; i++) {
        int tag = i % k == 0 ? (int)(i / k) + 1 : 0;
        if (d > 0) {
            draw ^= draw << 13;
            draw ^= draw >> 7;
            draw ^= draw << 17;
            tag = (int)(draw % (unsigned long long)d) + 1;
        }
        long long out = i * n + rank, in = -1;
        MPI_Status st;
        MPI_Sendrecv(&out, 1, MPI_LONG_LONG, right, tag, &in, 1, MPI_LONG_LONG, left, tag,
                     MPI_COMM_WORLD, &st);
        CHECK_MSG(in == i * n + left, "iteration %ld: received %lld from rank %d", i, in, left);
        CHECK_EQ(st.MPI_TAG, tag);
    }
    double t = MPI_Wtime() - t0;
    long loop_faults = minor_faults() - faults0;
    long loop_rss = peak_rss_kb();
    /* MPI_Wtime is not to be called after MPI_Finalize: the C clock times it. */
    struct timespec f0, f1;
    clock_gettime(CLOCK_MONOTONIC, &f0);
    MPI_Finalize();
    clock_gettime(CLOCK_MONOTONIC, &f1);
    double finalize_ms = (f1.tv_sec - f0.tv_sec) * 1e3 + (f1.tv_nsec - f0.tv_nsec) / 1e6;
    if (rank == 0)
        printf("irregular ranks=%d iterations=%ld k=%ld ns_per_call=%.1f finalize_ms=%.1f "
               "loop_rss_kb=%ld peak_rss_kb=%ld loop_faults=%ld\n",
               n, iters, k, iters > 0 ? t * 1e9 / (double)iters : 0.0, finalize_ms, loop_rss,
               peak_rss_kb(), loop_faults);
    return 0;
}
