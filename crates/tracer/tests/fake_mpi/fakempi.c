/* A tiny MPI library of the test's own, with an ABI no real MPI has:
 * communicators are pointers to structs holding the rank, and every
 * function has a PMPI_ twin (as a profiling interface requires). It stands
 * for an MPI mpigram does not know (FAKE_NAME) or an unsupported version
 * of one it knows (built with -DFAKE_OPEN_MPI: Open MPI's predefined-object
 * symbol and an Open MPI version mpigram does not record). */
#include <stdio.h>
#include <string.h>

struct fake_comm { int rank; int size; };
struct fake_comm fake_world = { 7, 9 };
#ifdef FAKE_OPEN_MPI
struct fake_comm ompi_mpi_comm_world = { 7, 9 };
#define FAKE_NAME "Open MPI v3.1.6, package: fake"
#else
#define FAKE_NAME "FakeMPI 1.0"
#endif

int calls;

int PMPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; calls++; return 0; }
int MPI_Init(int *argc, char ***argv) { return PMPI_Init(argc, argv); }
int PMPI_Finalize(void) { calls++; return 0; }
int MPI_Finalize(void) { return PMPI_Finalize(); }
/* A pointer handle whose high bits matter: a tracer that keeps only 32
 * bits crashes here. */
int PMPI_Comm_rank(struct fake_comm *comm, int *rank) { calls++; *rank = comm->rank; return 0; }
int MPI_Comm_rank(struct fake_comm *comm, int *rank) { return PMPI_Comm_rank(comm, rank); }
int PMPI_Comm_size(struct fake_comm *comm, int *size) { calls++; *size = comm->size; return 0; }
int MPI_Comm_size(struct fake_comm *comm, int *size) { return PMPI_Comm_size(comm, size); }
/* Seven arguments: the seventh is passed on the stack. */
int PMPI_Isend(const void *buf, int count, struct fake_comm *type, int dest, int tag,
               struct fake_comm *comm, long *request) {
    (void)buf; (void)type; calls++; *request = 99; return count + dest + tag + comm->rank;
}
int MPI_Isend(const void *buf, int count, struct fake_comm *type, int dest, int tag,
              struct fake_comm *comm, long *request) {
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}
int PMPI_Get_library_version(char *version, int *len) {
    strcpy(version, FAKE_NAME "\nsecond line");
    *len = (int)strlen(version);
    return 0;
}
int MPI_Get_library_version(char *version, int *len) { return PMPI_Get_library_version(version, len); }
