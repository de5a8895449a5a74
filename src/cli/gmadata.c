/* gmadata.c: the data command line: fetch, extract, prepare, encode, decode, stats,
 * train-tokenizer, bench-tokenizer, generate (LRA generators, when linked in), and import
 * and export of GPT-2.
 * Argument parsing and wiring only; every error is one line `gmadata: <message>`. */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "data/fetch/archive.h"
#include "data/fetch/fetch.h"
#include "data/lm/prepare.h"
#include "data/lm/shard.h"
#include "cli/args/export_model.h"
#include "cli/args/import_model.h"
#include "cli/args/lra_generate.h"
#include "cli/args/opts.h"
#include "cli/args/version.h"
#include "data/text/tokenizer.h"

#define EXIT_CODES "Exit codes: 0 done, 1 a file or download it cannot use, 2 usage error.\n"
static const char *USAGE =
    "usage: gmadata COMMAND ...\n"
    "  fetch NAME [--dest data] [--url URL] [--quiet] [--retries N]\n"
    "        NAME: wikitext-103 wikitext-103-raw wikitext-2 wikitext-2-raw gpt2 lra imdb (list: gmadata fetch --list)\n"
    "  extract ARCHIVE [--dest DIR] [--quiet]             (--out DIR: the same as --dest)\n"
    "  prepare wikitext-103|wikitext-2|...|DIR --tokenizer gpt2|bpe:DIR|word|bytes [--out DIR] [--data data]\n"
    "          [--vocab DIR] [--threads N] [--quiet]\n"
    "  encode --tokenizer T [--vocab DIR] [--out FILE.bin] [--threads N] FILE\n"
    "  decode --tokenizer T [--vocab DIR] FILE            (FILE: a shard, or ids separated by spaces)\n"
    "  stats --tokenizer T [--vocab DIR] FILE             (FILE: text or a shard)\n"
    "  train-tokenizer --vocab-size N --out DIR FILE\n"
    "  bench-tokenizer [--tokenizer gpt2] [--vocab DIR] [--threads N] [--mb 64] FILE\n"
    "  generate ...                                        (LRA generators)\n"
    "  import gpt2 --from DIR|FILE --out RUN               (a pretrained GPT-2 as a run folder; import --help)\n"
    "  export gpt2 --from RUN --out HF_DIR [--llmc F.bin]  (a GPT-2-shaped run as GPT-2's files; export --help)\n"
    "  --help | --version                                  (gmadata COMMAND --help: that command's usage)\n"
    "Tokenizers: gpt2 (files in --vocab, default data/gpt2), bpe:DIR, word:VOCAB.txt, bytes, bytes:N.\n"
    EXIT_CODES;

/* `gmadata CMD --help`: CMD's lines of USAGE (its own and the indented ones under it) and
 * the tokenizer line, on stdout. 0, or -1 when USAGE has no such command. */
static int command_usage(const char *cmd) {
    size_t n = strlen(cmd);
    int found = 0, in = 0;
    for (const char *l = USAGE; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len > n + 2 && !strncmp(l, "  ", 2) && !strncmp(l + 2, cmd, n) && l[2 + n] == ' ') {
            printf("usage: gmadata %.*s\n", (int)(len - 2), l + 2);
            found = in = 1;
        } else if (in && len > 4 && !strncmp(l, "    ", 4)) printf("%13s%.*s\n", "", (int)len, l); /* under the command */
        else in = 0;
        l += len + (e ? 1 : 0);
    }
    if (!found) return -1;
    printf("Tokenizers: gpt2 (files in --vocab, default data/gpt2), bpe:DIR, word:VOCAB.txt, bytes, bytes:N.\n%s",
           EXIT_CODES);
    return 0;
}

static int fail(void) {
    fprintf(stderr, "gmadata: %s\n", gma_error());
    return 1;
}

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "gmadata: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
    return 2;
}

/* Options: --name value pairs and flags; positional arguments collected in order. */
typedef struct Args {
    const char *tokenizer, *vocab, *out, *dest, *url, *data;
    int threads, quiet, retries, list;
    long vocab_size;
    double mb;
    const char *pos[8];
    int npos;
} Args;

