/* route_plots.h: the gnuplot plots of a routing analysis (gmaeval --analyze): component
 * utilisation per layer and a heatmap of one window's query responsibilities. */
#ifndef GMA_ROUTE_PLOTS_H
#define GMA_ROUTE_PLOTS_H
#include "analysis/routing.h"

/* dir/utilisation.dat, heatmap.dat (heat: [N, Kc]) and plots.gp, then the PNGs through
 * gnuplot when installed (named on stdout, or that it is missing). 0, or -1 with gma_error. */
int route_write_plots(const char *dir, const RouteAnalysis *ra, const int *layer_index, const float *heat, int N);
#endif
