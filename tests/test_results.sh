#!/usr/bin/env bash
# test_results.sh: scripts/write_results.sh on the fixtures of tests/results/ (known numbers):
# mean, sample std, Welch t and the "exceeds the spread" verdict of the seed table, the distance
# to the paper and the closest routing variant, the pages docs/results/small.md and routing_remedies.md written from them, the MQAR
# section from its fixture (best lr per point, not-run list, spliced into a page), and bad input
# refused with one line naming file and field, nothing written. Run from the repository root.
set -u
cd "$(dirname "$0")/.."
command -v python3 > /dev/null || { echo "SKIP: results: python3 not found"; exit 0; }
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
# check DESCRIPTION JSONFILE PYTHON-EXPRESSION-ON-d
check() {
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2> /dev/null
  then ok "$1"; else bad "$1 ($3)"; fi
}
f=tests/results
scripts/write_results.sh combine-small "$tmp/small" "cmd small" $f/gma_*.json $f/sdpa_*.json $f/linear_*.json \
  || bad "combine-small exits 0"
s=$tmp/small.json
check "gma mean test ppl 102" $s 'abs(d["mixers"]["gma"]["stats"]["test_ppl"]["mean"] - 102) < 1e-9'
check "gma sample std 2 (n - 1)" $s 'abs(d["mixers"]["gma"]["stats"]["test_ppl"]["std"] - 2) < 1e-9'
check "linear std sqrt(13)" $s 'abs(d["mixers"]["linear"]["stats"]["test_ppl"]["std"] - 13 ** 0.5) < 1e-9'
check "min and max" $s 'd["mixers"]["linear"]["stats"]["test_ppl"]["min"] == 101 and d["mixers"]["linear"]["stats"]["test_ppl"]["max"] == 108'
check "sdpa - gma test diff 9" $s 'abs(d["mixers"]["sdpa"]["vs_gma"]["test_ppl"]["diff"] - 9) < 1e-9'
check "sdpa Welch t 9/sqrt(5/3)" $s 'abs(d["mixers"]["sdpa"]["vs_gma"]["test_ppl"]["welch_t"] - 9 / (5 / 3) ** 0.5) < 1e-9'
check "linear Welch t 2/sqrt(17/3)" $s 'abs(d["mixers"]["linear"]["vs_gma"]["test_ppl"]["welch_t"] - 2 / (17 / 3) ** 0.5) < 1e-9'
check "sdpa test ranges disjoint: exceeds" $s 'd["mixers"]["sdpa"]["vs_gma"]["test_ppl"]["exceeds_spread"] is True'
check "linear test ranges overlap: does not exceed" $s 'd["mixers"]["linear"]["vs_gma"]["test_ppl"]["exceeds_spread"] is False'
check "no comparison of gma with itself" $s '"vs_gma" not in d["mixers"]["gma"]'
grep -q '^sdpa - gma: .*test ppl +9.0 (t 6.97, exceeds spread: yes)' $tmp/small.txt && ok "text verdict line" || bad "text verdict line"
grep -q '| gma | 954,112 | 91.0 ± 1.0 \[90.0, 92.0\] | 102.0 ± 2.0 \[100.0, 104.0\]' $tmp/small.md && ok "markdown row" || bad "markdown row"
scripts/write_results.sh combine-small "$tmp/one" "cmd" $f/gma_1337.json $f/sdpa_1337.json || bad "one seed"
check "one seed: std 0, no verdict" $tmp/one.json 'd["mixers"]["gma"]["stats"]["test_ppl"]["std"] == 0 and d["mixers"]["sdpa"]["vs_gma"]["test_ppl"]["exceeds_spread"] is None'
grep -q '^gma .* 100.0 +- n/a ' $tmp/one.txt && grep -q '^| gma | .* | 100.0 ± n/a \[100.0, 100.0\]' $tmp/one.md \
  && ok "one seed: spread printed n/a" || bad "one seed: spread printed n/a"

scripts/write_results.sh combine-routing "$tmp/routing" "cmd routing" $f/v_default.json $f/v_kmeans.json $f/v_reinit.json \
  || bad "combine-routing exits 0"
