/* ranks: 1-2 */
/* Computation or sleep between calls, for the tracer's measure of a
 * rank's share of a processor between its calls: each of ITERATIONS
 * iterations waits MICROSECONDS, then calls MPI_Barrier. MODE says how:
 *   compute  busy-waits on the clock (a processor's worth of CPU time);
 *   sleep    sleeps (no CPU time);
 *   pinned   busy-waits, every rank pinned before MPI_Init to the first
 *            processor it may run on: ranks that share one processor.
 * Usage: cpu_share [ITERATIONS [MICROSECONDS [MODE]]]   (20 1000 compute) */
#define _GNU_SOURCE
#include "common.h"
#include <sched.h>
#include <string.h>

/* Pins the process to the first processor of its affinity mask. */
static void pin_to_one_processor(void)
{
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
            return;
        }
    }
    CHECK_MSG(0, "no processor in the affinity mask");
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    double seconds = 1e-6 * (argc > 2 ? atof(argv[2]) : 1000);
    const char *mode = argc > 3 ? argv[3] : "compute";
    int sleeps = strcmp(mode, "sleep") == 0;
    if (strcmp(mode, "pinned") == 0)
        pin_to_one_processor();
    else
        CHECK_MSG(sleeps || strcmp(mode, "compute") == 0, "MODE is compute, sleep or pinned");
    MPI_Init(&argc, &argv);
    for (int i = 0; i < iterations; i++) {
        if (sleeps) {
            struct timespec t = {0, (long)(seconds * 1e9)};
            nanosleep(&t, NULL);
        } else {
            busy_wait(seconds);
        }
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_Finalize();
    return 0;
}
