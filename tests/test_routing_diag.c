/* test_routing_diag.c: the recall diagnosis (gma.diag_every, train/routing_diag.h; float32
 * build, run from the repository root): every figure of a hand-made causal batch (padding
 * included) and of a cross batch against its definition worked out by hand, the recall
 * positions, the centre-gradient split, and end to end: gmatrain on MQAR with Kc 1 (every
 * responsibility 1, so each figure is known: one component used, entropies 0, match mass 1,
 * slot share = lookup weight = 1 / keys read, distinct slots 1/P, zero routing gradients),
 * a GMA cross model's rows, and no rows with the default 0. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "testutil.h"
#include "train/routing_diag.h"

#define EPS 1e-6

/* B 2, H 1, N 4, Kc 2, causal. Sequence 0: tokens 5 7 9 5, one query at 3 for target 7
 * (recall position 1). Sequence 1: position 0 padded (garbage responsibilities that must
 * not count), tokens x 8 3 6, queries at 2 (target 8: recall 1) and 3 (target 3: recall 2). */
START_TEST(test_causal_by_hand) {
    const real gk[2][4][2] = {{{1, 0}, {0, 1}, {0.5, 0.5}, {1, 0}}, {{100, 100}, {0, 1}, {0.25, 0.75}, {0.9, 0.1}}};
    const real gq[2][4][2] = {{{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}, {0.2, 0.8}},
                              {{100, 100}, {0.5, 0.5}, {0.6, 0.4}, {0.3, 0.7}}};
    const int32_t tok[8] = {5, 7, 9, 5, 8, 8, 3, 6}, tgt[8] = {-1, -1, -1, 7, -1, -1, 8, 3};
    const uint8_t mask[8] = {1, 1, 1, 1, 0, 1, 1, 1};
    int jpos[8];
    rdiag_recall_positions(tok, 4, tgt, mask, mask, 2, 4, 4, 1, jpos);
    const int want_j[8] = {-1, -1, -1, 1, -1, -1, 1, 2}; /* the padded 8 at 4 is not a recall position */
    for (int i = 0; i < 8; i++) ck_assert_int_eq(jpos[i], want_j[i]);
    RdiagBatch in = {.gq = &gq[0][0][0], .gk = &gk[0][0][0], .B = 2, .H = 1, .Kc = 2, .nq = 4, .nk = 4, .lq = 4,
                     .lk = 4, .qvalid = mask, .kvalid = mask, .jpos = jpos, .causal = 1, .eps = EPS};
    double acc[RD_N] = {0}, cq[2] = {0}, ck[2] = {0};
    rdiag_accumulate(&in, acc, cq, ck);
    RdiagFigures f = rdiag_finish(acc, cq, ck, 1, 2);
    ck_assert_double_eq(f.rows, 7);
    ck_assert_double_eq(f.pairs, 3);
    /* argmax (the first on a tie): queries 0 0 0 1 | 0 0 1 -> both used; keys 0 1 0 0 | 1 1 0 */
    ck_assert_double_eq(f.q_used, 2);
    ck_assert_double_eq(f.k_used, 2);
    ck_assert_double_eq(cq[1], 2);
    ck_assert_double_eq(ck[1], 3);
    double h2 = log(2.0), hq = 4 * h2 - (0.2 * log(0.2) + 0.8 * log(0.8)) - (0.6 * log(0.6) + 0.4 * log(0.4)) -
                              (0.3 * log(0.3) + 0.7 * log(0.7));
    double hk = h2 - (0.25 * log(0.25) + 0.75 * log(0.75)) - (0.9 * log(0.9) + 0.1 * log(0.1));
    ck_assert_double_eq_tol(f.q_entropy, hq / 7, 1e-6);
    ck_assert_double_eq_tol(f.k_entropy, hk / 7, 1e-6);
    /* pair (0: 3, 1): c* = 1, z = (2.5, 1.5); (1: 2, 1): c* = 1, z = (0.25, 1.75) over the
     * keys 1, 2 (0 padded); (1: 3, 2): c* = 1, z = (1.15, 1.85) */
    double match = 0.8 + 0.4 + 0.7, same = 1 + 0 + 1;
    double look = 0.8 / (0.2 * 2.5 + 0.8 * 1.5 + EPS) + 0.4 / (0.6 * 0.25 + 0.4 * 1.75 + EPS) +
                  (0.3 * 0.25 + 0.7 * 0.75) / (0.3 * 1.15 + 0.7 * 1.85 + EPS);
    double unif = 1.0 / 4 + 1.0 / 2 + 1.0 / 3, share = 1 / 1.5 + 1 / 1.75 + 0.75 / 1.85;
    ck_assert_double_eq_tol(f.match_mass, match / 3, 1e-6);
    ck_assert_double_eq_tol(f.same_slot, same / 3, 1e-12);
    ck_assert_double_eq_tol(f.lookup_weight, look / 3, 1e-6);
    ck_assert_double_eq_tol(f.lookup_uniform, unif / 3, 1e-12);
    ck_assert_double_eq_tol(f.slot_share, share / 3, 1e-6);
    /* sequence 0 has one recall position (not counted); sequence 1 two, both in slot 1 */
    ck_assert_double_eq_tol(f.key_slots_distinct, 0.5, 1e-12);
    /* by offset: o = 0 is j itself; o = -1 (rows 0 of sequence 0 and 1 of sequence 1: row 0
     * of sequence 1 is padded); o = 2 (row 3 of sequence 0 only: the others are past i or
     * the window); o = 3 none */
    ck_assert_double_eq_tol(f.match_by_offset[1], f.match_mass, 1e-12);
    ck_assert_double_eq_tol(f.lookup_by_offset[1], f.lookup_weight, 1e-12);
    ck_assert_double_eq_tol(f.match_by_offset[0], (0.2 + 0.7) / 2, 1e-6);
    ck_assert_double_eq_tol(f.lookup_by_offset[0], (0.2 / (1.7 + EPS) + 0.7 / (0.3 * 1.15 + 0.7 * 1.85 + EPS)) / 2, 1e-6);
    ck_assert_double_eq_tol(f.share_by_offset[1], f.slot_share, 1e-12);
    /* o = -1: row 0 of sequence 0 (slot 0, z_0 2.5), row 1 of sequence 1 (slot 1, z_1 1.85) */
    ck_assert_double_eq_tol(f.share_by_offset[0], (1 / 2.5 + 1 / 1.85) / 2, 1e-6);
    ck_assert_double_eq_tol(f.share_by_offset[3], 1 / 2.5, 1e-6);
    ck_assert_double_eq_tol(f.match_by_offset[3], 0.2, 1e-6);
    ck_assert_double_eq_tol(f.lookup_by_offset[3], 0.2 / (1.7 + EPS), 1e-6);
    ck_assert(isnan(f.match_by_offset[4]) && isnan(f.lookup_by_offset[4]));
    /* distinct slots of rows j + o (sequence 1 only: sequence 0 has one recall position):
     * o = -1 row 0 padded, so one row; o = 0 rows 1, 2 (slot 1 both); o = 1 rows 2, 3 (slots
     * 1, 0); o = 2 row 3 (4 is past the window) */
    ck_assert(isnan(f.distinct_by_offset[0]) && isnan(f.distinct_by_offset[3]));
    ck_assert_double_eq_tol(f.distinct_by_offset[1], 0.5, 1e-12);
    ck_assert_double_eq_tol(f.distinct_by_offset[2], 1, 1e-12);
    /* no pairs: the pair figures are NAN, the others as before */
    in.jpos = NULL;
    memset(acc, 0, sizeof acc), memset(cq, 0, sizeof cq), memset(ck, 0, sizeof ck);
    rdiag_accumulate(&in, acc, cq, ck);
    f = rdiag_finish(acc, cq, ck, 1, 2);
    ck_assert_double_eq(f.pairs, 0);
    ck_assert(isnan(f.match_mass) && isnan(f.lookup_weight) && isnan(f.key_slots_distinct));
    ck_assert_double_eq_tol(f.q_entropy, hq / 7, 1e-6);
}
END_TEST

