/* ranks: 1-2 */
/* Heap buffers as memory segments: a buffer is recorded as (the heap block
 * it lies in, its offset), the block named when an MPI call first uses it,
 * its id given back when it is freed. Temporaries the application allocates
 * and frees without MPI seeing them come between, before and after the
 * buffers' blocks are allocated; some blocks live on. Every rank broadcasts
 * from (and into) these buffers, in this order:
 *   a, a + 256, b + 10, (a freed) c, b, a stack variable
 * which the tracer must record as seg0+0, seg0+256, seg1+10, seg0+0, seg1+0,
 * seg2+0 (crates/tracer/tests/behaviour.rs). */
#include "common.h"

/* Allocates and frees `n` blocks of a few sizes, each written to. */
static void churn(int n)
{
    for (int i = 0; i < n; i++) {
        char *t = malloc(16 + (size_t)(i % 5) * 40);
        CHECK(t != NULL);
        t[0] = (char)i;
        free(t);
    }
}

static void bcast_check(char *buf, char value)
{
    if (world_rank() == 0)
        memset(buf, value, 8);
    MPI_OK(MPI_Bcast(buf, 8, MPI_CHAR, 0, MPI_COMM_WORLD));
    for (int i = 0; i < 8; i++)
        CHECK_EQ(buf[i], value);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    churn(100);
    char *a = malloc(4096);
    CHECK(a != NULL);
    churn(100);
    /* Blocks that live until the end, more than the tracer's young ones. */
    char *kept[40];
    for (int i = 0; i < 40; i++) {
        kept[i] = malloc(64);
        CHECK(kept[i] != NULL);
        churn(3);
    }
    bcast_check(a, 1);
    bcast_check(a + 256, 2);
    char *b = malloc(100);
    CHECK(b != NULL);
    churn(10);
    bcast_check(b + 10, 3);
    free(a);
    churn(10);
    char *c = malloc(8192);
    CHECK(c != NULL);
    bcast_check(c, 4);
    bcast_check(b, 5);
    char on_stack[8];
    bcast_check(on_stack, 6);
    for (int i = 0; i < 40; i++)
        free(kept[i]);
    free(b);
    free(c);
    MPI_Finalize();
    return 0;
}
