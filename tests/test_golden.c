/* test_golden.c: the end-to-end golden test (llm.c style). A two-layer
 * HELIX language model on a fixed batch, built from gad's public pieces
 * (fused embedding and blocks, RMS norm, cross-entropy, AdamW), against
 * PyTorch's numbers in tests/reference/golden_helix.txt (written by
 * make_golden.py there): the initial loss, every parameter's gradient, and
 * the losses of 10 AdamW steps, within 1e-4 relative. */
#include "test.h"

#ifndef GAD_SOURCE_DIR
#define GAD_SOURCE_DIR "."
#endif

#define MAXP 32

typedef struct golden {
    int np;
    char names[MAXP][32];
    gad_tensor *params[MAXP];
    double *grads[MAXP];
    int64_t B, T1;
    int64_t *tokens;
    double loss0, losses[10];
} golden;

static int read_golden(const char *path, golden *g) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(g, 0, sizeof *g);
    char word[32];
    int rc = 0;
    while (rc == 0 && fscanf(f, "%31s", word) == 1) {
        if (!strcmp(word, "param")) {
            int rank;
            int64_t shape[GAD_MAX_RANK], n = 1;
            if (g->np == MAXP || fscanf(f, "%31s %d", g->names[g->np], &rank) != 2) rc = -1;
            for (int i = 0; rc == 0 && i < rank; i++) {
                long long d;
                if (fscanf(f, "%lld", &d) != 1) rc = -1;
                shape[i] = d;
                n *= d;
            }
            float *v = malloc((size_t)n * sizeof *v);
            for (int64_t i = 0; rc == 0 && i < n; i++)
                if (fscanf(f, "%f", &v[i]) != 1) rc = -1;
            if (rc == 0) g->params[g->np++] = gad_requires_grad(gad_from_f32(v, shape, rank));
            free(v);
        } else if (!strcmp(word, "tokens")) {
            long long b, t1;
            if (fscanf(f, "%lld %lld", &b, &t1) != 2) rc = -1;
            g->B = b;
            g->T1 = t1;
            g->tokens = malloc((size_t)(b * t1) * sizeof *g->tokens);
            for (int64_t i = 0; rc == 0 && i < b * t1; i++) {
                long long v;
                if (fscanf(f, "%lld", &v) != 1) rc = -1;
                g->tokens[i] = v;
            }
        } else if (!strcmp(word, "loss0")) {
            if (fscanf(f, "%lf", &g->loss0) != 1) rc = -1;
        } else if (!strcmp(word, "grad")) {
            char name[32];
            if (fscanf(f, "%31s", name) != 1) rc = -1;
            int k = 0;
            while (k < g->np && strcmp(g->names[k], name)) k++;
            if (k == g->np) rc = -1;
            int64_t n = gad_numel(g->params[k]);
            g->grads[k] = malloc((size_t)n * sizeof(double));
            for (int64_t i = 0; rc == 0 && i < n; i++)
                if (fscanf(f, "%lf", &g->grads[k][i]) != 1) rc = -1;
        } else if (!strcmp(word, "losses")) {
            for (int i = 0; rc == 0 && i < 10; i++)
                if (fscanf(f, "%lf", &g->losses[i]) != 1) rc = -1;
        } else {
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

static gad_tensor *param(golden *g, const char *name) {
    for (int i = 0; i < g->np; i++)
        if (!strcmp(g->names[i], name)) return g->params[i];
    return NULL;
}

/* The model: embedding, two HELIX blocks, rms_norm * gain, logits, mean
 * cross-entropy; in the current scope. */
static gad_tensor *loss_of(golden *g) {
    int64_t B = g->B, T = g->T1 - 1;
    int64_t *in = malloc((size_t)(B * T) * sizeof *in), *tg = malloc((size_t)(B * T) * sizeof *tg);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            in[b * T + t] = g->tokens[b * g->T1 + t];
            tg[b * T + t] = g->tokens[b * g->T1 + t + 1];
        }
    gad_tensor *x = gad_from_i64(in, (int64_t[]){B, T}, 2);
    gad_tensor *targets = gad_from_i64(tg, (int64_t[]){B * T}, 1);
    free(in);
    free(tg);
    gad_tensor *h = gad_embedding_fused(param(g, "emb"), x);
    for (int l = 0; l < 2; l++) {
        char n[9][16];
        const char *k[9] = {"wa", "wb", "wo", "wf1", "wf2", "g1", "g2", "g3", "g4"};
        for (int i = 0; i < 9; i++) snprintf(n[i], sizeof n[i], "b%d.%s", l, k[i]);
        gad_helix_weights w = {param(g, n[0]), param(g, n[1]), param(g, n[2]),
                               param(g, n[3]), param(g, n[4]), param(g, n[5]),
                               param(g, n[6]), param(g, n[7]), param(g, n[8])};
        h = gad_helix_block(h, &w, 1e-5);
    }
    h = gad_mul(gad_rms_norm(h, 1e-5), param(g, "gain"));
    gad_tensor *logits = gad_matmul(h, param(g, "wout"));
    int64_t V = gad_shape(param(g, "wout"))[1];
    return gad_cross_entropy(gad_reshape(logits, (int64_t[]){B * T, V}, 2), targets,
                             GAD_REDUCE_MEAN);
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-6); }