r=$tmp/routing.json
check "distance of default" $r 'abs(d["variants"][0]["distance"] - ((48 / 128) ** 2 + 0.433 ** 2 + 0.044 ** 2) ** 0.5) < 1e-9'
check "distance of kmeans 0.2" $r 'abs(d["variants"][1]["distance"] - 0.2) < 1e-9'
check "closest is reinit" $r 'd["closest"] == "reinit"'
check "reinit costs +10 ppl" $r 'abs(d["variants"][2]["ppl_cost_vs_default"] - 10) < 1e-9'
grep -q '^Closest to .*: reinit (distance 0.148.*+10.0 against default' $tmp/routing.txt && ok "closest line" || bad "closest line"

# the two pages: the small one (tables over seeds, verdicts, command) and the routing one
# (table, closest variant), each only when its JSON is named; a page's reading ("## What it
# shows", by hand) survives a rewrite, once
P="--out $tmp/small_page.md --routing-out $tmp/routing_page.md --no-plots"
scripts/write_results.sh --small $s --routing $r $P > /dev/null || bad "pages exit 0"
grep -q '^\* sdpa - gma: ' $tmp/small_page.md && grep -q 'Command: `cmd small`' $tmp/small_page.md \
  && ! grep -q 'Closest to' $tmp/small_page.md && grep -q 'Closest to .*reinit' $tmp/routing_page.md \
  && grep -q 'Command: `cmd routing`' $tmp/routing_page.md && ! grep -q '^\* sdpa - gma: ' $tmp/routing_page.md \
  && ok "two pages: the small page's tables, verdicts and command; the routing page's table and closest" \
  || bad "pages' content"
for p in small_page routing_page; do printf '\n## What it shows\n\nthe reading of %s\n' $p >> $tmp/$p.md; done
scripts/write_results.sh --small $s --routing $r $P > /dev/null || bad "pages rewrite exits 0"
for p in small_page routing_page; do
  [ "$(grep -c '^## What it shows$' $tmp/$p.md)" = 1 ] && grep -q "^the reading of $p\$" $tmp/$p.md \
    && ok "$p keeps its reading" || bad "$p: reading lost or repeated"
done
rm $tmp/routing_page.md
scripts/write_results.sh --small $s $P > /dev/null && [ ! -e $tmp/routing_page.md ] && grep -q '^\* sdpa - gma: ' $tmp/small_page.md \
  && ok "--small alone writes the small page alone" || bad "--small alone"

# the page through a symbolic link: the file it names rewritten, the link kept; to /dev/stdout:
# printed, /dev/stdout left a link
echo old > $tmp/target.md && ln -s $tmp/target.md $tmp/link.md
scripts/write_results.sh --small $s --out $tmp/link.md --no-plots > /dev/null && [ -L $tmp/link.md ] \
  && grep -q '^\* sdpa - gma: ' $tmp/target.md && ok "a page written through a link keeps the link" || bad "page through a link"
out=$(scripts/write_results.sh --small $s --out /dev/stdout --no-plots)
[[ "$out" == *"* sdpa - gma: "* ]] && [ -L /dev/stdout ] && ok "a page to /dev/stdout printed, the link left" \
  || bad "page to /dev/stdout: $(ls -l /dev/stdout)"

# the future-work section (scripts/write_future_results.sh): the table, K, gates and the
# comparisons from the fixture's numbers
scripts/write_future_results.sh $f/future.json --out $tmp/future.md > /dev/null || bad "future section exits 0"
grep -q '^## Future work: per-layer K, adaptive K, gated hybrid' $tmp/future.md \
  && grep -q '^| gma from K 64, Dirichlet prior | 150 | gma,gma | \[64, 64\] | \[40.5, 20\] | - | 490.0 | 505.0 | 800 | 120 |' $tmp/future.md \
  && grep -q 'Gates of gated (sdpa + gma K 32), layer 0 .*: 0.600, 0.400\.' $tmp/future.md \
  && grep -q 'gma from K 64, Dirichlet prior: test ppl -15.0 against gma K 32 (lower), at 0.80x its tokens/s; K went \[64, 64\] -> \[40.5, 20\]' $tmp/future.md \
  && grep -q 'sdpa: test ppl -50.0 against gma K 32' $tmp/future.md \
  && ok "future section: table, gates, comparisons" || bad "future section content"
scripts/write_future_results.sh $f/future.json --out $tmp/future.md > /dev/null
[ "$(grep -c '^## Future work' $tmp/future.md)" = 1 ] && ok "future section replaced, not repeated" || bad "future section repeated"
scripts/write_future_results.sh $f/future.json $f/future.json --out $tmp/r3.md > /dev/null
[ "$(grep -c '^| gma from K 64, Dirichlet prior | 150 ' $tmp/r3.md)" = 2 ] \
  && grep -q 'From the table (runs of 150 steps): .*; gma from K 64, Dirichlet prior at 150 steps: test ppl 505.0, K \[64, 64\] -> \[40.5, 20\]' $tmp/r3.md \
  && ok "future: two JSON files, the second's runs listed" || bad "future: two JSON files"
