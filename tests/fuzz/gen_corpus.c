/* gen_corpus.c: writes the seed corpora of the two fuzzers.
 *
 *     gen_corpus CORPUS_OPS_DIR CORPUS_LOAD_DIR PYTHON_WRITTEN_SAFETENSORS
 *
 * corpus_ops: hand-written programs for fuzz_ops' interpreter, one per
 * area (MLPs, softmax family, views, indexing, joins, fused ops, errors,
 * empty and huge-dim tensors, threads, higher-order gradients, ...). The
 * program includes fuzz_ops.c to find each opcode by name and to run every
 * seed through LLVMFuzzerTestOneInput before writing it.
 *
 * corpus_load: checkpoints written by gad_save (dtypes, ranks 0..8, empty
 * tensors, odd names, special values), the PyTorch-written reference file,
 * and hand-made malformed or unsupported ones.
 *
 * The output is committed (tests/fuzz/corpus_*); rerun this after changing
 * the byte layout of fuzz_ops' instructions, then remove stale files. Files
 * named crash-* (reproducers of findings) are not written here. */
#include "fuzz_ops.c"

#include <sys/stat.h>

/* ======================================================================== */
/* Writing programs                                                          */
/* ======================================================================== */

static struct {
    uint8_t b[8192];
    size_t n;
    int step; /* the number of the step being written */
} P;
static const char *ops_dir;
static int n_ops_written, n_load_written;

static void put(unsigned v) {
    if (P.n == sizeof P.b) abort();
    P.b[P.n++] = (uint8_t)v;
}

static void begin(unsigned flags, unsigned flags2, unsigned seed) {
    P.n = 0;
    P.step = -1;
    put(flags);
    put(flags2);
    put(seed);
}

/* The opcode of the op named name. */
static void op(const char *name) {
    for (unsigned i = 0; i < N_OPS; i++)
        if (strcmp(smooth_ops[i].name, name) == 0) {
            put(i);
            P.step++;
            return;
        }
    fprintf(stderr, "gen_corpus: no op named %s\n", name);
    exit(1);
}

/* An operand: the result of step k. */
static void R(int k) {
    if (k < 0 || k >= P.step) {
        fprintf(stderr, "gen_corpus: step %d reads step %d\n", P.step, k);
        exit(1);
    }
    put((unsigned)(P.step - 1 - k));
}
static void RNULL(void) { put(0xFF); }

/* The byte that makes dim d. */
static unsigned D(int64_t d) {
    for (unsigned i = 0; i < 16; i++)
        if (small_dims[i] == d) return i;
    for (unsigned i = 0; i < 32; i++)
        if (wide_dims[i] == d) return 0xE0 + i;
    fprintf(stderr, "gen_corpus: no byte for dim %lld\n", (long long)d);
    exit(1);
}

/* A shape: a rank byte, then the dims. (A rank byte 0xC0 + r with
 * (0xC0 + r) % 5 == rank adds a byte that replaces one dim with a negative
 * or huge value: see shape_of.) */
static void S(int rank, ...) {
    va_list ap;
    put((unsigned)rank);
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) put(D(va_arg(ap, int64_t)));
    va_end(ap);
}
#define S0() S(0)
#define S1(a) S(1, (int64_t)(a))
#define S2(a, b) S(2, (int64_t)(a), (int64_t)(b))
#define S3(a, b, c) S(3, (int64_t)(a), (int64_t)(b), (int64_t)(c))
#define S4(a, b, c, d) S(4, (int64_t)(a), (int64_t)(b), (int64_t)(c), (int64_t)(d))

/* Index of v in a table of n values. */
static unsigned idx_d(const double *t, int n, double v) {
    for (int i = 0; i < n; i++)
        if (t[i] == v || (isnan(t[i]) && isnan(v))) return (unsigned)i;
    fprintf(stderr, "gen_corpus: no entry for %g\n", v);
    exit(1);
}
static unsigned idx_i(const int64_t *t, int n, int64_t v) {
    for (int i = 0; i < n; i++)
        if (t[i] == v) return (unsigned)i;
    fprintf(stderr, "gen_corpus: no entry for %lld\n", (long long)v);
    exit(1);
}
/* A scalar operand (non-smooth and smooth tables). */
static void V(double v) { put(idx_d(scalars, 32, v)); }
static void VS(double v) { put(idx_d(smooth_scalars, 16, v)); }
/* An axis in [0, rank) or its negative form. */
static void AX(int a, int rank) {
    if (rank <= 0) {
        put(a == 0 ? 0 : 1);
    } else if (a >= 0) {
        put((unsigned)a);
    } else {
        /* b & 0x80 with b % rank == a + rank */
        for (unsigned b = 0x80; b < 0xF0; b++)
            if ((int)(b % (unsigned)rank) == a + rank) {
                put(b);
                return;
            }
        abort();
    }
}
/* A bad axis: entry k of axis_of's table. */
static void AXBAD(int k) { put(0xF0u + (unsigned)k); }
static void RANGE(int64_t start, int64_t end, int64_t step) {
    static const int64_t rv[16] = {GAD_NIL, 0, 1, 2, -1, -2, 3, 5, -5, 100, -100,
                                   INT64_MIN + 1, INT64_MAX, GAD_NIL, 1, -3};
    static const int64_t sv[16] = {GAD_NIL, 1, 2, -1, -2, 3, 0, INT64_MAX,
                                   INT64_MIN + 1, -3, GAD_NIL, 1, -1, 4, 5, GAD_NIL};
    put(idx_i(rv, 16, start));
    put(idx_i(rv, 16, end));
    put(idx_i(sv, 16, step));
}
static void IDX(int64_t i) {
    static const int64_t v[16] = {0, 1, 2, -1, -2, 3, 5, -5, 100, -100, INT64_MAX,
                                  INT64_MIN, INT64_MIN + 1, 4, -3, 7};
    put(idx_i(v, 16, i));
}

/* Float data: normal draws with a seed, or small values (v * 16 in int8). */
static void DRANDN(unsigned seed) {
    put(2);
    put(seed);
}
static void DSMALL(int n, ...) {
    va_list ap;
    put(0);
    va_start(ap, n);
    for (int i = 0; i < n; i++) put((unsigned)(uint8_t)(int8_t)(va_arg(ap, double) * 16));
    va_end(ap);
}
static void DSPECIAL(int n, ...) { /* indices into float_data's specials */
    va_list ap;
    put(3);
    va_start(ap, n);
    for (int i = 0; i < n; i++) put((unsigned)va_arg(ap, int));
    va_end(ap);
}
/* i64 data: small values v in -1..4 */
static void DINT(int n, ...) {
    va_list ap;
    put(0);
    va_start(ap, n);
    for (int i = 0; i < n; i++) put((unsigned)(va_arg(ap, int) + 1));
    va_end(ap);
}
static void LEAF(void) { put(1); }
static void NOLEAF(void) { put(0); }

/* Constructors, as the interpreter reads them. */
static void from_f32_randn(int smooth, unsigned seed, int leaf, int rank, ...) {
    va_list ap;
    op("from");
    put(0);
    put((unsigned)rank);
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) put(D(va_arg(ap, int64_t)));
    va_end(ap);
    if (!smooth) put(0); /* data not NULL */
    DRANDN(seed);
    put(leaf ? 1 : 0);
}
static void randn_c(unsigned seed, int f64, int leaf, int rank, ...) {
    va_list ap;
    op("randn");
    put((unsigned)rank);
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) put(D(va_arg(ap, int64_t)));
    va_end(ap);
    put(seed);
    put(f64 ? 1 : 0);
    put(leaf ? 1 : 0);
}

