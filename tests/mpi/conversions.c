/* ranks: 1-4 */
/* needs: fortran */
/* MPI_Status_c2f, called by the program and by the function `convert` of
 * each shared library named on the command line (dlopen'ed): a status of a
 * Sendrecv to itself on MPI_COMM_SELF, converted for Fortran; each
 * conversion must fill the Fortran status, which MPI_Status_f2c converts
 * back. crates/tracer/tests/callers.rs names a library whose file is
 * libmpi*, as an MPI's Fortran binding is, whose calls are not recorded.
 *
 * Usage: conversions [LIBRARY ...] */
#include "common.h"
#include <dlfcn.h>

typedef int (*convert_fn)(const MPI_Status *, MPI_Fint *);

/* A Fortran status, larger than any MPI's (MPI_F_STATUS_SIZE is MPI 4). */
#define F_STATUS 16

/* `f` holds the status of a message from rank 0 of MPI_COMM_SELF, tag 3. */
static void check_converted(const MPI_Fint *f, const char *by)
{
    MPI_Status back;
    back.MPI_SOURCE = back.MPI_TAG = -1;
    CHECK_EQ(MPI_Status_f2c(f, &back), MPI_SUCCESS);
    CHECK_MSG(back.MPI_SOURCE == 0 && back.MPI_TAG == 3, "%s: source %d, tag %d", by,
              back.MPI_SOURCE, back.MPI_TAG);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int out = 1, in = -1;
    MPI_Status st;
    MPI_Sendrecv(&out, 1, MPI_INT, 0, 3, &in, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &st);
    CHECK_EQ(in, 1);

    MPI_Fint f[F_STATUS];
    memset(f, 0xff, sizeof f);
    MPI_Status_c2f(&st, f);
    check_converted(f, "the program");

    for (int i = 1; i < argc; i++) {
        void *lib = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        CHECK_MSG(lib, "dlopen %s: %s", argv[i], dlerror());
        convert_fn convert = (convert_fn)dlsym(lib, "convert");
        CHECK_MSG(convert, "%s has no function convert", argv[i]);
        memset(f, 0xff, sizeof f);
        CHECK_EQ(convert(&st, f), MPI_SUCCESS);
        check_converted(f, argv[i]);
        /* Not closed: the tracer keeps its verdict on a calling address
         * for the run (the next library could be loaded where this was). */
    }
    MPI_Finalize();
    return 0;
}
