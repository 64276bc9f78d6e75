/* test_helix_model.h: the small HELIX language model the reliability tests
 * train (allocation sweep, soak, threads): an embedding [V, D], NL fused
 * HELIX blocks, rms_norm * gain, logits [D, V]. The including file defines
 * V, D, NL, B and T first; this header defines NP, the parameter count.
 *
 * Parameters are in a fixed order: emb, then b<l>.wa wb wo wf1 wf2 g1 g2 g3
 * g4 for each block, then gain, wout. */
#ifndef GAD_TEST_HELIX_MODEL_H
#define GAD_TEST_HELIX_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "gad.h"

#define NP (1 + 9 * NL + 2)

/* The name of parameter k (see above) into out (16 bytes). */
static inline void hx_param_name(int k, char out[16]) {
    static const char *const keys[9] = {"wa", "wb", "wo", "wf1", "wf2", "g1", "g2", "g3", "g4"};
    if (k == 0) snprintf(out, 16, "emb");
    else if (k == NP - 2) snprintf(out, 16, "gain");
    else if (k == NP - 1) snprintf(out, 16, "wout");
    else snprintf(out, 16, "b%d.%s", (k - 1) / 9, keys[(k - 1) % 9]);
}

static inline gad_tensor *hx_normal(gad_rng *rng, int64_t r, int64_t c, double std) {
    return gad_requires_grad(gad_rng_normal_tensor(rng, (int64_t[]){r, c}, 2, GAD_F32, 0, std));
}

/* The NP parameters, made with no scope open (the caller owns them and
 * releases them with hx_params_free): emb N(0, 0.5^2), matrices
 * N(0, 1/fan_in), gains 1. 0, or -1 when one could not be made (the others
 * are still in p, NULL or owned). */
static inline int hx_params_init(gad_tensor **p, uint64_t seed) {
    gad_rng *rng = gad_rng_new(seed);
    if (!rng) return -1;
    int k = 0;
    p[k++] = hx_normal(rng, V, D, 0.5);
    for (int l = 0; l < NL; l++) {
        const int64_t shp[5][2] = {{D + 1, D}, {D, D}, {D, D}, {D, 2 * D}, {2 * D, D}};
        for (int i = 0; i < 9; i++)
            p[k++] = i < 5 ? hx_normal(rng, shp[i][0], shp[i][1], 1 / sqrt((double)shp[i][0]))
                           : gad_requires_grad(gad_ones((int64_t[]){D}, 1, GAD_F32));
    }
    p[k++] = gad_requires_grad(gad_ones((int64_t[]){D}, 1, GAD_F32));
    p[k++] = hx_normal(rng, D, V, 1 / sqrt((double)D));
    gad_rng_free(rng);
    for (int i = 0; i < NP; i++)
        if (!p[i]) return -1;
    return 0;
}

static inline void hx_params_free(gad_tensor **p) {
    for (int i = 0; i < NP; i++) gad_release(p[i]);
}

/* Logits [B*T, V] of the token ids x [B, T], in the current scope. */
static inline gad_tensor *hx_logits(gad_tensor *const *p, gad_tensor *x) {
    gad_tensor *h = gad_embedding_fused(p[0], x);
    for (int l = 0; l < NL; l++) {
        gad_tensor *const *q = &p[1 + 9 * l];
        gad_helix_weights w = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8]};
        h = gad_helix_block(h, &w, 1e-5);
    }
    h = gad_mul(gad_rms_norm(h, 1e-5), p[NP - 2]);
    return gad_reshape(gad_matmul(h, p[NP - 1]), (int64_t[]){B * T, V}, 2);
}

/* The mean cross-entropy of the next tokens targets [B*T] (NULL and the
 * first error when an op failed). */
static inline gad_tensor *hx_loss(gad_tensor *const *p, gad_tensor *x, gad_tensor *targets) {
    return gad_cross_entropy(hx_logits(p, x), targets, GAD_REDUCE_MEAN);
}

#endif /* GAD_TEST_HELIX_MODEL_H */
