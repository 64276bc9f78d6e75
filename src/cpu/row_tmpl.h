/* row_tmpl.h: the row sums that RMS norm and the HELIX block share (in
 * their templates, rms_norm_tmpl.h and helix_tmpl.h, for T and FN): static
 * inline, so that each family's loops inline them as before. */

/* sum_j a[j] b[j] (b NULL: sum_j a[j]^2; c non-NULL: a[j] b[j] c[j]) in
 * double, with 16 independent accumulators so that the loop vectorizes;
 * the order depends on n only. */
static inline double FN(dot)(const T *a, const T *b, const T *c, int64_t n) {
    /* the accumulators start as the first 16 terms (zeroing them, gcc's
     * rep stos, cost as much as a row of 256) */
    double s[16];
    int64_t j = 0;
    if (n < 16) {
        for (int k = 0; k < 16; k++) s[k] = 0;
    } else {
        for (int k = 0; k < 16; k++) { /* 0 + the term: the same bits, -0 included */
            double v = (double)a[k] * (double)(b ? b[k] : a[k]);
            s[k] = 0.0 + (c ? v * (double)c[k] : v);
        }
        j = 16;
    }
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; k++) {
            double v = (double)a[j + k] * (double)(b ? b[j + k] : a[j + k]);
            s[k] += c ? v * (double)c[j + k] : v;
        }
    double t = 0;
    for (; j < n; j++) {
        double v = (double)a[j] * (double)(b ? b[j] : a[j]);
        t += c ? v * (double)c[j] : v;
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) s[k] += s[k + w];
    return s[0] + t;
}

/* 1 / sqrt(mean(x^2) + eps) of one row, accumulated in double */
static inline double FN(rms_inv)(const T *x, int64_t n, double eps) {
    return 1.0 / sqrt(FN(dot)(x, NULL, NULL, n) / (double)n + eps);
}