/* cross: 2 query rows read 3 context rows (not causal), rows laid out in L = 3 per head,
 * H 2 (the second head a copy with the slots swapped: the same figures) */
START_TEST(test_cross_by_hand) {
    real gq[2][3][2] = {{{0.9, 0.1}, {0.4, 0.6}, {0, 0}}}, gk[2][3][2] = {{{0.2, 0.8}, {0.7, 0.3}, {0.6, 0.4}}};
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 2; c++) gq[1][i][c] = gq[0][i][1 - c], gk[1][i][c] = gk[0][i][1 - c];
    const int32_t tok[5] = {4, 6, 0, 4, 4}, tgt[2] = {0, 6}; /* window: context 4 6 0, queries 4 4 */
    int jpos[2];
    rdiag_recall_positions(tok, 5, tgt, NULL, NULL, 1, 2, 3, 0, jpos);
    ck_assert_int_eq(jpos[0], 2);
    ck_assert_int_eq(jpos[1], 1);
    RdiagBatch in = {.gq = &gq[0][0][0], .gk = &gk[0][0][0], .B = 1, .H = 2, .Kc = 2, .nq = 2, .nk = 3, .lq = 3,
                     .lk = 3, .jpos = jpos, .causal = 0, .eps = EPS};
    double acc[RD_N] = {0}, cq[4] = {0}, ck[4] = {0};
    rdiag_accumulate(&in, acc, cq, ck);
    RdiagFigures f = rdiag_finish(acc, cq, ck, 2, 2);
    ck_assert_double_eq(f.rows, 2);
    ck_assert_double_eq(f.pairs, 2);
    /* z = (1.5, 1.5); pair (0, 2): c* = 0; pair (1, 1): c* = 0 */
    ck_assert_double_eq_tol(f.match_mass, (0.9 + 0.4) / 2, 1e-6);
    ck_assert_double_eq_tol(f.same_slot, 0.5, 1e-12);
    double l0 = (0.9 * 0.6 + 0.1 * 0.4) / (0.9 * 1.5 + 0.1 * 1.5 + EPS), l1 = (0.4 * 0.7 + 0.6 * 0.3) / (0.4 * 1.5 + 0.6 * 1.5 + EPS);
    ck_assert_double_eq_tol(f.lookup_weight, (l0 + l1) / 2, 1e-6);
    ck_assert_double_eq_tol(f.lookup_uniform, 1.0 / 3, 1e-12);
    ck_assert_double_eq_tol(f.slot_share, (0.6 / 1.5 + 0.7 / 1.5) / 2, 1e-6);
    ck_assert_double_eq_tol(f.key_slots_distinct, 0.5, 1e-12); /* positions 2 and 1 both in slot 0 */
    ck_assert_double_eq(f.k_used, 2); /* keys 1 0 0 */
    ck_assert_double_eq(f.q_used, 2); /* queries 0 1 */
}
END_TEST

