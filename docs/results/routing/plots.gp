# written by scripts/plot_runs.sh; cd to this directory and run: gnuplot plots.gp
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }
set terminal @png size 1000,600 noenhanced
set datafile missing '?'
set grid

set output 'utilisation.png'
set title 'routing utilisation per variant (mean over layers and heads)'
set xlabel 'component rank (by share, within each head)'
set ylabel 'share of tokens (log)'
set key inside top right
set format x '%g'
set logscale y
set format y '%g'
plot 'default.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#0072b2' title 'default (2 layers x 4 heads, Kc 128)', \
     'kmeans.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#d55e00' title 'kmeans (2 layers x 4 heads, Kc 128)', \
     'div_token_0.01.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#009e73' title 'div_token_0.01 (2 layers x 4 heads, Kc 128)', \
     'div_token_0.1.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#cc79a7' title 'div_token_0.1 (2 layers x 4 heads, Kc 128)', \
     'div_batch_0.01.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#e69f00' title 'div_batch_0.01 (2 layers x 4 heads, Kc 128)', \
     'div_batch_0.1.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#56b4e9' title 'div_batch_0.1 (2 layers x 4 heads, Kc 128)', \
     'reinit.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#000000' title 'reinit (2 layers x 4 heads, Kc 128)', \
     'softmax_orthogonal.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#f0e442' title 'softmax_orthogonal (2 layers x 4 heads, Kc 128)', \
     'ema.routing.dat' using 1:($2 > 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#882255' title 'ema (2 layers x 4 heads, Kc 128)'
