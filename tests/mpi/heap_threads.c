/* ranks: 1-2 */
/* The allocation hooks under threads: two threads allocate, reallocate and
 * free blocks of many sizes (some kept a while, most freed at once) for as
 * long as the main thread broadcasts, every iteration from a heap block of
 * its own allocated and freed around the call. The hooks wait for the
 * segment table's lock only a bounded while, so a thread may leave a block
 * untracked: the program must run, and the trace be exact, whatever they
 * found (MPI_THREAD_FUNNELED: only the main thread calls MPI). */
#include "common.h"
#include <pthread.h>

#define KEPT 64
#define ITERS 300

static volatile int done;

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    char *kept[KEPT] = {0};
    for (unsigned long i = 0; !__atomic_load_n(&done, __ATOMIC_RELAXED); i++) {
        seed = seed * 1103515245u + 12345u;
        size_t size = 1 + (seed >> 16) % 4096;
        char *t = (i % 7 == 0) ? calloc(1, size) : malloc(size);
        CHECK(t != NULL);
        t[size - 1] = (char)i;
        if (i % 5 == 0) {
            t = realloc(t, size * 2);
            CHECK(t != NULL);
            CHECK_EQ(t[size - 1], (char)i);
        }
        if (i % 3 == 0) {
            int k = (int)(i / 3 % KEPT);
            free(kept[k]);
            kept[k] = t;
        } else {
            free(t);
        }
    }
    for (int k = 0; k < KEPT; k++)
        free(kept[k]);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    CHECK(provided >= MPI_THREAD_FUNNELED);
    pthread_t threads[2];
    for (size_t t = 0; t < 2; t++)
        CHECK(pthread_create(&threads[t], NULL, churn, (void *)(t + 1)) == 0);
    int rank = world_rank();
    for (int i = 0; i < ITERS; i++) {
        int *buf = malloc((size_t)(1 + i % 16) * sizeof *buf);
        CHECK(buf != NULL);
        buf[0] = rank == 0 ? i : -1;
        MPI_OK(MPI_Bcast(buf, 1, MPI_INT, 0, MPI_COMM_WORLD));
        CHECK_EQ(buf[0], i);
        free(buf);
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELAXED);
    for (int t = 0; t < 2; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    MPI_Finalize();
    return 0;
}
