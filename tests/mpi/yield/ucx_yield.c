/* LD_PRELOAD shim for oversubscribed MPI runs on UCX.
 *
 * MPICH's ch4:ucx device busy-polls ucp_worker_progress() while it waits. With
 * more ranks than cores, every waiting rank burns a full time slice before the
 * rank that could make progress runs again. This wrapper gives the core away
 * (sched_yield) whenever a poll made no progress, which lets the runnable rank
 * in at once. It changes no MPI result: it only calls the real progress
 * function, resolved lazily with dlsym(RTLD_NEXT), and returns its result.
 *
 * Build: cc -shared -fPIC -O2 -o libucx_yield.so ucx_yield.c -ldl
 * Use:   mpiexec -genv LD_PRELOAD /path/libucx_yield.so -n 4 ./app
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* Opaque in UCX's headers too; declared here so no UCX headers are needed. */
typedef struct ucp_worker *ucp_worker_h;
typedef unsigned (*progress_fn)(ucp_worker_h);

static progress_fn real_progress;

static progress_fn resolve(void)
{
    progress_fn fn = __atomic_load_n(&real_progress, __ATOMIC_ACQUIRE);
    if (fn == NULL) {
        fn = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (fn == NULL) {
            /* Only reachable if someone calls us without libucp loaded. */
            fprintf(stderr, "ucx_yield: ucp_worker_progress not found: %s\n", dlerror());
            abort();
        }
        __atomic_store_n(&real_progress, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    unsigned events = resolve()(worker);
    if (events == 0)
        sched_yield();
    return events;
}
