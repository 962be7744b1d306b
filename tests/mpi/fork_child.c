/* ranks: 1-2 */
/* A helper process forked without exec, as programs do to compress or
 * copy files: each rank makes calls, forks a child that allocates, frees
 * and calls exit() (running the atexit handlers it inherited), and goes on
 * making calls once the child is gone. With the argument `signal` the
 * child dies of SIGTERM instead; with `signal-then-kill` the parent then
 * kills itself with SIGKILL (for the tracer's crash journal). */
#include "common.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void calls(int n)
{
    for (int i = 0; i < n; i++) {
        int r;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *how = argc > 1 ? argv[1] : "exit";
    calls(500);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char *p = malloc(1 << 16);
        memset(p, 1, 1 << 16);
        free(p);
        if (strcmp(how, "exit") == 0)
            exit(7);
        raise(SIGTERM);
        _exit(99); /* not reached: SIGTERM kills */
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    if (strcmp(how, "exit") == 0)
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 7, "child status %#x", status);
    else
        CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "child status %#x", status);
    calls(500);
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(how, "signal-then-kill") == 0)
        raise(SIGKILL);
    MPI_Finalize();
    return 0;
}