START_TEST(test_centre_grads) {
    const real g[3][2] = {{3, 4}, {0, 0.5}, {6, 8}}; /* norms 5, 0.5, 10 */
    const uint8_t live[3] = {1, 0, 1};
    double gl, gd, nl;
    rdiag_centre_grads(&g[0][0], live, 1, 3, 2, &gl, &gd, &nl);
    ck_assert_double_eq_tol(gl, 7.5, 1e-6);
    ck_assert_double_eq_tol(gd, 0.5, 1e-6);
    ck_assert_double_eq(nl, 2);
    const uint8_t all[3] = {1, 1, 1};
    rdiag_centre_grads(&g[0][0], all, 1, 3, 2, &gl, &gd, &nl);
    ck_assert(isnan(gd));
}
END_TEST

/* the routing_diag rows of a run's metrics.jsonl (a cJSON array; the caller frees it) */
static cJSON *diag_rows(const char *run_dir) {
    char p[512], line[8192];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(p, "r");
    ck_assert_msg(f != NULL, "%s missing", p);
    cJSON *rows = cJSON_CreateArray();
    while (fgets(line, sizeof line, f)) {
        cJSON *o = cJSON_Parse(line);
        ck_assert_msg(o != NULL, "unparsable row in %s", p);
        const cJSON *e = cJSON_GetObjectItem(o, "event");
        if (cJSON_IsString(e) && !strcmp(e->valuestring, "routing_diag")) cJSON_AddItemToArray(rows, o);
        else cJSON_Delete(o);
    }
    fclose(f);
    return rows;
}
static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    ck_assert_msg(v != NULL, "field %s missing", k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

#define MQAR_RUN "./bin/gmatrain --config configs/mqar.json --out %s --quiet --set model.mixer=baseconv,gma " \
    "--set model.pos=none --set model.short_conv=4 --set model.d_model=16 --set data.mqar_vocab=64 " \
    "--set train.batch_size=4 --set train.seq_len=32 --set model.max_seq_len=32 --set data.mqar_lengths=32 " \
    "--set data.mqar_pairs=4 --set data.mqar_test_lengths=32 --set data.mqar_test_pairs=4 --set data.mqar_valid=8 " \
    "--set data.mqar_test=8 --set train.steps=3 --set threads=1 %s"

START_TEST(test_mqar_kc1) {
    ck_assert_msg(run(MQAR_RUN, tu_path("k1"), "--set gma.n_components=1 --set gma.diag_every=1") == 0, "%s", g_out);
    cJSON *rows = diag_rows(tu_path("k1"));
    ck_assert_int_eq(cJSON_GetArraySize(rows), 3); /* one GMA layer, steps 1 2 3 */
    int s = 0;
    for (const cJSON *o = rows->child; o; o = o->next) {
        ck_assert_double_eq(num(o, "step"), ++s);
        ck_assert_str_eq(cJSON_GetObjectItem(o, "part")->valuestring, "self");
        ck_assert_double_eq(num(o, "layer"), 1);
        ck_assert_double_eq(num(o, "n_components"), 1);
        ck_assert_double_eq(num(o, "rows"), 4 * 32);
        ck_assert_double_eq(num(o, "pairs"), 4 * 4); /* every key queried once, its value the first of its token */
        ck_assert_double_eq(num(o, "q_used"), 1);
        ck_assert_double_eq(num(o, "k_used"), 1);
        ck_assert_double_eq(num(o, "live"), 1);
        ck_assert_double_eq_tol(num(o, "q_entropy"), 0, 1e-6);
        ck_assert_double_eq_tol(num(o, "k_entropy"), 0, 1e-6);
        ck_assert_double_eq_tol(num(o, "match_mass"), 1, 1e-6);
        ck_assert_double_eq(num(o, "same_slot"), 1);
        double u = num(o, "lookup_uniform"); /* the queries sit after the 8 pair tokens: 1 / (i + 1) < 1/9 */
        ck_assert(u >= 1.0 / 32 && u <= 1.0 / 9);
        ck_assert_double_eq_tol(num(o, "slot_share"), u, 1e-5 * u);
        ck_assert_double_eq_tol(num(o, "lookup_weight"), u, 1e-5 * u);
        ck_assert_double_eq_tol(num(o, "key_slots_distinct"), 0.25, 1e-12); /* 4 recall keys in one slot */
        const cJSON *mo = cJSON_GetObjectItem(o, "match_by_offset"), *lo = cJSON_GetObjectItem(o, "lookup_by_offset");
        ck_assert_int_eq(cJSON_GetArraySize(mo), 5);
        ck_assert_int_eq(cJSON_GetArraySize(lo), 5);
        for (const cJSON *v = mo->child; v; v = v->next) ck_assert_double_eq_tol(v->valuedouble, 1, 1e-6);
        ck_assert_double_eq_tol(cJSON_GetArrayItem(lo, 1)->valuedouble, num(o, "lookup_weight"), 1e-9);
        ck_assert_double_eq_tol(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "share_by_offset"), 1)->valuedouble,
                                num(o, "slot_share"), 1e-9);
        /* one component: the responsibilities are constant, so the routing gets no gradient */
        ck_assert_double_eq(num(o, "grad_centre"), 0);
        ck_assert_double_eq(num(o, "grad_var"), 0);
        ck_assert_double_eq(num(o, "grad_bias"), 0);
        ck_assert_double_eq(num(o, "grad_centre_live"), 0);
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "grad_centre_dead")));
    }
    cJSON_Delete(rows);
    /* the default: no rows, and the same training */
    ck_assert_msg(run(MQAR_RUN, tu_path("k1off"), "--set gma.n_components=1") == 0, "%s", g_out);
    rows = diag_rows(tu_path("k1off"));
    ck_assert_int_eq(cJSON_GetArraySize(rows), 0);
    cJSON_Delete(rows);
    tu_same_tensors(tu_path("k1"), tu_path("k1off"), "latest/model.safetensors");
}
END_TEST

