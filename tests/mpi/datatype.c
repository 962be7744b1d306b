/* ranks: 1-4 */
/* Derived datatypes in real transfers around a ring (to oneself with one
 * rank): contiguous, vector, hvector, indexed, indexed_block, hindexed,
 * create_struct, create_subarray, create_darray, create_resized, dup; type
 * queries (get_envelope, get_contents, size, extents), Pack/Unpack, commit and
 * free. Source arrays hold 1000 * rank + index, so every received element
 * names where it came from. */
#include "common.h"
#include <stddef.h>

#define LEN 64
#define NONE (-1)

static int src[LEN];
static double dsrc[LEN];

/* Send (scount x stype) from the source array to the right neighbour, receive
 * (rcount x rtype) into recv from the left one. */
static void shift(const void *sbuf, int scount, MPI_Datatype stype, void *recv, int rcount,
                  MPI_Datatype rtype)
{
    int rank = world_rank(), n = world_size();
    MPI_Sendrecv(sbuf, scount, stype, ring_right(rank, n), 0, recv, rcount, rtype,
                 ring_left(rank, n), 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* recv[k] must be element idx[k] of the left neighbour's source array. */
static void expect_picked(const int *recv, const int *idx, int count)
{
    int left = ring_left(world_rank(), world_size());
    for (int k = 0; k < count; k++)
        CHECK_MSG(recv[k] == 1000 * left + idx[k], "element %d: got %d, expected %d", k, recv[k],
                  1000 * left + idx[k]);
}

static void clear(int *buf)
{
    for (int i = 0; i < LEN; i++)
        buf[i] = NONE;
}

/* Commit, send one (or count) of type, expect the picked source elements. */
static void transfer(MPI_Datatype *type, int count, const int *idx, int nidx)
{
    int recv[LEN];
    clear(recv);
    MPI_Type_commit(type);
    shift(src, count, *type, recv, nidx, MPI_INT);
    expect_picked(recv, idx, nidx);
}

struct particle {
    int id;
    double mass;
    char tag[3];
};

static void layouts(void)
{
    MPI_Datatype contig, vec, idx, blk, hidx, resized, sub;

    MPI_Type_contiguous(3, MPI_INT, &contig);
    transfer(&contig, 2, (int[]){0, 1, 2, 3, 4, 5}, 6);

    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    transfer(&vec, 1, (int[]){0, 1, 4, 5, 8, 9}, 6);

    MPI_Type_indexed(3, (int[]){2, 1, 3}, (int[]){0, 4, 7}, MPI_INT, &idx);
    transfer(&idx, 1, (int[]){0, 1, 4, 7, 8, 9}, 6);

    MPI_Type_create_indexed_block(3, 2, (int[]){1, 5, 9}, MPI_INT, &blk);
    transfer(&blk, 1, (int[]){1, 2, 5, 6, 9, 10}, 6);

    MPI_Type_create_hindexed(2, (int[]){1, 2}, (MPI_Aint[]){0, 3 * sizeof(int)}, MPI_INT, &hidx);
    transfer(&hidx, 1, (int[]){0, 3, 4}, 3);

    /* Every other int: extent stretched to two ints. */
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &resized);
    transfer(&resized, 3, (int[]){0, 2, 4}, 3);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(resized, &lb, &extent);
    CHECK(lb == 0 && extent == 2 * sizeof(int));

    /* 2x3 block at (1,1) of a 4x5 row-major matrix. */
    MPI_Type_create_subarray(2, (int[]){4, 5}, (int[]){2, 3}, (int[]){1, 1}, MPI_ORDER_C, MPI_INT,
                             &sub);
    transfer(&sub, 1, (int[]){6, 7, 8, 11, 12, 13}, 6);

    /* Derived type on the receiving side: 6 ints land in a vector's holes. */
    int recv[LEN];
    clear(recv);
    shift(src, 6, MPI_INT, recv, 1, vec);
    int left = ring_left(world_rank(), world_size());
    int where[6] = {0, 1, 4, 5, 8, 9};
    for (int k = 0; k < 6; k++)
        CHECK_EQ(recv[where[k]], 1000 * left + k);
    CHECK_EQ(recv[2], NONE);

    /* hvector of doubles: every second double. */
    MPI_Datatype hvec;
    MPI_Type_create_hvector(3, 1, 2 * sizeof(double), MPI_DOUBLE, &hvec);
    MPI_Type_commit(&hvec);
    double drecv[3];
    shift(dsrc, 1, hvec, drecv, 3, MPI_DOUBLE);
    for (int k = 0; k < 3; k++)
        CHECK(drecv[k] == 1000.0 * left + 2 * k);

    MPI_Datatype *types[] = {&contig, &vec, &idx, &blk, &hidx, &resized, &sub, &hvec};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        MPI_Type_free(types[i]);
        CHECK(*types[i] == MPI_DATATYPE_NULL);
    }
}

