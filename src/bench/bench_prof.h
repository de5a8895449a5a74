/* bench_prof.h: gmabench's profiling op table (docs/benchmarks.md). A copy of the active
 * backend's table whose matmul and matmul_strided count the FLOPs of every product, time
 * it (with the device synchronised around it) and note its shape, so that the shapes can
 * be replayed alone on the same BLAS; the CPU backend's products inside its other ops
 * arrive through ops_set_cpu_product_hook. A second copy records the weight products of
 * a decode step (their B operand inside [wlo, whi)) for bench_decode.c.
 *
 * The op table's entries take no context argument, so the one BenchProf that
 * bench_prof_init made current is the one its entries update. */
#ifndef GMA_BENCH_PROF_H
#define GMA_BENCH_PROF_H
#include "ops/ops.h"

/* a recorded product shape; hidden: run by the CPU backend inside one of its other ops
 * (reported by ops_set_cpu_product_hook), par: threads of the parallel region it ran in,
 * so that its replayed time counts 1/par (the region runs par of them at once) */
typedef struct BenchShape {
    int M, N, K, ta, tb, batch, hidden, par;
    long count;
    double best, in_step;
} BenchShape;

/* a weight product of a decode step: y = x W with W [K,N] (tb 0) or [N,K] (tb 1) */
typedef struct BenchWProd { const real *W; int M, N, K, tb; } BenchWProd;

#define BENCH_MAX_SHAPES 512
#define BENCH_MAX_WPROD 256
typedef struct BenchProf {
    const GmaOps *inner; /* the backend's own table */
    GmaOps table;        /* inner with the products counted */
    GmaOps rec;          /* inner with the weight products of a decode step recorded */
    BenchShape shapes[BENCH_MAX_SHAPES];
    int nshapes;
    int recording;  /* note the shapes of the products */
    int timing;     /* time each op-table product (device synchronised) into mm_time */
    int shape_time; /* ... and add its time to its shape's in_step */
    int in_table;   /* inside a product of the op table: the backend's own report is not a hidden one */
    double mm_time, mm_flops, hid_flops;
    double w_time; /* when timing: the part of mm_time in weight products (B in wlo..whi, A not transposed) */
    BenchWProd wprod[BENCH_MAX_WPROD];
    int nwprod;
    const real *wlo, *whi;
} BenchProf;

/* the tables over the active backend (g_ops); makes p the current one */
void bench_prof_init(BenchProf *p);
/* forget the recorded shapes and the counters */
void bench_prof_reset(BenchProf *p);
/* on the CPU: count the backend's products inside its other ops into hid_flops (and note
 * their shapes while recording); off again with 0 */
void bench_prof_hidden(BenchProf *p, int on);
/* One replay round of the recorded shapes alone (operands of the shapes' sizes, beta = 0):
 * each shape runs BENCH_REPLAY_REPS times after a warm call and its best time counts; returns
 * this round's seconds for one step's worth of the op table's products, adds the hidden
 * ones' (each best / par) to *hidden when given, and keeps each shape's best over all
 * rounds in BenchShape.best. */
#define BENCH_REPLAY_REPS 3
double bench_replay_shapes(BenchProf *p, double *hidden);
/* the best over all rounds: the op table's products (hidden = 0) or the hidden ones */
double bench_replay_best(const BenchProf *p, int hidden);
#endif