static void write_bytes(const char *dir, const char *name, const void *b, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "gen_corpus: cannot write %s\n", path);
        exit(1);
    }
}

/* Run the program through the fuzzer (a violated invariant aborts), then
 * write it. */
static void emit(const char *name) {
    if (getenv("FUZZ_OPS_TRACE")) fprintf(stderr, "== %s\n", name);
    LLVMFuzzerTestOneInput(P.b, P.n);
    write_bytes(ops_dir, name, P.b, P.n);
    n_ops_written++;
}

/* ======================================================================== */
/* The op programs                                                           */
/* ======================================================================== */

#define SM F_SMOOTH
#define ALLGRAD (F_BACKWARD | F_CREATE_GRAPH | F_HVP | F_JVP)

static void ops_seeds(void) {
    /* --- a smooth two-layer MLP with an MSE loss: every gradient check */
    begin(SM | ALLGRAD, 0, 1);
    from_f32_randn(1, 11, 1, 2, (int64_t)4, (int64_t)3);      /* 0 x [4,3] leaf */
    op("linear"); R(0); put(D(5)); put(6); put(6);            /* 1 [4,5], w, b leaves */
    op("unary"); put(3); R(1);                                /* 2 tanh */
    op("linear"); R(2); put(D(2)); put(6); put(6);            /* 3 [4,2] */
    op("loss"); put(0); R(3); put(0); put(1);                 /* 4 mse vs aux target */
    emit("mlp_smooth_mse");

    /* --- a ReLU MLP with cross-entropy, f64 */
    begin(F_BACKWARD | F_HVP, F2_CLIP, 2);
    randn_c(3, 1, 1, 2, (int64_t)6, (int64_t)4);              /* 0 [6,4] f64 leaf */
    op("linear"); R(0); put(D(8)); put(6); put(6);            /* 1 */
    op("unary"); put(2); R(1);                                /* 2 relu */
    op("linear"); R(2); put(D(3)); put(6); put(2);            /* 3 logits [6,3] */
    op("loss"); put(2); R(3); put(0); put(1); put(0);         /* 4 cross_entropy, mean */
    emit("mlp_relu_cross_entropy");

    /* --- the softmax family along each axis */
    begin(SM | F_BACKWARD | F_CREATE_GRAPH, 0, 3);
    from_f32_randn(1, 5, 1, 2, (int64_t)3, (int64_t)5);       /* 0 */
    op("axis"); put(3); R(0); AX(-1, 2); put(0);              /* 1 softmax -1 */
    op("axis"); put(4); R(0); AX(0, 2); put(0);               /* 2 log_softmax 0 */
    op("axis"); put(2); R(0); AX(1, 2); put(1);               /* 3 logsumexp keep */
    op("axis"); put(0); R(0); AX(0, 2); put(0);               /* 4 amax */
    op("axis"); put(1); R(0); AX(-1, 2); put(1);              /* 5 argmax */
    op("binary"); put(2); R(1); put(0); R(2);                 /* 6 softmax * log_softmax */
    emit("softmax_family");

    /* --- sort, top-k, argmin, cumulative ops, sampling (issue 27) */
    begin(SM | F_BACKWARD | F_CREATE_GRAPH, 0, 5);
    from_f32_randn(1, 7, 1, 2, (int64_t)3, (int64_t)5);       /* 0 [3,5] leaf */
    op("sort"); put(0); R(0); AX(1, 2); put(1); put(1);       /* 1 sort desc, indices */
    op("sort"); put(2); R(0); AX(-1, 2); put(1); put(2);      /* 2 topk k 2 largest */
    op("sort"); put(5); R(0); AX(0, 2); put(0);               /* 3 cumprod 0 */
    op("sort"); put(4); R(0); AX(1, 2); put(0);               /* 4 cumsum 1 */
    op("sort"); put(3); R(0); AX(1, 2); put(1);               /* 5 argmin keep */
    op("sample"); put(1); R(0); put(2); put(5); put(3); put(1); /* 6 sample_logits */
    op("sample"); put(0); R(3); put(2); put(0);               /* 7 multinomial n 2, no repl. */
    emit("sort_family");

    /* --- the same ops on i64 and bool (the op byte / 6: 1 i64, 2 bool) */
    begin(F_BACKWARD, 0, 6);
    randn_c(8, 0, 0, 2, (int64_t)3, (int64_t)65);             /* 0 [3,65] (radix rows) */
    op("sort"); put(6 + 0); R(0); AX(1, 2); put(1); put(1);   /* 1 i64 sort desc, indices */
    op("sort"); put(12 + 1); R(0); AX(0, 2); put(0);          /* 2 bool argsort */
    op("sort"); put(6 + 2); R(0); AX(-1, 2); put(1); put(2);  /* 3 i64 topk k 2 */
    op("sort"); put(12 + 2); R(0); AX(-1, 2); put(1); put(2); /* 4 bool topk: an error */
    op("sort"); put(6 + 3); R(0); AX(1, 2); put(0);           /* 5 i64 argmin */
    op("sort"); put(12 + 4); R(0); AX(1, 2); put(0);          /* 6 bool cumsum */
    op("sort"); put(6 + 5); R(0); AX(0, 2); put(0);           /* 7 i64 cumprod */
    emit("sort_family_int");

    /* --- matmul big enough for two GEMM threads */
    begin(F_BACKWARD, 0, 4);
    randn_c(7, 0, 1, 2, (int64_t)64, (int64_t)64);            /* 0 [64,64] leaf */
    op("matmul"); R(0); put(3 | 8 | 0x10); put(D(64));        /* 1 @ aux [64,64] leaf */
    op("unary"); put(3); R(1);                                /* 2 tanh */
    op("matmul"); R(2); put(0); R(0);                         /* 3 [64,64] @ [64,64] */
    emit("threads_matmul");

    /* --- big elementwise and reductions: the parallel kernels */
    begin(F_BACKWARD | F_LOSS_LAST, 0, 5);
    op("big"); put(3); put(1); LEAF();                        /* 0 [131072] leaf */
    op("unary"); put(4); R(0);                                /* 1 exp */
    op("big"); put(4); put(2); LEAF();                        /* 2 [1024,64] leaf */
    op("axis"); put(3); R(2); AX(-1, 2); put(0);              /* 3 softmax */
    op("sum"); put(0); R(3); put(1); AX(0, 2);                /* 4 sum axis 0 */
    op("all"); R(1); put(1);                                  /* 5 mean_all */
    op("binary"); put(0); R(4); put(0); R(5);                 /* 6 */
    emit("threads_big_elementwise");

    begin(SM | F_BACKWARD, F2_CACHE_OFF, 6);
    op("big"); put(9); put(0x21); LEAF();                     /* 0 [2,128,128] f64 */
    op("unary"); put(9); R(0);                                /* 1 gelu */
    op("norm"); put(1); R(1); put(0);                         /* 2 rms_norm */
    op("axis"); put(2); R(2); AX(1, 3); put(0);               /* 3 logsumexp */
    emit("threads_big_smooth");

    begin(F_BACKWARD, 0, 7);
    op("big"); put(7); put(0x40); LEAF();                     /* 0 [8,4099]^T */
    op("unary"); put(8); R(0);                                /* 1 silu */
    op("sum"); put(2); R(1); put(1 | 0x10); AX(1, 2);         /* 2 variance keep */
    op("axis"); put(0); R(0); AX(0, 2); put(1);               /* 3 amax */
    op("axis"); put(1); R(0); AX(-1, 2); put(0);              /* 4 argmax */
    emit("threads_big_reduce");

    /* --- batched matmul (batches run on threads) and 1-D rules */
    begin(F_BACKWARD | F_HVP, 0, 8);
    randn_c(9, 0, 1, 3, (int64_t)4, (int64_t)8, (int64_t)16); /* 0 [4,8,16] leaf */
    op("matmul"); R(0); put(3 | 4 | 8); put(D(5));           /* 1 @ aux [4,16,5] */
    randn_c(10, 0, 1, 1, (int64_t)5);                         /* 2 [5] leaf */
    op("matmul"); R(1); put(0); R(2);                         /* 3 [4,8] */
    op("matmul"); R(2); put(0); R(2);                         /* 4 [] */
    emit("matmul_batched_1d");

    /* --- views: permute, reshape -1, reverse slices, select, squeeze,
     * unsqueeze, broadcast_to, transpose, swapaxes, flatten */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 9);
    randn_c(12, 0, 1, 3, (int64_t)2, (int64_t)3, (int64_t)4); /* 0 */
    op("permute"); R(0); put(0); put(1); put(0);              /* 1 */
    op("reshape"); R(1); put(2 << 1); put(D(4));              /* 2 [4,-1] */
    op("slice"); R(2); put(2);                                /* 3 [::-1, 1::2] */
    RANGE(GAD_NIL, GAD_NIL, -1); RANGE(1, GAD_NIL, 2);
    op("select"); R(3); AX(0, 2); IDX(-1);                    /* 4 */
    op("unsqueeze"); R(4); AX(0, 2);                          /* 5 [1,3] */
    op("broadcast_to"); R(5); put(1 << 2); put(D(2)); put(1); put(D(4)); /* 6 [2,4,3] */
    op("transpose"); R(6);                                    /* 7 */
    op("swapaxes"); R(7); AX(0, 3); AX(-1, 3);                /* 8 */
    op("squeeze"); R(5); put(2); AX(0, 2);                    /* 9 */
    op("flatten"); R(8);                                      /* 10 */
    op("reshape"); R(8); put(1); S2(4, 6);                    /* 11 view of strided: error */
    op("misc"); R(8); put(2);                                 /* 12 contiguous */
    emit("views_chain");

    /* --- slices with negative steps, out-of-range bounds, step 0 */
    begin(0, 0, 10);
    op("arange"); put(0); put(0); put(48); put(0); NOLEAF();  /* 0 arange(0,12) f32 */
    op("reshape"); R(0); put(2 << 1); put(D(3));              /* 1 [3,4] */
    op("slice"); R(1); put(2); RANGE(-1, -100, -1); RANGE(100, 0, -2); /* 2 */
    op("slice"); R(1); put(1); RANGE(INT64_MIN + 1, INT64_MAX, INT64_MAX); /* 3 */
    op("slice"); R(1); put(1); RANGE(0, 2, 0);                /* 4 step 0: error */
    op("slice"); R(1); put(3); RANGE(0, 1, 1); RANGE(0, 1, 1); RANGE(0, 1, 1); /* 5 n > rank */
    op("slice"); R(1); put(2); RANGE(-100, GAD_NIL, -1); RANGE(GAD_NIL, GAD_NIL, INT64_MIN + 1);
    op("select"); R(1); AX(1, 2); IDX(INT64_MIN);             /* 7 */
    op("select"); R(1); AX(1, 2); IDX(-5);                    /* 8 */
    emit("slices_edges");

    /* --- gather, scatter_add, take with in-range indices */
    begin(F_BACKWARD | F_CREATE_GRAPH | F_HVP, 0, 11);
    randn_c(13, 0, 1, 2, (int64_t)4, (int64_t)5);             /* 0 */
    op("gather"); put(0); R(0); AX(1, 2); put(1); put(D(3)); put(0); put(0); /* 1 */
    op("gather"); put(2); R(0); AX(0, 2); put(1); put(0);     /* 2 take axis 0 */
    op("gather"); put(1); R(0); AX(1, 2); put(3); put(D(7)); put(0); put(5); /* 3 scatter_add */
    op("binary"); put(2); R(1); put(3 | (1 << 2));            /* 4 */
    emit("gather_scatter_take");

    /* --- indices out of range, negative, wrong dtype */
    begin(0, 0, 12);
    randn_c(14, 0, 1, 2, (int64_t)3, (int64_t)4);             /* 0 */
    op("gather"); put(0); R(0); AX(0, 2); put(1); put(D(2)); put(0); put(6); /* 1 out of range */
    op("gather"); put(2); R(0); AX(1, 2); put(1); put(7);     /* 2 below -dim */
    op("gather"); put(0); R(0); AX(0, 2); put(0); R(0);       /* 3 float index */
    op("from"); put(2); S1(3); put(0); put(2); put(0); put(1); put(7); NOLEAF(); /* 4 i64 ext */
    op("gather"); put(2); R(0); AX(0, 2); put(0); R(4);       /* 5 */
    emit("index_errors");

    /* --- cat and stack */
    begin(F_BACKWARD | F_JVP, 0, 13);
    randn_c(15, 0, 1, 2, (int64_t)2, (int64_t)3);             /* 0 */
    op("join"); put(3); R(0); AX(0, 2); put(1); put(D(4)); put(0); R(0); /* 1 cat 3 */
    op("join"); put(0x11); R(0); AX(2, 3); put(1);            /* 2 stack 2 at end */
    op("join"); put(1); R(0); AX(1, 2);                       /* 3 cat of one */
    op("join"); put(0); AX(0, 0);                             /* 4 cat of none */
    op("join"); put(2); R(0); AX(0, 2); put(0); R(2);         /* 5 rank mismatch */
    emit("cat_stack");

    /* --- fused: gated scan (with sigmoid decays), rms_norm, embedding */
    begin(SM | F_BACKWARD | F_CREATE_GRAPH | F_HVP, 0, 14);
    from_f32_randn(1, 16, 1, 3, (int64_t)2, (int64_t)5, (int64_t)3); /* 0 */
    op("gated_scan"); R(0); put(3);                           /* 1 */
    op("norm"); put(1); R(1); put(0);                         /* 2 rms_norm */
    randn_c(17, 0, 1, 2, (int64_t)6, (int64_t)3);             /* 3 table */
    op("embedding"); put(1 | 2); R(3); S2(2, 3); put(0);      /* 4 embedding_fused */
    op("embedding"); put(2); R(3); S1(4); put(0);             /* 5 embedding */
    emit("fused_scan_rms_embedding");

    /* --- masked cross-entropy with zero, negative and fractional weights */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 15);
    randn_c(18, 0, 1, 2, (int64_t)5, (int64_t)7);             /* 0 */
    op("masked_ce"); R(0); put(3); put(0); put(0); put(1); put(2); put(3); put(5); /* 1 */
    op("masked_ce"); R(0); put(3); put(0); put(1); put(1); put(1); put(1); put(1); /* 2 all 0 */
    op("masked_ce"); R(0); put(3); put(6); put(0); put(0); put(0); put(0); put(0); /* 3 bad t */
    emit("masked_ce");

    /* --- a HELIX block with aux x and weight leaves */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 16);
    op("helix"); RNULL(); put(3); put(D(2)); put(D(3)); put(D(4)); /* 0 x [2,3,4] */
    for (int i = 0; i < 9; i++) put(6);                       /* weights: leaves */
    put(0);                                                   /* eps 1e-5 */
    emit("helix_block");

    begin(SM | F_BACKWARD | F_HVP, 0, 17);
    op("helix"); RNULL(); put(3); put(D(1)); put(D(4)); put(D(8));
    for (int i = 0; i < 9; i++) put(i == 3 ? 2 : 6);
    put(1);
    op("all"); R(0); put(0);
    emit("helix_block_smooth");

    /* --- layer norm, whiten, categorical entropy and log-prob, nll */
    begin(F_BACKWARD | F_HVP, 0, 18);
    randn_c(19, 1, 1, 2, (int64_t)4, (int64_t)6);             /* 0 f64 */
    op("norm"); put(0); R(0); put(0); put(6); put(6);         /* 1 layer_norm */
    op("norm"); put(3); R(0); put(0);                         /* 2 whiten */
    op("norm"); put(2); R(0); put(0);                         /* 3 entropy */
    op("loss"); put(3); R(0); put(0); put(1); put(0);         /* 4 log_prob */
    op("axis"); put(4); R(0); AX(-1, 2); put(0);              /* 5 log_softmax */
    op("loss"); put(1); R(5); put(2); put(1); put(0);         /* 6 nll, none */
    emit("norms_and_categorical");

    /* --- dropout, with and without training, p = 0 and a NULL rng */
    begin(F_BACKWARD, 0, 19);
    randn_c(20, 0, 1, 2, (int64_t)8, (int64_t)8);             /* 0 */
    op("dropout"); R(0); put(1 | 0x10);                       /* 1 p 0.5 train */
    op("dropout"); R(0); put(1);                              /* 2 eval */
    op("dropout"); R(0); put(1 | 8 | 0x10);                   /* 3 NULL rng */
    op("dropout"); R(0); put(4 | 0x10);                       /* 4 p = 1 */
    emit("dropout");

    /* --- mixed dtypes, i64 into float ops, bad axes, NULL operands */
    begin(0, 0, 20);
    randn_c(21, 0, 0, 2, (int64_t)2, (int64_t)3);             /* 0 f32 */
    randn_c(22, 1, 0, 2, (int64_t)2, (int64_t)3);             /* 1 f64 */
    op("binary"); put(0); R(0); put(0); R(1);                 /* 2 mixed */
    op("full"); put(1); put(2); S2(2, 3); NOLEAF();           /* 3 i64 ones */
    op("unary"); put(4); R(3);                                /* 4 exp of i64 */
    op("axis"); put(3); R(0); AXBAD(0); put(0);               /* 5 axis INT_MIN */
    op("sum"); put(0); R(0); put(3); AX(0, 2); AX(0, 2); AX(1, 2); /* 6 dup axes */
    op("matmul"); R(0); put(0); R(0);                         /* 7 [2,3]@[2,3] */
    op("matmul"); RNULL(); put(0); R(0);                      /* 8 NULL */
    op("requires_grad"); R(3);                                /* 9 i64 leaf */
    op("sum"); put(0); R(0); put(0xE1); AX(0, 2);             /* 10 NULL axes */
    emit("errors_mixed");

    /* --- rank 0 and empty tensors */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 21);
    op("full"); put(3); put(0); S0(); V(2); LEAF();           /* 0 scalar 2 leaf */
    op("full"); put(0); put(0); S2(0, 3); LEAF();             /* 1 zeros [0,3] */
    op("sum"); put(0); R(1); put(1); AX(0, 2);                /* 2 sum over empty */
    op("sum"); put(1); R(1); put(1); AX(0, 2);                /* 3 mean: NaN */
    op("axis"); put(3); R(1); AX(0, 2); put(0);               /* 4 softmax on empty */
    op("matmul"); R(1); put(3 | 8); put(D(0));                /* 5 [0,3]@[3,0] */
    op("binary"); put(2); R(0); put(0); R(2);                 /* 6 scalar * [3] */
    op("unsqueeze"); R(0); AX(0, 0);                          /* 7 [1] */
    op("squeeze"); R(7); put(0); AX(0, 1);                    /* 8 [] */
    op("axis"); put(0); R(1); AX(0, 2); put(0);               /* 9 amax empty */
    op("reshape"); R(1); put(3 << 1); put(0);                 /* 10 [-1, 0] */
    op("permute"); R(0); put(0);                              /* 11 rank 0 */
    emit("rank0_and_empty");

    /* --- empty tensors with huge dims: size arithmetic near INT64_MAX */
    begin(0, 0, 22);
    op("full"); put(0); put(0); put(0xC0); put(D(3)); put(D(0)); put(0x60); /* 0 [MAX/8,0] */
    NOLEAF();
    op("join"); put(2); R(0); AX(0, 2); put(0); R(0);         /* 1 cat along the huge axis */
    op("join"); put(2); R(0); AX(1, 2); put(0); R(0);         /* 2 */
    op("sum"); put(0); R(0); put(1); AX(1, 2);                /* 3 sum the 0 axis */
    op("matmul"); R(0); put(0); R(0);                         /* 4 */
    op("transpose"); R(0);                                    /* 5 */
    op("matmul"); R(0); put(0); R(5);                         /* 6 */
    op("broadcast_to"); R(0); put(1 << 2); put(D(2));         /* 7 */
    op("slice"); R(0); put(1); RANGE(5, GAD_NIL, 1);          /* 8 */
    op("reshape"); R(0); put(1 << 1);                         /* 9 [-1] */
    emit("huge_empty_dims");

    /* --- printing special values, item, read, dim */
    begin(0, 0, 23);
    op("from"); put(0); S1(8); put(0); DSPECIAL(8, 0, 1, 4, 5, 6, 7, 8, 14); NOLEAF(); /* 0 */
    op("inspect"); R(0); put(0); put(255);                    /* print */
    op("inspect"); R(0); put(0); put(7);                      /* print, short buffer */
    op("from"); put(1); S2(2, 2); put(0); DSPECIAL(4, 9, 13, 15, 6); NOLEAF(); /* 3 */
    op("inspect"); R(3); put(0); put(40);
    op("inspect"); R(3); put(1); put(0);                      /* item of 4: error */
    op("inspect"); R(3); put(2); put(1);                      /* read, too small */
    op("inspect"); R(3); put(3); put(0); AXBAD(2);            /* dim 8 */
    emit("print_item_read");
}

