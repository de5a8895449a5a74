# written by scripts/routing_diag.py; cd to this directory and run: gnuplot routing_diag.gp
set terminal pngcairo size 1200,1500 font ',9'; set key top left font ',8'; set grid; set format y '%g'
set output 'self.png'
names = "s1 s2"; vnames = "s1 s2"
set multiplot layout 4,2 title 'MQAR, bc-gma64+sc (self-attention GMA layer, Kc 64): seed 1 learns, seed 2 does not'
set xlabel 'step'
set title 'validation accuracy (no lookup: 0.25)'; set ylabel 'accuracy'; set yrange [0:1]
plot for [i=0:1] 'self.valid.dat' index i using 1:2 with linespoints title word(vnames, i + 1), 0.25 with lines dt 3 lc 'black' title '1/P'
set yrange [*:*]
set title 'components in use (argmax of some row)'; set ylabel 'components'; 
plot for [i=0:1] 'self.dat' index i using 1:2 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:1] 'self.dat' index i using 1:3 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'responsibility entropy (nats)'; set ylabel 'nats'; 
plot for [i=0:1] 'self.dat' index i using 1:4 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:1] 'self.dat' index i using 1:5 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'mass of the query on the slot of key row j+o (j: the recall value)'; set ylabel 'mass'; set yrange [0:1]
plot for [i=0:1] 'self.dat' index i using 1:19 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:1] 'self.dat' index i using 1:20 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:1] 'self.dat' index i using 1:21 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'that row share of its slot when the query reads'; set ylabel 'share'; set yrange [0:1]
plot for [i=0:1] 'self.dat' index i using 1:29 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:1] 'self.dat' index i using 1:30 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:1] 'self.dat' index i using 1:31 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
set title 'weight of row j+o in the output over uniform attention'; set ylabel 'ratio'; set logscale y
plot for [i=0:1] 'self.dat' index i using 1:24 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:1] 'self.dat' index i using 1:25 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:1] 'self.dat' index i using 1:26 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'centre gradient norm per component'; set ylabel 'norm'; set logscale y
plot for [i=0:1] 'self.dat' index i using 1:16 with lines lc i + 1 dt 1 title word(names, i + 1).' live', for [i=0:1] 'self.dat' index i using 1:17 with lines lc i + 1 dt 2 title word(names, i + 1).' dead'
unset logscale y
unset logscale y; set yrange [0:1.05]
set title 'rows j+o of the recall keys of a sequence in distinct slots (fraction)'; set ylabel 'fraction'; 
plot for [i=0:1] 'self.dat' index i using 1:34 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:1] 'self.dat' index i using 1:35 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:1] 'self.dat' index i using 1:36 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
unset multiplot
set output 'cross.png'
names = "s1-L0 s1-L1 s2-L0 s2-L1"; vnames = "s1 s2"
set multiplot layout 4,2 title 'cross-sequence MQAR, GMA cross layers (Kc 64, causal GMA encoder): seed 1 learns, seed 2 does not'
set xlabel 'step'
set title 'validation accuracy (no lookup: 0.25)'; set ylabel 'accuracy'; set yrange [0:1]
plot for [i=0:1] 'cross.valid.dat' index i using 1:2 with linespoints title word(vnames, i + 1), 0.25 with lines dt 3 lc 'black' title '1/P'
set yrange [*:*]
set title 'components in use (argmax of some row)'; set ylabel 'components'; 
plot for [i=0:3] 'cross.dat' index i using 1:2 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:3] 'cross.dat' index i using 1:3 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'responsibility entropy (nats)'; set ylabel 'nats'; 
plot for [i=0:3] 'cross.dat' index i using 1:4 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:3] 'cross.dat' index i using 1:5 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'mass of the query on the slot of key row j+o (j: the recall value)'; set ylabel 'mass'; set yrange [0:1]
plot for [i=0:3] 'cross.dat' index i using 1:19 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:3] 'cross.dat' index i using 1:20 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:3] 'cross.dat' index i using 1:21 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'that row share of its slot when the query reads'; set ylabel 'share'; set yrange [0:1]
plot for [i=0:3] 'cross.dat' index i using 1:29 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:3] 'cross.dat' index i using 1:30 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:3] 'cross.dat' index i using 1:31 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
set title 'weight of row j+o in the output over uniform attention'; set ylabel 'ratio'; set logscale y
plot for [i=0:3] 'cross.dat' index i using 1:24 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:3] 'cross.dat' index i using 1:25 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:3] 'cross.dat' index i using 1:26 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'centre gradient norm per component'; set ylabel 'norm'; set logscale y
plot for [i=0:3] 'cross.dat' index i using 1:16 with lines lc i + 1 dt 1 title word(names, i + 1).' live', for [i=0:3] 'cross.dat' index i using 1:17 with lines lc i + 1 dt 2 title word(names, i + 1).' dead'
unset logscale y
unset logscale y; set yrange [0:1.05]
set title 'rows j+o of the recall keys of a sequence in distinct slots (fraction)'; set ylabel 'fraction'; 
plot for [i=0:3] 'cross.dat' index i using 1:34 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:3] 'cross.dat' index i using 1:35 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:3] 'cross.dat' index i using 1:36 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
unset multiplot
set output 'reinit.png'
names = "s2"; vnames = "s2"
set multiplot layout 4,2 title 'MQAR, bc-gma64+sc with gma.on_collapse reinit (query rows)'
set xlabel 'step'
set title 'validation accuracy (no lookup: 0.25)'; set ylabel 'accuracy'; set yrange [0:1]
plot for [i=0:0] 'reinit.valid.dat' index i using 1:2 with linespoints title word(vnames, i + 1), 0.25 with lines dt 3 lc 'black' title '1/P'
set yrange [*:*]
set title 'components in use (argmax of some row)'; set ylabel 'components'; 
plot for [i=0:0] 'reinit.dat' index i using 1:2 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:0] 'reinit.dat' index i using 1:3 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'responsibility entropy (nats)'; set ylabel 'nats'; 
plot for [i=0:0] 'reinit.dat' index i using 1:4 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:0] 'reinit.dat' index i using 1:5 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'mass of the query on the slot of key row j+o (j: the recall value)'; set ylabel 'mass'; set yrange [0:1]
plot for [i=0:0] 'reinit.dat' index i using 1:19 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reinit.dat' index i using 1:20 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reinit.dat' index i using 1:21 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'that row share of its slot when the query reads'; set ylabel 'share'; set yrange [0:1]
plot for [i=0:0] 'reinit.dat' index i using 1:29 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reinit.dat' index i using 1:30 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reinit.dat' index i using 1:31 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
set title 'weight of row j+o in the output over uniform attention'; set ylabel 'ratio'; set logscale y
plot for [i=0:0] 'reinit.dat' index i using 1:24 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reinit.dat' index i using 1:25 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reinit.dat' index i using 1:26 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'centre gradient norm per component'; set ylabel 'norm'; set logscale y
plot for [i=0:0] 'reinit.dat' index i using 1:16 with lines lc i + 1 dt 1 title word(names, i + 1).' live', for [i=0:0] 'reinit.dat' index i using 1:17 with lines lc i + 1 dt 2 title word(names, i + 1).' dead'
unset logscale y
unset logscale y; set yrange [0:1.05]
set title 'rows j+o of the recall keys of a sequence in distinct slots (fraction)'; set ylabel 'fraction'; 
plot for [i=0:0] 'reinit.dat' index i using 1:34 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reinit.dat' index i using 1:35 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reinit.dat' index i using 1:36 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
unset multiplot
set output 'reseedk.png'
names = "s2"; vnames = "s2"
set multiplot layout 4,2 title 'MQAR, bc-gma64+sc with gma.on_collapse reinit from key rows (gma.reseed_rows keys)'
set xlabel 'step'
set title 'validation accuracy (no lookup: 0.25)'; set ylabel 'accuracy'; set yrange [0:1]
plot for [i=0:0] 'reseedk.valid.dat' index i using 1:2 with linespoints title word(vnames, i + 1), 0.25 with lines dt 3 lc 'black' title '1/P'
set yrange [*:*]
set title 'components in use (argmax of some row)'; set ylabel 'components'; 
plot for [i=0:0] 'reseedk.dat' index i using 1:2 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:0] 'reseedk.dat' index i using 1:3 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'responsibility entropy (nats)'; set ylabel 'nats'; 
plot for [i=0:0] 'reseedk.dat' index i using 1:4 with lines lc i + 1 dt 1 title word(names, i + 1).' queries', for [i=0:0] 'reseedk.dat' index i using 1:5 with lines lc i + 1 dt 2 title word(names, i + 1).' keys'
unset logscale y
set title 'mass of the query on the slot of key row j+o (j: the recall value)'; set ylabel 'mass'; set yrange [0:1]
plot for [i=0:0] 'reseedk.dat' index i using 1:19 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reseedk.dat' index i using 1:20 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reseedk.dat' index i using 1:21 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'that row share of its slot when the query reads'; set ylabel 'share'; set yrange [0:1]
plot for [i=0:0] 'reseedk.dat' index i using 1:29 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reseedk.dat' index i using 1:30 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reseedk.dat' index i using 1:31 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
set title 'weight of row j+o in the output over uniform attention'; set ylabel 'ratio'; set logscale y
plot for [i=0:0] 'reseedk.dat' index i using 1:24 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reseedk.dat' index i using 1:25 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reseedk.dat' index i using 1:26 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set title 'centre gradient norm per component'; set ylabel 'norm'; set logscale y
plot for [i=0:0] 'reseedk.dat' index i using 1:16 with lines lc i + 1 dt 1 title word(names, i + 1).' live', for [i=0:0] 'reseedk.dat' index i using 1:17 with lines lc i + 1 dt 2 title word(names, i + 1).' dead'
unset logscale y
unset logscale y; set yrange [0:1.05]
set title 'rows j+o of the recall keys of a sequence in distinct slots (fraction)'; set ylabel 'fraction'; 
plot for [i=0:0] 'reseedk.dat' index i using 1:34 with lines lc i + 1 dt 3 title word(names, i + 1).' o=-1', for [i=0:0] 'reseedk.dat' index i using 1:35 with lines lc i + 1 dt 1 title word(names, i + 1).' o=0', for [i=0:0] 'reseedk.dat' index i using 1:36 with lines lc i + 1 dt 2 title word(names, i + 1).' o=+1'
unset logscale y
set yrange [*:*]
unset multiplot
