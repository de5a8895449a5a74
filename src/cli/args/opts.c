/* opts.c: the option-table parser and the generated --help (opts.h). */
#include "cli/args/opts.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/config.h"
#include "core/strdist.h"

static const Opt *find(const OptProg *p, const char *a) {
    for (int i = 0; i < p->n_opts; i++)
        if (!strcmp(a, p->opts[i].name) || (p->opts[i].alias && !strcmp(a, p->opts[i].alias))) return &p->opts[i];
    return NULL;
}

/* an option's name without its leading dashes */
static const char *bare(const char *s) {
    while (*s == '-') s++;
    return s;
}

const char *opts_near(const OptProg *p, const char *arg) {
    const char *best = NULL;
    int bd = 3;
    for (int i = 0; i < p->n_opts; i++) {
        int d = gma_edit_distance(arg, p->opts[i].name, 2);
        if (d < bd && gma_near_miss(bare(arg), bare(p->opts[i].name))) bd = d, best = p->opts[i].name;
    }
    return best;
}

/* an integer bound held as a double: LONG_MAX (not representable) for any above it */
static long as_long(double x) { return x >= (double)LONG_MAX ? LONG_MAX : x <= (double)LONG_MIN ? LONG_MIN : (long)x; }

/* "[lo, hi]" of a numeric option, integers without a fraction */
static const char *range(const Opt *o, char *buf, size_t cap) {
    if (o->type == OPT_DOUBLE) snprintf(buf, cap, "%s%g, %g]", o->open_lo ? "(" : "[", o->lo, o->hi);
    else snprintf(buf, cap, "[%ld, %ld]", as_long(o->lo), as_long(o->hi));
    return buf;
}

/* the index of v among "a|b|c", or -1 */
static int choice_index(const char *choices, const char *v) {
    size_t n = strlen(v);
    int i = 0;
    for (const char *c = choices; *c; i++) {
        const char *e = strchr(c, '|');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == n && !strncmp(c, v, n)) return i;
        c += len + (e ? 1 : 0);
    }
    return -1;
}

static int set_number(const Opt *o, const char *v) {
    char r[96];
    if (o->type == OPT_DOUBLE) {
        double x;
        if (gma_parse_double(v, o->lo, o->hi, &x) != 0 || (o->open_lo && x <= o->lo))
            return gma_errorf("%s: \"%s\" is not a number in %s", o->name, v, range(o, r, sizeof r));
        *(double *)o->dest = x;
        return 0;
    }
    long x;
    if (gma_parse_long(v, as_long(o->lo), as_long(o->hi), &x) != 0)
        return gma_errorf("%s: \"%s\" is not an integer in %s", o->name, v, range(o, r, sizeof r));
    if (o->type == OPT_INT) *(int *)o->dest = (int)x;
    else *(long *)o->dest = x;
    return 0;
}

/* the value v of o: 0, or -1 with gma_error */
static int set_value(const Opt *o, const char *v) {
    switch (o->type) {
    case OPT_INT: case OPT_LONG: case OPT_DOUBLE: return set_number(o, v);
    case OPT_U64:
        if (gma_parse_u64(v, o->dest) != 0)
            return gma_errorf("%s: \"%s\" is not an integer in [0, 18446744073709551615]", o->name, v);
        return 0;
    case OPT_INDEX: case OPT_CHOICE: {
        int i = choice_index(o->choices, v);
        if (i < 0) return gma_errorf("%s: \"%s\" is not one of %s", o->name, v, o->choices);
        if (o->type == OPT_INDEX) return *(int *)o->dest = i, 0;
    }
        /* fall through */
    case OPT_STR: *(const char **)o->dest = v; return 0;
    case OPT_LIST: {
        OptList *l = o->dest;
        if (*l->n >= l->cap) return gma_errorf("%s: more than %d of them", o->name, l->cap);
        l->v[(*l->n)++] = v;
        return 0;
    }
    case OPT_FUNC:
        return o->fn(v, o->dest) != 0 ? -1 : 0;
    default: return gma_errorf("%s: takes no value", o->name);
    }
}

/* an unknown --flag of a program with --set that names a config key by its last
 * component (--steps for train.steps, --batch-size for train.batch_size): "--set KEY=VALUE"
 * into buf (VALUE the next argument when there is one), else NULL */
