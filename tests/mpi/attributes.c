/* ranks: 1-4 */
/* Attribute caching: Comm_create_keyval with copy and delete callbacks
 * (counted), Comm_set_attr/get_attr/delete_attr, attribute propagation by
 * Comm_dup, the predefined MPI_COMM_NULL_COPY_FN / MPI_COMM_DUP_FN,
 * Comm_free_keyval; the same for datatypes (Type_*_keyval/attr, Type_dup)
 * and windows (Win_*_keyval/attr); and the predefined attributes MPI_TAG_UB,
 * MPI_WTIME_IS_GLOBAL and MPI_WIN_BASE. */
#include "common.h"

static int copies, deletes;

static int count_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval;
    CHECK(extra == &copies);
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value;
    CHECK(extra == &copies);
    deletes++;
    return MPI_SUCCESS;
}

static int type_deletes;
static int count_type_delete(MPI_Datatype type, int keyval, void *value, void *extra)
{
    (void)type, (void)keyval, (void)value, (void)extra;
    type_deletes++;
    return MPI_SUCCESS;
}

static int win_deletes;
static int count_win_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win, (void)keyval, (void)value, (void)extra;
    win_deletes++;
    return MPI_SUCCESS;
}

static void communicators(void)
{
    static int payload_value = 42;
    int key, flag;
    int *got;
    MPI_Comm_create_keyval(count_copy, count_delete, &key, &copies);

    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_get_attr(a, key, &got, &flag);
    CHECK(!flag);
    MPI_Comm_set_attr(a, key, &payload_value);
    MPI_Comm_get_attr(a, key, &got, &flag);
    CHECK(flag && got == &payload_value);

    MPI_Comm_dup(a, &b); /* copy callback runs once */
    CHECK_EQ(copies, 1);
    MPI_Comm_get_attr(b, key, &got, &flag);
    CHECK(flag && *got == 42);

    MPI_Comm_delete_attr(a, key); /* delete callback for a's copy */
    CHECK_EQ(deletes, 1);
    MPI_Comm_get_attr(a, key, &got, &flag);
    CHECK(!flag);
    MPI_Comm_free(&b); /* and for b's */
    CHECK_EQ(deletes, 2);

    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID);

    /* Predefined copy functions: NULL_COPY drops the attribute, DUP_FN keeps it. */
    int drop, keep;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &drop, NULL);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keep, NULL);
    MPI_Comm_set_attr(a, drop, &payload_value);
    MPI_Comm_set_attr(a, keep, &payload_value);
    MPI_Comm_dup(a, &b);
    MPI_Comm_get_attr(b, drop, &got, &flag);
    CHECK(!flag);
    MPI_Comm_get_attr(b, keep, &got, &flag);
    CHECK(flag && got == &payload_value);
    MPI_Comm_free(&b);
    MPI_Comm_free(&a);
    MPI_Comm_free_keyval(&drop);
    MPI_Comm_free_keyval(&keep);
}

static void predefined(void)
{
    int *tag_ub, *wtime_global, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag);
    CHECK_MSG(*tag_ub >= 32767, "MPI_TAG_UB %d is below the standard's minimum", *tag_ub);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &wtime_global, &flag);
    CHECK(!flag || *wtime_global == 0 || *wtime_global == 1);
    /* The largest tag is usable. */
    int rank = world_rank(), value = 5, got = 0;
    MPI_Sendrecv(&value, 1, MPI_INT, rank, *tag_ub, &got, 1, MPI_INT, rank, *tag_ub, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK_EQ(got, 5);
}

static void datatypes(void)
{
    static int value = 7;
    int key, flag;
    int *got;
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, count_type_delete, &key, NULL);
    MPI_Datatype t, u;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_set_attr(t, key, &value);
    MPI_Type_dup(t, &u); /* MPI_TYPE_DUP_FN copies the attribute */
    MPI_Type_get_attr(u, key, &got, &flag);
    CHECK(flag && got == &value);
    MPI_Type_delete_attr(u, key);
    CHECK_EQ(type_deletes, 1);
    MPI_Type_free(&u);
    MPI_Type_free(&t); /* deletes t's attribute */
    CHECK_EQ(type_deletes, 2);
    MPI_Type_free_keyval(&key);
}

static void windows(void)
{
    static int value = 9;
    int key, flag;
    int *got;
    int mem[4];
    void *base;
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == mem);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_win_delete, &key, NULL);
    MPI_Win_set_attr(win, key, &value);
    MPI_Win_get_attr(win, key, &got, &flag);
    CHECK(flag && *got == 9);
    MPI_Win_delete_attr(win, key);
    CHECK_EQ(win_deletes, 1);
    MPI_Win_set_attr(win, key, &value);
    MPI_Win_free(&win); /* deletes it again */
    CHECK_EQ(win_deletes, 2);
    MPI_Win_free_keyval(&key);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    communicators();
    predefined();
    datatypes();
    windows();
    MPI_Finalize();
    return 0;
}
