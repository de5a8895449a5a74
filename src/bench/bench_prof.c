/* bench_prof.c: gmabench's profiling op table (bench_prof.h). */
#include "bench/bench_prof.h"

static BenchProf *g_cur; /* the table's entries have no context argument */

/* the recorded shape with these dimensions, or NULL */
static BenchShape *find_shape(BenchProf *p, int M, int N, int K, int ta, int tb, int batch, int hidden, int par) {
    for (int i = 0; i < p->nshapes; i++) {
        BenchShape *s = &p->shapes[i];
        if (s->M == M && s->N == N && s->K == K && s->ta == ta && s->tb == tb && s->batch == batch &&
            s->hidden == hidden && s->par == par)
            return s;
    }
    return NULL;
}
static void note_shape(BenchProf *p, int M, int N, int K, int ta, int tb, int batch, int hidden, int par) {
    if (!p->recording) return;
    BenchShape *s = find_shape(p, M, N, K, ta, tb, batch, hidden, par);
    if (s) s->count++;
    else if (p->nshapes < BENCH_MAX_SHAPES)
        p->shapes[p->nshapes++] = (BenchShape){M, N, K, ta, tb, batch, hidden, par, 1, 1e30, 0};
}
/* an op-table product's time in a timed round (op-table shapes are noted with hidden 0, par 1) */
static void shape_time(BenchProf *p, int M, int N, int K, int ta, int tb, int batch, double dt) {
    BenchShape *s = find_shape(p, M, N, K, ta, tb, batch, 0, 1);
    if (s) s->in_step += dt;
}
/* the CPU backend's products inside its other ops (ops_set_cpu_product_hook): counted in
 * every step, their shapes noted in the recording step; called from parallel regions too */
static void hidden_product(int M, int N, int K, int ta, int tb, int nthreads) {
    BenchProf *p = g_cur;
    if (p->in_table) return;
#pragma omp critical(gmabench_hidden)
    {
        p->hid_flops += 2.0 * M * N * K;
        note_shape(p, M, N, K, ta, tb, 1, 1, nthreads);
    }
}
/* before and after a product of the op table: its time (when timing) into mm_time and its shape */
static double prod_begin(BenchProf *p) {
    double t0 = 0;
    if (p->timing) ops_sync(), t0 = gma_now();
    p->in_table = 1;
    return t0;
}
static void prod_end(BenchProf *p, double t0, int M, int N, int K, int ta, int tb, int batch) {
    p->in_table = 0;
    if (p->timing) ops_sync(), p->mm_time += gma_now() - t0;
    if (p->shape_time) shape_time(p, M, N, K, ta, tb, batch, gma_now() - t0);
    p->mm_flops += 2.0 * M * N * K * batch;
    note_shape(p, M, N, K, ta, tb, batch, 0, 1);
}
/* The products are timed (with the device synchronised around each) in the recording step,
 * and on the CPU in every step (timing costs nothing there); on a GPU the timed steps just
 * count their FLOPs, so it runs them unhindered. */
static void prof_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al, real be) {
    BenchProf *p = g_cur;
    double t0 = prod_begin(p);
    p->inner->matmul(C, A, B, M, N, K, ta, tb, al, be);
    if (p->timing && B >= p->wlo && B < p->whi && !ta) ops_sync(), p->w_time += gma_now() - t0;
    prod_end(p, t0, M, N, K, ta, tb, 1);
}
static void prof_matmul_strided(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al,
                                real be, int batch, size_t sA, size_t sB, size_t sC) {
    BenchProf *p = g_cur;
    double t0 = prod_begin(p);
    p->inner->matmul_strided(C, A, B, M, N, K, ta, tb, al, be, batch, sA, sB, sC);
    prod_end(p, t0, M, N, K, ta, tb, batch);
}
/* the decode step's weight products: B a parameter, A not transposed */
static void rec_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al, real be) {
    BenchProf *p = g_cur;
    if (B >= p->wlo && B < p->whi && !ta && p->nwprod < BENCH_MAX_WPROD)
        p->wprod[p->nwprod++] = (BenchWProd){B, M, N, K, tb};
    p->inner->matmul(C, A, B, M, N, K, ta, tb, al, be);
}

void bench_prof_init(BenchProf *p) {
    *p = (BenchProf){.inner = g_ops};
    p->table = *g_ops;
    p->table.matmul = prof_matmul;
    p->table.matmul_strided = prof_matmul_strided;
    p->rec = *g_ops;
    p->rec.matmul = rec_matmul;
    g_cur = p;
}

void bench_prof_reset(BenchProf *p) {
    p->nshapes = 0;
    p->mm_time = p->mm_flops = p->hid_flops = p->w_time = 0;
}

void bench_prof_hidden(BenchProf *p, int on) {
    g_cur = p;
    ops_set_cpu_product_hook(on ? hidden_product : NULL);
}

/* the best of BENCH_REPLAY_REPS timed runs of shape s after a warm one */
static double replay_one(const BenchProf *p, const BenchShape *s) {
    const GmaOps *in = p->inner;
    size_t a = (size_t)s->M * s->K * s->batch, b = (size_t)s->K * s->N * s->batch, c = (size_t)s->M * s->N * s->batch;
    real *A = in->alloc(a * sizeof(real)), *Bm = in->alloc(b * sizeof(real)), *C = in->alloc(c * sizeof(real));
    double best = 1e30;
    for (int r = 0; r < BENCH_REPLAY_REPS + 1; r++) {
        ops_sync();
        double t0 = gma_now();
        if (s->batch == 1) in->matmul(C, A, Bm, s->M, s->N, s->K, s->ta, s->tb, 1, 0);
        else
            in->matmul_strided(C, A, Bm, s->M, s->N, s->K, s->ta, s->tb, 1, 0, s->batch, (size_t)s->M * s->K,
                               (size_t)s->K * s->N, (size_t)s->M * s->N);
        ops_sync();
        double dt = gma_now() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    in->free(A);
    in->free(Bm);
    in->free(C);
    return best;
}

double bench_replay_shapes(BenchProf *p, double *hidden) {
    double total = 0, hid = 0;
    p->in_table = 1; /* the replay's own products are not the backend's hidden ones */
    for (int i = 0; i < p->nshapes; i++) {
        BenchShape *s = &p->shapes[i];
        double best = replay_one(p, s);
        if (best < s->best) s->best = best;
        if (s->hidden) hid += best * s->count / s->par;
        else total += best * s->count;
    }
    p->in_table = 0;
    if (hidden) *hidden += hid;
    return total;
}

double bench_replay_best(const BenchProf *p, int hidden) {
    double total = 0;
    for (int i = 0; i < p->nshapes; i++)
        if (p->shapes[i].hidden == hidden) total += p->shapes[i].best * p->shapes[i].count / p->shapes[i].par;
    return total;
}
