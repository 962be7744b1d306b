/* ranks: 1-4 */
/* Every non-blocking collective: Ibarrier, Ibcast, Igather(v), Iscatter(v),
 * Iallgather(v), Ialltoall(v/w), Ireduce, Iallreduce, Ireduce_scatter(_block),
 * Iscan, Iexscan. Most are started together (in the same order on every rank)
 * and completed by one Waitall; some by Wait and by Test loops, and one
 * overlaps with point-to-point traffic. */
#include "coll_cases.h"

enum {
    BCAST,
    GATHER,
    GATHERV,
    SCATTER,
    SCATTERV,
    ALLGATHER,
    ALLGATHERV,
    ALLTOALL,
    ALLTOALLV,
    ALLTOALLW,
    REDUCE,
    ALLREDUCE,
    REDUCE_SCATTER,
    REDUCE_SCATTER_BLOCK,
    SCAN,
    EXSCAN,
    CASES
};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    static coll_case c[CASES];
    MPI_Request reqs[CASES];

    /* Ibarrier completed by a Test loop. */
    MPI_Request barrier;
    MPI_Ibarrier(comm, &barrier);
    int done = 0;
    while (!done)
        MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    CHECK(barrier == MPI_REQUEST_NULL);

    setup_bcast(&c[BCAST], comm);
    setup_gather(&c[GATHER], comm, 0);
    setup_gatherv(&c[GATHERV], comm);
    setup_scatter(&c[SCATTER], comm);
    setup_scatterv(&c[SCATTERV], comm);
    setup_gather(&c[ALLGATHER], comm, 0);
    setup_gatherv(&c[ALLGATHERV], comm);
    setup_alltoall(&c[ALLTOALL], comm, 0);
    setup_alltoallv(&c[ALLTOALLV], comm, 0);
    setup_alltoallv(&c[ALLTOALLW], comm, 1);
    setup_reduce(&c[REDUCE], comm, 0);
    setup_reduce(&c[ALLREDUCE], comm, 1);
    setup_reduce_scatter(&c[REDUCE_SCATTER], comm);
    setup_reduce_scatter_block(&c[REDUCE_SCATTER_BLOCK], comm, 0);
    setup_scan(&c[SCAN], comm, 0);
    setup_scan(&c[EXSCAN], comm, 0);
    int root = c[BCAST].root, r = c[BCAST].r;
    coll_case *k;

    k = &c[BCAST];
    MPI_Ibcast(k->send, 4, MPI_INT, root, comm, &reqs[BCAST]);
    k = &c[GATHER];
    MPI_Igather(k->send, 2, MPI_INT, k->recv, 2, MPI_INT, root, comm, &reqs[GATHER]);
    k = &c[GATHERV];
    MPI_Igatherv(k->send, r + 1, MPI_INT, k->recv, k->rcounts, k->rdispls, MPI_INT, root, comm,
                 &reqs[GATHERV]);
    k = &c[SCATTER];
    MPI_Iscatter(k->send, 2, MPI_INT, k->recv, 2, MPI_INT, root, comm, &reqs[SCATTER]);
    k = &c[SCATTERV];
    MPI_Iscatterv(k->send, k->scounts, k->sdispls, MPI_INT, k->recv, r + 1, MPI_INT, root, comm,
                  &reqs[SCATTERV]);
    k = &c[ALLGATHER];
    MPI_Iallgather(k->send, 2, MPI_INT, k->recv, 2, MPI_INT, comm, &reqs[ALLGATHER]);
    k = &c[ALLGATHERV];
    MPI_Iallgatherv(k->send, r + 1, MPI_INT, k->recv, k->rcounts, k->rdispls, MPI_INT, comm,
                    &reqs[ALLGATHERV]);
    k = &c[ALLTOALL];
    MPI_Ialltoall(k->send, 1, MPI_INT, k->recv, 1, MPI_INT, comm, &reqs[ALLTOALL]);
    k = &c[ALLTOALLV];
    MPI_Ialltoallv(k->send, k->scounts, k->sdispls, MPI_INT, k->recv, k->rcounts, k->rdispls,
                   MPI_INT, comm, &reqs[ALLTOALLV]);
    k = &c[ALLTOALLW];
    MPI_Ialltoallw(k->send, k->scounts, k->sdispls, k->types, k->recv, k->rcounts, k->rdispls,
                   k->types, comm, &reqs[ALLTOALLW]);
    k = &c[REDUCE];
    MPI_Ireduce(k->send, k->recv, 3, MPI_INT, MPI_SUM, root, comm, &reqs[REDUCE]);
    k = &c[ALLREDUCE];
    MPI_Iallreduce(MPI_IN_PLACE, k->recv, 3, MPI_INT, MPI_SUM, comm, &reqs[ALLREDUCE]);
    k = &c[REDUCE_SCATTER];
    MPI_Ireduce_scatter(k->send, k->recv, k->rcounts, MPI_INT, MPI_SUM, comm,
                        &reqs[REDUCE_SCATTER]);
    k = &c[REDUCE_SCATTER_BLOCK];
    MPI_Ireduce_scatter_block(k->send, k->recv, 2, MPI_INT, MPI_SUM, comm,
                              &reqs[REDUCE_SCATTER_BLOCK]);
    k = &c[SCAN];
    MPI_Iscan(k->send, k->recv, 2, MPI_INT, MPI_SUM, comm, &reqs[SCAN]);
    k = &c[EXSCAN];
    MPI_Iexscan(k->send, k->recv, 2, MPI_INT, MPI_SUM, comm, &reqs[EXSCAN]);

    /* The broadcast alone by Wait, the rest together. */
    MPI_Wait(&reqs[BCAST], MPI_STATUS_IGNORE);
    check_bcast(&c[BCAST]);
    MPI_Status sts[CASES];
    MPI_Waitall(CASES, reqs, sts); /* reqs[BCAST] is null now: allowed */
    check_gather(&c[GATHER]);
    check_gatherv(&c[GATHERV]);
    check_scatter(&c[SCATTER], 0);
    check_scatterv(&c[SCATTERV]);
    check_allgather(&c[ALLGATHER]);
    check_allgatherv(&c[ALLGATHERV]);
    check_alltoall(&c[ALLTOALL]);
    check_alltoallv(&c[ALLTOALLV]);
    check_alltoallv(&c[ALLTOALLW]);
    check_reduce(&c[REDUCE]);
    check_allreduce(&c[ALLREDUCE]);
    check_reduce_scatter(&c[REDUCE_SCATTER]);
    check_reduce_scatter_block(&c[REDUCE_SCATTER_BLOCK]);
    check_scan(&c[SCAN]);
    check_exscan(&c[EXSCAN]);

    /* An Iallreduce overlapping a ring exchange, completed by Testall. */
    setup_reduce(&c[ALLREDUCE], comm, 0);
    k = &c[ALLREDUCE];
    int n = k->n, out = payload(r, 1, 0), in = -1;
    MPI_Request mixed[3];
    MPI_Iallreduce(k->send, k->recv, 3, MPI_INT, MPI_SUM, comm, &mixed[0]);
    MPI_Irecv(&in, 1, MPI_INT, ring_left(r, n), 1, comm, &mixed[1]);
    MPI_Isend(&out, 1, MPI_INT, ring_right(r, n), 1, comm, &mixed[2]);
    done = 0;
    while (!done)
        MPI_Testall(3, mixed, &done, MPI_STATUSES_IGNORE);
    check_allreduce(k);
    CHECK_EQ(in, payload(ring_left(r, n), 1, 0));

    MPI_Finalize();
    return 0;
}
