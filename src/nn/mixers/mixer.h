/* mixer.h: the one interface every sequence mixer implements (GMA, softmax attention and
 * the baselines). A mixer maps h [B,N,D] to y [B,N,D]. It registers its parameters in the
 * model's table when created, says how many reals it keeps between forward and backward
 * (act) and how many it needs only during a call (scratch), and accumulates gradients into
 * the gradient buffer (same offsets as the parameters). */
#ifndef GMA_MIXER_H
#define GMA_MIXER_H
#include <stdint.h>

#include "core/config.h"
#include "core/rng.h"
#include "nn/params.h"
#include "ops/ops.h"

typedef struct MixerCtx {
    int B, N;
    int causal;
    const uint8_t *keymask; /* [B,N] 1 = real token, 0 = padding; NULL = no padding (host memory) */
    int training;
    long step;
} MixerCtx;

typedef struct Mixer Mixer;

typedef struct MixerVT {
    const char *name;
    int causal_ok, bidir_ok;
    /* optional: check the mixer's own config keys; error names the key */
    int (*validate)(const Config *c);
    /* register parameters under prefix (e.g. "blocks.3.mixer") */
    Mixer *(*create)(const Config *c, int layer, ParamTable *pt, const char *prefix);
    /* optional: custom initialisation after the table's rules (host memory) */
    void (*init)(Mixer *m, real *params, Rng *rng);
    size_t (*act_size)(const Mixer *m, int B, int N);
    size_t (*scratch_size)(const Mixer *m, int B, int N);
    void (*forward)(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act, real *scratch);
    void (*backward)(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                     real *grads, real *act, real *scratch);
    void (*destroy)(Mixer *m);
} MixerVT;

#define MIXER_MAX_PARAMS 24
struct Mixer {
    const MixerVT *vt;
    const ParamTable *pt;
    int D, H, d;
    int p[MIXER_MAX_PARAMS]; /* indices into pt */
    void *priv;
};

/* Registry */
const MixerVT *mixer_find(const char *name);
/* "gma|sdpa|..." */
const char *mixer_names(void);
/* mixer "auto": the name of the path ("sdpa" or "gma") it takes for N tokens */
const char *mixer_auto_choice(const Mixer *m, int N);
/* Create with the common fields set (D, H, d, pt). */
Mixer *mixer_new(const MixerVT *vt, const Config *c, ParamTable *pt);
#define MP(m, base, i) ((base) + (m)->pt->t[(m)->p[i]].offset)

/* ---- shared Q, K, V, O projections of the attention-style mixers (attn_proj.c) ---- */
enum { AP_WQ, AP_BQ, AP_WK, AP_BK, AP_WV, AP_BV, AP_WO, AP_BO, AP_N };
/* Registers prefix.{q,k,v,o}.{weight,bias} into m->p[0..7]. */
void attn_proj_add(Mixer *m, const Config *c, ParamTable *pt, const char *prefix);
/* q, k, v [B,H,N,d] from h [B,N,D]; tmp [B*N*D] scratch */
void attn_proj_qkv(const Mixer *m, const real *params, const real *h, real *qh, real *kh, real *vh, real *tmp, int B,
                   int N);
/* y = merge(oh) Wo^T + bo; tmp [B*N*D] scratch */
void attn_proj_out(const Mixer *m, const real *params, real *y, const real *oh, real *tmp, int B, int N);
/* backward of attn_proj_out: doh (overwritten) from dy; grads of Wo, bo. tmp, tmp2 [B*N*D] */
void attn_proj_out_backward(const Mixer *m, const real *params, real *grads, real *doh, const real *dy, const real *oh,
                            real *tmp, real *tmp2, int B, int N);
/* backward of attn_proj_qkv: dh += ...; grads of Wq..bv. dqh/dkh/dvh [B,H,N,d]; tmp [B*N*D] */
void attn_proj_qkv_backward(const Mixer *m, const real *params, real *grads, real *dh, const real *h, const real *dqh,
                            const real *dkh, const real *dvh, real *tmp, int B, int N);
/* kbias [B,N] in backend memory: 0 for a real key, -inf for padding (all 0 when keymask NULL) */
void key_bias(real *kbias, const uint8_t *keymask, int B, int N);
/* zero rows [B,H,N,W] whose key is padding (keymask 0); no-op when keymask is NULL */
void mask_rows(real *x, const uint8_t *keymask, int B, int H, int N, int W);
#endif