# --part: a subsection of the future section, put in place of its own (the rest kept), its
# comparisons with fixed K 256 and K 32 from the fixture's numbers; without the section refused
cp $tmp/future.md $tmp/r4.md
for i in 1 2; do
  scripts/write_future_results.sh $f/future_kadapt.json --out $tmp/r4.md --part "Adaptive K" --note "note $i" > /dev/null \
    || bad "future --part exits 0"
done
[ "$(grep -c '^### Adaptive K$' $tmp/r4.md)" = 1 ] && [ "$(grep -c '^## Future work' $tmp/r4.md)" = 1 ] \
  && grep -q '^| gma from K 256, structural adaptation | 200 | \[256, 256\] | \[168, 147\] | 880.0 | 990.0 | 500 | 280 |$' $tmp/r4.md \
  && grep -q 'structural adaptation: test ppl -10.0 against gma, K 256, at 1.25x its tokens/s, K \[256, 256\] -> \[168, 147\]' $tmp/r4.md \
  && grep -q 'structural adaptation: test ppl -50.0 against gma, K 32, at 0.50x its tokens/s' $tmp/r4.md \
  && grep -q '^note 2$' $tmp/r4.md && ! grep -q '^note 1$' $tmp/r4.md && grep -q '^| gma from K 64, Dirichlet prior | 150 ' $tmp/r4.md \
  && ok "future --part: subsection written once, replaced in place, comparisons" || bad "future --part content"
out=$(scripts/write_future_results.sh $f/future_kadapt.json --out $tmp/none.md --part "Adaptive K" 2>&1); rc=$?
[ $rc = 2 ] && [[ "$out" == *"no section"* ]] && [ ! -e $tmp/none.md ] && ok "future --part without the section refused" \
  || bad "future --part without the section (rc $rc: $out)"
out=$(scripts/write_future_results.sh $f/gma_1337.json --out $tmp/r2.md 2>&1); rc=$?
if [ $rc = 2 ] && echo "$out" | grep -q "gma_1337.json: not a reproduce_future.sh JSON" && [ ! -e $tmp/r2.md ]
then ok "future: wrong JSON refused"; else bad "future: wrong JSON refused (rc $rc: $out)"; fi

# the MQAR section from tests/results/mqar_results.json (known numbers): the best lr of each
# point (the first on a tie), one seed (the seeds column 1), the range over the lrs run, gma's best Kc against each baseline,
# the runs of the grid not done; put in place of its own section, the rest of the page kept
printf '# Results\n\n## Small profile over seeds\n\nkept\n\n## Associative recall (MQAR, Zoology protocol)\n\nold\n\n## Notes on these runs\n\nkept\n' > $tmp/page.md
scripts/write_results.sh mqar $f/mqar_results.json --out $tmp/page.md --note "the note" > /dev/null || bad "mqar section exits 0"
grep -q '^| sdpa | 64 | 0.01 | 131,072 | 1.000 | 0.600 | 0.800 | 1 | \[0.700, 0.800\] | 2 of 2 |$' $tmp/page.md \
  && grep -q '^| gma16 | 64 | 0.0022 | 8,320 | 0.300 | 0.100 | 0.200 | 1 | \[0.200, 0.200\] | 2 of 2 |$' $tmp/page.md \
  && grep -q '^| gma64 | 64 | 0.01 | 33,280 | 0.500 | 0.300 | 0.400 | 1 | \[0.400, 0.400\] | 1 of 2 |$' $tmp/page.md \
  && ok "mqar rows: best lr, first on a tie, lr range, lrs run" || bad "mqar rows: $(grep '^| ' $tmp/page.md)"
grep -q '^\* width 64: the best gma (gma64, mean 0.400) minus each baseline.s best: sdpa -0.400, linear +0.150\.$' $tmp/page.md \
  && ok "mqar: gma's best against each baseline" || bad "mqar comparison: $(grep '^\* width' $tmp/page.md)"
grep -q '^Not run (2 of 8 runs of the grid): gma64 width 64 lr 0.0022; linear width 64 lr 0.01\.$' $tmp/page.md \
  && ok "mqar: the runs not done named" || bad "mqar not run: $(grep '^Not run' $tmp/page.md)"
