#!/usr/bin/env bash
# check_layers.sh: check the layer order of src/ from its #include "..." lines.
#
# Every directory directly under src/ is a room, ordered from the bottom up:
#   core < data < ops < nn < model < optim < train = analysis < bench < cli
# (data sits just above core, so it may include core only; analysis sits with train;
# bench, gmabench's and gmacheck's measurements, sits above them, below the programs).
# A file may include files of its own room and of rooms below it. An include of a room
# above is "upward". A module is a file name without its extension (src/nn/params.c and
# src/nn/params.h are one module); an include whose target module leads back, through
# includes, to the including module "forms a cycle".
#
# Prints the include graph between rooms (room -> room and the number of #include lines),
# then every upward include and every include in a cycle with file and line. Exits 1 when
# there is any, 0 otherwise; 2 when run outside a source tree.
#
#   scripts/check_layers.sh [SRC_DIR]      (default: src, from the repository root)
set -u
src=${1:-src}
src=${src%/}
if [ ! -d "$src" ]; then
  echo "check_layers.sh: $src: no such directory (run from the repository root or give the source directory)" >&2
  exit 2
fi
files=$(cd "$src" && find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sed 's|^\./||' | LC_ALL=C sort)
if [ -z "$files" ]; then
  echo "check_layers.sh: $src: no .c, .h, .cu or .cuh files" >&2
  exit 2
fi

# one line per quoted include: FILE<TAB>LINE<TAB>TEXT
includes=$(cd "$src" && for f in $files; do
  grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' "$f" | sed "s|^|$f	|; s|:|	|"
done)

printf '%s\n' "$files" | awk -v src="$src" -v includes="$includes" '
BEGIN {
  FS = "\n"
  n_order = split("core data ops nn model optim train analysis bench cli", order, " ")
  rank["core"] = 0; rank["data"] = 1; rank["ops"] = 2; rank["nn"] = 3; rank["model"] = 4
  rank["optim"] = 5; rank["train"] = 6; rank["analysis"] = 6; rank["bench"] = 7; rank["cli"] = 8
}
function room(path,   p) { split(path, p, "/"); return p[1] }
function dirname(path) { if (path !~ /\//) return ""; sub(/\/[^\/]*$/, "", path); return path }
function module(path) { sub(/\.[^.\/]*$/, "", path); return path }
{ have[$0] = 1; nfiles++ }
END {
  n_inc = split(includes, lines, "\n")
  n_unknown = 0
  for (i = 1; i <= n_inc; i++) {
    if (lines[i] == "") continue
    split(lines[i], f3, "\t")
    from = f3[1]; ln = f3[2]; text = f3[3]
    inc = text; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
    # resolved as the compiler does with -Isrc: beside the including file, then under src/
    d = dirname(from)
    to = ""
    if (d != "" && ((d "/" inc) in have)) to = d "/" inc
    else if (inc in have) to = inc
    if (to == "") continue # a system or generated header
    E++
    e_from[E] = from; e_to[E] = to; e_line[E] = ln; e_text[E] = text; e_inc[E] = inc
    rf = room(from); rt = room(to)
    if (!(rf in rank)) { unknown[rf] = 1; continue }
    if (!(rt in rank)) { unknown[rt] = 1; continue }
    graph[rf, rt]++
    mf = module(from); mt = module(to)
    if (mf != mt && !((mf, mt) in madj)) { madj[mf, mt] = 1; nadj[mf]++; adj[mf, nadj[mf]] = mt; mods[mf] = 1; mods[mt] = 1 }
  }
  for (r in unknown) {
    printf "check_layers.sh: %s/%s: a room with no place in the layer order (add it to scripts/check_layers.sh)\n", src, r > "/dev/stderr"
    n_unknown++
  }

  print "include graph between rooms (#include lines; order core < data < ops < nn < model < optim < train = analysis < bench < cli):"
  for (a = 1; a <= n_order; a++)
    for (b = 1; b <= n_order; b++) {
      ra = order[a]; rb = order[b]
      if ((ra, rb) in graph) {
        mark = ""
        if (rank[rb] > rank[ra]) mark = "   UPWARD"
        printf "  %-9s -> %-9s %4d%s\n", ra, rb, graph[ra, rb], mark
      }
    }

  # reachability between modules (iterative depth-first search from every module)
  for (m in mods) {
    top = 0; stack[++top] = m; seen_from[m, m] = 0
    while (top > 0) {
      u = stack[top--]
      for (k = 1; k <= nadj[u]; k++) {
        v = adj[u, k]
        if (!((m, v) in reach)) { reach[m, v] = 1; stack[++top] = v }
      }
    }
  }

  n_up = 0; n_cyc = 0
  print ""
  print "upward includes:"
  for (e = 1; e <= E; e++) {
    rf = room(e_from[e]); rt = room(e_to[e])
    if (!(rf in rank) || !(rt in rank)) continue
    if (rank[rt] > rank[rf]) {
      printf "  %s/%s:%s: #include \"%s\"  (%s -> %s)\n", src, e_from[e], e_line[e], e_inc[e], rf, rt
      n_up++
    }
  }
  if (n_up == 0) print "  none"
  print ""
  print "includes that form a cycle between modules:"
  for (e = 1; e <= E; e++) {
    mf = module(e_from[e]); mt = module(e_to[e])
    if (mf == mt) continue
    if ((mt, mf) in reach) {
      printf "  %s/%s:%s: #include \"%s\"  (%s leads back to %s)\n", src, e_from[e], e_line[e], e_inc[e], mt, mf
      n_cyc++
    }
  }
  if (n_cyc == 0) print "  none"
  print ""
  printf "check_layers: %d files, %d includes between them, %d upward, %d in cycles\n", nfiles, E, n_up, n_cyc
  exit (n_up + n_cyc + n_unknown > 0) ? 1 : 0
}'
