/* Uses the fake MPI: every result must be the library's own. */
#include <stdio.h>
struct fake_comm;
extern struct fake_comm fake_world;
extern int calls;
int MPI_Init(int *, char ***);
int MPI_Finalize(void);
int MPI_Comm_rank(struct fake_comm *, int *);
int MPI_Comm_size(struct fake_comm *, int *);
int MPI_Isend(const void *, int, struct fake_comm *, int, int, struct fake_comm *, long *);

int main(int argc, char **argv) {
    int rank = -1, size = -1;
    long request = 0;
    int a = MPI_Init(&argc, &argv);
    int b = MPI_Comm_rank(&fake_world, &rank);
    int c = MPI_Comm_size(&fake_world, &size);
    int d = MPI_Isend(&rank, 3, &fake_world, 5, 11, &fake_world, &request);
    int e = MPI_Finalize();
    printf("init %d rank %d %d size %d %d isend %d %ld finalize %d calls %d\n", a, b, rank, c, size, d,
           request, e, calls);
    return 0;
}