static const char *as_set(const OptProg *p, const char *a, const char *next, char *buf, size_t cap) {
    if (!find(p, "--set") || strncmp(a, "--", 2)) return NULL;
    char last[128], key[128];
    snprintf(last, sizeof last, "%s", a + 2);
    for (char *c = last; *c; c++)
        if (*c == '-') *c = '_';
    char *eq = strchr(last, '='); /* --steps=10 */
    if (eq) next = a + 2 + (eq - last) + 1, *eq = 0;
    int n = cfg_keys_ending(last, key, sizeof key);
    if (n == 0) return NULL;
    snprintf(buf, cap, "--set %s=%s%s", key, next && strncmp(next, "--", 2) ? next : "VALUE",
             n > 1 ? ", or another key of that name" : "");
    return buf;
}

static int unknown(const OptProg *p, const char *a, const char *next) {
    if (a[0] != '-' || !a[1]) return gma_errorf("unexpected argument \"%s\" (see --help)", a);
    char set[256];
    if (as_set(p, a, next, set, sizeof set)) return gma_errorf("unknown option \"%s\" (did you mean %s?) (see --help)", a, set);
    const char *near = opts_near(p, a);
    if (near) return gma_errorf("unknown option \"%s\" (did you mean %s?) (see --help)", a, near);
    return gma_errorf("unknown option \"%s\" (see --help)", a);
}

/* argv[*i] (an option o): its value taken, *i moved past it; 0 or -1 */
static int take(const Opt *o, int argc, char **argv, int *i) {
    if (o->type == OPT_FLAG) return *(int *)o->dest = 1, 0;
    if (o->type == OPT_OPTVAL) {
        *(int *)o->dest = 1;
        if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2)) *(const char **)o->dest2 = argv[++*i];
        return 0;
    }
    if (*i + 1 >= argc) return gma_errorf("%s: missing value (see --help)", o->name);
    return set_value(o, argv[++*i]);
}

int opts_parse(const OptProg *p, int argc, char **argv, int first) {
    for (int i = first; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return OPTS_HELP;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const Opt *o = find(p, a);
        if (o) {
            if (take(o, argc, argv, &i) != 0) return 2;
        } else if ((a[0] != '-' || !a[1]) && p->max_pos > 0) {
            if (*p->n_pos >= p->max_pos) return gma_errorf("too many arguments: \"%s\" (see --help)", a), 2;
            p->pos[(*p->n_pos)++] = a;
        } else
            return unknown(p, a, i + 1 < argc ? argv[i + 1] : NULL), 2;
    }
    return 0;
}

/* the value's name in --help */
static const char *arg_name(const Opt *o) {
    if (o->arg) return o->arg;
    switch (o->type) {
    case OPT_INT: case OPT_LONG: case OPT_U64: return "N";
    case OPT_DOUBLE: return "X";
    case OPT_CHOICE: case OPT_INDEX: return o->choices;
    case OPT_OPTVAL: return "[VALUE]";
    default: return "VALUE";
    }
}

static void option_line(const Opt *o, FILE *f) {
    char head[96], r[96];
    snprintf(head, sizeof head, "%s%s%s%s%s", o->name, o->alias ? ", " : "", o->alias ? o->alias : "",
             o->type == OPT_FLAG ? "" : " ", o->type == OPT_FLAG ? "" : arg_name(o));
    fprintf(f, "  %-*s %s", (int)strlen(head) > 26 ? 0 : 26, head, o->help);
    if (o->type == OPT_INT || o->type == OPT_LONG || o->type == OPT_DOUBLE)
        fprintf(f, "; %s in %s", arg_name(o), range(o, r, sizeof r));
    if (o->type == OPT_LIST) fprintf(f, " (repeatable)");
    fprintf(f, "\n");
}

void opts_usage(const OptProg *p, FILE *f) {
    fprintf(f, "usage: %s", p->usage);
    fprintf(f, "       %s --help | --version\n", p->name);
    if (p->about && p->about[0]) fputs(p->about, f);
    fprintf(f, "options:\n");
    for (int i = 0; i < p->n_opts; i++)
        if (p->opts[i].help) option_line(&p->opts[i], f);
    fprintf(f, "  %-26s this text; --version: the program and its version\n", "--help, -h");
    fprintf(f, "Exit codes: %s.\n", p->exit_codes);
}

int cli_parse(const OptProg *p, int argc, char **argv, int first) {
    if (p->need_args && argc <= first) {
        opts_usage(p, stderr);
        return 2;
    }
    int rc = opts_parse(p, argc, argv, first);
    if (rc == OPTS_HELP) {
        opts_usage(p, stdout);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "%s: %s\n", p->name, gma_error());
        return rc;
    }
    return OPTS_GO_ON;
}
