/* ranks: 1-4 */
/* Communicator management: Comm_dup, Comm_dup_with_info, Comm_idup (completed
 * by Wait), Comm_split (including MPI_UNDEFINED), Comm_split_type
 * (MPI_COMM_TYPE_SHARED), Comm_create, Comm_create_group, Comm_compare,
 * Comm_set_name/get_name and Comm_free; each new communicator is used. */
#include "common.h"

/* Sum of world ranks over comm, which also proves comm works. */
static int sum_of_world_ranks(MPI_Comm comm)
{
    int mine = world_rank(), sum = -1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
    return sum;
}

static int compare(MPI_Comm a, MPI_Comm b)
{
    int result;
    MPI_Comm_compare(a, b, &result);
    return result;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int all = n * (n - 1) / 2; /* sum of all world ranks */
    int size, r;

    CHECK_EQ(compare(MPI_COMM_WORLD, MPI_COMM_WORLD), MPI_IDENT);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK_EQ(compare(MPI_COMM_WORLD, dup), MPI_CONGRUENT);
    CHECK_EQ(sum_of_world_ranks(dup), all);
    MPI_Comm_set_name(dup, "mpigram-dup");
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "mpigram-dup") == 0 && len == (int)strlen("mpigram-dup"));

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm dup_info;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup_info);
    MPI_Info_free(&info);
    CHECK_EQ(compare(MPI_COMM_WORLD, dup_info), MPI_CONGRUENT);
    CHECK_EQ(sum_of_world_ranks(dup_info), all);

    MPI_Comm idup;
    MPI_Request req;
    MPI_Comm_idup(dup, &idup, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK_EQ(compare(dup, idup), MPI_CONGRUENT);
    CHECK_EQ(sum_of_world_ranks(idup), all);

    /* Split by parity; key -rank reverses the order inside each half. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_size(half, &size);
    MPI_Comm_rank(half, &r);
    int same_parity = (n - rank % 2 + 1) / 2; /* ranks with my parity */
    CHECK_EQ(size, same_parity);
    CHECK_EQ(r, (n - 1 - rank) / 2); /* same-parity ranks above mine come first */
    CHECK_EQ(compare(MPI_COMM_WORLD, half), n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);

    /* MPI_UNDEFINED colour: rank 0 gets no communicator. */
    MPI_Comm rest;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &rest);
    if (rank == 0) {
        CHECK(rest == MPI_COMM_NULL);
    } else {
        MPI_Comm_rank(rest, &r);
        CHECK_EQ(r, rank - 1);
        CHECK_EQ(sum_of_world_ranks(rest), all);
        MPI_Comm_free(&rest);
    }

    /* Every rank of this job shares one node. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    CHECK_EQ(compare(MPI_COMM_WORLD, node), MPI_CONGRUENT);

    /* Comm_create from the reversed world group: same members, other order. */
    MPI_Group world, reversed, first_half;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks[64];
    for (int i = 0; i < n; i++)
        ranks[i] = n - 1 - i;
    MPI_Group_incl(world, n, ranks, &reversed);
    MPI_Comm rev;
    MPI_Comm_create(MPI_COMM_WORLD, reversed, &rev);
    MPI_Comm_rank(rev, &r);
    CHECK_EQ(r, n - 1 - rank);
    CHECK_EQ(compare(MPI_COMM_WORLD, rev), n == 1 ? MPI_CONGRUENT : MPI_SIMILAR);
    CHECK_EQ(sum_of_world_ranks(rev), all);

    /* Comm_create_group: only the members of the group call it. */
    int members = (n + 1) / 2;
    int range[1][3] = {{0, members - 1, 1}};
    MPI_Group_range_incl(world, 1, range, &first_half);
    if (rank < members) {
        MPI_Comm sub;
        MPI_Comm_create_group(MPI_COMM_WORLD, first_half, 42, &sub);
        MPI_Comm_size(sub, &size);
        CHECK_EQ(size, members);
        CHECK_EQ(sum_of_world_ranks(sub), members * (members - 1) / 2);
        MPI_Comm_free(&sub);
        CHECK(sub == MPI_COMM_NULL);
    }

    MPI_Group_free(&world);
    MPI_Group_free(&reversed);
    MPI_Group_free(&first_half);
    MPI_Comm *comms[] = {&dup, &dup_info, &idup, &half, &node, &rev};
    for (size_t i = 0; i < sizeof comms / sizeof comms[0]; i++) {
        MPI_Comm_free(comms[i]);
        CHECK(*comms[i] == MPI_COMM_NULL);
    }
    MPI_Finalize();
    return 0;
}