/* Kc 8: the figures in their ranges, the routing gradients nonzero; every 2 steps */
START_TEST(test_mqar_kc8) {
    ck_assert_msg(run(MQAR_RUN, tu_path("k8"), "--set gma.n_components=8 --set gma.diag_every=2") == 0, "%s", g_out);
    cJSON *rows = diag_rows(tu_path("k8"));
    ck_assert_int_eq(cJSON_GetArraySize(rows), 1);
    const cJSON *o = rows->child;
    ck_assert_double_eq(num(o, "step"), 2);
    double qu = num(o, "q_used"), ku = num(o, "k_used"), lv = num(o, "live");
    ck_assert(qu >= 1 && qu <= 8 && ku >= 1 && ku <= 8 && lv >= GMA_MAX(qu, ku) && lv <= 8);
    ck_assert(num(o, "q_entropy") > 0 && num(o, "q_entropy") <= log(8.0) + 1e-6);
    ck_assert(num(o, "match_mass") > 0 && num(o, "match_mass") < 1);
    ck_assert(num(o, "slot_share") > 0 && num(o, "slot_share") <= 1);
    ck_assert(num(o, "grad_centre") > 0 && num(o, "grad_var") > 0 && num(o, "grad_bias") > 0);
    cJSON_Delete(rows);
}
END_TEST

