# Plots compare.csv (system,path,ranks,bytes,time_us,busbw_gbps) written by run.sh into
# busbw.png and latency.png: one panel per path (shm, socket) and rank count, log-log, one line
# per system, the machine's bounds dashed.
#   gnuplot -e "csv='build/compare/compare.csv'; out='build/compare'; ranks='2 4'" perf/compare/plot.gnuplot

set datafile separator ","
set terminal pngcairo size 1400, 500 * 2 font "sans,10"
set logscale xy
set xtics ("8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "2M" 2097152, \
           "16M" 16777216, "128M" 134217728)
set xrange [5:400000000]
set format y "%g"
set xlabel "size (bytes)"
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key font ",9"

# The lines of each path: system, title, color and dash (bounds dashed).
shm_systems = "weft weft-registered mpi visible-bound staged-bound memcpy-bound"
shm_titles = "Weft|Weft -R 1|OpenMPI MPI\\_Allreduce|bound: all buffers visible|bound: private buffers, staged|" \
             . "bound: memcpy (1 thread)"
socket_systems = "weft gloo mpi tcp-bound"
socket_titles = "Weft (NCCL\\_SHM\\_DISABLE=1)|Gloo ring allreduce (tcp)|OpenMPI MPI\\_Allreduce (btl tcp)|" \
                . "bound: TCP ring, all streams at once"
colors = "#1f77b4 #17becf #d62728 #555555 #8c564b #999999"
socket_colors = "#1f77b4 #2ca02c #d62728 #555555"

# The n-th |-separated field of s.
field(s, n) = (n == 1) ? (strstrt(s, "|") ? s[1:strstrt(s, "|") - 1] : s) : field(s[strstrt(s, "|") + 1:], n - 1)
dash(system) = strstrt(system, "-bound") > 0 ? 2 : 1
# The row's value of column c when it belongs to system on path at r ranks (memcpy: any rank count).
pick(system, path, r, c) = (strcol(1) eq system && (strcol(2) eq path || strcol(2) eq "memory") \
                            && (column(3) == r || strcol(2) eq "memory")) ? column(c) : NaN

panel_count = words(ranks)

do for [figure in "busbw latency"] {
  set output out . "/" . figure . ".png"
  set multiplot layout 2, panel_count
  if (figure eq "busbw") {
    set ylabel "busbw (GB/s)"; column_of_value = 6; set key bottom right
  } else {
    set ylabel "time (us)"; column_of_value = 5; set key top left
  }
  do for [p = 1:2] {
    path = (p == 1) ? "shm" : "socket"
    systems = (p == 1) ? shm_systems : socket_systems
    titles = (p == 1) ? shm_titles : socket_titles
    palette = (p == 1) ? colors : socket_colors
    do for [r in ranks] {
      set title sprintf("allreduce, float sum, %s path, %s ranks", path, r)
      plot for [i = 1:words(systems)] csv skip 1 \
        using 4:(pick(word(systems, i), path, r + 0, column_of_value)) \
        with linespoints lw 2 pt 7 ps 0.5 lc rgb word(palette, i) dt dash(word(systems, i)) \
        title (field(titles, i))
    }
  }
  unset multiplot
  unset output
}