static void ops_seeds_2(void) {
    /* --- gad_data_mut: copy-on-write under a graph, on a view, on an op's
     * output (not unique) */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 24);
    randn_c(30, 0, 1, 1, (int64_t)3);                         /* 0 leaf */
    op("unary"); put(1); R(0);                                /* 1 square */
    op("data_mut"); R(0); put(1); V(3);                       /* 2 x[1] = 3 */
    op("binary"); put(2); R(1); put(0); R(2);                 /* 3 */
    op("data_mut"); R(1); put(0); V(1);                       /* 4 not unique */
    op("reshape"); R(0); put(1 << 1);                         /* 5 view */
    op("data_mut"); R(5); put(2); V(-1);                      /* 6 */
    op("binary"); put(0); R(3); put(0); R(6);                 /* 7 */
    emit("data_mut_cow");

    /* --- a gradient in the middle, with GAD_CREATE_GRAPH, used again */
    begin(F_BACKWARD | F_HVP | F_CREATE_GRAPH, 0, 25);
    randn_c(31, 0, 1, 1, (int64_t)4);                         /* 0 leaf */
    op("unary"); put(3); R(0);                                /* 1 tanh */
    op("all"); R(1); put(0);                                  /* 2 sum */
    op("midgrad"); R(2); put(1);                              /* 3 d/dx, differentiable */
    op("binary"); put(2); R(3); put(0); R(0);                 /* 4 */
    op("midgrad"); R(4); put(0);                              /* 5 non-scalar: error */
    op("all"); R(4); put(1);                                  /* 6 */
    op("midgrad"); R(6); put(0);                              /* 7 plain */
    emit("midgrad_create_graph");

    /* --- optimizer steps (SGD with Nesterov, AdamW), clipping */
    begin(F_OPTIM | F_BACKWARD, F2_CLIP, 7);
    randn_c(32, 0, 1, 2, (int64_t)3, (int64_t)2);             /* 0 */
    op("linear"); R(0); put(D(4)); put(6); put(6);            /* 1 */
    op("all"); R(1); put(1);                                  /* 2 */
    emit("optim_sgd_nesterov");
    begin(SM | F_OPTIM | F_BACKWARD, F2_CLIP, 8);
    from_f32_randn(1, 33, 1, 2, (int64_t)2, (int64_t)2);
    op("unary"); put(10); R(0);                               /* softplus */
    emit("optim_adamw_smooth");

    /* --- anomaly mode: log at 0 makes the VJP infinite */
    begin(F_ANOMALY | F_BACKWARD, 0, 26);
    op("from"); put(0); S1(3); put(0); DSMALL(3, -1.0, 0.0, 1.0); LEAF(); /* 0 */
    op("unary"); put(11); R(0);                               /* 1 log */
    op("unary"); put(12); R(0);                               /* 2 sqrt */
    emit("anomaly_log");

    /* --- constructors */
    begin(0, 0, 27);
    op("linspace"); V(-1); V(1); put(7); put(1); LEAF();      /* 0 5 points f64 */
    op("eye"); put(5); put(2); NOLEAF();                      /* 1 eye(4) i64 */
    op("rng"); put(0); put(0); S2(3, 3); put(0x08); LEAF();   /* 2 uniform [0,1) */
    op("rng"); put(2); put(0); S1(5); put(0x2A); NOLEAF();    /* 3 ints */
    op("rng"); put(1); put(1); S2(2, 2); put(0x1A); LEAF();   /* 4 normal */
    op("init"); put(0); put(4); put(3); put(0); LEAF();       /* 5 xavier_uniform */
    op("init"); put(3); put(0); put(3); put(2); NOLEAF();     /* 6 fan_in 0: error */
    op("like"); R(5); put(1); V(0.5); NOLEAF();               /* 7 full_like */
    op("arange"); put(0xF0); put(0); put(0); put(0); NOLEAF(); /* 8 huge start, f32 */
    op("arange"); put(4); put(0); put(4); put(2); NOLEAF();   /* 9 i64, step 0.25 */
    op("eye"); put(0); put(0); NOLEAF();                      /* 10 eye(-1) */
    op("linspace"); V(0); V(1); put(0); put(0); NOLEAF();     /* 11 num -2 */
    op("full"); put(2); put(2); S1(2); V(NAN); NOLEAF();      /* 12 NaN into i64 */
    op("full"); put(0); put(0xFE); S1(2); NOLEAF();           /* 13 bad dtype */
    emit("constructors");

    /* --- pow, clamp, leaky_relu, maximum/minimum at ties, in smooth mode */
    begin(SM | F_BACKWARD | F_CREATE_GRAPH | F_HVP | F_JVP, 0, 28);
    op("from"); put(0); S1(6); DSMALL(6, -2.0, -1.0, 0.0, 0.0, 1.0, 2.0); LEAF(); /* 0 */
    op("scalar"); put(2); R(0); put(0);                       /* 1 pow 0 */
    op("scalar"); put(2); R(0); put(3);                       /* 2 pow 3 */
    op("scalar"); put(3); R(0); VS(1.5);                      /* 3 leaky 0.5 */
    op("scalar"); put(4); R(0); VS(-1); VS(1);                /* 4 clamp */
    op("binary"); put(4); R(0); put(0); R(0);                 /* 5 maximum tie */
    op("binary"); put(5); R(0); put(0); R(4);                 /* 6 minimum */
    op("unary"); put(5); R(0);                                /* 7 abs */
    op("unary"); put(6); R(0);                                /* 8 sign */
    emit("pow_clamp_ties_smooth");

    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 29);
    op("from"); put(1); S1(4); put(0); DSMALL(4, -1.0, 0.0, 0.5, 4.0); LEAF(); /* 0 f64 */
    op("scalar"); put(2); R(0); put(1);                       /* 1 pow 0.5 */
    op("scalar"); put(2); R(0); put(5);                       /* 2 pow -1 */
    op("scalar"); put(4); R(0); V(1); V(-1);                  /* 3 clamp lo > hi */
    op("scalar"); put(4); R(0); V(NAN); V(1);                 /* 4 NaN bound */
    op("binary"); put(3); R(0); put(0); R(0);                 /* 5 x / x */
    op("unary"); put(12); R(0);                               /* 6 sqrt */
    emit("pow_div_sqrt_kinks");

    /* --- casts f32 -> f64 -> i64 -> f32, an invalid dtype */
    begin(F_BACKWARD, 0, 30);
    randn_c(34, 0, 1, 2, (int64_t)2, (int64_t)3);             /* 0 */
    op("misc"); R(0); put(4); put(1);                         /* 1 f64 */
    op("misc"); R(1); put(4); put(2);                         /* 2 i64 */
    op("misc"); R(2); put(4); put(0);                         /* 3 f32 */
    op("binary"); put(0); R(0); put(0); R(3);                 /* 4 */
    op("misc"); R(0); put(4); put(0xFF);                      /* 5 invalid */
    op("misc"); R(1); put(0);                                 /* 6 detach */
    op("misc"); R(1); put(1);                                 /* 7 stop_gradient */
    op("binary"); put(2); R(6); put(0); R(7);                 /* 8 */
    emit("cast_detach_stop_gradient");

    /* --- no-grad mode around some ops */
    begin(F_BACKWARD, 0, 31);
    randn_c(35, 0, 1, 1, (int64_t)5);                         /* 0 */
    op("inspect"); R(0); put(4); put(1);                      /* 1 no-grad on */
    op("unary"); put(4); R(0);                                /* 2 exp, untracked */
    op("inspect"); R(0); put(4); put(1);                      /* 3 nested */
    op("inspect"); R(0); put(4); put(0);                      /* 4 off */
    op("unary"); put(3); R(0);                                /* 5 */
    op("binary"); put(2); R(2); put(0); R(5);                 /* 6 */
    emit("no_grad_nested");

    /* --- a seeded grad, and a non-leaf among the inputs */
    begin(F_BACKWARD, F2_SEEDED_GRAD, 32);
    randn_c(36, 0, 1, 2, (int64_t)3, (int64_t)3);
    op("unary"); put(7); R(0);
    emit("grad_seeded");
    begin(0, F2_NONLEAF_INPUT, 33);
    randn_c(37, 0, 1, 2, (int64_t)3, (int64_t)3);
    op("unary"); put(7); R(0);
    emit("grad_nonleaf_input");

    /* --- requires_grad on a view, then a write to its base */
    begin(F_BACKWARD | F_HVP, 0, 34);
    randn_c(38, 0, 0, 2, (int64_t)2, (int64_t)4);             /* 0 not a leaf */
    op("transpose"); R(0);                                    /* 1 view */
    op("requires_grad"); R(1);                                /* 2 leaf on a view */
    op("data_mut"); R(0); put(3); V(2);                       /* 3 */
    op("unary"); put(9); R(2);                                /* 4 gelu */
    op("binary"); put(0); R(4); put(0); R(3);                 /* 5 [4,2]+[2,4]: error */
    emit("leaf_on_view");

    /* --- broadcasting with size-1 and size-0 dims */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 35);
    randn_c(39, 0, 1, 3, (int64_t)4, (int64_t)1, (int64_t)3); /* 0 [4,1,3] */
    op("binary"); put(0); R(0); put(3 | (1 << 4));            /* 1 + aux [1,1,3] */
    op("binary"); put(1); R(0); put(3 | (1 << 2) | (2 << 4)); /* 2 - aux [1,3] */
    randn_c(40, 0, 1, 2, (int64_t)5, (int64_t)1);             /* 3 [5,1] */
    op("binary"); put(2); R(0); put(0); R(3);                 /* 4 [4,5,3] */
    op("full"); put(0); put(0); S2(0, 1); LEAF();             /* 5 [0,1] */
    op("binary"); put(0); R(3); put(0); R(5);                 /* 6 [5,1]+[0,1] err */
    op("binary"); put(0); R(0); put(0); R(5);                 /* 7 [4,0,3] */
    emit("broadcasting");

    /* --- one_hot and embeddings with bad indices */
    begin(0, 0, 36);
    randn_c(41, 0, 1, 2, (int64_t)4, (int64_t)3);             /* 0 [4,3] */
    op("embedding"); put(4 | 2); R(0); S1(5); put(0); put(6); /* 1 one_hot depth 5 */
    op("embedding"); put(2); R(0); S1(3); put(6);             /* 2 out of range */
    op("embedding"); put(1 | 2); R(0); S1(3); put(5);         /* 3 fused, negative */
    op("embedding"); put(4); R(0); R(0); put(0);              /* 4 one_hot of floats */
    op("embedding"); put(4 | 2 | 0x18); R(0); S1(0); put(0); put(0); /* 5 depth MAX */
    emit("embedding_one_hot");

    /* --- reshape corner cases */
    begin(0, 0, 37);
    op("full"); put(1); put(0); S2(0, 3); NOLEAF();           /* 0 [0,3] */
    op("reshape"); R(0); put(2 << 1); put(D(0));              /* 1 [0,-1] */
    op("reshape"); R(0); put(3 << 1 | 0x80); put(1);          /* 2 two -1 */
    randn_c(42, 0, 0, 2, (int64_t)4, (int64_t)6);             /* 3 */
    op("reshape"); R(3); put(2 << 1); put(D(5));              /* 4 [5,-1]: error */
    op("permute"); R(3); put(0x38); put(0); put(1); put(1);   /* 5 dup axes */
    op("permute"); R(3); put(7); put(0); put(0);              /* 6 n = rank + 1 */
    op("squeeze"); R(3); put(0); AX(0, 2);                    /* 7 size 4: error */
    op("unsqueeze"); R(3); AXBAD(2);                          /* 8 axis 8 */
    emit("reshape_permute_errors");

    /* --- linear and losses with wrong shapes and reductions */
    begin(F_BACKWARD, 0, 38);
    randn_c(43, 0, 1, 1, (int64_t)3);                         /* 0 [3] */
    op("linear"); R(0); put(D(2)); put(6); put(6);            /* 1 1-D x */
    op("linear"); R(0); put(D(2)); put(0); R(0); put(1);      /* 2 w = x: error */
    op("loss"); put(0); R(1); put(1); put(0); R(0);           /* 3 mse shape error */
    op("loss"); put(1); R(1); put(0xFF); put(1); put(0);      /* 4 nll, bad reduction */
    randn_c(44, 0, 1, 2, (int64_t)2, (int64_t)0);             /* 5 [2,0] */
    op("loss"); put(2); R(5); put(0); put(1); put(0);         /* 6 no classes */
    emit("linear_losses_errors");

    /* --- stddev and whiten of constant tensors (infinite derivatives) */
    begin(F_BACKWARD | F_HVP, 0, 39);
    op("full"); put(1); put(0); S2(3, 4); LEAF();             /* 0 ones */
    op("sum"); put(3); R(0); put(1); AX(1, 2);                /* 1 stddev */
    op("norm"); put(3); R(0); put(0);                         /* 2 whiten */
    op("norm"); put(0); R(0); put(3); put(1); put(1);         /* 3 layer_norm, eps 0 */
    op("norm"); put(1); R(0); put(7);                         /* 4 rms_norm, eps NaN */
    emit("constant_norms");

    /* --- gated scan errors and f64 */
    begin(F_BACKWARD | F_CREATE_GRAPH, 0, 40);
    randn_c(45, 1, 1, 3, (int64_t)2, (int64_t)4, (int64_t)2); /* 0 f64 */
    op("gated_scan"); R(0); put(1);                           /* 1 f64 scan */
    randn_c(46, 0, 1, 2, (int64_t)4, (int64_t)2);             /* 2 rank 2 */
    op("gated_scan"); R(2); put(1);                           /* 3 error */
    op("gated_scan"); R(0); put(0); R(2);                     /* 4 dtype mismatch */
    op("full"); put(0); put(0); S3(2, 0, 3); LEAF();          /* 5 T = 0 */
    op("gated_scan"); R(5); put(1);                           /* 6 */
    emit("gated_scan_edges");

    /* --- explicit i64 indices (with a negative one) for gather/scatter */
    begin(F_BACKWARD | F_CREATE_GRAPH | F_JVP, 0, 42);
    randn_c(48, 0, 1, 2, (int64_t)3, (int64_t)4);             /* 0 */
    op("from"); put(2); S2(3, 2); put(0); DINT(6, 0, 3, 1, 2, -1, 0); NOLEAF(); /* 1 */
    op("gather"); put(0); R(0); AX(1, 2); put(0); R(1);       /* 2 */
    op("gather"); put(1); R(0); AX(1, 2); put(0); R(1); R(2); /* 3 scatter_add */
    op("gather"); put(1); R(0); AX(-1, 2); put(0); R(1); R(0); /* 4 src shape error */
    emit("gather_scatter_explicit");

    /* --- a HELIX block with a wrong weight and without weights */
    begin(0, 0, 41);
    randn_c(47, 0, 1, 2, (int64_t)2, (int64_t)2);             /* 0 */
    op("helix"); RNULL(); put(1); put(D(1)); put(D(2)); put(D(3)); /* 1 x [1,2,3] */
    for (int i = 0; i < 9; i++) {                             /* wf2 = [2,2]: error */
        if (i == 4) {
            put(0);
            R(0);
        } else {
            put(2);
        }
    }
    put(0);
    op("helix"); RNULL(); put(0xF1); put(D(1)); put(D(2)); put(D(3)); /* 2 no weights */
    for (int i = 0; i < 9; i++) put(2);
    put(0);
    emit("helix_errors");
}

