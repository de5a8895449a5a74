# written by scripts/plot_runs.sh; cd to this directory and run: gnuplot plots.gp
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }
set terminal @png size 1000,600 noenhanced
set datafile missing '?'
set grid

set output 'loss_steps.png'
set title 'small profile, seed 1337: training and validation loss'
set xlabel 'step'
set ylabel 'loss'
set key inside top right
set format x '%g'
unset logscale y
set format y '%g'
plot 'gma.train.dat' using 1:3 with lines lw 1 lc rgb '#0072b2' notitle, \
     'sdpa.train.dat' using 1:3 with lines lw 1 lc rgb '#d55e00' notitle, \
     'hybrid.train.dat' using 1:3 with lines lw 1 lc rgb '#009e73' notitle, \
     'linear.train.dat' using 1:3 with lines lw 1 lc rgb '#cc79a7' notitle, \
     'performer.train.dat' using 1:3 with lines lw 1 lc rgb '#e69f00' notitle, \
     'mamba.train.dat' using 1:3 with lines lw 1 lc rgb '#56b4e9' notitle, \
     'gma.valid.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#0072b2' title 'gma', \
     'sdpa.valid.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#d55e00' title 'sdpa', \
     'hybrid.valid.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#009e73' title 'hybrid', \
     'linear.valid.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#cc79a7' title 'linear', \
     'performer.valid.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#e69f00' title 'performer', \
     'mamba.valid.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#56b4e9' title 'mamba', \
     NaN with lines lw 1 lc rgb '#808080' title 'training (thin)', \
     NaN with linespoints lw 2 pt 7 ps 0.7 lc rgb '#808080' title 'validation'

set output 'loss_tokens.png'
set title 'small profile, seed 1337: training and validation loss'
set xlabel 'training tokens'
set ylabel 'loss'
set key inside top right
set format x '%.1s%c'
unset logscale y
set format y '%g'
plot 'gma.train.dat' using 2:3 with lines lw 1 lc rgb '#0072b2' notitle, \
     'sdpa.train.dat' using 2:3 with lines lw 1 lc rgb '#d55e00' notitle, \
     'hybrid.train.dat' using 2:3 with lines lw 1 lc rgb '#009e73' notitle, \
     'linear.train.dat' using 2:3 with lines lw 1 lc rgb '#cc79a7' notitle, \
     'performer.train.dat' using 2:3 with lines lw 1 lc rgb '#e69f00' notitle, \
     'mamba.train.dat' using 2:3 with lines lw 1 lc rgb '#56b4e9' notitle, \
     'gma.valid.dat' using 2:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#0072b2' title 'gma', \
     'sdpa.valid.dat' using 2:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#d55e00' title 'sdpa', \
     'hybrid.valid.dat' using 2:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#009e73' title 'hybrid', \
     'linear.valid.dat' using 2:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#cc79a7' title 'linear', \
     'performer.valid.dat' using 2:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#e69f00' title 'performer', \
     'mamba.valid.dat' using 2:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#56b4e9' title 'mamba', \
     NaN with lines lw 1 lc rgb '#808080' title 'training (thin)', \
     NaN with linespoints lw 2 pt 7 ps 0.7 lc rgb '#808080' title 'validation'

set output 'ppl_steps.png'
set title 'small profile, seed 1337: validation perplexity and exp(training loss)'
set xlabel 'step'
set ylabel 'perplexity (log)'
set key inside top right
set format x '%g'
set logscale y
set format y '%g'
plot 'gma.train.dat' using 1:(exp($3)) with lines lw 1 lc rgb '#0072b2' notitle, \
     'sdpa.train.dat' using 1:(exp($3)) with lines lw 1 lc rgb '#d55e00' notitle, \
     'hybrid.train.dat' using 1:(exp($3)) with lines lw 1 lc rgb '#009e73' notitle, \
     'linear.train.dat' using 1:(exp($3)) with lines lw 1 lc rgb '#cc79a7' notitle, \
     'performer.train.dat' using 1:(exp($3)) with lines lw 1 lc rgb '#e69f00' notitle, \
     'mamba.train.dat' using 1:(exp($3)) with lines lw 1 lc rgb '#56b4e9' notitle, \
     'gma.valid.dat' using 1:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#0072b2' title 'gma', \
     'sdpa.valid.dat' using 1:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#d55e00' title 'sdpa', \
     'hybrid.valid.dat' using 1:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#009e73' title 'hybrid', \
     'linear.valid.dat' using 1:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#cc79a7' title 'linear', \
     'performer.valid.dat' using 1:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#e69f00' title 'performer', \
     'mamba.valid.dat' using 1:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#56b4e9' title 'mamba', \
     NaN with lines lw 1 lc rgb '#808080' title 'training (thin)', \
     NaN with linespoints lw 2 pt 7 ps 0.7 lc rgb '#808080' title 'validation'

set output 'ppl_tokens.png'
set title 'small profile, seed 1337: validation perplexity and exp(training loss)'
set xlabel 'training tokens'
set ylabel 'perplexity (log)'
set key inside top right
set format x '%.1s%c'
set logscale y
set format y '%g'
plot 'gma.train.dat' using 2:(exp($3)) with lines lw 1 lc rgb '#0072b2' notitle, \
     'sdpa.train.dat' using 2:(exp($3)) with lines lw 1 lc rgb '#d55e00' notitle, \
     'hybrid.train.dat' using 2:(exp($3)) with lines lw 1 lc rgb '#009e73' notitle, \
     'linear.train.dat' using 2:(exp($3)) with lines lw 1 lc rgb '#cc79a7' notitle, \
     'performer.train.dat' using 2:(exp($3)) with lines lw 1 lc rgb '#e69f00' notitle, \
     'mamba.train.dat' using 2:(exp($3)) with lines lw 1 lc rgb '#56b4e9' notitle, \
     'gma.valid.dat' using 2:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#0072b2' title 'gma', \
     'sdpa.valid.dat' using 2:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#d55e00' title 'sdpa', \
     'hybrid.valid.dat' using 2:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#009e73' title 'hybrid', \
     'linear.valid.dat' using 2:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#cc79a7' title 'linear', \
     'performer.valid.dat' using 2:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#e69f00' title 'performer', \
     'mamba.valid.dat' using 2:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#56b4e9' title 'mamba', \
     NaN with lines lw 1 lc rgb '#808080' title 'training (thin)', \
     NaN with linespoints lw 2 pt 7 ps 0.7 lc rgb '#808080' title 'validation'
