/* op_driver.h: how emu_core.cpp and emu_baselines.cpp run the rows of op_rows.h: one
 * `row OP (SHAPES): N checks` line per row, then the summary test_cuda_emu reads,
 * `DRIVER: R of N rows ran, C checks, F failures, E rows without a check`. */
#ifndef GMA_OP_DRIVER_H
#define GMA_OP_DRIVER_H
#include <cstdio>
#include <cstring>

struct Row { const char *part, *op, *args; void (*run)(); };
/* a table entry from a ROW of op_rows.h: the call t_<op>(shapes) */
#define ROW_ENTRY(part, op, grad, args) {#part, #op, #args, [] { t_##op args; }},

struct RowsRun { int ran, empty; };
/* the rows whose part is w (every row for "all" or all_alias); ncheck: the driver's count */
template <size_t N>
static RowsRun run_rows(const Row (&rows)[N], const char *w, const char *all_alias, const int &ncheck) {
    RowsRun r = {0, 0};
    for (const Row &row : rows) {
        if (strcmp(w, "all") && strcmp(w, all_alias) && strcmp(w, row.part)) continue;
        int before = ncheck;
        row.run();
        r.ran++;
        if (ncheck == before) r.empty++;
        printf("row %s %s: %d checks%s\n", row.op, row.args, ncheck - before, ncheck == before ? " NONE" : "");
    }
    return r;
}
/* the summary line, left open for the driver's own figures; the exit status */
static int print_summary(const char *driver, RowsRun r, int n_rows, int ncheck, int nfail) {
    printf("%s: %d of %d rows ran, %d checks, %d failures, %d rows without a check", driver, r.ran, n_rows, ncheck, nfail,
           r.empty);
    return nfail != 0 || r.empty != 0 || r.ran == 0;
}
#endif