[ "$(grep -c '^kept$' $tmp/page.md)" = 2 ] && ! grep -q '^old$' $tmp/page.md && grep -q '^the note$' $tmp/page.md \
  && [ "$(sed -n '/^## Associative/,/^## Notes/p' $tmp/page.md | grep -c '^## ')" = 2 ] \
  && ok "mqar section replaced in place, the rest kept" || bad "mqar page: $(cat $tmp/page.md)"
grep -q '^No-lookup rule: not recorded' $tmp/page.md && ok "mqar: a results.json without the no-lookup rule says so" \
  || bad "mqar rule missing: $(grep '^No-lookup' $tmp/page.md)"
# Zoology's builds over three seeds (tests/results/mqar_zoology_results.json, by hand): with
# the rule 0.25 / 0.125 (+ 0.1), bc-sdpa and bc-linear are off the plateau on 3 of 3 seeds,
# bc-gma64 on none (0.25-0.26), bc-gma64+sc on seeds 1 and 3 (0.9, 0.8; seed 2 0.26); means
# (0.75 + 0.695 + 0.64) / 3 = 0.695, 0.189, (0.6 + 0.19 + 0.5) / 3 = 0.430, 0.670; so GMA
# leaves the plateau on most seeds from bc-gma64+sc (19,456 bytes) on, and loses to bc-sdpa
# and to bc-linear, the latter at less state (17,152)
scripts/write_results.sh mqar $f/mqar_zoology_results.json --out $tmp/z.md > /dev/null || bad "mqar zoology section exits 0"
grep -q '^Off the plateau at the best learning rate (seeds): bc-sdpa width 64: 3 of 3; bc-gma64 width 64: 0 of 3; bc-gma64+sc width 64: 2 of 3; bc-linear width 64: 3 of 3\.$' $tmp/z.md \
  && grep -q '^The short convolution on q, k, v .*: bc-gma64 width 64: 0.189 (0 of 3 seeds off) without, 0.430 (2 of 3) with\.$' $tmp/z.md \
  && grep -q '^At width 64 GMA leaves the plateau on most seeds from bc-gma64+sc on (19,456 state bytes, mean 0.430); it loses to bc-sdpa (0.695, 66,048 bytes), bc-linear (0.670, 17,152 bytes), of which bc-linear at no more state\.$' $tmp/z.md \
  && grep -q '^\* width 64: the best gma (bc-gma64+sc, mean 0.430) minus each baseline.s best: bc-sdpa -0.265, bc-linear -0.240\.$' $tmp/z.md \
  && ok "mqar: seeds off the plateau, the short convolution's effect, GMA's standing in sentences" || bad "mqar plateau: $(sed -n '/^No-lookup/,$p' $tmp/z.md)"
# every run on the plateau (a 400-step run: gma 0.256 against sdpa 0.172): the sweep ranks
# nothing, and no gma-minus-baseline line suggests otherwise
sed -e 's/"acc": {"64": [0-9.]*, "128": [0-9.]*}/"acc": {"64": 0.256, "128": 0.13}/' $f/mqar_zoology_results.json > $tmp/flat.json
scripts/write_results.sh mqar $tmp/flat.json --out $tmp/flat.md > /dev/null \
  && grep -q '^\*\*No mixer left the plateau: this sweep ranks nothing\.\*\*' $tmp/flat.md && ! grep -q '^At width' $tmp/flat.md \
  && ! grep -q '^\* width' $tmp/flat.md \
  && ok "mqar: every run on the plateau: the sweep ranks nothing" || bad "mqar flat: $(sed -n '/^No-lookup/,$p' $tmp/flat.md)"

# bad input: one line naming file and field, non-zero exit, nothing written
sed 's/"test_ppl": [0-9]*,//' $f/gma_1337.json > $tmp/broken.json
out=$(scripts/write_results.sh combine-small "$tmp/bad" "cmd" $tmp/broken.json 2>&1); rc=$?
if [ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "broken.json: field 'test_ppl'" && [ ! -e $tmp/bad.json ]
then ok "missing field refused"; else bad "missing field refused (rc $rc: $out)"; fi
echo '{"variant": "x",' > $tmp/trunc.json
out=$(scripts/write_results.sh combine-routing "$tmp/bad" "cmd" $tmp/trunc.json 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "trunc.json: not JSON" && [ ! -e $tmp/bad.json ]
then ok "truncated JSON refused"; else bad "truncated JSON refused (rc $rc: $out)"; fi
exit $fail