/* ======================================================================== */
/* Reproducers of findings                                                   */
/* ======================================================================== */
/* Minimal programs for the bugs the fuzzer found (README.md, "Findings").
 * They are written without being run: until the library is fixed, they
 * fail (that is what they are for). */

/* Threaded mode: the program starts with the NSHARED snapshots of the
 * shared constants in registers 0..3 (f32 [4], f64 [2,3], f32 [3,4], i64
 * [3] = {0,1,1}); R(4) is the first step's result. nthreads: 2, 3 or 4. */
static void begin_threaded(unsigned flags, unsigned nthreads, unsigned seed) {
    begin(flags, F2_THREADED | ((nthreads - 2) << 5), seed);
    P.step = NSHARED - 1;
}

static void threaded_seeds(void) {
    /* ops that only read the shared constants: unary, binary with a
     * broadcast, a reduction, softmax and matmul */
    begin_threaded(F_BACKWARD, 4, 1);
    op("unary"); put(3); R(0);                                /* 4 tanh(c0) */
    op("binary"); put(2); R(4); put(0); R(0);                 /* 5 * c0 */
    op("axis"); put(3); R(2); AX(-1, 2); put(0);              /* 6 softmax(c2) */
    op("sum"); put(0); R(2); put(1); AX(0, 2);                /* 7 sum c2 axis 0 */
    op("matmul"); R(1); put(0); R(1);                         /* 8 [2,3]@[2,3]: error */
    op("matmul"); R(2); put(0); R(0);                         /* 9 [3,4] @ [4] */
    emit("threaded_read_only");

    /* views of the constants, then writes through gad_data_mut and leaves
     * made from the snapshots: copy-on-write, the constants stay */
    begin_threaded(F_BACKWARD | F_CREATE_GRAPH, 3, 2);
    op("transpose"); R(2);                                    /* 4 c2^T view */
    op("data_mut"); R(4); put(3); put(5);                     /* 5 write into it */
    op("data_mut"); R(1); put(1); put(2);                     /* 6 write into c1 */
    op("requires_grad"); R(0);                                /* 7 c0 as a leaf */
    op("binary"); put(2); R(7); put(0); R(7);                 /* 8 c0 * c0 */
    op("gather"); R(2); put(0); R(3);                         /* 9 gather with c3 */
    emit("threaded_views_cow");

    /* an optimizer step on a leaf made from a snapshot */
    begin_threaded(F_BACKWARD | F_OPTIM, 2, 3);
    op("requires_grad"); R(2);                                /* 4 c2 as a leaf */
    op("unary"); put(3); R(4);                                /* 5 tanh */
    op("matmul"); R(5); put(0); R(0);                         /* 6 @ c0 */
    emit("threaded_optim");
}

