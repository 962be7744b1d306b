/* ranks: 1-4 */
/* Groups: Comm_group, Group_size/rank, Group_incl, Group_excl,
 * Group_range_incl, Group_range_excl, Group_union, Group_intersection,
 * Group_difference, Group_translate_ranks, Group_compare, Group_free. */
#include "common.h"

static int gsize(MPI_Group g)
{
    int s;
    MPI_Group_size(g, &s);
    return s;
}

static int grank(MPI_Group g)
{
    int r;
    MPI_Group_rank(g, &r);
    return r;
}

static int gcompare(MPI_Group a, MPI_Group b)
{
    int result;
    MPI_Group_compare(a, b, &result);
    return result;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    int ranks[64], out[64];

    MPI_Group world, reversed, no_zero, evens, odds, all, none, rest;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    CHECK_EQ(gsize(world), n);
    CHECK_EQ(grank(world), rank);
    CHECK_EQ(gcompare(world, world), MPI_IDENT);

    for (int i = 0; i < n; i++)
        ranks[i] = n - 1 - i;
    MPI_Group_incl(world, n, ranks, &reversed);
    CHECK_EQ(grank(reversed), n - 1 - rank);
    CHECK_EQ(gcompare(world, reversed), n == 1 ? MPI_IDENT : MPI_SIMILAR);

    int zero = 0;
    MPI_Group_excl(world, 1, &zero, &no_zero);
    CHECK_EQ(gsize(no_zero), n - 1);
    CHECK_EQ(grank(no_zero), rank == 0 ? MPI_UNDEFINED : rank - 1);

    int even_range[1][3] = {{0, n - 1, 2}};
    MPI_Group_range_incl(world, 1, even_range, &evens);
    CHECK_EQ(gsize(evens), (n + 1) / 2);
    MPI_Group_range_excl(world, 1, even_range, &odds);
    CHECK_EQ(gsize(odds), n / 2);
    CHECK_EQ(grank(odds), rank % 2 ? rank / 2 : MPI_UNDEFINED);

    /* Union keeps the first group's order, then adds the rest. */
    MPI_Group_union(evens, odds, &all);
    CHECK_EQ(gsize(all), n);
    CHECK_EQ(grank(all), rank % 2 ? (n + 1) / 2 + rank / 2 : rank / 2);
    CHECK_EQ(gcompare(all, world), n <= 2 ? MPI_IDENT : MPI_SIMILAR); /* 0 2 1 3 */

    MPI_Group_intersection(evens, odds, &none);
    CHECK_EQ(gsize(none), 0);
    CHECK_EQ(gcompare(none, MPI_GROUP_EMPTY), MPI_IDENT);

    MPI_Group_difference(world, evens, &rest);
    CHECK_EQ(gcompare(rest, odds), MPI_IDENT);

    /* Where does each world rank sit in the reversed group? */
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(world, n, ranks, reversed, out);
    for (int i = 0; i < n; i++)
        CHECK_EQ(out[i], n - 1 - i);
    MPI_Group_translate_ranks(world, n, ranks, odds, out);
    for (int i = 0; i < n; i++)
        CHECK_EQ(out[i], i % 2 ? i / 2 : MPI_UNDEFINED);

    MPI_Group *groups[] = {&world, &reversed, &no_zero, &evens, &odds, &all, &none, &rest};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        MPI_Group_free(groups[i]);
        CHECK(*groups[i] == MPI_GROUP_NULL);
    }
    MPI_Finalize();
    return 0;
}
