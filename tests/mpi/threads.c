/* ranks: 1-4 */
/* MPI_THREAD_MULTIPLE: two pthreads per rank communicate at the same time.
 * Each thread has its own duplicate of the world (ring Sendrecv and an
 * Allreduce every few iterations); both also use MPI_COMM_WORLD concurrently,
 * kept apart by distinct tags. Also Query_thread and Is_thread_main.
 *
 * Usage: threads [one-at-a-time]   (with it, the second thread starts when
 * the first has ended: MPI_THREAD_MULTIPLE, but no two calls at once) */
#include "common.h"
#include <pthread.h>

#define ITERS 20

struct worker {
    int id;
    MPI_Comm own;
    int is_main; /* MPI_Is_thread_main as seen by the thread */
};

/* Both threads begin together (one at a time: each alone), so that their
 * calls are in progress at once, not one thread's all before the other's. */
static pthread_barrier_t start;

static void *work(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(&start);
    int rank = world_rank(), n = world_size();
    int right = ring_right(rank, n), left = ring_left(rank, n);
    for (int iter = 0; iter < ITERS; iter++) {
        int out = payload(rank, w->id, iter % 100), in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, right, 1, &in, 1, MPI_INT, left, 1, w->own,
                     MPI_STATUS_IGNORE);
        CHECK_EQ(in, payload(left, w->id, iter % 100));

        int tag = 100 + w->id; /* the shared communicator: distinct tags per thread */
        out = payload(rank, 50 + w->id, iter % 100);
        MPI_Sendrecv(&out, 1, MPI_INT, right, tag, &in, 1, MPI_INT, left, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK_EQ(in, payload(left, 50 + w->id, iter % 100));

        if (iter % 5 == 4) {
            int sum = -1;
            MPI_Allreduce(&iter, &sum, 1, MPI_INT, MPI_SUM, w->own);
            CHECK_EQ(sum, iter * n);
        }
    }
    MPI_Is_thread_main(&w->is_main);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK_MSG(provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
    int level = -1, is_main = 0;
    MPI_Query_thread(&level);
    CHECK_EQ(level, MPI_THREAD_MULTIPLE);
    MPI_Is_thread_main(&is_main);
    CHECK(is_main);

    struct worker workers[2];
    pthread_t threads[2];
    for (int t = 0; t < 2; t++) {
        workers[t].id = t;
        workers[t].is_main = -1;
        MPI_Comm_dup(MPI_COMM_WORLD, &workers[t].own);
    }
    int one_at_a_time = argc > 1 && strcmp(argv[1], "one-at-a-time") == 0;
    CHECK(pthread_barrier_init(&start, NULL, one_at_a_time ? 1 : 2) == 0);
    for (int t = 0; t < 2; t++) {
        CHECK(pthread_create(&threads[t], NULL, work, &workers[t]) == 0);
        if (one_at_a_time)
            pthread_join(threads[t], NULL);
    }
    for (int t = 0; t < 2; t++) {
        if (!one_at_a_time)
            pthread_join(threads[t], NULL);
        CHECK_EQ(workers[t].is_main, 0);
        MPI_Comm_free(&workers[t].own);
    }
    pthread_barrier_destroy(&start);
    MPI_Finalize();
    return 0;
}
