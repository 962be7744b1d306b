/* ranks: 2-4 */
/* Waitany, Waitsome, Testany, Testsome, Testall and Waitall with completion
 * order different from posting order. Ranks pair up (0-1, 2-3; an odd rank
 * out only joins the barriers). The receiver posts Irecvs for tags 0..K-1;
 * the sender sends them in reverse order, one at a time, and waits for an
 * acknowledgement before the next, so request K-1 completes first, then K-2,
 * ... deterministically. */
#include "common.h"

#define K 4
#define ACK_TAG 999

enum phase { WAITANY, WAITSOME, TESTANY, TESTSOME, TESTALL, WAITALL, PHASES };

static int tag_of(enum phase p, int k) { return 100 * (int)p + k; }

/* Sender side: messages K-1 .. 0, each (except in WAITALL) acknowledged
 * before the next is sent. */
static void send_reversed(enum phase p, int peer)
{
    for (int k = K - 1; k >= 0; k--) {
        int value = payload(world_rank(), tag_of(p, k), 0);
        MPI_Ssend(&value, 1, MPI_INT, peer, tag_of(p, k), MPI_COMM_WORLD);
        if (p != WAITALL)
            MPI_Recv(NULL, 0, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void ack(int peer) { MPI_Send(NULL, 0, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD); }

static void check_arrival(enum phase p, int peer, const int *in, int k, const MPI_Status *st)
{
    CHECK_EQ(st->MPI_SOURCE, peer);
    CHECK_EQ(st->MPI_TAG, tag_of(p, k));
    CHECK_EQ(in[k], payload(peer, tag_of(p, k), 0));
}

static void receive_reversed(enum phase p, int peer)
{
    int in[K];
    MPI_Request reqs[K];
    MPI_Status st, sts[K];
    for (int k = 0; k < K; k++)
        MPI_Irecv(&in[k], 1, MPI_INT, peer, tag_of(p, k), MPI_COMM_WORLD, &reqs[k]);

    for (int step = 0; step < K && p != WAITALL; step++) {
        int expected = K - 1 - step, index = -1, flag = 0, outcount = 0, indices[K];
        switch (p) {
        case WAITANY:
            MPI_Waitany(K, reqs, &index, &st);
            break;
        case WAITSOME:
            MPI_Waitsome(K, reqs, &outcount, indices, sts);
            CHECK_EQ(outcount, 1);
            index = indices[0];
            st = sts[0];
            break;
        case TESTANY:
            while (!flag)
                MPI_Testany(K, reqs, &index, &flag, &st);
            break;
        case TESTSOME:
            while (outcount == 0)
                MPI_Testsome(K, reqs, &outcount, indices, sts);
            CHECK_EQ(outcount, 1);
            index = indices[0];
            st = sts[0];
            break;
        case TESTALL:
            /* Complete the expected one with Test; Testall stays false until the last. */
            while (!flag)
                MPI_Test(&reqs[expected], &flag, &st);
            index = expected;
            if (step < K - 1) {
                MPI_Testall(K, reqs, &flag, sts);
                CHECK_MSG(!flag, "Testall true with %d messages unsent", K - 1 - step);
            } else {
                flag = 0;
                while (!flag)
                    MPI_Testall(K, reqs, &flag, sts); /* all null now: true at once */
            }
            break;
        default:
            break;
        }
        CHECK_EQ(index, expected);
        CHECK(reqs[expected] == MPI_REQUEST_NULL);
        check_arrival(p, peer, in, expected, &st);
        ack(peer);
    }

    if (p == WAITALL) {
        MPI_Waitall(K, reqs, sts);
        for (int k = 0; k < K; k++)
            check_arrival(p, peer, in, k, &sts[k]);
    }

    /* With every request null, the "any/some" calls report MPI_UNDEFINED. */
    int index = 0, flag = 0, outcount = 0, indices[K];
    MPI_Waitany(K, reqs, &index, MPI_STATUS_IGNORE);
    CHECK_EQ(index, MPI_UNDEFINED);
    MPI_Testany(K, reqs, &index, &flag, MPI_STATUS_IGNORE);
    CHECK(flag && index == MPI_UNDEFINED);
    MPI_Waitsome(K, reqs, &outcount, indices, sts);
    CHECK_EQ(outcount, MPI_UNDEFINED);
    MPI_Testsome(K, reqs, &outcount, indices, sts);
    CHECK_EQ(outcount, MPI_UNDEFINED);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int peer = rank ^ 1;
    for (int p = 0; p < PHASES; p++) {
        if (peer < n) {
            if (rank % 2 == 0)
                receive_reversed((enum phase)p, peer);
            else
                send_reversed((enum phase)p, peer);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
