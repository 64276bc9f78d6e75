/* scan_tmpl.h: the gated scan's forward and backward, written once for an
 * element type T with suffix SFX (included by scan.c for float and double).
 * Loops are split over threads by independent rows or channels, never across
 * a sum, so results do not depend on the thread count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

typedef struct {
    const T *a, *b, *h, *gh;
    T *out, *ga, *gb;
    int64_t T_, D, chunks; /* channel chunks per sequence */
} FN(scan_ctx);

#define SCAN_CHUNK 64

GAD_CLONES static void FN(scan_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(scan_ctx) *c = vc;
    for (int64_t w = lo; w < hi; w++) {
        int64_t bi = w / c->chunks, d0 = (w % c->chunks) * SCAN_CHUNK;
        int64_t d1 = d0 + SCAN_CHUNK < c->D ? d0 + SCAN_CHUNK : c->D;
        size_t base = (size_t)(bi * c->T_ * c->D);
        T prev[SCAN_CHUNK] = {0};
        for (int64_t t = 0; t < c->T_; t++) {
            size_t row = base + (size_t)(t * c->D);
            const T *a = c->a + row, *b = c->b + row;
            T *h = c->out + row;
            for (int64_t d = d0; d < d1; d++) {
                T v = a[d] * prev[d - d0] + b[d];
                h[d] = v;
                prev[d - d0] = v;
            }
        }
    }
}

void FN(gad__scan_fwd)(const T *a, const T *b, T *h, int64_t B, int64_t T_, int64_t D) {
    FN(scan_ctx) c = {.a = a, .b = b, .out = h, .T_ = T_, .D = D,
                      .chunks = (D + SCAN_CHUNK - 1) / SCAN_CHUNK};
    gad__parallel_for(B * c.chunks, 256 / (T_ + 1) + 1, FN(scan_fwd_range), &c);
}

GAD_CLONES static void FN(scan_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(scan_ctx) *c = vc;
    for (int64_t w = lo; w < hi; w++) {
        int64_t bi = w / c->chunks, d0 = (w % c->chunks) * SCAN_CHUNK;
        int64_t d1 = d0 + SCAN_CHUNK < c->D ? d0 + SCAN_CHUNK : c->D;
        size_t base = (size_t)(bi * c->T_ * c->D);
        T carry[SCAN_CHUNK] = {0}; /* a_{t+1} G_{t+1} */
        for (int64_t t = c->T_ - 1; t >= 0; t--) {
            size_t row = base + (size_t)(t * c->D);
            const T *a = c->a + row, *gh = c->gh + row;
            const T *hp = t > 0 ? c->h + row - c->D : NULL;
            for (int64_t d = d0; d < d1; d++) {
                T G = gh[d] + carry[d - d0];
                if (c->gb) c->gb[row + d] = G;
                if (c->ga) c->ga[row + d] = hp ? G * hp[d] : (T)0;
                carry[d - d0] = a[d] * G;
            }
        }
    }
}

void FN(gad__scan_bwd)(const T *a, const T *h, const T *gh, T *ga, T *gb, int64_t B,
                       int64_t T_, int64_t D) {
    FN(scan_ctx) c = {.a = a, .h = h, .gh = gh, .ga = ga, .gb = gb, .T_ = T_, .D = D,
                      .chunks = (D + SCAN_CHUNK - 1) / SCAN_CHUNK};
    gad__parallel_for(B * c.chunks, 256 / (T_ + 1) + 1, FN(scan_bwd_range), &c);
}

#undef FN
#undef CAT
#undef CAT_
