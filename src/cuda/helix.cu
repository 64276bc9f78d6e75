/* helix.cu: the HELIX block on the device, composed as the CPU composes it
 * (src/cpu/helix_tmpl.h): cuBLAS GEMMs (blas.cu) between the row passes of
 * rows.cuh, each of which fuses one step's elementwise work and norms.
 * Every sum has a fixed order: no atomics. */
#include "cuda/rows.cuh"

/* ---------------------------------------------------------- HELIX block */

enum { X_, WA, WB, WO, WF1, WF2, G1, G2, G3, G4, A_, H_, OUT1, F1, F2, S2, XN2 };

template <class T>
struct helix {
    int ord, dtype;
    cudaStream_t s;
    int64_t B, Tn, D, M;
    double eps;
    /* row-major C = op(A) op(B) (alpha 1) + beta C */
    int gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
             const T *b, int64_t ldb, double beta, T *c, int64_t ldc) {
        return gcu_gemm(ord, dtype, ta, tb, m, n, k, 1.0, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
    }
    void pass(int p, pass_args<T> c) {
        c.eps = eps;
        run_pass<T>(ord, s, p, M, D, c);
    }
    void colsum(const T *p, const T *q, T *out, int64_t n) {
        k_colsum<T><<<gcu_blocks(n), GCU_THREADS, 0, s>>>(p, q, out, M, n);
        GCU_LAUNCHED(ord, "column sums");
    }
};

template <class T>
static pass_args<T> P() {
    pass_args<T> c = {};
    return c;
}

template <class T>
static int helix_fwd_t(helix<T> &hx, T *const *t, T *y, int *oom) {
    const int64_t M = hx.M, D = hx.D, D2 = 2 * D, MD = M * D;
    const int ord = hx.ord;
    T *xn = (T *)gcu_alloc(ord, (size_t)MD * sizeof(T));
    T *ub = (T *)gcu_alloc(ord, (size_t)MD * sizeof(T));
    T *sf1 = (T *)gcu_alloc(ord, (size_t)(M * D2) * sizeof(T));
    int rc = -1;
    pass_args<T> c;
    if (!xn || !ub || !sf1) {
        *oom = 1;
        goto out;
    }
    /* 1-4: xn = rms(x) g1; a = sigmoid(xn @ wa[:D] + wa[D]) */
    c = P<T>(), c.x = t[X_], c.gain = t[G1], c.o = xn;
    hx.pass(HX_XN, c);
    if (hx.gemm(0, 0, M, D, D, xn, D, t[WA], D, 0, t[A_], D)) goto out;
    c = P<T>(), c.bias = t[WA] + D * D, c.o = t[A_];
    hx.pass(HX_GATE, c);
    /* 5-6: h = scan(a, xn @ wb) */
    if (hx.gemm(0, 0, M, D, D, xn, D, t[WB], D, 0, ub, D)) goto out;
    gcu_scan_fwd(ord, hx.dtype, t[A_], ub, t[H_], hx.B, hx.Tn, D);
    /* 7-9: s2 = silu(h g2); out1 = x + s2 @ wo; xn2 = rms(out1) g3 */
    c = P<T>(), c.x = t[H_], c.gain = t[G2], c.o = t[S2];
    hx.pass(HX_S2, c);
    if (hx.gemm(0, 0, M, D, D, t[S2], D, t[WO], D, 0, t[OUT1], D)) goto out;
    c = P<T>(), c.x = t[X_], c.h = t[OUT1], c.gain = t[G3], c.o = t[XN2];
    hx.pass(HX_RES_NORM, c);
    /* 10-11: f2 = silu(xn2 @ wf1) @ wf2; y = out1 + f2 g4 */
    if (hx.gemm(0, 0, M, D2, D, t[XN2], D, t[WF1], D2, 0, t[F1], D2)) goto out;
    c = P<T>(), c.x = t[F1], c.o = sf1;
    hx.pass(HX_SILU2, c);
    if (hx.gemm(0, 0, M, D, D2, sf1, D2, t[WF2], D, 0, t[F2], D)) goto out;
    c = P<T>(), c.x = t[F2], c.h = t[OUT1], c.gain = t[G4], c.o = y;
    hx.pass(HX_OUT, c);
    rc = 0;
out:
    gcu_free(ord, xn);
    gcu_free(ord, ub);
    gcu_free(ord, sf1);
    return rc;
}