static void emit_regress(const char *name) {
    write_bytes(ops_dir, name, P.b, P.n);
    n_ops_written++;
}

static void regress_seeds(void) {
    /* gad_cat adds the sizes along the axis without an overflow check:
     * nine [INT64_MAX / 8, 0] along axis 0 sum past INT64_MAX (UBSan:
     * signed overflow in src/ops/index.c) */
    begin(0, 0, 0);
    op("full"); put(0); put(0); put(0xC0); put(D(3)); put(D(0)); put(0x60); NOLEAF();
    op("join"); put(9); R(0); AX(0, 2);
    for (int i = 1; i < 9; i++) {
        put(0);
        R(0);
    }
    emit_regress("regress_cat_size_overflow");

    /* gad__row_major and gad__set_layout multiply the dims of a valid empty
     * shape such as [INT64_MAX, 2, 0] into the strides: a signed overflow */
    begin(0, 0, 0);
    op("full"); put(0); put(0); put(0xC1); put(D(3)); put(D(2)); put(D(0)); put(0x30);
    NOLEAF();
    emit_regress("regress_empty_huge_strides");

    /* gad_hvp with leaves of mixed dtypes: dot_all adds an f64 and an f32
     * scalar (a dtype error), drops the partial sum and goes on with the
     * next term, so hvp returns GAD_OK, with the error pending and the
     * first terms missing from <g, v> */
    begin(F_HVP, 0, 0);
    randn_c(1, 1, 1, 1, (int64_t)2);                          /* 0 f64 leaf */
    randn_c(2, 0, 1, 1, (int64_t)2);                          /* 1 f32 leaf */
    randn_c(3, 1, 1, 1, (int64_t)2);                          /* 2 f64 leaf */
    op("unary"); put(1); R(0);                                /* 3 square */
    emit_regress("regress_hvp_mixed_dtypes");
}

