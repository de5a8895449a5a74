/* dist.c: MPI wrappers for data-parallel training (see dist.h). The only file that
 * tests GMA_MPI (and GMA_NCCL, the NCCL path for CUDA buffers of `make cuda-mpi`). */
#include "train/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#ifdef GMA_MPI
#include <mpi.h>
#include <unistd.h>
#endif
#ifdef GMA_NCCL
#include "ops/cuda/cuda_nccl.h"
#endif

static int g_rank = 0, g_size = 1, g_started = 0, g_reporter = 0;
static int g_local_rank = 0, g_local_size = 1; /* among the ranks of this machine */
/* how buffers in backend memory are reduced, decided at the first such call */
enum { VIA_UNSET, VIA_MPI, VIA_HOST, VIA_NCCL };
static int g_via = VIA_UNSET;
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
int dist_local_rank(void) { return g_local_rank; }
int dist_local_size(void) { return g_local_size; }
int dist_reports(void) { return g_rank == g_reporter; }

/* a one-process allgather */
static real *copy_rows(const real *x, int n, int d, int *n_all) {
    *n_all = n;
    real *y = xmalloc(sizeof(real) * ((size_t)n * d + 1));
    memcpy(y, x, sizeof(real) * (size_t)n * d);
    return y;
}

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
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &g_local_rank);
    MPI_Comm_size(local, &g_local_size);
    MPI_Comm_free(&local);
    return 0;
}

void dist_finalize(void) {
    free(g_stage);
    g_stage = NULL;
    g_stage_cap = 0;
#ifdef GMA_NCCL
    if (g_via == VIA_NCCL) cuda_nccl_finalize();
#endif
    g_via = VIA_UNSET;
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

real *dist_allgather_rows(const real *x, int n, int d, int *n_all) {
    if (g_size == 1) return copy_rows(x, n, d, n_all);
    int *cnt = xmalloc(sizeof(int) * g_size), *off = xmalloc(sizeof(int) * g_size), tot = 0;
    MPI_Allgather(&n, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < g_size; r++) off[r] = tot, tot += cnt[r];
    MPI_Datatype row; /* counts in rows, so they stay ints */
    MPI_Type_contiguous(d, real_type(), &row);
    MPI_Type_commit(&row);
    real *y = xmalloc(sizeof(real) * ((size_t)tot * d + 1));
    MPI_Allgatherv(x, n, row, y, cnt, off, row, MPI_COMM_WORLD);
    MPI_Type_free(&row);
    free(cnt);
    free(off);
    *n_all = tot;
    return y;
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
real *dist_allgather_rows(const real *x, int n, int d, int *n_all) { return copy_rows(x, n, d, n_all); }
#endif

#ifdef GMA_NCCL
/* a failure inside a collective leaves the other ranks waiting: end them all */
_Noreturn static void nccl_fatal(void) {
    fprintf(stderr, "gma: rank %d: %s\n", g_rank, gma_error());
    dist_abort(1);
}

/* NCCL needs one GPU per rank: VIA_NCCL when every rank has its own (and GMA_NCCL is not
 * 0), after building the communicator; else VIA_HOST, with the reason on rank 0 */
static int choose_nccl(void) {
    const char *env = getenv("GMA_NCCL");
    if (env && !strcmp(env, "0")) {
        if (g_rank == 0) fprintf(stderr, "gma: GMA_NCCL=0: device buffers are summed by MPI through host memory\n");
        return VIA_HOST;
    }
    enum { KEY = 192 };
    char key[KEY] = "", bus[64] = "";
    if (cuda_nccl_device_key(bus, sizeof bus) != 0) nccl_fatal();
    char host[100] = "";
    gethostname(host, sizeof host - 1);
    snprintf(key, sizeof key, "%s GPU %s", host, bus);
    char *all = xmalloc((size_t)KEY * g_size);
    MPI_Allgather(key, KEY, MPI_CHAR, all, KEY, MPI_CHAR, MPI_COMM_WORLD);
    int a = -1, b = -1;
    for (int i = 0; i < g_size && a < 0; i++)
        for (int j = i + 1; j < g_size; j++)
            if (!strncmp(all + (size_t)i * KEY, all + (size_t)j * KEY, KEY)) {
                a = i, b = j;
                break;
            }
    if (a >= 0) {
        if (g_rank == 0)
            fprintf(stderr, "gma: ranks %d and %d share %s: device buffers are summed by MPI through host memory "
                            "(NCCL needs one GPU per rank)\n", a, b, all + (size_t)a * KEY);
        free(all);
        return VIA_HOST;
    }
    free(all);
    size_t idn = cuda_nccl_id_bytes();
    char *id = xcalloc(1, idn);
    int bad = g_rank == 0 && cuda_nccl_get_id(id) != 0;
    if (dist_max_int(bad)) { /* rank 0 could not make an id: nobody joins */
        if (bad) nccl_fatal();
        dist_abort(1);
    }
    dist_bcast(id, idn, 0);
    if (cuda_nccl_init(id, g_size, g_rank) != 0) nccl_fatal();
    free(id);
    return VIA_NCCL;
}
#endif

/* all ranks call this at the same point (from a collective), with the same backend */
static void choose_via(void) {
    if (g_via != VIA_UNSET) return;
    g_via = g_ops->device == OPS_CPU ? VIA_MPI : VIA_HOST; /* a wrapped cpu table too */
#ifdef GMA_NCCL
    if (g_via == VIA_HOST && g_size > 1) g_via = choose_nccl();
#endif
}

const char *dist_transport(void) {
    switch (g_via) {
    case VIA_NCCL: return "NCCL";
    case VIA_HOST: return "MPI through host memory";
    case VIA_MPI: return "MPI";
    default: return "not chosen yet";
    }
}

int dist_owns(long k) { return k % g_size == g_rank; }

int dist_sum_table(double *table, size_t n, int failed) {
    dist_sum_double(table, n);
    return dist_max_int(failed != 0);
}

/* host view of a backend buffer: itself on the CPU backend, else a staging copy */
static real *stage_in(real *x, size_t n) {
    if (g_via == VIA_MPI) return x;
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
    choose_via();
#ifdef GMA_NCCL
    if (g_via == VIA_NCCL) {
        if (cuda_nccl_sum(x, n) != 0) nccl_fatal();
        return;
    }
#endif
    real *h = stage_in(x, n);
    dist_sum_real(h, n);
    stage_out(x, h, n);
}

void dist_bcast_real_backend(real *x, size_t n, int root) {
    if (g_size == 1) return;
    choose_via();
#ifdef GMA_NCCL
    if (g_via == VIA_NCCL) {
        if (cuda_nccl_bcast(x, n, root) != 0) nccl_fatal();
        return;
    }
#endif
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

real *dist_gather_rows_cb(const real *x, int n, int d, int *n_all, void *ctx) {
    (void)ctx;
    return dist_allgather_rows(x, n, d, n_all);
}
