/* Shared boilerplate of the MPI test programs.
 *
 * Every program checks its own MPI results. A failed check prints one line,
 *   file:line: rank R: reason
 * on stderr and stops the whole job (MPI_Abort with code 1 while MPI is
 * initialised, exit(1) otherwise), so a wrong result never looks like a hang.
 *
 * Header comments the test harness (crates/testkit) reads:
 *   ranks: LO-HI   the rank counts a program supports (or a single count)
 *   expect: ...    how a crash program fails: abort N | exit N | signal SIGNAME
 */
#ifndef MPIGRAM_TEST_COMMON_H
#define MPIGRAM_TEST_COMMON_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline int test_mpi_active(void)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

__attribute__((noreturn, format(printf, 3, 4))) static inline void
test_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int rank = -1;
    int active = test_mpi_active();
    if (active)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "%s:%d: rank %d: %s\n", file, line, rank, msg);
    fflush(stderr);
    if (active)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* CHECK(cond): cond must hold. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            test_fail(__FILE__, __LINE__, "check failed: %s", #cond);                              \
    } while (0)

/* CHECK_MSG(cond, fmt, ...): cond must hold; the reason is printf-formatted. */
#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond))                                                                               \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                            \
    } while (0)

/* CHECK_EQ(got, want): integer equality, both values printed on failure. */
#define CHECK_EQ(got, want)                                                                        \
    do {                                                                                           \
        long long got_ = (long long)(got), want_ = (long long)(want);                              \
        if (got_ != want_)                                                                         \
            test_fail(__FILE__, __LINE__, "%s = %lld, expected %s = %lld", #got, got_, #want,      \
                      want_);                                                                      \
    } while (0)

/* MPI_OK(call): the call returns MPI_SUCCESS (meaningful where errors return). */
#define MPI_OK(call)                                                                               \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS)                                                                    \
            test_fail(__FILE__, __LINE__, "%s returned %d", #call, rc_);                           \
    } while (0)

/* Rank and size in MPI_COMM_WORLD. */
static inline int world_rank(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static inline int world_size(void)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

/* Programs that need a peer say so instead of deadlocking or reading garbage. */
static inline void need_ranks(int min)
{
    CHECK_MSG(world_size() >= min, "needs at least %d ranks, got %d", min, world_size());
}

/* busy_wait(seconds): computes for that long, spinning on the clock
 * without calling MPI: a known length of computation between calls. */
static inline void busy_wait(double seconds)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double until = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec + seconds, now;
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
        now = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    } while (now < until);
}

/* Neighbours on a ring of n ranks (oneself when n == 1). */
static inline int ring_right(int rank, int n) { return (rank + 1) % n; }
static inline int ring_left(int rank, int n) { return (rank + n - 1) % n; }

/* What the crash programs do before they crash, so a trace has something to
 * show: MPI_Comm_rank, MPI_Comm_size, a ring MPI_Sendrecv, an MPI_Allreduce
 * sum of the ranks (returned) and an MPI_Barrier, all on MPI_COMM_WORLD. */
static inline int communicate_before_crashing(void)
{
    int rank = world_rank(), n = world_size();
    int out = rank, in = -1, sum = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, ring_right(rank, n), 0, &in, 1, MPI_INT, ring_left(rank, n), 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&out, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    return sum;
}

/* Payload value that names its sender and position: lets a receiver check both. */
static inline int payload(int sender, int tag, int i) { return sender * 10000 + tag * 100 + i; }

#endif
