# written by scripts/plot_scaling.sh; cd to this directory and run: gnuplot scaling.gp
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }
reset
set terminal @png size 1200,500
set output 'scaling_model.png'
names = 'gma linear mamba performer sdpa'
set multiplot layout 1,2 title 'Scaling against N: whole training step (log-log)'
set logscale xy 2
set format x '%g'; set format y '%g'
set grid; set key top left; set xlabel 'N (tokens)'
set ylabel 'time (ms)'
plot for [i=0:4] 'model.dat' index i using 1:2 with linespoints lw 2 title word(names, i + 1)
set ylabel 'peak memory (MiB)'
plot for [i=0:4] 'model.dat' index i using 1:3 with linespoints lw 2 title word(names, i + 1)
unset multiplot
