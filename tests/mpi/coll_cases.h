/* Inputs and expected results of the collective operations, shared by
 * coll_blocking.c, coll_nonblocking.c and coll_persistent.c so that the
 * blocking, non-blocking and persistent forms are checked against the same
 * answers. Rank r contributes val(r, i) = 100 r + i; rooted operations use the
 * last rank as root (a non-zero root whenever there is more than one rank).
 *
 * Each setup_X() fills a coll_case for one call of X on a communicator and
 * check_X() verifies the result after the call completed. "inplace" setups
 * prepare the receive buffer as MPI_IN_PLACE calls expect it. */
#ifndef MPIGRAM_TEST_COLL_CASES_H
#define MPIGRAM_TEST_COLL_CASES_H

#include "common.h"

#define MAXN 16
#define SENTINEL (-1)

typedef struct {
    MPI_Comm comm;
    int n, r, root;
    int send[MAXN * MAXN];
    int recv[MAXN * MAXN];
    int scounts[MAXN], sdispls[MAXN], rcounts[MAXN], rdispls[MAXN];
    MPI_Datatype types[MAXN];
} coll_case;

static inline int val(int r, int i) { return 100 * r + i; }
/* 0 + 1 + ... + (k - 1) */
static inline int tri(int k) { return k * (k - 1) / 2; }

static inline void case_init(coll_case *c, MPI_Comm comm)
{
    memset(c, 0, sizeof *c);
    c->comm = comm;
    MPI_Comm_rank(comm, &c->r);
    MPI_Comm_size(comm, &c->n);
    CHECK_MSG(c->n <= MAXN, "at most %d ranks", MAXN);
    c->root = c->n - 1;
    for (int i = 0; i < MAXN * MAXN; i++)
        c->send[i] = c->recv[i] = SENTINEL;
    for (int j = 0; j < MAXN; j++)
        c->types[j] = MPI_INT;
}

/* Bcast of 4 ints, in c->send. */
static inline void setup_bcast(coll_case *c, MPI_Comm comm)
{
    case_init(c, comm);
    if (c->r == c->root)
        for (int i = 0; i < 4; i++)
            c->send[i] = val(c->root, i);
}
static inline void check_bcast(const coll_case *c)
{
    for (int i = 0; i < 4; i++)
        CHECK_EQ(c->send[i], val(c->root, i));
}

/* Gather / Allgather of 2 ints per rank. */
static inline void setup_gather(coll_case *c, MPI_Comm comm, int inplace)
{
    case_init(c, comm);
    for (int i = 0; i < 2; i++) {
        c->send[i] = val(c->r, i);
        if (inplace)
            c->recv[2 * c->r + i] = val(c->r, i);
    }
}
static inline void check_allgather(const coll_case *c)
{
    for (int j = 0; j < c->n; j++)
        for (int i = 0; i < 2; i++)
            CHECK_EQ(c->recv[2 * j + i], val(j, i));
}
static inline void check_gather(const coll_case *c)
{
    if (c->r == c->root)
        check_allgather(c);
}

/* Gatherv / Allgatherv: rank j gives j + 1 ints; blocks are one int apart. */
static inline void setup_gatherv(coll_case *c, MPI_Comm comm)
{
    case_init(c, comm);
    for (int i = 0; i <= c->r; i++)
        c->send[i] = val(c->r, i);
    for (int j = 0; j < c->n; j++) {
        c->rcounts[j] = j + 1;
        c->rdispls[j] = tri(j + 1) + j;
    }
}
static inline void check_allgatherv(const coll_case *c)
{
    for (int j = 0; j < c->n; j++) {
        for (int i = 0; i <= j; i++)
            CHECK_EQ(c->recv[c->rdispls[j] + i], val(j, i));
        CHECK_EQ(c->recv[c->rdispls[j] + j + 1], SENTINEL); /* the gap */
    }
}
static inline void check_gatherv(const coll_case *c)
{
    if (c->r == c->root)
        check_allgatherv(c);
}

/* Scatter of 2 ints per rank. In place, the root keeps its part in send. */
static inline void setup_scatter(coll_case *c, MPI_Comm comm)
{
    case_init(c, comm);
    if (c->r == c->root)
        for (int j = 0; j < c->n; j++)
            for (int i = 0; i < 2; i++)
                c->send[2 * j + i] = val(j, i);
}
static inline void check_scatter(const coll_case *c, int inplace)
{
    const int *mine = inplace && c->r == c->root ? &c->send[2 * c->r] : c->recv;
    for (int i = 0; i < 2; i++)
        CHECK_EQ(mine[i], val(c->r, i));
}

