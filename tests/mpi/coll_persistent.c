/* ranks: 1-4 */
/* needs: mpi4 */
/* Persistent collectives (MPI 4.0, exported by MPICH 4.0.2): Barrier_init,
 * Bcast_init, Gather(v)_init, Scatter(v)_init, Allgather(v)_init,
 * Alltoall(v/w)_init, Reduce_init, Allreduce_init, Reduce_scatter(_block)_init,
 * Scan_init, Exscan_init. Each request is started several times (Start,
 * Startall), buffers refilled in between, and freed at the end.
 *
 * MPICH 4.0.2 has bugs in three of them with its default algorithms, measured
 * here: a second MPI_Start of Scatter_init fails in MPI_Wait ("Invalid
 * communicator", an MPI_ERR_OTHER; the binomial schedule keeps state from the
 * first round, cf. pmodels/mpich#7550), Allgather_init with recursive doubling
 * (2 and 4 ranks) delivers wrong data from the second round on (cf. #6423),
 * and Gather_init copies the root's own block at init time instead of at
 * start (#7078). The program keeps every call but steers around the bugs:
 * other algorithms for the first two (set in the environment before MPI_Init,
 * unless the caller set them) and MPI_IN_PLACE at the gather root. */
#include "coll_cases.h"

#define ITERS 3

enum {
    BARRIER,
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

static coll_case c[CASES];

/* Refill every buffer; the requests keep pointing at the same memory. */
static void setup_all(MPI_Comm comm)
{
    case_init(&c[BARRIER], comm);
    setup_bcast(&c[BCAST], comm);
    setup_gather(&c[GATHER], comm, 1);
    setup_gatherv(&c[GATHERV], comm);
    setup_scatter(&c[SCATTER], comm);
    setup_scatterv(&c[SCATTERV], comm);
    setup_gather(&c[ALLGATHER], comm, 0);
    setup_gatherv(&c[ALLGATHERV], comm);
    setup_alltoall(&c[ALLTOALL], comm, 0);
    setup_alltoallv(&c[ALLTOALLV], comm, 0);
    setup_alltoallv(&c[ALLTOALLW], comm, 1);
    setup_reduce(&c[REDUCE], comm, 0);
    setup_reduce(&c[ALLREDUCE], comm, 0);
    setup_reduce_scatter(&c[REDUCE_SCATTER], comm);
    setup_reduce_scatter_block(&c[REDUCE_SCATTER_BLOCK], comm, 0);
    setup_scan(&c[SCAN], comm, 0);
    setup_scan(&c[EXSCAN], comm, 0);
}

static void check_all(void)
{
    check_bcast(&c[BCAST]);
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
}

int main(int argc, char **argv)
{
    setenv("MPIR_CVAR_ISCATTER_INTRA_ALGORITHM", "tsp_tree", 0);
    setenv("MPIR_CVAR_IALLGATHER_INTRA_ALGORITHM", "sched_ring", 0);
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Request reqs[CASES];
    setup_all(comm);
    int root = c[BCAST].root, r = c[BCAST].r;
    coll_case *k;

    MPI_Barrier_init(comm, info, &reqs[BARRIER]);
    k = &c[BCAST];
    MPI_Bcast_init(k->send, 4, MPI_INT, root, comm, info, &reqs[BCAST]);
    k = &c[GATHER];
    MPI_Gather_init(r == root ? MPI_IN_PLACE : k->send, 2, MPI_INT, k->recv, 2, MPI_INT, root, comm,
                    info, &reqs[GATHER]);
    k = &c[GATHERV];
    MPI_Gatherv_init(k->send, r + 1, MPI_INT, k->recv, k->rcounts, k->rdispls, MPI_INT, root, comm,
                     info, &reqs[GATHERV]);
    k = &c[SCATTER];
    MPI_Scatter_init(k->send, 2, MPI_INT, k->recv, 2, MPI_INT, root, comm, info, &reqs[SCATTER]);
    k = &c[SCATTERV];
    MPI_Scatterv_init(k->send, k->scounts, k->sdispls, MPI_INT, k->recv, r + 1, MPI_INT, root, comm,
                      info, &reqs[SCATTERV]);
    k = &c[ALLGATHER];
    MPI_Allgather_init(k->send, 2, MPI_INT, k->recv, 2, MPI_INT, comm, info, &reqs[ALLGATHER]);
    k = &c[ALLGATHERV];
    MPI_Allgatherv_init(k->send, r + 1, MPI_INT, k->recv, k->rcounts, k->rdispls, MPI_INT, comm,
                        info, &reqs[ALLGATHERV]);
    k = &c[ALLTOALL];
    MPI_Alltoall_init(k->send, 1, MPI_INT, k->recv, 1, MPI_INT, comm, info, &reqs[ALLTOALL]);
    k = &c[ALLTOALLV];
    MPI_Alltoallv_init(k->send, k->scounts, k->sdispls, MPI_INT, k->recv, k->rcounts, k->rdispls,
                       MPI_INT, comm, info, &reqs[ALLTOALLV]);
    k = &c[ALLTOALLW];
    MPI_Alltoallw_init(k->send, k->scounts, k->sdispls, k->types, k->recv, k->rcounts, k->rdispls,
                       k->types, comm, info, &reqs[ALLTOALLW]);
    k = &c[REDUCE];
    MPI_Reduce_init(k->send, k->recv, 3, MPI_INT, MPI_SUM, root, comm, info, &reqs[REDUCE]);
    k = &c[ALLREDUCE];
    MPI_Allreduce_init(k->send, k->recv, 3, MPI_INT, MPI_SUM, comm, info, &reqs[ALLREDUCE]);
    k = &c[REDUCE_SCATTER];
    MPI_Reduce_scatter_init(k->send, k->recv, k->rcounts, MPI_INT, MPI_SUM, comm, info,
                            &reqs[REDUCE_SCATTER]);
    k = &c[REDUCE_SCATTER_BLOCK];
    MPI_Reduce_scatter_block_init(k->send, k->recv, 2, MPI_INT, MPI_SUM, comm, info,
                                  &reqs[REDUCE_SCATTER_BLOCK]);
    k = &c[SCAN];
    MPI_Scan_init(k->send, k->recv, 2, MPI_INT, MPI_SUM, comm, info, &reqs[SCAN]);
    k = &c[EXSCAN];
    MPI_Exscan_init(k->send, k->recv, 2, MPI_INT, MPI_SUM, comm, info, &reqs[EXSCAN]);

    for (int iter = 0; iter < ITERS; iter++) {
        if (iter > 0)
            setup_all(comm);
        if (iter % 2 == 0) {
            MPI_Startall(CASES, reqs);
            MPI_Waitall(CASES, reqs, MPI_STATUSES_IGNORE);
        } else {
            /* One at a time, in the same order on every rank. */
            for (int i = 0; i < CASES; i++) {
                MPI_Start(&reqs[i]);
                MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            }
        }
        check_all();
    }

    for (int i = 0; i < CASES; i++) {
        CHECK(reqs[i] != MPI_REQUEST_NULL); /* inactive, not freed, after completion */
        MPI_Request_free(&reqs[i]);
    }
    MPI_Finalize();
    return 0;
}