/* a GMA cross model: an encoder row and a cross row per decoder layer, the pairs of the
 * query rows found in the context */
START_TEST(test_cross_rows) {
    ck_assert_msg(run("./bin/gmatrain --config configs/xmqar_long_gma.json --out %s --quiet --set train.steps=2 "
                      "--set train.batch_size=4 --set data.xmqar_valid=8 --set data.xmqar_test=8 --set threads=1 "
                      "--set cross.n_components=4 --set gma.diag_every=1",
                      tu_path("x")) == 0,
                  "%s", g_out);
    cJSON *rows = diag_rows(tu_path("x"));
    ck_assert_int_eq(cJSON_GetArraySize(rows), 2 * 3); /* 2 steps x (encoder 0, cross 0, cross 1) */
    int enc = 0, cross = 0;
    for (const cJSON *o = rows->child; o; o = o->next) {
        const char *part = cJSON_GetObjectItem(o, "part")->valuestring;
        ck_assert_double_eq(num(o, "n_components"), 4);
        if (!strcmp(part, "encoder")) {
            enc++;
            ck_assert_double_eq(num(o, "rows"), 4 * 32);
            ck_assert_double_eq(num(o, "pairs"), 0);
        } else {
            ck_assert_str_eq(part, "cross");
            cross++;
            ck_assert_double_eq(num(o, "rows"), 4 * 16);
            ck_assert_double_eq(num(o, "pairs"), 4 * 16); /* every query's value is in the context */
            ck_assert_double_eq_tol(num(o, "lookup_uniform"), 1.0 / 32, 1e-12);
        }
    }
    ck_assert_int_eq(enc, 2);
    ck_assert_int_eq(cross, 4);
    cJSON_Delete(rows);
    /* a value outside the key's range: one line naming it, nothing trained */
    ck_assert_int_eq(run(MQAR_RUN, tu_path("bad"), "--set gma.diag_every=-1"), 2);
    ck_assert_msg(strstr(g_out, "gma.diag_every") != NULL, "%s", g_out);
    ck_assert(!gma_path_exists(tu_path("bad")));
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("routing_diag");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_causal_by_hand);
    tcase_add_test(t, test_cross_by_hand);
    tcase_add_test(t, test_centre_grads);
    tcase_add_test(t, test_mqar_kc1);
    tcase_add_test(t, test_mqar_kc8);
    tcase_add_test(t, test_cross_rows);
    suite_add_tcase(s, t);
    return s;
}

GMA_TEST_MAIN()
