/* ranks: 1-4 */
/* A parallel bucket sort of integer keys, shaped like the NAS IS benchmark:
 * every array is static (not from malloc); each iteration counts the local
 * keys per bucket, sums the counts of all ranks with MPI_Allreduce (1,029
 * ints: the buckets and a few extra counters, more than 4 KiB), exchanges
 * how many keys go to each rank with MPI_Alltoall, and sends the keys with
 * MPI_Alltoallv. At the end each rank passes its largest key to its right
 * neighbour (MPI_Irecv, MPI_Send, MPI_Wait) and the ranks sum their checks
 * with MPI_Reduce.
 *
 * Usage: bucket_sort [iterations]   (default 10)
 *
 * Self-check: the bucket totals equal the serial count over every rank's
 * keys (each rank can generate all keys), every key a rank receives lies in
 * its range of buckets, as many as the totals say, and the sorted keys are
 * in order across ranks. */
#include "common.h"

#define KEYS 2048          /* keys per rank */
#define MAX_KEY (1 << 16)  /* keys are in [0, MAX_KEY) */
#define BUCKETS 1024       /* buckets of MAX_KEY / BUCKETS keys each */
#define EXTRA 5            /* counters summed with the buckets, as IS's test keys */
#define MAX_RANKS 4
#define SHIFT 6            /* key >> SHIFT is its bucket */

static int keys[KEYS];
static int by_bucket[KEYS];
static int received[MAX_RANKS * KEYS];
static int bucket_size[BUCKETS + EXTRA];
static int bucket_totals[BUCKETS + EXTRA];
static int bucket_start[BUCKETS];
static int send_count[MAX_RANKS], recv_count[MAX_RANKS];
static int send_displ[MAX_RANKS], recv_displ[MAX_RANKS];
static int sorted[MAX_RANKS * KEYS];
static int key_count[MAX_KEY];

/* Key i of rank r at iteration it: a fixed pseudo-random key, with one key
 * per rank changed each iteration (as IS changes two). */
static int key_of(int r, int i, int it)
{
    unsigned x = (unsigned)(r * KEYS + i) * 2654435761u;
    x ^= x >> 13;
    if (i == it % KEYS)
        x += (unsigned)it * 40503u;
    return (int)(x % MAX_KEY);
}

/* The first bucket of rank r: ranks own contiguous ranges of buckets. */
static int first_bucket(int r, int n) { return r * BUCKETS / n; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    CHECK_MSG(iters >= 1, "iterations must be >= 1");
    int me = world_rank(), n = world_size();
    CHECK_MSG(n <= MAX_RANKS, "at most %d ranks", MAX_RANKS);
    int mine = 0;

    for (int it = 1; it <= iters; it++) {
        for (int i = 0; i < KEYS; i++)
            keys[i] = key_of(me, i, it);
        memset(bucket_size, 0, sizeof bucket_size);
        for (int i = 0; i < KEYS; i++)
            bucket_size[keys[i] >> SHIFT]++;
        for (int e = 0; e < EXTRA; e++)
            bucket_size[BUCKETS + e] = me + e;
        /* Keys ordered by bucket, for sending. */
        bucket_start[0] = 0;
        for (int b = 1; b < BUCKETS; b++)
            bucket_start[b] = bucket_start[b - 1] + bucket_size[b - 1];
        for (int i = 0; i < KEYS; i++)
            by_bucket[bucket_start[keys[i] >> SHIFT]++] = keys[i];

        MPI_Allreduce(bucket_size, bucket_totals, BUCKETS + EXTRA, MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
        for (int b = 0; b < BUCKETS; b++) {
            int want = 0;
            for (int r = 0; r < n; r++)
                for (int i = 0; i < KEYS; i++)
                    want += (key_of(r, i, it) >> SHIFT) == b;
            CHECK_EQ(bucket_totals[b], want);
        }
        CHECK_EQ(bucket_totals[BUCKETS], n * (n - 1) / 2);

        for (int r = 0; r < n; r++) {
            send_count[r] = 0;
            int end = r + 1 < n ? first_bucket(r + 1, n) : BUCKETS;
            for (int b = first_bucket(r, n); b < end; b++)
                send_count[r] += bucket_size[b];
            send_displ[r] = r == 0 ? 0 : send_displ[r - 1] + send_count[r - 1];
        }
        MPI_Alltoall(send_count, 1, MPI_INT, recv_count, 1, MPI_INT, MPI_COMM_WORLD);
        mine = 0;
        for (int r = 0; r < n; r++) {
            recv_displ[r] = mine;
            mine += recv_count[r];
        }
        int my_end = me + 1 < n ? first_bucket(me + 1, n) : BUCKETS;
        int expected = 0;
        for (int b = first_bucket(me, n); b < my_end; b++)
            expected += bucket_totals[b];
        CHECK_EQ(mine, expected);
        MPI_Alltoallv(by_bucket, send_count, send_displ, MPI_INT, received, recv_count, recv_displ,
                      MPI_INT, MPI_COMM_WORLD);
        for (int i = 0; i < mine; i++) {
            int b = received[i] >> SHIFT;
            CHECK_MSG(b >= first_bucket(me, n) && b < my_end, "key %d is not in my buckets",
                      received[i]);
        }
    }

    /* Sort the received keys (counting sort over my buckets) and check the
     * order across ranks: my smallest key is not below my left's largest. */
    int low = first_bucket(me, n) << SHIFT;
    for (int i = 0; i < mine; i++)
        key_count[received[i] - low]++;
    int k = 0;
    for (int v = 0; k < mine; v++)
        for (; key_count[v] > 0; key_count[v]--)
            sorted[k++] = low + v;
    int left_largest = -1, my_largest = mine > 0 ? sorted[mine - 1] : -1;
    MPI_Request request = MPI_REQUEST_NULL;
    if (me > 0)
        MPI_Irecv(&left_largest, 1, MPI_INT, me - 1, 1000, MPI_COMM_WORLD, &request);
    if (me < n - 1)
        MPI_Send(&my_largest, 1, MPI_INT, me + 1, 1000, MPI_COMM_WORLD);
    if (me > 0)
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    int ordered = mine == 0 || sorted[0] >= left_largest, all_ordered = 0;
    MPI_Reduce(&ordered, &all_ordered, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        CHECK_EQ(all_ordered, n);
    MPI_Finalize();
    return 0;
}
