/* kmeans.h: k-means for GMA initialisation and re-seeding (docs/model.md §5), on host arrays of
 * n rows of width d. Seeding is k-means++ (first centre uniform, each next one drawn with
 * probability proportional to the squared distance to the nearest centre so far); Lloyd
 * iterations then alternate assignment and centroid update (an emptied cluster keeps its
 * centre). Everything is drawn from the given Rng, so results are fixed by the seed. */
#ifndef GMA_KMEANS_H
#define GMA_KMEANS_H
#include "core/common.h"
#include "core/rng.h"

/* k-means++ seeding: centres [k,d] from rows X [n,d]. */
void kmeans_pp_seed(const real *X, int n, int d, int k, real *centres, Rng *rng);
/* One Lloyd iteration: assign (assign[n] may be NULL) and move the centres. Returns the
 * within-cluster sum of squared distances of the assignment made (before the move). */
double kmeans_lloyd_step(const real *X, int n, int d, int k, real *centres, int *assign);
/* Within-cluster sum of squared distances of X to its nearest centre. */
double kmeans_sse(const real *X, int n, int d, int k, const real *centres);
/* Seeding then up to `iters` Lloyd iterations (stops when assignments settle). Returns the
 * final within-cluster sum of squares. */
double kmeans_fit(const real *X, int n, int d, int k, int iters, real *centres, Rng *rng);
/* k-means++ style draw of one row of X: probability proportional to the squared distance
 * to the nearest of the m centres C [m,d] (uniform when m == 0 or every distance is 0). */
int kmeans_pp_pick(const real *X, int n, int d, const real *C, int m, Rng *rng);
#endif
