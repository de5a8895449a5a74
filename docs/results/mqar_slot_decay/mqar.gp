# written by scripts/reproduce_mqar.sh; cd to this directory and run: gnuplot mqar.gp
set terminal pngcairo size 800,500; set key outside right; set yrange [0:1.05]; set ylabel 'mean test accuracy'
names = "bc-gma16"
set output 'mqar_width.png'; set xlabel 'model width'; set logscale x 2
rule = 0.1875 # the mean over the test lengths of the no-lookup accuracy 1/P
plot for [i=0:0] 'mqar_width.dat' index i with linespoints title word(names, i + 1), (rule > 0 ? rule : 1/0) with lines dashtype 2 lc 'black' title 'no lookup (1/P)'
set output 'mqar_state.png'; set xlabel 'recurrent state (bytes)'; set logscale x 10
plot for [i=0:0] 'mqar_state.dat' index i with linespoints title word(names, i + 1), (rule > 0 ? rule : 1/0) with lines dashtype 2 lc 'black' title 'no lookup (1/P)'
