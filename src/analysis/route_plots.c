/* route_plots.c: the gnuplot data, script and PNGs of a routing analysis (route_plots.h). */
#include "analysis/route_plots.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"

/* the head-averaged share of each layer's rank-th busiest component: [L, Kc] */
static double *sorted_shares(const RouteAnalysis *ra) {
    double *sh = xcalloc((size_t)ra->L * ra->Kc, sizeof(double)), *tmp = xmalloc(sizeof(double) * ra->Kc);
    for (int l = 0; l < ra->L; l++)
        for (int h = 0; h < ra->H; h++) {
            memcpy(tmp, ra->counts + ((size_t)l * ra->H + h) * ra->Kc, sizeof(double) * ra->Kc);
            for (int i = 0; i < ra->Kc; i++) /* sort descending */
                for (int j = i + 1; j < ra->Kc; j++)
                    if (tmp[j] > tmp[i]) { double t = tmp[i]; tmp[i] = tmp[j]; tmp[j] = t; }
            for (int k = 0; k < ra->Kc; k++) sh[(size_t)l * ra->Kc + k] += ra->n ? tmp[k] / ra->n / ra->H : 0;
        }
    free(tmp);
    return sh;
}

/* dir/NAME opened for writing, its path in p; NULL with gma_error */
static FILE *open_in(const char *dir, const char *name, char *p, size_t cap) {
    snprintf(p, cap, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) gma_errorf("%s: cannot open for writing", p);
    return f;
}

static int write_data(const char *dir, const RouteAnalysis *ra, const float *heat, int N) {
    char p[2300];
    FILE *f = open_in(dir, "utilisation.dat", p, sizeof p);
    if (!f) return -1;
    fprintf(f, "# rank, then per GMA layer the head-averaged share of its rank-th busiest component\n");
    double *sh = sorted_shares(ra);
    for (int k = 0; k < ra->Kc; k++) {
        fprintf(f, "%d", k);
        for (int l = 0; l < ra->L; l++) fprintf(f, " %.6g", sh[(size_t)l * ra->Kc + k]);
        fprintf(f, "\n");
    }
    fclose(f);
    free(sh);
    if (!(f = open_in(dir, "heatmap.dat", p, sizeof p))) return -1;
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < ra->Kc; k++) fprintf(f, "%s%.5g", k ? " " : "", heat[(size_t)n * ra->Kc + k]);
        fprintf(f, "\n");
    }
    fclose(f);
    return 0;
}

/* pngcairo where this gnuplot has it (else libgd's png); a defined palette (viridis) on
 * cbrange [0:1] for the heatmap; one line with points per layer, log y, so that no
 * layer's series hides another's */
static int write_script(const char *dir, const RouteAnalysis *ra, const int *layer_index, int N) {
    char p[2300];
    FILE *f = open_in(dir, "plots.gp", p, sizeof p);
    if (!f) return -1;
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }\n"
               "set terminal @png size 900,500\nset output 'utilisation.png'\n"
               "set title 'Component utilisation (components sorted by share, head average; zero shares not drawn)'\n"
               "set xlabel 'component rank'\nset ylabel 'share of tokens (argmax)'\nset logscale y\nset format y '%%g'\n"
               "set grid\nset key top right\nset xrange [-0.5:%d]\n"
               "plot ", ra->Kc);
    for (int l = 0; l < ra->L; l++)
        fprintf(f, "%s'utilisation.dat' using 1:($%d > 0 ? $%d : NaN) with linespoints lw 2 pt %d ps 0.8 title 'layer %d'",
                l ? ", " : "", l + 2, l + 2, 4 + 2 * (l % 6), layer_index[l]);
    fprintf(f, "\nreset\nset terminal @png size 900,700\nset output 'heatmap.png'\n"
               "set title 'Query responsibilities, layer %d head 0, first evaluation window'\n"
               "set xlabel 'component k'\nset ylabel 'position'\nunset key\n"
               "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', 1 '#fde725')\n"
               "set cbrange [0:1]\nset cblabel 'responsibility'\n"
               "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n"
               "plot 'heatmap.dat' matrix with image\n", layer_index[0], ra->Kc - 1, N - 1);
    fclose(f);
    return 0;
}

int route_write_plots(const char *dir, const RouteAnalysis *ra, const int *layer_index, const float *heat, int N) {
    if (gma_mkdirs(dir) != 0 || write_data(dir, ra, heat, N) != 0 || write_script(dir, ra, layer_index, N) != 0) return -1;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("gnuplot not found: plots skipped (apt-get install gnuplot-nox); data and script in %s\n", dir);
        return 0;
    }
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plots.gp", dir);
    if (system(cmd) != 0) return gma_errorf("%s/plots.gp: gnuplot failed", dir);
    printf("plots: %s/utilisation.png %s/heatmap.png\n", dir, dir);
    return 0;
}
