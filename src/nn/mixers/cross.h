/* cross.h: cross-attention layers (docs/model.md §3.8: both kinds' math, layout, decoding):
 * the N query rows of one sequence read the M rows of another (the context), y [B,N,Dm] from
 * hq [B,N,Dm] and hc [B,M,Dm]; queries from hq (PREFIX.q), keys and values from hc
 * (PREFIX.k, PREFIX.v), output projection PREFIX.o, as in the self-attention mixers
 * (attn_proj_add); gma adds PREFIX.gma.{mu,var_raw,prior_logits}. Existing ops only: both
 * sequences laid out in L = max(N, M) rows a head, the shorter zero-padded, through the
 * bidirectional linmix_* with gma_route_* (GMA) or attn_* with causal off (sdpa); the padding
 * costs O(|N - M|) rows of routing or of query/key tiles. Decoding reads a context memory
 * computed once (cross_memory): GMA the Kc-slot memory (S, z) of linmix_step's state, read
 * with zero keys and values; sdpa the context's key/value cache of attn_step, read at its
 * last row. */
#ifndef GMA_CROSS_H
#define GMA_CROSS_H
#include "nn/mixers/mixer.h"

typedef enum { CROSS_NONE, CROSS_GMA, CROSS_SDPA } CrossKind;
#define CROSS_KINDS "none|gma|sdpa"
/* cross.enc_mixer: "same" or a kind, its index the kind's (CROSS_GMA, CROSS_SDPA) */
enum { CROSS_ENC_SAME = 0 };
#define CROSS_ENC_KINDS "same|gma|sdpa"
/* cross.query_pos: where the query sequence's position embeddings start */
enum { CROSS_POS_WINDOW, CROSS_POS_OWN };
#define CROSS_POS_KINDS "window|own"

/* The keys cross.* (a stored section): the encoder-decoder of docs/model.md §3.8, whose
 * decoder blocks each get a cross sub-layer reading the encoded context (model/model_cross.h). */
typedef struct CrossCfg {
    int mixer;        /* CrossKind: CROSS_NONE = a plain decoder */
    int n_components; /* Kc of the GMA cross layers and encoder layers */
    int enc_layers;   /* the context encoder's blocks */
    int ctx_len;      /* M: the window's first M positions are the context */
    int enc_causal;   /* the encoder's self-attention causal (a prefix decoder) instead of bidirectional */
    int enc_mixer;    /* CROSS_ENC_SAME: the encoder's layers of kind cross.mixer, else CROSS_GMA | CROSS_SDPA */
    int query_pos;    /* CROSS_POS_WINDOW: the query rows at window positions M..T-1; CROSS_POS_OWN: at 0..T-M-1 */
} CrossCfg;
extern const CfgSection cross_cfg_section;
const CrossCfg *cross_cfg(const Config *c);

typedef struct Cross {
    Mixer m;             /* D, H, d, Dm, pt and p[AP_*] as the attention mixers; p[AP_N..] the routing */
    int kind;            /* CROSS_GMA | CROSS_SDPA */
    int Kc;              /* GMA components per head */
    real tau, var_floor, eps;
    int causal;          /* self-attention of one sequence (N = M, hq = hc) with a causal mask; 0 for cross layers */
    int chunk;           /* GMA's causal scan chunk (gma.chunk) */
    real *kb_row;        /* sdpa: one row of the context's key bias (0 below kb_M, -inf to kb_L), backend memory */
    int kb_M, kb_L;
} Cross;

/* A cross layer of `kind` with Kc components (GMA) under prefix: the projections as
 * model.attn_bias, model.init_std, model.dense_init say, eps = gma.eps; the routing at
 * temperature 1 with variance floor 1e-4 (gma.temperature's and gma.var_floor's defaults),
 * initialised as gma's (sigma2 = 1, prior 0, mu ~ N(0, (2 d)^(-1/2))). */
Cross *cross_create(const Config *c, int kind, int Kc, ParamTable *pt, const char *prefix);
void cross_destroy(Cross *x);
/* GMA (the recall diagnosis, train/routing_diag.h): the query and key responsibilities of
 * the last forward over B x (N, M) rows, recomputed from its saved rows in act with params,
 * into gq, gk [B,H,L,Kc] (backend memory, L = max(N, M); rows past N, M zero). Returns L;
 * 0 for sdpa (nothing written). */
int cross_resp(const Cross *x, const real *params, const real *act, int B, int N, int M, real *gq, real *gk);
/* GMA: the routing tensors mu, var_raw, prior_logits (indices into the table; -1 for sdpa) */
void cross_routing_tensors(const Cross *x, int *mu, int *var, int *prior);
/* reals kept from forward to backward, and needed only during a call, for B x (N, M) */
size_t cross_act_size(const Cross *x, int B, int N, int M);
size_t cross_scratch_size(const Cross *x, int B, int N, int M);
void cross_forward(Cross *x, real *y, const real *hq, const real *hc, const real *params, real *act, real *scratch,
                   int B, int N, int M);
/* dhq, dhc and the parameters' gradients accumulate */
void cross_backward(Cross *x, real *dhq, real *dhc, const real *dy, const real *hq, const real *hc, const real *params,
                    real *grads, real *act, real *scratch, int B, int N, int M);
/* the FLOPs of the products inside fused ops (routing, linmix, attention tiles), forward + backward */
double cross_fused_flops(const Cross *x, int B, int N, int M);
/* ---- decoding: the context memory once, then one query row at a time ---- */
/* reals of memory one sequence keeps for a context of M rows */
size_t cross_memory_size(const Cross *x, int M);
/* scratch of cross_memory (B x M) and of cross_step (B rows) */
size_t cross_decode_scratch(const Cross *x, int B, int M);
/* the memories of B contexts hc [B,M,Dm] into mem (cross_memory_size(M) reals each) */
void cross_memory(Cross *x, real *mem, const real *hc, const real *params, int B, int M, real *scratch);
/* y [B,Dm] for one query row hq [B,Dm] of each of B sequences, reading their memories
 * (which the step's ops take as writable state; they come back unchanged) */
void cross_step(Cross *x, real *y, const real *hq, const real *params, real *mem, int B, int M, real *scratch);
#endif
