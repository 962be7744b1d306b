/* ranks: 1-4 */
/* needs: mpi4 */
/* Calls that are legal outside MPI_Init..MPI_Finalize: MPI_Initialized,
 * MPI_Finalized, MPI_Get_version, MPI_Get_library_version, the MPI_Info_*
 * functions (create, set, get_string, get_valuelen, dup, delete, free,
 * create_env, and queries of MPI_INFO_ENV), Error_class/Error_string — made
 * before MPI_Init, between MPI_Init and MPI_Finalize, and after MPI_Finalize.
 * (MPICH 4.0.2's MPI_INFO_ENV and MPI_Info_create_env hold no keys.) */
#include "common.h"

static void queries(int expect_initialized, int expect_finalized)
{
    int initialized = -1, finalized = -1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    CHECK_EQ(initialized, expect_initialized);
    CHECK_EQ(finalized, expect_finalized);

    int version, subversion;
    MPI_Get_version(&version, &subversion);
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    CHECK(len > 0 && len == (int)strlen(lib));

    /* Every key of MPI_INFO_ENV (none on MPICH 4.0.2) must be readable. */
    int nkeys = -1;
    MPI_Info_get_nkeys(MPI_INFO_ENV, &nkeys);
    CHECK(nkeys >= 0);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], value[256];
        int valuelen, flag, buflen = sizeof value;
        MPI_Info_get_nthkey(MPI_INFO_ENV, i, key);
        /* MPICH 5.0.2 still counts MPI_INFO_ENV's key after MPI_Finalize
         * but names it "", and a query of "" is a fatal error there. */
        if (key[0] == '\0')
            continue;
        MPI_Info_get_valuelen(MPI_INFO_ENV, key, &valuelen, &flag);
        CHECK(flag);
        MPI_Info_get_string(MPI_INFO_ENV, key, &buflen, value, &flag);
        CHECK(flag && buflen == valuelen + 1);
    }

    MPI_Info env, info, copy;
    MPI_Info_create_env(0, NULL, &env);
    MPI_Info_get_nkeys(env, &nkeys);
    CHECK(nkeys >= 0);
    MPI_Info_free(&env);

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpigram_key", "some value");
    MPI_Info_dup(info, &copy);
    MPI_Info_delete(info, "mpigram_key");
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK_EQ(nkeys, 0);
    char value[32];
    int buflen = sizeof value, flag, valuelen;
    MPI_Info_get_valuelen(copy, "mpigram_key", &valuelen, &flag);
    CHECK(flag && valuelen == (int)strlen("some value"));
    MPI_Info_get_string(copy, "mpigram_key", &buflen, value, &flag);
    CHECK(flag && strcmp(value, "some value") == 0);
    MPI_Info_free(&copy);
    MPI_Info_free(&info);
    CHECK(info == MPI_INFO_NULL);

    int cls;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(MPI_ERR_TAG, &cls);
    CHECK_EQ(cls, MPI_ERR_TAG);
    MPI_Error_string(MPI_ERR_TAG, text, &len);
    CHECK(len > 0);
}

int main(int argc, char **argv)
{
    queries(0, 0);
    MPI_Init(&argc, &argv);
    queries(1, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    queries(1, 1);
    return 0;
}
