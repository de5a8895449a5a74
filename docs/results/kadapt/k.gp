set terminal pngcairo size 900,500 noenhanced
set output 'k_steps.png'
set xlabel 'step'
set ylabel 'components per head K (live; tensor K dashed)'
set key outside right
set grid
plot 'future_kad256-20261203-152303.k.dat' index 0 using 1:4 with linespoints lc 1 title 'future_kad256-20261203-152303 layer 0', 'future_kad256-20261203-152303.k.dat' index 0 using 1:3 with lines lc 1 dashtype 2 notitle, 'future_kad256-20261203-152303.k.dat' index 1 using 1:4 with linespoints lc 2 title 'future_kad256-20261203-152303 layer 1', 'future_kad256-20261203-152303.k.dat' index 1 using 1:3 with lines lc 2 dashtype 2 notitle, 'future_kdir256-20261203-152303.k.dat' index 0 using 1:4 with linespoints lc 3 title 'future_kdir256-20261203-152303 layer 0', 'future_kdir256-20261203-152303.k.dat' index 0 using 1:3 with lines lc 3 dashtype 2 notitle, 'future_kdir256-20261203-152303.k.dat' index 1 using 1:4 with linespoints lc 4 title 'future_kdir256-20261203-152303 layer 1', 'future_kdir256-20261203-152303.k.dat' index 1 using 1:3 with lines lc 4 dashtype 2 notitle
