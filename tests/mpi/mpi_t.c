/* ranks: 1-4 */
/* The MPI tool information interface: MPI_T_init_thread before MPI_Init,
 * control variables (cvar_get_num, cvar_get_info first with NULL name and
 * description buffers and zero lengths to learn the lengths — legal by the
 * standard's string convention — then with buffers; cvar_handle_alloc,
 * cvar_read, cvar_handle_free), performance variables (pvar_get_num,
 * pvar_get_info, a pvar session), categories (category_get_num/info),
 * MPI_Init/MPI_Finalize in between, and MPI_T_finalize after MPI_Finalize. */
#include "common.h"

/* Info of cvar i, asked for twice: lengths first, then the strings; the name
 * must lead back to i. */
static void cvar_info(int i, int *datatype_is_int, int *bind_no_object)
{
    int name_len = 0, desc_len = 0, verbosity, bind, scope;
    MPI_Datatype datatype;
    MPI_T_enum enumtype;
    MPI_OK(MPI_T_cvar_get_info(i, NULL, &name_len, &verbosity, &datatype, &enumtype, NULL,
                               &desc_len, &bind, &scope));
    CHECK_MSG(name_len > 1, "cvar %d: name length %d", i, name_len);
    char *name = malloc(name_len), *desc = malloc(desc_len > 0 ? desc_len : 1);
    int name_len2 = name_len, desc_len2 = desc_len;
    MPI_OK(MPI_T_cvar_get_info(i, name, &name_len2, &verbosity, &datatype, &enumtype, desc,
                               &desc_len2, &bind, &scope));
    CHECK_EQ((int)strlen(name) + 1, name_len);
    int index = -1;
    MPI_OK(MPI_T_cvar_get_index(name, &index));
    CHECK_EQ(index, i);
    *datatype_is_int = datatype == MPI_INT;
    *bind_no_object = bind == MPI_T_BIND_NO_OBJECT;
    free(name);
    free(desc);
}

static void control_variables(void)
{
    int num = 0;
    MPI_OK(MPI_T_cvar_get_num(&num));
    CHECK(num > 0);
    int readable = -1;
    for (int i = 0; i < num; i++) {
        int is_int, unbound;
        cvar_info(i, &is_int, &unbound);
        if (readable < 0 && is_int && unbound)
            readable = i;
    }
    /* Read one unbound int cvar through a handle. */
    CHECK_MSG(readable >= 0, "no unbound MPI_INT control variable");
    MPI_T_cvar_handle handle;
    int count = 0, value[16];
    MPI_OK(MPI_T_cvar_handle_alloc(readable, NULL, &handle, &count));
    CHECK(count >= 1 && count <= 16);
    MPI_OK(MPI_T_cvar_read(handle, value));
    MPI_OK(MPI_T_cvar_handle_free(&handle));
    CHECK(handle == MPI_T_CVAR_HANDLE_NULL);
}

static void performance_variables(void)
{
    int num = -1;
    MPI_OK(MPI_T_pvar_get_num(&num));
    CHECK(num >= 0);
    for (int i = 0; i < num; i++) {
        int name_len = 0, desc_len = 0, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        MPI_OK(MPI_T_pvar_get_info(i, NULL, &name_len, &verbosity, &var_class, &datatype, &enumtype,
                                   NULL, &desc_len, &bind, &readonly, &continuous, &atomic));
        CHECK(name_len > 1);
    }
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_OK(MPI_T_pvar_session_free(&session));
    CHECK(session == MPI_T_PVAR_SESSION_NULL);

    MPI_OK(MPI_T_category_get_num(&num));
    for (int i = 0; i < num; i++) {
        int name_len = 0, desc_len = 0, ncvars, npvars, ncats;
        MPI_OK(
            MPI_T_category_get_info(i, NULL, &name_len, NULL, &desc_len, &ncvars, &npvars, &ncats));
        CHECK(name_len > 1);
    }
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided >= MPI_THREAD_SINGLE);
    control_variables();

    MPI_Init(&argc, &argv);
    performance_variables();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();

    /* Still usable after MPI_Finalize until the matching MPI_T_finalize. */
    int num = 0;
    MPI_OK(MPI_T_cvar_get_num(&num));
    CHECK(num > 0);
    MPI_OK(MPI_T_finalize());
    return 0;
}