static void structs(void)
{
    int rank = world_rank(), left = ring_left(rank, world_size());
    MPI_Datatype raw, particle;
    MPI_Type_create_struct(3, (int[]){1, 1, 3},
                           (MPI_Aint[]){offsetof(struct particle, id),
                                        offsetof(struct particle, mass),
                                        offsetof(struct particle, tag)},
                           (MPI_Datatype[]){MPI_INT, MPI_DOUBLE, MPI_CHAR}, &raw);
    MPI_Type_create_resized(raw, 0, sizeof(struct particle), &particle);
    MPI_Type_commit(&particle);
    struct particle out[2], in[2];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 2; i++) {
        out[i].id = 1000 * rank + i;
        out[i].mass = rank + 0.5 * i;
        memcpy(out[i].tag, i ? "xyz" : "abc", 3);
    }
    shift(out, 2, particle, in, 2, particle);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(in[i].id, 1000 * left + i);
        CHECK(in[i].mass == left + 0.5 * i);
        CHECK(memcmp(in[i].tag, i ? "xyz" : "abc", 3) == 0);
    }
    int size;
    MPI_Type_size(particle, &size);
    CHECK_EQ(size, (int)(sizeof(int) + sizeof(double) + 3));

    /* The struct's envelope: count + 1 ints, count addresses, count types. */
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(raw, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_STRUCT && ni == 4 && na == 3 && nd == 3);
    MPI_Type_free(&raw);
    MPI_Type_free(&particle);
}

/* Block distribution of 8 ints over all ranks: each rank picks its own block. */
static void darray(void)
{
    int rank = world_rank(), n = world_size();
    int global[8], mine[8];
    for (int i = 0; i < 8; i++)
        global[i] = i;
    MPI_Datatype block;
    MPI_Type_create_darray(n, rank, 1, (int[]){8}, (int[]){MPI_DISTRIBUTE_BLOCK},
                           (int[]){MPI_DISTRIBUTE_DFLT_DARG}, (int[]){n}, MPI_ORDER_C, MPI_INT,
                           &block);
    MPI_Type_commit(&block);
    int per = (8 + n - 1) / n, first = rank * per;
    int count = first >= 8 ? 0 : (first + per > 8 ? 8 - first : per);
    int size;
    MPI_Type_size(block, &size);
    CHECK_EQ(size, count * (int)sizeof(int));
    MPI_Sendrecv(global, 1, block, 0, 0, mine, count, MPI_INT, 0, 0, MPI_COMM_SELF,
                 MPI_STATUS_IGNORE);
    for (int k = 0; k < count; k++)
        CHECK_EQ(mine[k], first + k);
    MPI_Type_free(&block);
}

static void queries_and_packing(void)
{
    MPI_Datatype vec, dup;
    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_dup(vec, &dup);

    int ni, na, nd, combiner;
    MPI_Type_get_envelope(vec, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nd == 1);
    int ints[3];
    MPI_Aint addrs[1];
    MPI_Datatype types[1];
    MPI_Type_get_contents(vec, 3, 0, 1, ints, addrs, types);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && types[0] == MPI_INT);

    MPI_Type_get_envelope(dup, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_DUP && ni == 0 && na == 0 && nd == 1);
    MPI_Type_get_contents(dup, 0, 0, 1, ints, addrs, types);
    MPI_Type_get_envelope(types[0], &ni, &na, &nd, &combiner);
    CHECK_EQ(combiner, MPI_COMBINER_VECTOR);
    MPI_Type_free(&types[0]); /* get_contents returned a new handle */

    MPI_Aint lb, extent, true_lb, true_extent;
    int size;
    MPI_Type_size(dup, &size);
    MPI_Type_get_extent(dup, &lb, &extent);
    MPI_Type_get_true_extent(dup, &true_lb, &true_extent);
    CHECK_EQ(size, 6 * (int)sizeof(int));
    CHECK(lb == 0 && extent == 10 * sizeof(int) && true_extent == 10 * sizeof(int));

    /* Pack one vector (6 ints) and unpack it as contiguous ints. */
    char packed[256];
    int packed_size, position = 0, unpacked[6];
    MPI_Pack_size(1, dup, MPI_COMM_WORLD, &packed_size);
    CHECK(packed_size >= size && packed_size <= (int)sizeof packed);
    MPI_Pack(src, 1, dup, packed, sizeof packed, &position, MPI_COMM_WORLD);
    CHECK_EQ(position, size);
    position = 0;
    MPI_Unpack(packed, sizeof packed, &position, unpacked, 6, MPI_INT, MPI_COMM_WORLD);
    int rank = world_rank(), idx[6] = {0, 1, 4, 5, 8, 9};
    for (int k = 0; k < 6; k++)
        CHECK_EQ(unpacked[k], 1000 * rank + idx[k]);

    MPI_Type_free(&dup);
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank();
    for (int i = 0; i < LEN; i++) {
        src[i] = 1000 * rank + i;
        dsrc[i] = 1000.0 * rank + i;
    }
    layouts();
    structs();
    darray();
    queries_and_packing();
    MPI_Finalize();
    return 0;
}
