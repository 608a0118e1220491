# The plot of bench/clients: latency (p50, p99) and throughput against the number of clients at
# once. bench/run gives `data` (the table clients --dat wrote) and `out` (the PNG).
set terminal pngcairo size 900,520 noenhanced font ",10"
set output out
set title "oppxd: tools/call echo, one call outstanding per client"
set logscale x 2
set xlabel "clients at once"
set ylabel "latency (µs)"
set logscale y
set y2label "calls per second"
set y2tics
set ytics nomirror
set key top left
set grid
plot data using 1:2 with linespoints title "p50 latency" axes x1y1, \
     data using 1:3 with linespoints title "p99 latency" axes x1y1, \
     data using 1:4 with linespoints title "calls/s" axes x1y2
