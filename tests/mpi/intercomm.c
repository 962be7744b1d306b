/* ranks: 2-4 */
/* Inter-communicators: the world is split into even and odd ranks and
 * Intercomm_create joins the halves (leaders: world ranks 0 and 1). Then
 * Comm_test_inter, Comm_remote_size, Comm_remote_group, point-to-point across
 * the bridge, an inter-communicator Allreduce and a rooted Bcast (MPI_ROOT /
 * MPI_PROC_NULL), and Intercomm_merge (evens first). */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    need_ranks(2);
    int rank = world_rank(), n = world_size();
    int odd = rank % 2;
    int evens = (n + 1) / 2, odds = n / 2;
    int remote_expected = odd ? evens : odds;

    MPI_Comm local, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, odd, rank, &local);
    int lrank;
    MPI_Comm_rank(local, &lrank);
    CHECK_EQ(lrank, rank / 2);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, odd ? 0 : 1, 7, &inter);

    int flag, remote_size, size;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag);
    MPI_Comm_test_inter(local, &flag);
    CHECK(!flag);
    MPI_Comm_size(inter, &size);
    CHECK_EQ(size, odd ? odds : evens);
    MPI_Comm_remote_size(inter, &remote_size);
    CHECK_EQ(remote_size, remote_expected);
    MPI_Group remote;
    MPI_Comm_remote_group(inter, &remote);
    int gsize;
    MPI_Group_size(remote, &gsize);
    CHECK_EQ(gsize, remote_expected);
    /* Remote rank i is world rank 2i + (1 - odd). */
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int zero = 0, in_world;
    MPI_Group_translate_ranks(remote, 1, &zero, world, &in_world);
    CHECK_EQ(in_world, 1 - odd);
    MPI_Group_free(&remote);
    MPI_Group_free(&world);

    /* Point-to-point across: local rank i pairs with remote rank i. Ranks are
     * those of the remote group. */
    if (lrank < remote_expected) {
        int out = payload(rank, 3, 0), in = -1;
        MPI_Status st;
        MPI_Sendrecv(&out, 1, MPI_INT, lrank, 3, &in, 1, MPI_INT, lrank, 3, inter, &st);
        CHECK_EQ(st.MPI_SOURCE, lrank);
        CHECK_EQ(in, payload(2 * lrank + 1 - odd, 3, 0));
    }

    /* Allreduce on an inter-communicator returns the remote group's sum. */
    int mine = rank, remote_sum = -1, expect = 0;
    for (int q = 1 - odd; q < n; q += 2)
        expect += q;
    MPI_Allreduce(&mine, &remote_sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK_EQ(remote_sum, expect);

    /* Bcast from the even leader to all odd ranks; the other even ranks take
     * no part (MPI_PROC_NULL) and keep their value. */
    int value = odd ? -1 : lrank == 0 ? 1234 : -2;
    if (!odd)
        MPI_Bcast(&value, 1, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else
        MPI_Bcast(&value, 1, MPI_INT, 0, inter);
    CHECK_EQ(value, odd || lrank == 0 ? 1234 : -2);

    MPI_Intercomm_merge(inter, odd, &merged); /* odd = high group goes last */
    int mrank;
    MPI_Comm_rank(merged, &mrank);
    CHECK_EQ(mrank, odd ? evens + rank / 2 : rank / 2);
    MPI_Allreduce(&mine, &remote_sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK_EQ(remote_sum, n * (n - 1) / 2);

    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
