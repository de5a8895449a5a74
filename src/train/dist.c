/* dist.c: MPI wrappers for data-parallel training (see dist.h). The only file that
 * tests GMA_MPI. */
#include "train/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#ifdef GMA_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1, g_started = 0, g_reporter = 0;
static real *g_stage;      /* host staging buffer for backend memory */
static size_t g_stage_cap; /* in reals */

/* MPI counts are ints: move large buffers in pieces */
#define DIST_CHUNK ((size_t)1 << 28)

int dist_enabled(void) {
#ifdef GMA_MPI
    return 1;
#else
    return 0;
#endif
}

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
int dist_reports(void) { return g_rank == g_reporter; }

#ifdef GMA_MPI
static MPI_Datatype real_type(void) { return sizeof(real) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT; }

int dist_init(int *argc, char ***argv) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) return 0;
    int provided = 0;
    /* only the main thread calls MPI (OpenMP regions never do) */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return gma_errorf("MPI_Init_thread failed");
    g_started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    /* errors in MPI calls end the job rather than return codes nobody checks */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return 0;
}

void dist_finalize(void) {
    free(g_stage);
    g_stage = NULL;
    g_stage_cap = 0;
    if (!g_started) return;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
    g_started = 0;
}

_Noreturn void dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (g_started && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

void dist_barrier(void) {
    if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void dist_sum_real(real *x, size_t n) {
    if (g_size == 1) return;
    for (size_t o = 0; o < n; o += DIST_CHUNK)
        MPI_Allreduce(MPI_IN_PLACE, x + o, (int)GMA_MIN(DIST_CHUNK, n - o), real_type(), MPI_SUM, MPI_COMM_WORLD);
}

void dist_sum_double(double *x, size_t n) {
    if (g_size == 1) return;
    for (size_t o = 0; o < n; o += DIST_CHUNK)
        MPI_Allreduce(MPI_IN_PLACE, x + o, (int)GMA_MIN(DIST_CHUNK, n - o), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int dist_max_int(int v) {
    if (g_size > 1) MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

int dist_min_int(int v) {
    if (g_size > 1) MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return v;
}

int dist_same_u64(uint64_t v) {
    if (g_size == 1) return 1;
    uint64_t lo = v, hi = v;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

void dist_bcast(void *buf, size_t bytes, int root) {
    if (g_size == 1) return;
    for (size_t o = 0; o < bytes; o += DIST_CHUNK)
        MPI_Bcast((char *)buf + o, (int)GMA_MIN(DIST_CHUNK, bytes - o), MPI_BYTE, root, MPI_COMM_WORLD);
}
#else
int dist_init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}
void dist_finalize(void) {
    free(g_stage);
    g_stage = NULL;
    g_stage_cap = 0;
    (void)g_started;
}
_Noreturn void dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    exit(code);
}
void dist_barrier(void) {}
void dist_sum_real(real *x, size_t n) { (void)x, (void)n; }
void dist_sum_double(double *x, size_t n) { (void)x, (void)n; }
int dist_max_int(int v) { return v; }
int dist_min_int(int v) { return v; }
int dist_same_u64(uint64_t v) { return (void)v, 1; }
void dist_bcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; }
#endif

/* host view of a backend buffer: itself on the CPU backend, else a staging copy */
static real *stage_in(real *x, size_t n) {
    if (g_ops == &gma_ops_cpu) return x;
    if (n > g_stage_cap) {
        g_stage = xrealloc(g_stage, n * sizeof(real));
        g_stage_cap = n;
    }
    g_ops->to_host(g_stage, x, n * sizeof(real));
    return g_stage;
}
static void stage_out(real *x, const real *h, size_t n) {
    if (h != x) g_ops->to_device(x, h, n * sizeof(real));
}

void dist_sum_real_backend(real *x, size_t n) {
    if (g_size == 1) return;
    real *h = stage_in(x, n);
    dist_sum_real(h, n);
    stage_out(x, h, n);
}

void dist_bcast_real_backend(real *x, size_t n, int root) {
    if (g_size == 1) return;
    real *h = stage_in(x, n);
    dist_bcast(h, n * sizeof(real), root);
    stage_out(x, h, n);
}

int dist_agree(int status) {
    g_reporter = 0;
    if (g_size == 1) return status;
    int worst = dist_max_int(status);
    if (worst == 0) return 0;
    g_reporter = dist_min_int(status != 0 ? g_rank : g_size);
    if (g_rank == g_reporter && g_rank > 0) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", gma_error());
        gma_errorf("rank %d: %s", g_rank, msg);
    }
    return worst;
}
