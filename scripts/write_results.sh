#!/usr/bin/env bash
# write_results.sh: the tables and the pages docs/results/small.md and
# docs/results/routing_remedies.md from the JSON files of scripts/reproduce_small.sh and
# scripts/reproduce_routing.sh (python3, standard library only).
#   scripts/write_results.sh [--small FILE] [--routing FILE] [--out FILE] [--routing-out FILE]
#                            [--figures DIR] [--note TEXT]... [--no-plots]
#       The small page (--out, default docs/results/small.md) from --small FILE: the table over
#       seeds, which differences exceed the spread, the command, date and machine; the routing
#       page (--routing-out, default docs/results/routing_remedies.md) from --routing FILE: the
#       table, which remedy is closest to the paper. Only the pages whose JSON is named are
#       written; naming neither writes both from the newest runs/small-*.json and
#       runs/routing-*.json. Figures through scripts/plot_runs.sh (when present) into
#       docs/results/ (or --figures), embedded; each --note TEXT a paragraph under "Notes on
#       these runs". A page's "## What it shows" (the reading, by hand) is kept as it stands.
#   scripts/write_results.sh combine-small PREFIX COMMAND RUN.json...
#       PREFIX.json, PREFIX.txt, PREFIX.md from the per-run files of reproduce_small.sh.
#   scripts/write_results.sh combine-routing PREFIX COMMAND VARIANT.json...
#       the same from the per-variant files of reproduce_routing.sh.
#   scripts/write_results.sh mqar RESULTS.json [--out FILE] [--note TEXT]...
#       the section "## Associative recall (MQAR, Zoology protocol)" of docs/results/mqar.md (or
#       --out) from the results.json of scripts/reproduce_mqar.sh, put in place of that
#       section when the page has it (up to the next "## " heading), else before "## Notes on
#       these runs", else at the end; the rest of the page is kept as it is. The table: the
#       best learning rate of each (mixer, width) on the first of its "seeds" (1 where the
#       file has none; a run without "seed" is seed 1), its accuracy per test length and
#       mean, averaged over the seeds run at that lr, as "mean (min-max)" where more than one
#       ran, the seeds, the range of the first seed's mean accuracy over the learning rates
#       run, gma's best Kc against each baseline at each width (by the mean over seeds), every
#       grid point of the first seed not run and every other seed's run at a best lr not run;
#       the plots beside RESULTS.json (reproduce_mqar.sh's PNGs) copied into mqar/ beside
#       FILE.
# Statistics: mean, sample standard deviation (n - 1; 0 in the JSON for one seed, printed
# "n/a"), min, max over the seeds.
# A difference against gma "exceeds the spread" when the two ranges [min, max] over the seeds
# do not overlap (needs at least 2 seeds on each side); Welch's t = (mean_a - mean_b) /
# sqrt(s_a^2/n_a + s_b^2/n_b) is reported beside it. Distance to the paper (Kc = 128):
# sqrt(((used - 104)/128)^2 + (entropy - 0.933)^2 + (nmi - 0.244)^2).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in --help|-h) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0;; esac
command -v python3 > /dev/null || { echo "$0: python3 not found (apt-get install python3)" >&2; exit 1; }
exec python3 -B scripts/results_page.py "$@"  # scripts/results_*.py, scripts/mqar_section.py