template <class T>
static int helix_bwd_t(helix<T> &hx, T *const *t, const T *gy, T *const *g, int *oom) {
    const int64_t M = hx.M, D = hx.D, D2 = 2 * D, MD = M * D;
    const int ord = hx.ord;
    enum { NT = 7 };
    const int64_t sizes[NT] = {MD, M * D2, M * D2, MD, MD, MD, MD};
    T *tmp[NT] = {};
    int rc = -1;
    for (int i = 0; i < NT; i++)
        if (!(tmp[i] = (T *)gcu_alloc(ord, (size_t)sizes[i] * sizeof(T)))) {
            *oom = 1;
            for (int j = 0; j < i; j++) gcu_free(ord, tmp[j]);
            return -1;
        }
    T *dm = tmp[0], *sf1 = tmp[1], *dpre = tmp[2], *dxn2 = tmp[3], *dout1 = tmp[4], *gh = tmp[5];
    T *gb = tmp[6];
    T *rn = sf1, *xn = dpre, *gua = dxn2, *xn2 = dm, *dxn1 = gh; /* reused once free */
    pass_args<T> c;
    /* FFN: gg4; dm = gy g4; gwf2 = silu(f1)^T dm; d_pre = (dm @ wf2^T) silu'(f1) */
    if (g[G4]) hx.colsum(gy, t[F2], g[G4], D);
    c = P<T>(), c.x = gy, c.gain = t[G4], c.o = dm;
    hx.pass(HX_DM, c);
    c = P<T>(), c.x = t[F1], c.o = sf1;
    hx.pass(HX_SILU2, c);
    if (g[WF2] && hx.gemm(1, 0, D2, D, M, sf1, D2, dm, D, 0, g[WF2], D)) goto out;
    if (hx.gemm(0, 1, M, D2, D, dm, D, t[WF2], D, 0, dpre, D2)) goto out;
    c = P<T>(), c.x = t[F1], c.o = dpre;
    hx.pass(HX_DPRE, c);
    /* xn2 = rms(out1) g3 recomputed (rn = rms(out1) when gg3 is needed) */
    c = P<T>(), c.x = t[OUT1], c.gain = t[G3], c.o = xn2, c.rn = g[G3] ? rn : NULL;
    hx.pass(HX_XN, c);
    if (g[WF1] && hx.gemm(1, 0, D, D2, M, xn2, D, dpre, D2, 0, g[WF1], D2)) goto out;
    if (hx.gemm(0, 1, M, D, D2, dpre, D2, t[WF1], D2, 0, dxn2, D)) goto out;
    /* second norm: gg3; dout1 = rms_bwd(out1, dxn2 g3) + gy */
    if (g[G3]) hx.colsum(dxn2, rn, g[G3], D);
    c = P<T>(), c.x = t[OUT1], c.g = dxn2, c.gain = t[G3], c.add = gy, c.o = dout1;
    hx.pass(HX_RMS_BWD, c);
    /* scan output: gwo = s2^T dout1 (s2 recomputed into dm); ghg; gg2; dh */
    if (g[WO]) {
        c = P<T>(), c.x = t[H_], c.gain = t[G2], c.o = dm;
        hx.pass(HX_S2, c);
        if (hx.gemm(1, 0, D, D, M, dm, D, dout1, D, 0, g[WO], D)) goto out;
    }
    if (hx.gemm(0, 1, M, D, D, dout1, D, t[WO], D, 0, gh, D)) goto out;
    c = P<T>(), c.x = t[H_], c.gain = t[G2], c.o = gh;
    hx.pass(HX_GHG, c);
    if (g[G2]) hx.colsum(gh, t[H_], g[G2], D);
    c = P<T>(), c.gain = t[G2], c.o = gh;
    hx.pass(HX_DH, c);
    /* the scan: (ga, gb); gua = ga a (1 - a) */
    gcu_scan_bwd(ord, hx.dtype, t[A_], t[H_], gh, gua, gb, hx.B, hx.Tn, D);
    c = P<T>(), c.x = t[A_], c.o = gua;
    hx.pass(HX_GUA, c);
    /* xn = rms(x) g1 recomputed (rn = rms(x)); gwa = [xn, 1]^T gua; gwb */
    c = P<T>(), c.x = t[X_], c.gain = t[G1], c.o = xn, c.rn = rn;
    hx.pass(HX_XN, c);
    if (g[WA]) {
        if (hx.gemm(1, 0, D, D, M, xn, D, gua, D, 0, g[WA], D)) goto out;
        hx.colsum(gua, NULL, g[WA] + D * D, D); /* the bias row */
    }
    if (g[WB] && hx.gemm(1, 0, D, D, M, xn, D, gb, D, 0, g[WB], D)) goto out;
    /* dxn1 = gua @ wa[:D]^T + gb @ wb^T (into gh); gg1; dx */
    if (hx.gemm(0, 1, M, D, D, gua, D, t[WA], D, 0, dxn1, D)) goto out;
    if (hx.gemm(0, 1, M, D, D, gb, D, t[WB], D, 1, dxn1, D)) goto out;
    if (g[G1]) hx.colsum(dxn1, rn, g[G1], D);
    if (g[X_]) {
        c = P<T>(), c.x = t[X_], c.g = dxn1, c.gain = t[G1], c.add = dout1, c.o = g[X_];
        hx.pass(HX_RMS_BWD, c);
    }
    rc = 0;
out:
    for (int i = 0; i < NT; i++) gcu_free(ord, tmp[i]);
    return rc;
}

template <class T>
static helix<T> helix_of(int ord, int dtype, cudaStream_t s, int64_t B, int64_t Tn, int64_t D,
                         double eps) {
    helix<T> h;
    h.ord = ord, h.dtype = dtype, h.s = s, h.B = B, h.Tn = Tn, h.D = D, h.M = B * Tn, h.eps = eps;
    return h;
}

extern "C" int gcu_helix_fwd(int ord, int dtype, void *const *t, void *y, int64_t B, int64_t Tn,
                             int64_t D, double eps, int *oom) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    if (dtype == GAD_F32) {
        helix<float> h = helix_of<float>(ord, dtype, s, B, Tn, D, eps);
        return helix_fwd_t<float>(h, (float *const *)t, (float *)y, oom);
    }
    helix<double> h = helix_of<double>(ord, dtype, s, B, Tn, D, eps);
    return helix_fwd_t<double>(h, (double *const *)t, (double *)y, oom);
}

extern "C" int gcu_helix_bwd(int ord, int dtype, void *const *t, const void *gy, void *const *grads,
                             int64_t B, int64_t Tn, int64_t D, double eps, int *oom) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    if (dtype == GAD_F32) {
        helix<float> h = helix_of<float>(ord, dtype, s, B, Tn, D, eps);
        return helix_bwd_t<float>(h, (float *const *)t, (const float *)gy, (float *const *)grads, oom);
    }
    helix<double> h = helix_of<double>(ord, dtype, s, B, Tn, D, eps);
    return helix_bwd_t<double>(h, (double *const *)t, (const double *)gy, (double *const *)grads,
                               oom);
}
