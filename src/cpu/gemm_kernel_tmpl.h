/* gemm_kernel_tmpl.h: the packed micro-kernel of the CPU GEMM (the contract
 * is in gemm_int.h), written once over a vector type and included once per
 * kernel by the ISA files (gemm_avx512.c, gemm_avx2.c, gemm_generic.c). Each
 * inclusion defines one function, GK_NAME, from the GK_ macros the includer
 * defined just before (listed below), and undefines them. */

#ifndef GAD_GEMM_KERNEL_TMPL_ONCE
#define GAD_GEMM_KERNEL_TMPL_ONCE

/* A kernel whose tile rows are two vectors (NR = 2 * lanes). The including
 * code defines GK_VT (vector type), GK_ET (element type), GK_ZERO(),
 * GK_SET1(x), GK_LOAD(p) (aligned), GK_LOADU(p), GK_STOREU(p, v),
 * GK_FMA(a, b, c) (a*b + c), GK_MUL(a, b), GK_ADD(a, b), GK_LANES; and for
 * the function, GK_NAME, GK_ATTR (its target attribute, or nothing),
 * GK_ROWS (GEMM_ROWS6 or GEMM_ROWS12) and GK_MR (its count). */
#define GK_DECL(i) GK_VT c##i##_0 = GK_ZERO(), c##i##_1 = GK_ZERO();
#define GK_STEP(i)                                                            \
    {                                                                          \
        GK_VT av_ = GK_SET1(a[i]);                                             \
        c##i##_0 = GK_FMA(av_, b0, c##i##_0);                                  \
        c##i##_1 = GK_FMA(av_, b1, c##i##_1);                                  \
    }
#define GK_STORE0(i)                                                           \
    GK_STOREU(c + (i)*ldc, GK_MUL(va, c##i##_0));                              \
    GK_STOREU(c + (i)*ldc + GK_LANES, GK_MUL(va, c##i##_1));
#define GK_STOREB(i)                                                           \
    {                                                                          \
        GK_ET *cr_ = c + (i)*ldc;                                              \
        GK_VT t0_ = GK_MUL(va, c##i##_0), t1_ = GK_MUL(va, c##i##_1);          \
        GK_VT u0_ = GK_MUL(vb, GK_LOADU(cr_));                                 \
        GK_VT u1_ = GK_MUL(vb, GK_LOADU(cr_ + GK_LANES));                      \
        GK_STOREU(cr_, GK_ADD(t0_, u0_));                                      \
        GK_STOREU(cr_ + GK_LANES, GK_ADD(t1_, u1_));                           \
    }
/* The body: ROWS is GEMM_ROWS6 or GEMM_ROWS12, MR its count. */
#define GK_BODY(ROWS, MR)                                                      \
    ROWS(GK_DECL)                                                              \
    for (int64_t k = 0; k < kc; k++) {                                         \
        GK_VT b0 = GK_LOAD(b), b1 = GK_LOAD(b + GK_LANES);                     \
        ROWS(GK_STEP)                                                          \
        a += (MR);                                                             \
        b += 2 * GK_LANES;                                                     \
    }                                                                          \
    GK_VT va = GK_SET1(alpha);                                                 \
    if (beta == 0) {                                                           \
        ROWS(GK_STORE0)                                                        \
    } else {                                                                   \
        GK_VT vb = GK_SET1(beta);                                              \
        ROWS(GK_STOREB)                                                        \
    }

#endif /* GAD_GEMM_KERNEL_TMPL_ONCE */

GK_ATTR void GK_NAME(int64_t kc, const GK_ET *a, const GK_ET *b, GK_ET *c,
                     int64_t ldc, GK_ET alpha, GK_ET beta) {
    GK_BODY(GK_ROWS, GK_MR)
}

#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES
#undef GK_NAME
#undef GK_ATTR
#undef GK_ROWS
#undef GK_MR