/* ======================================================================== */
/* Checkpoints                                                               */
/* ======================================================================== */

static const char *load_dir;

static void save_seed(const char *file, int n, const char *const *names,
                      gad_tensor *const *ts) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", load_dir, file);
    if (gad_save(path, names, ts, n) != GAD_OK) {
        fprintf(stderr, "gen_corpus: save %s: %s\n", file, gad_last_error()->text);
        exit(1);
    }
    n_load_written++;
}

/* A file from a header and data bytes: the 8-byte length, the header, the
 * data. */
static void raw_seed(const char *file, const char *header, const void *data, size_t n) {
    size_t h = strlen(header);
    unsigned char *b = malloc(8 + h + n + 1);
    if (!b) abort();
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)h >> (8 * k));
    memcpy(b + 8, header, h);
    if (n) memcpy(b + 8 + h, data, n);
    write_bytes(load_dir, file, b, 8 + h + n);
    free(b);
    n_load_written++;
}

static void copy_file(const char *from, const char *file) {
    FILE *f = fopen(from, "rb");
    if (!f) {
        fprintf(stderr, "gen_corpus: cannot open %s\n", from);
        exit(1);
    }
    static unsigned char b[1 << 20];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    write_bytes(load_dir, file, b, n);
    n_load_written++;
}