TEST(golden_helix_lm) {
    golden g;
    const char *path = GAD_SOURCE_DIR "/tests/reference/golden_helix.txt";
    int rc = read_golden(path, &g);
    CHECK_MSG(rc == 0, "cannot read %s", path);
    if (rc) return;
    CHECK(g.np == 21);
    /* the loss and every gradient at the initial parameters */
    gad_scope_begin();
    gad_tensor *loss = loss_of(&g), *grads[MAXP];
    CHECK_MSG(loss != NULL, "%s", gad_last_error() ? gad_last_error()->text : "");
    CHECK_MSG(rel(gad_item(loss), g.loss0) < 1e-4, "loss %.8g vs torch %.8g", gad_item(loss), g.loss0);
    CHECK(gad_grad(loss, g.params, g.np, grads) == GAD_OK);
    double worst = 0;
    for (int k = 0; k < g.np; k++) {
        int64_t n = gad_numel(g.params[k]);
        double *got = malloc((size_t)n * sizeof *got), scale = 0;
        gad_read_f64(grads[k], got, (size_t)n);
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(g.grads[k][i]));
        for (int64_t i = 0; i < n; i++) {
            /* relative to the gradient's own scale: tiny entries carry f32
             * rounding from both sides */
            double e = fabs(got[i] - g.grads[k][i]) / fmax(scale, 1e-12);
            worst = fmax(worst, e);
            CHECK_MSG(e < 1e-4, "grad %s[%lld]: %.8g vs torch %.8g", g.names[k], (long long)i,
                      got[i], g.grads[k][i]);
        }
        free(got);
    }
    printf("  gradients: worst error %.2e of each gradient's largest entry\n", worst);
    gad_scope_end();
    /* 10 AdamW steps: the loss before each step */
    gad_adamw_opts o = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    gad_optim *opt = gad_adamw_new(g.params, g.np, &o);
    CHECK(opt != NULL);
    for (int step = 0; opt && step < 10; step++) {
        gad_scope_begin();
        loss = loss_of(&g);
        double l = gad_item(loss);
        CHECK_MSG(rel(l, g.losses[step]) < 1e-4, "step %d: loss %.8g vs torch %.8g", step, l,
                  g.losses[step]);
        CHECK(gad_grad(loss, g.params, g.np, grads) == GAD_OK);
        CHECK(gad_optim_step(opt, grads) == GAD_OK);
        if (step == 9) printf("  step 9 loss %.7f (torch %.7f)\n", l, g.losses[step]);
        gad_scope_end();
    }
    gad_optim_free(opt);
    for (int k = 0; k < g.np; k++) {
        gad_release(g.params[k]);
        free(g.grads[k]);
    }
    free(g.tokens);
}

int main(void) {
    RUN(golden_helix_lm);
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0);
    return test_summary();
}