/* argv (a command's arguments) into a: 0, or 2 with one line */
static int parse(int argc, char **argv, Args *a) {
    *a = (Args){.retries = -1, .mb = 64};
    int vocab_size = 0;
    const Opt opts[] = {
        OPTS("--tokenizer", &a->tokenizer, "T", "gpt2, bpe:DIR, word:VOCAB.txt, bytes, bytes:N"),
        OPTS("--vocab", &a->vocab, "DIR", "the gpt2 tokenizer's files [data/gpt2]"),
        OPTS("--out", &a->out, "DIR", "where the result goes"),
        OPTS("--dest", &a->dest, "DIR", "where a download or an archive goes"),
        OPTS("--url", &a->url, "URL", "fetch from here"),
        OPTS("--data", &a->data, "DIR", "the data directory [data]"),
        OPT_THREADS(&a->threads, "threads, 0 all"),
        OPTI("--retries", &a->retries, 0, INT_MAX, "download attempts after the first"),
        OPTI("--vocab-size", &vocab_size, 0, 16777216, "the trained tokenizer's vocabulary"),
        OPTD("--mb", &a->mb, 0, 2147483647.0, "megabytes of text to time [64]"),
        {.name = "--quiet", .type = OPT_FLAG, .dest = &a->quiet, .alias = "-q", .help = "no progress"},
        OPTF("--list", &a->list, "the datasets fetch knows"),
    };
    OptProg p = {.name = "gmadata", .opts = opts, .n_opts = OPT_COUNT(opts), .pos = a->pos, .n_pos = &a->npos,
                 .max_pos = 8};
    int rc = opts_parse(&p, argc, argv, 0);
    a->vocab_size = vocab_size;
    if (rc > 0) fprintf(stderr, "gmadata: %s\n", gma_error());
    return rc > 0 ? rc : 0;
}

static Tokenizer *load_tok(const Args *a) {
    const char *spec = a->tokenizer ? a->tokenizer : "gpt2";
    Tokenizer *t = tokenizer_load(spec, a->vocab);
    return t;
}

static int is_shard(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char m[8] = {0};
    size_t k = fread(m, 1, 8, f);
    fclose(f);
    return k == 8 && memcmp(m, SHARD_MAGIC, 8) == 0;
}

/* ---- subcommands ---- */
static int cmd_fetch(const Args *a) {
    FetchOptions o;
    fetch_options_default(&o);
    if (a->quiet) o.progress = 0;
    if (a->retries >= 0) o.retries = a->retries;
    if (a->list) {
        int n;
        const FetchDataset *r = fetch_registry(&n);
        for (int i = 0; i < n; i++) printf("%-18s %s\n", r[i].name, r[i].about);
        return 0;
    }
    if (a->npos != 1) return usage_error("fetch: want one dataset name (gmadata fetch --list)", NULL);
    const char *dest = a->dest ? a->dest : "data";
    if (fetch_dataset(a->pos[0], dest, a->url, &o) != 0) return fail();
    if (!a->quiet) fprintf(stderr, "gmadata: %s ready under %s\n", a->pos[0], dest);
    return 0;
}

static int cmd_extract(const Args *a) {
    if (a->npos != 1) return usage_error("extract: want one archive", NULL);
    if (a->dest && a->out && strcmp(a->dest, a->out))
        return usage_error("extract: --dest and --out name two destinations; give one", NULL);
    const char *dest = a->dest ? a->dest : a->out ? a->out : ".";
    int swept = 0;
    if (archive_extract_swept(a->pos[0], dest, &swept) != 0) return fail();
    if (swept && !a->quiet)
        fprintf(stderr, "gmadata: removed %d stale temporary file%s (NAME.tmp.PID) of an extraction that was killed\n",
                swept, swept == 1 ? "" : "s");
    return 0;
}

static int cmd_prepare(const Args *a) {
    if (a->npos != 1) return usage_error("prepare: want one source (wikitext-103, wikitext-2, or a directory)", NULL);
    if (!a->tokenizer) return usage_error("prepare: --tokenizer is required (gpt2, bpe:DIR, word, bytes)", NULL);
    PrepareOptions o = {a->pos[0], a->tokenizer, a->vocab, a->data, a->out, a->threads, !a->quiet};
    return prepare_run(&o) ? fail() : 0;
}

typedef struct PrintCtx {
    FILE *f;
    int first;
    ShardWriter *w;
    uint64_t n;
} PrintCtx;

static int print_sink(void *ctx, const uint32_t *ids, size_t n) {
    PrintCtx *p = ctx;
    p->n += n;
    if (p->w) return shard_writer_append(p->w, ids, n);
    for (size_t i = 0; i < n; i++) {
        if (fprintf(p->f, p->first ? "%u" : " %u", ids[i]) < 0) return gma_errorf("stdout: write failed: %s", strerror(errno));
        p->first = 0;
    }
    return 0;
}

