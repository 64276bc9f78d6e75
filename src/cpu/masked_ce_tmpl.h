/* masked_ce_tmpl.h: masked cross-entropy's forward and backward, written
 * once for an element type T with suffix SFX (included by masked_ce.c for
 * float and double). Loops are split over threads by independent rows or
 * channels, never across a sum, so results do not depend on the thread
 * count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

/* e^v in T: vmath.h's vectorizable version for f32 */
#if SFX_IS_F32
static inline T FN(expt)(T v) { return gad__expf(v); }
#else
static inline T FN(expt)(T v) { return exp(v); }
#endif

typedef struct {
    const T *logits, *mask, *probs;
    const int64_t *targets;
    T *out;
    int64_t V;
    double scale;
    double *row_loss;
} FN(mce_ctx);

GAD_CLONES static void FN(mce_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(mce_ctx) *c = vc;
    for (int64_t i = lo; i < hi; i++) {
        const T *z = c->logits + i * c->V;
        T *p = c->out + i * c->V;
        T m = -INFINITY;
        for (int64_t j = 0; j < c->V; j++)
            if (z[j] > m) m = z[j];
        if (m == -INFINITY) m = 0;
        double s = 0;
        for (int64_t j = 0; j < c->V; j++) {
            T e = FN(expt)(z[j] - m);
            p[j] = e;
            s += e;
        }
        T inv = (T)(1.0 / s);
        for (int64_t j = 0; j < c->V; j++) p[j] *= inv;
        double mi = (double)c->mask[i], li = 0;
        if (mi != 0) /* -log softmax(z)[t] = log s + m - z[t], in double */
            li = mi * (log(s) + (double)m - (double)z[c->targets[i]]);
        c->row_loss[i] = li;
    }
}

int FN(gad__mce_fwd)(const T *logits, const int64_t *targets, const T *mask, T *probs,
                     int64_t N, int64_t V, double *loss) {
    double count = 0, sum = 0;
    for (int64_t i = 0; i < N; i++) count += fabs((double)mask[i]);
    double *rl = gad__alloc((size_t)(N ? N : 1) * sizeof *rl);
    if (!rl) return -1;
    FN(mce_ctx) c = {.logits = logits, .mask = mask, .targets = targets, .out = probs,
                     .V = V, .row_loss = rl};
    gad__parallel_for(N, 4096 / (V + 1) + 1, FN(mce_fwd_range), &c);
    for (int64_t i = 0; i < N; i++) sum += rl[i]; /* in row order */
    gad__free(rl, (size_t)(N ? N : 1) * sizeof *rl);
    *loss = count == 0 ? 0.0 : sum / count;
    return 0;
}

GAD_CLONES static void FN(mce_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(mce_ctx) *c = vc;
    for (int64_t i = lo; i < hi; i++) {
        const T *p = c->probs + i * c->V;
        T *d = c->out + i * c->V;
        double mi = (double)c->mask[i];
        if (mi == 0) {
            for (int64_t j = 0; j < c->V; j++) d[j] = 0; /* exactly zero */
            continue;
        }
        T s = (T)(mi * c->scale);
        for (int64_t j = 0; j < c->V; j++) d[j] = p[j] * s;
        d[c->targets[i]] -= s;
    }
}

void FN(gad__mce_bwd)(const T *probs, const int64_t *targets, const T *mask, double scale,
                      T *dlogits, int64_t N, int64_t V) {
    FN(mce_ctx) c = {.probs = probs, .mask = mask, .targets = targets, .out = dlogits,
                     .V = V, .scale = scale};
    gad__parallel_for(N, 4096 / (V + 1) + 1, FN(mce_bwd_range), &c);
}

#undef FN
#undef CAT
#undef CAT_