/* Scatterv: rank j gets j + 1 ints, taken from blocks one int apart. */
static inline void setup_scatterv(coll_case *c, MPI_Comm comm)
{
    case_init(c, comm);
    for (int j = 0; j < c->n; j++) {
        c->scounts[j] = j + 1;
        c->sdispls[j] = tri(j + 1) + j;
        if (c->r == c->root)
            for (int i = 0; i <= j; i++)
                c->send[c->sdispls[j] + i] = val(j, i);
    }
}
static inline void check_scatterv(const coll_case *c)
{
    for (int i = 0; i <= c->r; i++)
        CHECK_EQ(c->recv[i], val(c->r, i));
    CHECK_EQ(c->recv[c->r + 1], SENTINEL);
}

/* Alltoall: one int per peer; rank r sends val(r, j) to rank j. */
static inline void setup_alltoall(coll_case *c, MPI_Comm comm, int inplace)
{
    case_init(c, comm);
    for (int j = 0; j < c->n; j++) {
        c->send[j] = val(c->r, j);
        if (inplace)
            c->recv[j] = val(c->r, j);
    }
}
static inline void check_alltoall(const coll_case *c)
{
    for (int j = 0; j < c->n; j++)
        CHECK_EQ(c->recv[j], val(j, c->r));
}

/* Alltoallv: rank r sends j + 1 copies of val(r, j) to rank j, so it gets
 * r + 1 copies of val(j, r) from each j. With bytes != 0 the displacements
 * are in bytes (for Alltoallw). */
static inline void setup_alltoallv(coll_case *c, MPI_Comm comm, int bytes)
{
    case_init(c, comm);
    int unit = bytes ? (int)sizeof(int) : 1;
    for (int j = 0; j < c->n; j++) {
        c->scounts[j] = j + 1;
        c->sdispls[j] = tri(j + 1) * unit;
        for (int i = 0; i <= j; i++)
            c->send[tri(j + 1) + i] = val(c->r, j);
        c->rcounts[j] = c->r + 1;
        c->rdispls[j] = j * (c->r + 1) * unit;
    }
}
static inline void check_alltoallv(const coll_case *c)
{
    for (int j = 0; j < c->n; j++)
        for (int i = 0; i <= c->r; i++)
            CHECK_EQ(c->recv[j * (c->r + 1) + i], val(j, c->r));
}

/* Reduce / Allreduce of 3 ints with MPI_SUM. */
static inline void setup_reduce(coll_case *c, MPI_Comm comm, int inplace)
{
    case_init(c, comm);
    for (int i = 0; i < 3; i++) {
        c->send[i] = val(c->r, i);
        if (inplace)
            c->recv[i] = val(c->r, i);
    }
}
static inline void check_allreduce(const coll_case *c)
{
    for (int i = 0; i < 3; i++)
        CHECK_EQ(c->recv[i], 100 * tri(c->n) + c->n * i);
}
static inline void check_reduce(const coll_case *c)
{
    if (c->r == c->root)
        check_allreduce(c);
}

/* Reduce_scatter (MPI_SUM): rank j gets j + 1 elements of the summed vector. */
static inline void setup_reduce_scatter(coll_case *c, MPI_Comm comm)
{
    case_init(c, comm);
    for (int k = 0; k < tri(c->n + 1); k++)
        c->send[k] = val(c->r, k);
    for (int j = 0; j < c->n; j++)
        c->rcounts[j] = j + 1;
}
static inline void check_reduce_scatter(const coll_case *c)
{
    int first = tri(c->r + 1);
    for (int i = 0; i <= c->r; i++)
        CHECK_EQ(c->recv[i], 100 * tri(c->n) + c->n * (first + i));
}

/* Reduce_scatter_block (MPI_SUM): 2 elements per rank. In place, the input
 * vector is in recv. */
static inline void setup_reduce_scatter_block(coll_case *c, MPI_Comm comm, int inplace)
{
    case_init(c, comm);
    for (int k = 0; k < 2 * c->n; k++) {
        c->send[k] = val(c->r, k);
        if (inplace)
            c->recv[k] = val(c->r, k);
    }
}
static inline void check_reduce_scatter_block(const coll_case *c)
{
    for (int i = 0; i < 2; i++)
        CHECK_EQ(c->recv[i], 100 * tri(c->n) + c->n * (2 * c->r + i));
}

/* Scan / Exscan of 2 ints with MPI_SUM. */
static inline void setup_scan(coll_case *c, MPI_Comm comm, int inplace)
{
    case_init(c, comm);
    for (int i = 0; i < 2; i++) {
        c->send[i] = val(c->r, i);
        if (inplace)
            c->recv[i] = val(c->r, i);
    }
}
static inline void check_scan(const coll_case *c)
{
    for (int i = 0; i < 2; i++)
        CHECK_EQ(c->recv[i], 100 * tri(c->r + 1) + (c->r + 1) * i);
}
static inline void check_exscan(const coll_case *c)
{
    if (c->r == 0)
        return; /* undefined on rank 0 */
    for (int i = 0; i < 2; i++)
        CHECK_EQ(c->recv[i], 100 * tri(c->r) + c->r * i);
}

#endif