static int cmd_encode(const Args *a) {
    if (a->npos != 1) return usage_error("encode: want one input file", NULL);
    Tokenizer *t = load_tok(a);
    if (!t) return fail();
    PrintCtx p = {stdout, 1, NULL, 0};
    if (a->out && !(p.w = shard_writer_open(a->out, tokenizer_vocab_size(t), 0))) {
        tokenizer_free(t);
        return fail();
    }
    int rc = tokenizer_encode_file(t, a->pos[0], a->threads, print_sink, &p, NULL);
    tokenizer_free(t);
    if (p.w) {
        if (rc) shard_writer_abort(p.w);
        else rc = shard_writer_commit(p.w);
    } else if (!rc) {
        printf("\n");
        if (fflush(stdout) != 0) rc = gma_errorf("stdout: write failed: %s", strerror(errno));
    }
    return rc ? fail() : 0;
}

/* Read ids from a shard or from text of decimal ids. */
static int read_ids(const char *path, uint32_t **ids, size_t *n) {
    if (is_shard(path)) {
        TokenShard s;
        if (shard_open(&s, path, 0) != 0) return -1;
        *ids = xmalloc((s.count + 1) * sizeof **ids);
        for (uint64_t i = 0; i < s.count; i++) (*ids)[i] = shard_get(&s, i);
        *n = s.count;
        shard_close(&s);
        return 0;
    }
    size_t len;
    char *txt = gma_read_file(path, &len);
    if (!txt) return -1;
    size_t cap = 1024, k = 0;
    uint32_t *v = xmalloc(cap * sizeof *v);
    char *p = txt;
    for (;;) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (end == p || errno || x > UINT32_MAX || (*end && *end != ' ' && *end != '\n' && *end != '\t' && *end != '\r')) {
            gma_errorf("%s: byte %zu: not a token id: \"%.20s\"", path, (size_t)(p - txt), p);
            free(v);
            free(txt);
            return -1;
        }
        if (k == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[k++] = (uint32_t)x;
        p = end;
    }
    free(txt);
    *ids = v;
    *n = k;
    return 0;
}

static int cmd_decode(const Args *a) {
    if (a->npos != 1) return usage_error("decode: want one file of ids (a shard, or ids separated by spaces)", NULL);
    Tokenizer *t = load_tok(a);
    if (!t) return fail();
    uint32_t *ids;
    size_t n;
    int rc = read_ids(a->pos[0], &ids, &n);
    if (!rc) {
        char *txt;
        size_t len;
        rc = tokenizer_decode(t, ids, n, &txt, &len);
        if (rc) gma_error_prefix("%s", a->pos[0]);
        else {
            fwrite(txt, 1, len, stdout);
            free(txt);
        }
        free(ids);
    }
    tokenizer_free(t);
    return rc ? fail() : 0;
}

/* the counts of stats: tokens, bytes and words per token, the vocabulary's coverage */
static void print_stats(const char *file, Tokenizer *t, const uint32_t *ids, size_t n, uint64_t bytes, uint64_t words) {
    uint32_t V = tokenizer_vocab_size(t);
    uint8_t *seen = xcalloc(V, 1);
    uint64_t used = 0, unk = 0, bad = 0;
    long unk_id = tokenizer_unk_id(t);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= V) {
            bad++;
            continue;
        }
        if (!seen[ids[i]]) seen[ids[i]] = 1, used++;
        if ((long)ids[i] == unk_id) unk++;
    }
    printf("file:            %s\n", file);
    printf("tokenizer:       %s (vocabulary %u)\n", tokenizer_spec(t), V);
    printf("tokens:          %zu\n", n);
    if (bytes) printf("bytes:           %llu (%.3f bytes/token)\n", (unsigned long long)bytes, n ? (double)bytes / n : 0.0);
    if (words) printf("words:           %llu (%.3f tokens/word, words include one per line end)\n", (unsigned long long)words, (double)n / words);
    printf("distinct ids:    %llu (vocabulary coverage %.2f%%)\n", (unsigned long long)used, 100.0 * used / V);
    if (unk_id >= 0) printf("unk rate:        %.4f%% (%llu <unk>)\n", n ? 100.0 * unk / n : 0.0, (unsigned long long)unk);
    if (bad) printf("out of range:    %llu ids >= %u\n", (unsigned long long)bad, V);
    free(seen);
}

