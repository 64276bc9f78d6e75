/* embedding_tmpl.h: the embedding's forward and backward, written once for
 * an element type T with suffix SFX (included by embedding.c for float and
 * double). Loops are split over threads by independent rows or channels,
 * never across a sum, so results do not depend on the thread count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

typedef struct {
    const T *table, *gy;
    const int64_t *idx;
    T *out;
    int64_t R, D;
} FN(emb_ctx);

static void FN(emb_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(emb_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++)
        memcpy(c->out + r * c->D, c->table + c->idx[r] * c->D, (size_t)c->D * sizeof(T));
}

void FN(gad__emb_fwd)(const T *table, const int64_t *idx, T *y, int64_t R, int64_t D) {
    FN(emb_ctx) c = {.table = table, .idx = idx, .out = y, .R = R, .D = D};
    gad__parallel_for(R, 4096 / (D + 1) + 1, FN(emb_fwd_range), &c);
}

/* Threads own column ranges, so rows that share an index never race and
 * each gradient row sums in index order. */
static void FN(emb_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(emb_ctx) *c = vc;
    for (int64_t r = 0; r < c->R; r++) {
        const T *g = c->gy + r * c->D;
        T *t = c->out + c->idx[r] * c->D;
        for (int64_t j = lo; j < hi; j++) t[j] += g[j];
    }
}

void FN(gad__emb_bwd)(const int64_t *idx, const T *gy, T *gt, int64_t R, int64_t D) {
    FN(emb_ctx) c = {.gy = gy, .idx = idx, .out = gt, .R = R, .D = D};
    gad__parallel_for(D, R > 64 ? 16 : D, FN(emb_bwd_range), &c);
}

#undef FN
#undef CAT
#undef CAT_
