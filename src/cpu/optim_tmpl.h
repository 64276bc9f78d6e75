/* optim_tmpl.h: the kernels of optim.h, written once for an element type T
 * with suffix SFX and square root SQRT (included by optim.c for float and
 * double; the contract is in optim.h). Every loop is elementwise, or for the
 * sum of squares runs over fixed blocks, so that the split between threads
 * never changes a result; the loops are contiguous and branch-free inside,
 * so they vectorize. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

/* The split of the elementwise loops between threads. */
#define GRAIN (GAD_OPTIM_PAR_MIN / 2)

/* The arguments of the threaded scaling. */
typedef struct {
    T *p;
    T c;
} FN(optim_ctx);

/* --------------------------------------------------------------- AdamW */

/* The spans are written once as loops over named arrays, each array a
 * restrict pointer, and used twice: out of place (p's old values read from
 * OLD) and in place (OLD is P itself, which a separate restrict pointer must
 * not claim). The coefficients are rounded to T on entry. */
#define ADAMW_COEF                                                             \
    const T b1 = (T)c->beta1, omb1 = (T)c->one_minus_beta1;                    \
    const T b2 = (T)c->beta2, omb2 = (T)c->one_minus_beta2;                    \
    const T bc1 = (T)c->bc1, bc2 = (T)c->bc2, lr = (T)c->lr, eps = (T)c->eps;  \
    const T decay = (T)c->decay;
#define ADAMW_LOOP(P, OLD)                                                     \
    for (int64_t i = lo; i < hi; i++) {                                        \
        T gi = g[i];                                                           \
        T mi = b1 * m[i] + omb1 * gi;                                          \
        T vi = b2 * v[i] + omb2 * (gi * gi);                                   \
        m[i] = mi;                                                             \
        v[i] = vi;                                                             \
        T mh = mi / bc1, vh = vi / bc2;                                        \
        P[i] = OLD[i] * decay - lr * (mh / (SQRT(vh) + eps));                  \
    }

static void FN(adamw_old)(T *restrict p, const T *restrict old, T *restrict m, T *restrict v,
                          const T *restrict g, int64_t lo, int64_t hi,
                          const gad_adamw_coef *c) {
    ADAMW_COEF
    ADAMW_LOOP(p, old)
}

static void FN(adamw_in_place)(T *restrict p, T *restrict m, T *restrict v, const T *restrict g,
                               int64_t lo, int64_t hi, const gad_adamw_coef *c) {
    ADAMW_COEF
    ADAMW_LOOP(p, p)
}

void FN(gad__adamw)(T *p, const T *old, T *m, T *v, const T *g, int64_t lo, int64_t hi,
                    const gad_adamw_coef *c) {
    if (old == p) FN(adamw_in_place)(p, m, v, g, lo, hi, c);
    else FN(adamw_old)(p, old, m, v, g, lo, hi, c);
}
#undef ADAMW_COEF
#undef ADAMW_LOOP

/* ----------------------------------------------------------------- SGD */

/* plain: p = p - lr (g + wd p), or p - lr g when wd is 0; momentum: g' =
 * g + wd p (g when wd is 0), b = mu b + g' (b = g' on the first step),
 * d = b, or g' + mu b with Nesterov, p = p - lr d. */
#define SGD_COEF                                                               \
    const T lr = (T)c->lr, wd = (T)c->weight_decay, mu = (T)c->momentum;       \
    const int first = c->first, nesterov = c->nesterov;
#define SGD_LOOP(P, OLD)                                                       \
    if (!b && wd != 0)                                                         \
        for (int64_t i = lo; i < hi; i++) P[i] = OLD[i] - lr * (g[i] + wd * OLD[i]); \
    else if (!b)                                                               \
        for (int64_t i = lo; i < hi; i++) P[i] = OLD[i] - lr * g[i];           \
    else                                                                       \
        for (int64_t i = lo; i < hi; i++) {                                    \
            T gi = wd != 0 ? g[i] + wd * OLD[i] : g[i];                        \
            T bi = first ? gi : mu * b[i] + gi;                                \
            b[i] = bi;                                                         \
            T d = nesterov ? gi + mu * bi : bi;                                \
            P[i] = OLD[i] - lr * d;                                            \
        }

static void FN(sgd_old)(T *restrict p, const T *restrict old, T *restrict b, const T *restrict g,
                        int64_t lo, int64_t hi, const gad_sgd_coef *c) {
    SGD_COEF
    SGD_LOOP(p, old)
}

static void FN(sgd_in_place)(T *restrict p, T *restrict b, const T *restrict g, int64_t lo,
                             int64_t hi, const gad_sgd_coef *c) {
    SGD_COEF
    SGD_LOOP(p, p)
}

void FN(gad__sgd)(T *p, const T *old, T *b, const T *g, int64_t lo, int64_t hi,
                  const gad_sgd_coef *c) {
    if (old == p) FN(sgd_in_place)(p, b, g, lo, hi, c);
    else FN(sgd_old)(p, old, b, g, lo, hi, c);
}
#undef SGD_COEF
#undef SGD_LOOP

/* ------------------------------------------------- norm and clipping */

/* sum of squares of g[lo..hi) in double, four lanes (a fixed order) */
static double FN(block_sumsq)(const T *g, int64_t lo, int64_t hi) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        double a0 = g[i], a1 = g[i + 1], a2 = g[i + 2], a3 = g[i + 3];
        s0 += a0 * a0;
        s1 += a1 * a1;
        s2 += a2 * a2;
        s3 += a3 * a3;
    }
    for (; i < hi; i++) s0 += (double)g[i] * (double)g[i];
    return (s0 + s1) + (s2 + s3);
}

static double FN(block_sumsq_any)(const void *g, int dt, int64_t lo, int64_t hi) {
    (void)dt;
    return FN(block_sumsq)(g, lo, hi);
}

double FN(gad__sumsq)(const T *g, int64_t n) { return sumsq_blocks(FN(block_sumsq_any), g, 0, n); }

static void FN(scale_range)(void *arg, int64_t lo, int64_t hi) {
    const FN(optim_ctx) *a = arg;
    T *restrict x = a->p;
    const T c = a->c;
    for (int64_t i = lo; i < hi; i++) x[i] = x[i] * c;
}

void FN(gad__scale)(T *x, int64_t n, double c) {
    FN(optim_ctx) a = {.p = x, .c = (T)c};
    gad__parallel_for(n, GRAIN, FN(scale_range), &a);
}

#undef GRAIN
#undef FN
#undef CAT
#undef CAT_
