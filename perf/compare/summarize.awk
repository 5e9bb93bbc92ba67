# Summarizes compare.csv (system,path,ranks,bytes,time_us,busbw_gbps) written by run.sh: Weft
# against OpenMPI and Gloo as ratios, against the machine's bounds as fractions, and the targets
# that Weft must meet (2 ranks, float sum, unregistered buffers), each marked met or not.
#   awk -F, -v format=text -f summarize.awk compare.csv       (or format=markdown)
# POSIX awk (Debian's mawk is enough).

NR > 1 {
  key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
  time[key] = $5
  busbw[key] = $6
  if ($3 > 1) ranks_seen[$3] = 1
  sizes[$4] = 1
}

function has(sys, path, ranks, bytes) { return (sys SUBSEP path SUBSEP ranks SUBSEP bytes) in time }
function bw(sys, path, ranks, bytes) { return busbw[sys, path, ranks, bytes] }
function us(sys, path, ranks, bytes) { return time[sys, path, ranks, bytes] }

function size_label(bytes) {
  if (bytes >= 1048576 && bytes % 1048576 == 0) return (bytes / 1048576) " MiB"
  if (bytes >= 1024 && bytes % 1024 == 0) return (bytes / 1024) " KiB"
  return bytes " B"
}
function number(v) {
  if (v == "") return "-"
  if (v >= 100) return sprintf("%.0f", v)
  if (v >= 10) return sprintf("%.1f", v)
  return sprintf("%.2f", v)
}
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2fx", a / b) }
function percent(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.0f%%", 100 * a / b) }

# A table: a title, then rows of cells joined by ";" (the first row is the heading). Text columns
# are as wide as their widest cell.
function table(title, rows, count,    i, j, n, cells, line, width) {
  print ""
  if (format == "markdown") print "**" title "**\n"; else print title
  for (i = 1; i <= count; ++i) {
    n = split(rows[i], cells, ";")
    for (j = 1; j <= n; ++j) if (length(cells[j]) > width[j]) width[j] = length(cells[j])
  }
  for (i = 1; i <= count; ++i) {
    n = split(rows[i], cells, ";")
    line = ""
    for (j = 1; j <= n; ++j) {
      if (format == "markdown") line = line "| " cells[j] " "
      else line = line sprintf(j <= 2 ? "%-*s  " : "%*s  ", width[j], cells[j])
    }
    if (format == "markdown") {
      print line "|"
    } else {
      sub(/ +$/, "", line)
      print "  " line
    }
    if (format == "markdown" && i == 1) {
      line = "|---|---|"
      for (j = 3; j <= n; ++j) line = line "---:|"
      print line
    }
  }
}

# One row per rank count and size: Weft's and the peers' values, Weft's ratio to the first peer,
# the bound and Weft's fraction of it, optionally a second bound on the path and Weft's fraction of
# that, and an extra machine figure. kind "bw" shows busbw (GB/s), "time" shows time (us).
function compare_table(title, kind, path, peers, peer_names, bound, bound_name, second, second_name, extra,
                       extra_name, size_list,
                       rows, count, r, s, k, n_sizes, list, n_peers, peer, name, row, weft, value) {
  n_peers = split(peers, peer, " ")
  split(peer_names, name, ";")
  n_sizes = split(size_list, list, " ")
  row = "ranks;size;Weft"
  if (path == "shm") row = row ";Weft -R 1"
  for (k = 1; k <= n_peers; ++k) row = row ";" name[k]
  row = row ";Weft / " name[1] (kind == "time" ? " (time)" : "") ";" bound_name ";Weft / bound"
  if (second != "") row = row ";" second_name ";Weft / " second_name
  if (extra != "") row = row ";" extra_name
  count = 0
  rows[++count] = row
  for (r = 1; r <= 64; ++r) {
    if (!(r in ranks_seen)) continue
    for (s = 1; s <= n_sizes; ++s) {
      if (!has("weft", path, r, list[s]) && !has(peer[1], path, r, list[s])) continue
      weft = value_of(kind, "weft", path, r, list[s])
      row = r ";" size_label(list[s]) ";" number(weft)
      if (path == "shm") row = row ";" number(value_of(kind, "weft-registered", path, r, list[s]))
      for (k = 1; k <= n_peers; ++k) row = row ";" number(value_of(kind, peer[k], path, r, list[s]))
      value = value_of(kind, bound, path, r, list[s])
      row = row ";" ratio(weft, value_of(kind, peer[1], path, r, list[s])) ";" number(value)
      row = row ";" (kind == "time" ? ratio(weft, value) : percent(weft, value))
      if (second != "") {
        value = value_of(kind, second, path, r, list[s])
        row = row ";" number(value) ";" (kind == "time" ? ratio(weft, value) : percent(weft, value))
      }
      if (extra != "") row = row ";" number(value_of(kind, extra, "memory", 1, list[s]))
      rows[++count] = row
    }
  }
  if (count > 1) table(title, rows, count)
}
function value_of(kind, sys, path, ranks, bytes) {
  if (!has(sys, path, ranks, bytes)) return ""
  return kind == "time" ? us(sys, path, ranks, bytes) : bw(sys, path, ranks, bytes)
}

# Prints one target: what is compared, the values, the limit and whether it is met.
function target(what, value, limit, higher_is_better, detail,    verdict) {
  if (value == "" || limit == "") {
    verdict = "MISSING"
    detail = "not measured"
  } else if (higher_is_better ? value >= limit : value <= limit) {
    verdict = "MET"
  } else {
    verdict = "NOT MET"
  }
  if (format == "markdown") printf "- **%s** %s: %s\n", verdict, what, detail
  else printf "  %-8s %s: %s\n", verdict, what, detail
}

# Prints a line that is not a target: what a measured bound says about one.
function note(what, detail) {
  if (format == "markdown") printf "- *note* %s: %s\n", what, detail
  else printf "  %-8s %s: %s\n", "note", what, detail
}

function targets(    bytes, w, m, b, g, t, big, staged) {
  print ""
  print (format == "markdown" ? "**Targets** (2 ranks, float sum, unregistered buffers)\n" \
                              : "Targets (2 ranks, float sum, unregistered buffers)")
  # 64 MiB and every larger size measured.
  for (bytes in sizes) if (bytes + 0 >= 67108864) big[bytes + 0] = 1
  big[67108864] = 1
  for (bytes = 67108864; bytes <= 1099511627776; bytes *= 2) {
    if (!(bytes in big)) continue
    w = value_of("bw", "weft", "shm", 2, bytes); m = value_of("bw", "mpi", "shm", 2, bytes)
    b = value_of("bw", "visible-bound", "shm", 2, bytes)
    target("shm " size_label(bytes) ": busbw >= 2.5x MPI_Allreduce's", w, m == "" ? "" : 2.5 * m, 1,
           sprintf("Weft %s GB/s, MPI %s GB/s: %s", number(w), number(m), ratio(w, m)))
    target("shm " size_label(bytes) ": busbw >= 65% of the visible-buffers bound", w, b == "" ? "" : 0.65 * b, 1,
           sprintf("Weft %s GB/s, bound %s GB/s: %s", number(w), number(b), percent(w, b)))
    staged = value_of("bw", "staged-bound", "shm", 2, bytes)
    if (staged != "" && b != "") {
      note("shm " size_label(bytes) ": staging through shared memory",
           sprintf("the staged bound %s GB/s is %s of the visible-buffers bound; Weft is %s of the staged bound",
                   number(staged), percent(staged, b), percent(w, staged)))
    }
  }
  w = value_of("time", "weft", "shm", 2, 8); m = value_of("time", "mpi", "shm", 2, 8)
  target("shm 8 B: time <= 1.5x MPI_Allreduce's", w, m == "" ? "" : 1.5 * m, 0,
         sprintf("Weft %s us, MPI %s us: %s", number(w), number(m), ratio(w, m)))
  bytes = 67108864
  w = value_of("bw", "weft", "socket", 2, bytes); g = value_of("bw", "gloo", "socket", 2, bytes)
  t = value_of("bw", "tcp-bound", "socket", 2, bytes)
  target("socket 64 MiB: busbw >= 1.3x Gloo's", w, g == "" ? "" : 1.3 * g, 1,
         sprintf("Weft %s GB/s, Gloo %s GB/s: %s", number(w), number(g), ratio(w, g)))
  target("socket 64 MiB: busbw >= 70% of the two-way TCP loopback bound", w, t == "" ? "" : 0.7 * t, 1,
         sprintf("Weft %s GB/s, bound %s GB/s: %s", number(w), number(t), percent(w, t)))
  w = value_of("time", "weft", "socket", 2, 8); g = value_of("time", "gloo", "socket", 2, 8)
  target("socket 8 B: time <= 1/5 of Gloo's", w, g == "" ? "" : g / 5, 0,
         sprintf("Weft %s us, Gloo %s us: %s", number(w), number(g), ratio(w, g)))
}

END {
  if (format != "markdown") print "Allreduce, float sum, out of place: busbw in GB/s, time in us (ratios: Weft / peer)"
  compare_table("shm path: busbw (GB/s)", "bw", "shm", "mpi", "OpenMPI", "visible-bound", "visible bound",
                "staged-bound", "staged bound", "memcpy-bound", "memcpy", "67108864 268435456")
  compare_table("shm path: time at 8 B (us)", "time", "shm", "mpi", "OpenMPI", "visible-bound", "visible bound",
                "staged-bound", "staged bound", "", "", "8")
  compare_table("socket path: busbw (GB/s)", "bw", "socket", "gloo mpi", "Gloo;OpenMPI (tcp)", "tcp-bound",
                "TCP bound", "", "", "", "", "67108864 268435456")
  compare_table("socket path: time at 8 B (us)", "time", "socket", "gloo mpi", "Gloo;OpenMPI (tcp)", "tcp-bound",
                "TCP bound", "", "", "", "", "8")
  targets()
}