static int cmd_stats(const Args *a) {
    if (a->npos != 1) return usage_error("stats: want one file (text or a shard)", NULL);
    Tokenizer *t = load_tok(a);
    if (!t) return fail();
    uint32_t *ids = NULL;
    size_t n = 0;
    uint64_t bytes = 0, words = 0;
    int rc;
    if (is_shard(a->pos[0])) {
        rc = read_ids(a->pos[0], &ids, &n);
    } else {
        size_t len;
        char *txt = gma_read_file(a->pos[0], &len);
        rc = txt ? tokenizer_encode_parallel(t, txt, len, a->threads, &ids, &n) : -1;
        bytes = len;
        TextCounts tc;
        char hex[65];
        if (txt && prepare_count_file(a->pos[0], &tc, hex) == 0) words = tc.words;
        free(txt);
    }
    if (!rc) print_stats(a->pos[0], t, ids, n, bytes, words);
    free(ids);
    tokenizer_free(t);
    return rc ? fail() : 0;
}

static int cmd_train(const Args *a) {
    if (a->npos != 1 || !a->out || a->vocab_size <= 0)
        return usage_error("train-tokenizer: want --vocab-size N --out DIR FILE", NULL);
    Tokenizer *t = tokenizer_bpe_train(a->pos[0], (uint32_t)a->vocab_size, !a->quiet);
    if (!t) return fail();
    int rc = tokenizer_save(t, a->out);
    if (!rc && !a->quiet)
        fprintf(stderr, "gmadata: wrote %s/encoder.json and %s/vocab.bpe (vocabulary %u); use --tokenizer bpe:%s\n",
                a->out, a->out, tokenizer_vocab_size(t), a->out);
    tokenizer_free(t);
    return rc ? fail() : 0;
}

/* src (len bytes, taken) repeated up to target bytes: *total of them */
static char *repeat_text(char *src, size_t len, size_t target, size_t *total) {
    *total = len;
    if (target <= len) return src;
    size_t reps = target / len + (target % len != 0);
    *total = reps * len;
    char *text = xmalloc(*total + 1);
    for (size_t r = 0; r < reps; r++) memcpy(text + r * len, src, len);
    free(src);
    return text;
}

static int cmd_bench(const Args *a) {
    if (a->npos != 1) return usage_error("bench-tokenizer: want one text file (English, e.g. wiki.valid.raw)", NULL);
    Tokenizer *t = load_tok(a);
    if (!t) return fail();
    size_t len;
    char *src = gma_read_file(a->pos[0], &len);
    if (!src || len == 0) {
        tokenizer_free(t);
        return src ? usage_error("bench-tokenizer: empty file", a->pos[0]) : fail();
    }
    size_t total;
    char *text = repeat_text(src, len, (size_t)(a->mb * 1e6), &total);
    int max_threads = a->threads ? a->threads : omp_get_num_procs();
    printf("bench-tokenizer: %s on %s, %.1f MB (%zu bytes repeated to %zu)\n", tokenizer_spec(t), a->pos[0], total / 1e6,
           len, total);
    printf("%8s %12s %12s %10s %8s\n", "threads", "tokens", "seconds", "MB/s", "speedup");
    double base = 0;
    for (int th = 1; th <= max_threads; th *= 2) {
        uint32_t *ids;
        size_t n;
        double t0 = gma_now();
        tokenizer_encode_parallel(t, text, total, th, &ids, &n);
        double dt = gma_now() - t0;
        free(ids);
        double mbs = total / 1e6 / dt;
        if (th == 1) base = mbs;
        printf("%8d %12zu %12.3f %10.2f %7.2fx\n", th, n, dt, mbs, mbs / base);
        if (th < max_threads && th * 2 > max_threads) th = max_threads / 2;
    }
    free(text);
    tokenizer_free(t);
    return 0;
}

int main(int argc, char **argv) {
    if (cli_version("gmadata", argc, argv)) return 0;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "generate") == 0) {
        return lra_generate_main(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "import") == 0) return import_model_main(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0) return export_model_main(argc - 1, argv + 1);
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (command_usage(cmd) == 0) return 0;
            break; /* an unknown command: said below */
        }
    Args a;
    int prc = parse(argc - 2, argv + 2, &a);
    if (prc) return prc;
    if (strcmp(cmd, "fetch") == 0) return cmd_fetch(&a);
    if (strcmp(cmd, "extract") == 0) return cmd_extract(&a);
    if (strcmp(cmd, "prepare") == 0) return cmd_prepare(&a);
    if (strcmp(cmd, "encode") == 0) return cmd_encode(&a);
    if (strcmp(cmd, "decode") == 0) return cmd_decode(&a);
    if (strcmp(cmd, "stats") == 0) return cmd_stats(&a);
    if (strcmp(cmd, "train-tokenizer") == 0) return cmd_train(&a);
    if (strcmp(cmd, "bench-tokenizer") == 0) return cmd_bench(&a);
    fprintf(stderr, "gmadata: unknown command '%s' (see gmadata --help)\n", cmd);
    return 2;
}