static void load_seeds(const char *python_file) {
    gad_scope_begin();
    /* valid files from gad_save */
    save_seed("empty.safetensors", 0, NULL, NULL);
    {
        const char *nm[1] = {"s"};
        gad_tensor *t[1] = {gad_scalar_f32(1.5f)};
        save_seed("scalar_f32.safetensors", 1, nm, t);
    }
    {
        const char *nm[3] = {"w", "b", "idx"};
        const int64_t iv[4] = {0, -1, INT64_MAX, INT64_MIN};
        gad_tensor *t[3] = {gad_randn((int64_t[]){2, 3}, 2, 1),
                            gad_cast(gad_randn((int64_t[]){3}, 1, 2), GAD_F64),
                            gad_from_i64(iv, (int64_t[]){2, 2}, 2)};
        save_seed("three_dtypes.safetensors", 3, nm, t);
    }
    {
        const char *nm[3] = {"e0", "e1", "e2"};
        gad_tensor *t[3] = {gad_zeros((int64_t[]){0}, 1, GAD_F32),
                            gad_zeros((int64_t[]){2, 0, 3}, 3, GAD_F64),
                            gad_zeros((int64_t[]){0, 0}, 2, GAD_I64)};
        save_seed("empty_tensors.safetensors", 3, nm, t);
    }
    {
        const char *nm[2] = {"r8", "r1"};
        gad_tensor *t[2] = {gad_randn((int64_t[]){1, 1, 2, 1, 1, 1, 1, 2}, 8, 3),
                            gad_ones((int64_t[]){1}, 1, GAD_I64)};
        save_seed("rank8.safetensors", 2, nm, t);
    }
    {
        const char *nm[12];
        gad_tensor *t[12];
        static char names[12][16];
        for (int i = 0; i < 12; i++) {
            snprintf(names[i], sizeof names[i], "layer.%d.%s", i / 2, i % 2 ? "bias" : "weight");
            nm[i] = names[i];
            t[i] = gad_randn((int64_t[]){i % 3 + 1, 2}, 2, (uint64_t)i);
        }
        save_seed("many.safetensors", 12, nm, t);
    }
    {
        const char *nm[4] = {"caf\xc3\xa9/\xe5\x90\x8d", "q\"uote\\back", "a b", "\xf0\x9f\x98\x80"};
        gad_tensor *t[4] = {gad_scalar_f64(2), gad_scalar_f32(3), gad_eye(2, GAD_I64),
                            gad_zeros((int64_t[]){1, 0}, 2, GAD_F32)};
        save_seed("odd_names.safetensors", 4, nm, t);
    }
    {
        const float fv[6] = {NAN, INFINITY, -INFINITY, 1e-40f, -0.0f, FLT_MAX};
        const double dv[4] = {NAN, -INFINITY, 5e-324, -0.0};
        const char *nm[2] = {"f", "d"};
        gad_tensor *t[2] = {gad_from_f32(fv, (int64_t[]){6}, 1),
                            gad_from_f64(dv, (int64_t[]){2, 2}, 2)};
        save_seed("special_values.safetensors", 2, nm, t);
    }
    gad_scope_end();
    copy_file(python_file, "python_written.safetensors");

    /* well-formed by hand: metadata, any header order, padding */
    const float one[2] = {1, 2};
    raw_seed("metadata.safetensors",
             "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}    ",
             one, 8);
    raw_seed("escapes.safetensors",
             "{\"\\u00e9\\ud83d\\ude00\\n\\t\\/\":{\"dtype\":\"F32\",\"shape\":[2],"
             "\"data_offsets\":[0,8]}}",
             one, 8);
    /* malformed */
    raw_seed("bad_json.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", one, 8);
    raw_seed("overlap.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", one, 8);
    raw_seed("gap.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", one, 8);
    raw_seed("reversed_offsets.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", one, 8);
    raw_seed("bf16_unsupported.safetensors",
             "{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("rank9_unsupported.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
             "\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("unknown_dtype.safetensors",
             "{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("duplicate_names.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", one, 8);
    raw_seed("nul_in_name.safetensors",
             "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"a\\u0000c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", one, 8);
    raw_seed("lone_surrogate.safetensors",
             "{\"\\ud800\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("metadata_not_string.safetensors",
             "{\"__metadata__\":{\"k\":[1,2]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("huge_shape.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[18446744073709551615,2],"
             "\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("regress_empty_huge_shape.safetensors", /* finding 2 */
             "{\"a\":{\"dtype\":\"F64\",\"shape\":[0,9223372036854775807,4],"
             "\"data_offsets\":[0,0]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("negative_shape.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("float_shape.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("trailing_garbage.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  x", one, 8);
    raw_seed("missing_field.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", one, 8);
    raw_seed("extra_data.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", one, 8);
    raw_seed("misaligned_f64.safetensors",
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"b\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[4,12]}}",
             (const unsigned char[12]){0, 0, 128, 63, 0, 0, 0, 0, 0, 0, 240, 63}, 12);
    {
        char deep[300];
        size_t k = 0;
        k += (size_t)snprintf(deep + k, sizeof deep - k, "{\"__metadata__\":");
        for (int i = 0; i < 70; i++) deep[k++] = '[';
        for (int i = 0; i < 70; i++) deep[k++] = ']';
        snprintf(deep + k, sizeof deep - k, "}");
        raw_seed("deep_nesting.safetensors", deep, NULL, 0);
    }
    write_bytes(load_dir, "short.safetensors", "abc", 3);
    n_load_written++;
    {
        unsigned char b[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
        write_bytes(load_dir, "header_length_huge.safetensors", b, 16);
        unsigned char z[8] = {0};
        write_bytes(load_dir, "header_length_zero.safetensors", z, 8);
        n_load_written += 2;
    }
    {
        /* a valid file cut short inside its data */
        char path[4096];
        snprintf(path, sizeof path, "%s/three_dtypes.safetensors", load_dir);
        FILE *f = fopen(path, "rb");
        static unsigned char b[4096];
        size_t n = f ? fread(b, 1, sizeof b, f) : 0;
        if (f) fclose(f);
        if (n < 10) abort();
        write_bytes(load_dir, "truncated.safetensors", b, n - 5);
        n_load_written++;
    }
}

/* ---- normalization (issue 28): chnorm's batch, group and instance norm
 * (bytes: which, flags (1 w, 2 b, 4 running stats, 16 evaluation, groups
 * above bit 5), x, eps, then w's and b's aux bytes) */
static void norm_seeds(void) {
    begin(F_BACKWARD | F_HVP, 0, 60);
    randn_c(11, 0, 1, 4, (int64_t)2, (int64_t)3, (int64_t)4, (int64_t)4); /* 0 [2,3,4,4] leaf */
    op("chnorm"); put(0); put(1 | 2 | 4); R(0); put(0); put(1 | 4); put(1 | 4); /* 1 batch */
    op("chnorm"); put(1); put(1 | (3u << 5)); R(0); put(0); put(1 | 4);        /* 2 group 3 */
    op("chnorm"); put(2); put(4 | 16); R(1); put(0);                          /* 3 instance eval */
    op("chnorm"); put(2); put(2 | 4); R(2); put(2); put(1);                   /* 4 instance */
    emit("norm_batch_group_instance");

    begin(SM | F_BACKWARD | F_CREATE_GRAPH | F_HVP, 0, 61);
    randn_c(12, 1, 1, 3, (int64_t)4, (int64_t)2, (int64_t)5);              /* 0 [4,2,5] f64 */
    op("chnorm"); put(0); put(1 | 2); R(0); put(2); put(1 | 4); put(1 | 4); /* 1 batch */
    op("chnorm"); put(0); put(4 | 16); R(1); put(2);                        /* 2 batch eval */
    emit("norm_smooth_second_order");
}

/* ---- layer objects with PyTorch's names (issue 29): module's Linear,
 * LayerNorm, RMSNorm (eps None) and self-attention, chained (bytes:
 * which, flags (1 bias/affine, 2 RMSNorm's eps None), x, out dim) */
static void module_seeds(void) {
    begin(SM | F_BACKWARD, 0, 62);
    randn_c(13, 1, 1, 3, (int64_t)2, (int64_t)3, (int64_t)4); /* 0 [2,3,4] f64 leaf */
    op("module"); put(0); put(1); R(0); put(D(6));             /* 1 Linear 4 -> 6 */
    op("module"); put(1); put(1); R(1); put(D(3));             /* 2 LayerNorm(6) */
    op("module"); put(2); put(3); R(2); put(D(3));             /* 3 RMSNorm(6) */
    op("module"); put(3); put(1); R(3); put(D(3));             /* 4 attention, 1 head */
    emit("modules_pytorch_layers");
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s CORPUS_OPS_DIR CORPUS_LOAD_DIR "
                        "PYTHON_WRITTEN_SAFETENSORS\n", argv[0]);
        return 2;
    }
    ops_dir = argv[1];
    load_dir = argv[2];
    mkdir(ops_dir, 0777);
    mkdir(load_dir, 0777);
    LLVMFuzzerInitialize(&argc, &argv);
    ops_seeds();
    threaded_seeds();
    ops_seeds_2();
    regress_seeds();
    norm_seeds(); /* normalization (issue 28) */
    module_seeds(); /* layer objects with PyTorch's names (issue 29) */
    load_seeds(argv[3]);
    printf("gen_corpus: %d op programs in %s, %d checkpoints in %s\n", n_ops_written,
           ops_dir, n_load_written, load_dir);
    return 0;
}
