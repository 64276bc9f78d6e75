/* test_reference.c: gad's forward values and gradients against PyTorch's,
 * from tests/reference/torch_reference.txt (written by make_reference.py
 * there; see its header for the format). f64 must agree to 1e-10 and f32 to
 * 1e-5, relative to max(1, |torch's value|). */
#include "test.h"

#ifndef GAD_SOURCE_DIR
#define GAD_SOURCE_DIR "."
#endif

#define MAXIN 5

typedef struct ref_case {
    char name[64], op[32], dtype[8];
    int ni, nd, nin;
    int64_t ip[16];
    double dp[4];
    gad_tensor *in[MAXIN];
    int leaf[MAXIN];
    int out_rank;
    int64_t out_shape[GAD_MAX_RANK];
    double *out, *w, *grad[MAXIN];
    int64_t out_n;
} ref_case;

static gad_dtype_t parse_dtype(const char *s) {
    return !strcmp(s, "f32")    ? GAD_F32
           : !strcmp(s, "f64")  ? GAD_F64
           : !strcmp(s, "bool") ? GAD_BOOL
                                : GAD_I64;
}

static int read_values(FILE *f, double *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (fscanf(f, "%lf", &dst[i]) != 1) return -1;
    return 0;
}

/* One input line: DTYPE LEAF RANK dims... values... */
static gad_tensor *read_input(FILE *f, int *leaf) {
    char dt[8];
    int rank;
    int64_t shape[GAD_MAX_RANK], n = 1;
    if (fscanf(f, "%7s %d %d", dt, leaf, &rank) != 3) return NULL;
    for (int i = 0; i < rank; i++) {
        long long d;
        if (fscanf(f, "%lld", &d) != 1) return NULL;
        shape[i] = d;
        n *= d;
    }
    gad_dtype_t dtype = parse_dtype(dt);
    if (dtype == GAD_I64 || dtype == GAD_BOOL) { /* integers; a bool's are 0 and 1 */
        int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++) {
            long long x;
            if (fscanf(f, "%lld", &x) != 1) return NULL;
            v[i] = x;
        }
        gad_tensor *t = gad_cast(gad_from_i64(v, shape, rank), dtype);
        free(v);
        return t;
    }
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (read_values(f, v, n)) return NULL;
    gad_tensor *t = gad_cast(gad_from_f64(v, shape, rank), dtype);
    free(v);
    return t;
}

static int read_case(FILE *f, ref_case *c) {
    memset(c, 0, sizeof *c);
    char word[32];
    if (fscanf(f, "%31s", word) != 1) return 0;
    if (strcmp(word, "case") || fscanf(f, "%63s %31s %7s", c->name, c->op, c->dtype) != 3)
        return -1;
    if (fscanf(f, " iparams %d", &c->ni) != 1) return -1;
    for (int i = 0; i < c->ni; i++) {
        long long v;
        if (fscanf(f, "%lld", &v) != 1) return -1;
        c->ip[i] = v;
    }
    if (fscanf(f, " dparams %d", &c->nd) != 1 || read_values(f, c->dp, c->nd)) return -1;
    if (fscanf(f, " inputs %d", &c->nin) != 1 || c->nin > MAXIN) return -1;
    for (int i = 0; i < c->nin; i++)
        if (!(c->in[i] = read_input(f, &c->leaf[i]))) return -1;
    if (fscanf(f, " output %d", &c->out_rank) != 1) return -1;
    c->out_n = 1;
    for (int i = 0; i < c->out_rank; i++) {
        long long d;
        if (fscanf(f, "%lld", &d) != 1) return -1;
        c->out_shape[i] = d;
        c->out_n *= d;
    }
    size_t bytes = (size_t)(c->out_n ? c->out_n : 1) * sizeof(double);
    c->out = malloc(bytes);
    c->w = malloc(bytes);
    if (read_values(f, c->out, c->out_n)) return -1;
    if (fscanf(f, " weight") != 0 || read_values(f, c->w, c->out_n)) return -1;
    for (int i = 0; i < c->nin; i++) {
        int has;
        if (fscanf(f, " grad %d", &has) != 1) return -1;
        if (!has) continue;
        int64_t n = gad_numel(c->in[i]);
        c->grad[i] = malloc((size_t)(n ? n : 1) * sizeof(double));
        if (read_values(f, c->grad[i], n)) return -1;
    }
    if (fscanf(f, " %31s", word) != 1 || strcmp(word, "end")) return -1;
    return 1;
}

static void free_case(ref_case *c) {
    free(c->out);
    free(c->w);
    for (int i = 0; i < MAXIN; i++) free(c->grad[i]);
}

typedef gad_tensor *(*unary_fn)(gad_tensor *);
static const struct {
    const char *name;
    unary_fn f;
} unary_ops[] = {
    {"neg", gad_neg},         {"square", gad_square}, {"relu", gad_relu},
    {"tanh", gad_tanh},       {"exp", gad_exp},       {"log", gad_log},
    {"sqrt", gad_sqrt},       {"abs", gad_abs},       {"sign", gad_sign},
    {"sigmoid", gad_sigmoid}, {"silu", gad_silu},     {"gelu", gad_gelu},
    {"softplus", gad_softplus},
    /* math family (issue 27) */
    {"sin", gad_sin},         {"cos", gad_cos},       {"tan", gad_tan},
    {"asin", gad_asin},       {"acos", gad_acos},     {"atan", gad_atan},
    {"erf", gad_erf},         {"erfc", gad_erfc},     {"rsqrt", gad_rsqrt},
    {"reciprocal", gad_reciprocal}, {"log1p", gad_log1p}, {"expm1", gad_expm1},
    {"log2", gad_log2},       {"exp2", gad_exp2},     {"selu", gad_selu},
    {"mish", gad_mish},       {"hardsigmoid", gad_hardsigmoid},
    {"hardswish", gad_hardswish}, {"gelu_erf", gad_gelu_erf},
};

/* ---- normalization (issue 28): batch, group and instance norm, and the
 * running statistics after 3 training steps (make_reference.py's block). */
static gad_tensor *apply_norm(const ref_case *c) {
    const char *op = c->op;
    gad_tensor *const *in = c->in;
    const int64_t *ip = c->ip;
    int bn = !strcmp(op, "batch_norm"), inn = !strcmp(op, "instance_norm");
    if (bn || inn) {
        gad_tensor *w = ip[1] ? in[1] : NULL, *b = ip[2] ? in[2] : NULL, *rm = NULL, *rv = NULL;
        if (ip[3]) { /* copies: the case's inputs keep their values */
            rm = gad_contiguous(gad_add_scalar(in[3], 0));
            rv = gad_contiguous(gad_add_scalar(in[4], 0));
        }
        return bn ? gad_batch_norm(in[0], rm, rv, w, b, (int)ip[0], c->dp[0], c->dp[1])
                  : gad_instance_norm(in[0], rm, rv, w, b, (int)ip[0], c->dp[0], c->dp[1]);
    }
    if (!strcmp(op, "group_norm"))
        return gad_group_norm(in[0], ip[0], ip[1] ? in[1] : NULL, ip[2] ? in[2] : NULL, c->dp[0]);
    if (!strcmp(op, "batch_norm_running") || !strcmp(op, "instance_norm_running")) {
        gad_tensor *rm = gad_contiguous(gad_add_scalar(in[1], 0));
        gad_tensor *rv = gad_contiguous(gad_add_scalar(in[2], 0));
        for (int64_t k = 0; k < gad_shape(in[0])[0]; k++) {
            double m = c->dp[0] < 0 ? 1.0 / (double)(k + 1) : c->dp[0];
            gad_tensor *xk = gad_select(in[0], 0, k);
            if (!(op[0] == 'b' ? gad_batch_norm(xk, rm, rv, NULL, NULL, 1, m, c->dp[1])
                               : gad_instance_norm(xk, rm, rv, NULL, NULL, 1, m, c->dp[1])))
                return NULL;
        }
        return gad_cat((gad_tensor *[]){rm, rv}, 2, 0);
    }
    return NULL;
}

static gad_tensor *apply(const ref_case *c) {
    const char *op = c->op;
    gad_tensor *const *in = c->in;
    const int64_t *ip = c->ip;
    int axes[8];
    for (int i = 0; i < 8; i++) axes[i] = (int)ip[2 + i];
    for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++)
        if (!strcmp(op, unary_ops[k].name)) return unary_ops[k].f(in[0]);
    if (!strcmp(op, "add")) return gad_add(in[0], in[1]);
    if (!strcmp(op, "sub")) return gad_sub(in[0], in[1]);
    if (!strcmp(op, "mul")) return gad_mul(in[0], in[1]);
    if (!strcmp(op, "div")) return gad_div(in[0], in[1]);
    if (!strcmp(op, "maximum")) return gad_maximum(in[0], in[1]);
    if (!strcmp(op, "minimum")) return gad_minimum(in[0], in[1]);
    if (!strcmp(op, "mul_scalar")) return gad_mul_scalar(in[0], c->dp[0]);
    if (!strcmp(op, "add_scalar")) return gad_add_scalar(in[0], c->dp[0]);
    if (!strcmp(op, "pow_scalar")) return gad_pow_scalar(in[0], c->dp[0]);
    if (!strcmp(op, "leaky_relu")) return gad_leaky_relu(in[0], c->dp[0]);
    if (!strcmp(op, "clamp")) return gad_clamp(in[0], c->dp[0], c->dp[1]);
    /* math family (issue 27) */
    if (!strcmp(op, "elu")) return gad_elu(in[0], c->dp[0]);
    if (!strcmp(op, "hardtanh")) return gad_hardtanh(in[0], c->dp[0], c->dp[1]);
    if (!strcmp(op, "gelu_ex")) return gad_gelu_ex(in[0], ip[0] ? "tanh" : "none");
    if (!strcmp(op, "atan2")) return gad_atan2(in[0], in[1]);
    if (!strcmp(op, "pow")) return gad_pow(in[0], in[1]);
    if (!strcmp(op, "sum")) return gad_sum(in[0], axes, (int)ip[1], (int)ip[0]);
    if (!strcmp(op, "mean")) return gad_mean(in[0], axes, (int)ip[1], (int)ip[0]);
    if (!strcmp(op, "variance")) return gad_variance(in[0], axes, (int)ip[1], (int)ip[0]);
    if (!strcmp(op, "stddev")) return gad_stddev(in[0], axes, (int)ip[1], (int)ip[0]);
    if (!strcmp(op, "amax")) return gad_amax(in[0], (int)ip[0], (int)ip[1]);
    if (!strcmp(op, "logsumexp")) return gad_logsumexp(in[0], (int)ip[0], (int)ip[1]);
    if (!strcmp(op, "softmax")) return gad_softmax(in[0], (int)ip[0]);
    if (!strcmp(op, "log_softmax")) return gad_log_softmax(in[0], (int)ip[0]);
    if (!strcmp(op, "matmul")) return gad_matmul(in[0], in[1]);
    if (!strcmp(op, "linear_act"))
        return gad_linear_act(in[0], in[1], c->nin > 2 ? in[2] : NULL, (gad_act)ip[0]);
    if (!strcmp(op, "gather")) return gad_gather(in[0], (int)ip[0], in[1]);
    if (!strcmp(op, "scatter_add")) return gad_scatter_add(in[0], (int)ip[0], in[1], in[2]);
    if (!strcmp(op, "take")) return gad_take(in[0], (int)ip[0], in[1]);
    if (!strcmp(op, "cat")) return gad_cat(in, c->nin, (int)ip[0]);
    if (!strcmp(op, "stack")) return gad_stack(in, c->nin, (int)ip[0]);
    if (!strcmp(op, "reshape")) return gad_reshape(in[0], ip, c->ni);
    if (!strcmp(op, "permute")) {
        int p[GAD_MAX_RANK];
        for (int i = 0; i < c->ni; i++) p[i] = (int)ip[i];
        return gad_permute(in[0], p, c->ni);
    }
    if (!strcmp(op, "transpose")) return gad_transpose(in[0]);
    if (!strcmp(op, "slice")) {
        gad_range r[2] = {GAD_RANGE_STEP(ip[0], ip[1], ip[2]), GAD_RANGE_STEP(ip[3], ip[4], ip[5])};
        return gad_slice(in[0], r, 2);
    }
    if (!strcmp(op, "select")) return gad_select(in[0], (int)ip[0], ip[1]);
    if (!strcmp(op, "unsqueeze")) return gad_unsqueeze(in[0], (int)ip[0]);
    if (!strcmp(op, "squeeze")) return gad_squeeze(in[0], (int)ip[0]);
    if (!strcmp(op, "broadcast_to")) return gad_broadcast_to(in[0], ip, c->ni);
    if (!strcmp(op, "flip")) {
        int d[GAD_MAX_RANK];
        for (int i = 0; i < c->ni; i++) d[i] = (int)ip[i];
        return gad_flip(in[0], d, c->ni);
    }
    if (!strcmp(op, "roll")) { /* whether dims are given, the shifts, the dims */
        int n = ip[0] ? (c->ni - 1) / 2 : 1, d[GAD_MAX_RANK];
        for (int i = 0; ip[0] && i < n; i++) d[i] = (int)ip[1 + n + i];
        return gad_roll(in[0], ip + 1, ip[0] ? d : NULL, n);
    }
    /* sort, topk, argmin, cumsum, cumprod (make_reference.py says the iparams) */
    if (!strcmp(op, "sort")) return gad_sort(in[0], (int)ip[0], (int)ip[1], NULL);
    if (!strcmp(op, "argsort")) return gad_argsort(in[0], (int)ip[0], (int)ip[1]);
    if (!strcmp(op, "topk")) return gad_topk(in[0], ip[0], (int)ip[1], (int)ip[2], 1, NULL);
    if (!strcmp(op, "argmin")) return gad_argmin(in[0], (int)ip[0], (int)ip[1]);
    if (!strcmp(op, "argmax")) return gad_argmax(in[0], (int)ip[0], (int)ip[1]); /* i64 */
    if (!strcmp(op, "cumsum")) return gad_cumsum(in[0], (int)ip[0]);
    if (!strcmp(op, "cumprod")) return gad_cumprod(in[0], (int)ip[0]);
    if (!strcmp(op, "pool")) { /* pooling (issue 28): make_reference.py's iparams */
        if (ip[0] >= 4)
            return ip[0] == 4 ? gad_adaptive_avg_pool2d(in[0], ip[1], ip[2])
                              : gad_adaptive_max_pool2d(in[0], ip[1], ip[2], NULL);
        gad_pool_opts o = {.kernel = {ip[1], ip[2]}, .stride = {ip[3], ip[4]},
                           .padding = {ip[5], ip[6]}, .dilation = {ip[7], ip[8]},
                           .ceil_mode = (int)ip[9], .exclude_pad = !ip[10],
                           .divisor_override = ip[11]};
        switch (ip[0]) {
        case 0: return gad_max_pool2d(in[0], &o, NULL);
        case 1: return gad_max_pool1d(in[0], &o, NULL);
        case 2: return gad_avg_pool2d(in[0], &o);
        default: return gad_avg_pool1d(in[0], &o);
        }
    }
    if (!strcmp(op, "image")) { /* image shape ops (issue 28): make_reference.py's iparams */
        switch (ip[0]) {
        case 0: return gad_pad(in[0], ip + 2, c->ni - 2, (gad_pad_mode)ip[1], c->dp[0]);
        case 1: {
            int n = gad_rank(in[0]) - 2;
            return gad_interpolate(in[0], ip[3] ? NULL : ip + 4, ip[3] ? c->dp : NULL, n,
                                   (gad_interp_mode)ip[1], (int)ip[2]);
        }
        case 2: return gad_pixel_shuffle(in[0], ip[1]);
        case 3: return gad_pixel_unshuffle(in[0], ip[1]);
        case 4: {
            gad_fold_opts o = {{ip[1], ip[2]}, {ip[3], ip[4]}, {ip[5], ip[6]}, {ip[7], ip[8]}};
            return gad_unfold(in[0], &o);
        }
        default: {
            gad_fold_opts o = {{ip[3], ip[4]}, {ip[5], ip[6]}, {ip[7], ip[8]}, {ip[9], ip[10]}};
            return gad_fold(in[0], ip + 1, &o);
        }
        }
    }
    /* convolution: groups, padding mode, nd, then per dim stride, padding,
     * dilation, output_padding; in[2] the bias */
    if (!strncmp(op, "conv", 4)) {
        gad_conv_opts o = {.groups = ip[0], .padding_mode = (gad_conv_padding)ip[1]};
        int nd = (int)ip[2];
        for (int d = 0; d < nd; d++) {
            o.stride[d] = ip[3 + 4 * d];
            o.padding[d] = ip[4 + 4 * d];
            o.dilation[d] = ip[5 + 4 * d];
            o.output_padding[d] = ip[6 + 4 * d];
        }
        gad_tensor *b = c->nin > 2 ? in[2] : NULL;
        if (!strcmp(op, "conv1d")) return gad_conv1d(in[0], in[1], b, &o);
        if (!strcmp(op, "conv2d")) return gad_conv2d(in[0], in[1], b, &o);
        if (!strcmp(op, "conv3d")) return gad_conv3d(in[0], in[1], b, &o);
        if (!strcmp(op, "conv_transpose1d")) return gad_conv_transpose1d(in[0], in[1], b, &o);
        if (!strcmp(op, "conv_transpose2d")) return gad_conv_transpose2d(in[0], in[1], b, &o);
    }
    if (!strcmp(op, "cast"))
        return gad_cast(in[0], gad_dtype(in[0]) == GAD_F64 ? GAD_F32 : GAD_F64);
    /* comparisons and selection (issue 27) */
    static const struct {
        const char *name;
        gad_tensor *(*f)(gad_tensor *, gad_tensor *);
        gad_tensor *(*fs)(gad_tensor *, double);
    } cmp_ops[] = {
        {"eq", gad_eq, gad_eq_scalar}, {"ne", gad_ne, gad_ne_scalar},
        {"lt", gad_lt, gad_lt_scalar}, {"le", gad_le, gad_le_scalar},
        {"gt", gad_gt, gad_gt_scalar}, {"ge", gad_ge, gad_ge_scalar},
        {"logical_and", gad_logical_and, NULL}, {"logical_or", gad_logical_or, NULL},
        {"logical_xor", gad_logical_xor, NULL},
    };
    for (size_t k = 0; k < sizeof cmp_ops / sizeof cmp_ops[0]; k++) {
        size_t len = strlen(cmp_ops[k].name);
        if (!strcmp(op, cmp_ops[k].name)) return cmp_ops[k].f(in[0], in[1]);
        if (cmp_ops[k].fs && !strncmp(op, cmp_ops[k].name, len) && !strcmp(op + len, "_scalar"))
            return cmp_ops[k].fs(in[0], c->dp[0]);
    }
    if (!strcmp(op, "logical_not")) return gad_logical_not(in[0]);
    if (!strcmp(op, "isnan")) return gad_isnan(in[0]);
    if (!strcmp(op, "isinf")) return gad_isinf(in[0]);
    if (!strcmp(op, "isfinite")) return gad_isfinite(in[0]);
    if (!strcmp(op, "any")) return gad_any(in[0], axes, (int)ip[1], (int)ip[0]);
    if (!strcmp(op, "all")) return gad_all(in[0], axes, (int)ip[1], (int)ip[0]);
    if (!strcmp(op, "any_all")) return gad_any_all(in[0]);
    if (!strcmp(op, "all_all")) return gad_all_all(in[0]);
    if (!strcmp(op, "where")) return gad_where(in[0], in[1], in[2]);
    if (!strcmp(op, "masked_fill")) return gad_masked_fill(in[0], in[1], c->dp[0]);
    if (!strcmp(op, "tril")) return gad_tril(in[0], ip[0]);
    if (!strcmp(op, "triu")) return gad_triu(in[0], ip[0]);
    if (!strcmp(op, "clamp_tensor"))
        return gad_clamp_tensor(in[0], ip[0] ? in[1] : NULL, ip[1] ? in[ip[0] ? 2 : 1] : NULL);
    /* attention and positions (issue 27) */
    if (!strcmp(op, "sdpa"))
        return gad_scaled_dot_product_attention(in[0], in[1], in[2], c->nin > 3 ? in[3] : NULL,
                                                (int)ip[0], 0, c->dp[0], NULL);
    if (!strcmp(op, "rope")) return gad_rope(in[0], c->nin > 1 ? in[1] : NULL, c->dp[0], (int)ip[0]);
    gad_tensor *y = apply_norm(c); /* normalization (issue 28) */
    if (y) return y;
    /* losses (issue 27): cross_entropy_ex's ignore_index, reduction, whether
     * a weight is given; bce's reduction, weight, pos_weight */
    if (!strcmp(op, "cross_entropy_ex"))
        return gad_cross_entropy_ex(in[0], in[1], ip[2] ? in[2] : NULL, ip[0],
                                    (gad_reduction)ip[1], c->dp[0]);
    /* composites (ops.def's COMPOSITE rows): the sampling filter, the older
     * losses, the position table (no inputs; the case's dtype) */
    if (!strcmp(op, "logits_filter")) {
        gad_sample_opts o = {c->dp[0], (int64_t)c->dp[1], c->dp[2]};
        return gad_logits_filter(in[0], &o);
    }
    if (!strcmp(op, "index_select")) return gad_index_select(in[0], (int)ip[0], in[1]);
    if (!strcmp(op, "mse_loss")) return gad_mse_loss(in[0], in[1], (gad_reduction)ip[0]);
    if (!strcmp(op, "nll_loss")) return gad_nll_loss(in[0], in[1], (gad_reduction)ip[0]);
    if (!strcmp(op, "cross_entropy"))
        return gad_cross_entropy(in[0], in[1], (gad_reduction)ip[0]);
    if (!strcmp(op, "sinusoidal_positions"))
        return gad_sinusoidal_positions(ip[0], ip[1], c->dp[0], parse_dtype(c->dtype));
    if (!strcmp(op, "bce_logits"))
        return gad_binary_cross_entropy_with_logits(in[0], in[1], ip[1] ? in[2] : NULL,
                                                    ip[2] ? in[2 + (int)ip[1]] : NULL,
                                                    (gad_reduction)ip[0]);
    return NULL;
}

/* Every value within tol of the reference, relative to max(1, |ref|). */
static int compare(const char *what, const ref_case *c, gad_tensor *t, const double *ref,
                   int64_t n, double tol) {
    double *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    int ok = gad_numel(t) == n && gad_read_f64(t, got, (size_t)n) == GAD_OK;
    for (int64_t i = 0; ok && i < n; i++) {
        double scale = fabs(ref[i]) > 1 ? fabs(ref[i]) : 1;
        if (!(fabs(got[i] - ref[i]) <= tol * scale) && got[i] != ref[i] && /* infinities */
            !(isnan(got[i]) && isnan(ref[i]))) {
            fprintf(stderr, "  %s %s: %s[%lld] = %.17g, torch %.17g\n", c->name, c->dtype,
                    what, (long long)i, got[i], ref[i]);
            ok = 0;
        }
    }
    free(got);
    return ok;
}

TEST(matches_pytorch) {
    const char *path = GAD_SOURCE_DIR "/tests/reference/torch_reference.txt";
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    int ncases = 0, ngrads = 0;
    for (;;) {
        ref_case c;
        gad_scope_begin();
        int rc = read_case(f, &c);
        CHECK_MSG(rc >= 0, "malformed reference file near case %d (%s)", ncases, c.name);
        if (rc <= 0) {
            free_case(&c);
            gad_scope_end();
            break;
        }
        ncases++;
        double tol = !strcmp(c.dtype, "f64") ? 1e-10 : 1e-5;
        gad_tensor *leaves[MAXIN];
        int nl = 0, which[MAXIN];
        for (int i = 0; i < c.nin; i++)
            if (c.leaf[i]) {
                which[nl] = i;
                leaves[nl++] = gad_requires_grad(c.in[i]);
            }
        gad_tensor *y = apply(&c);
        CHECK_MSG(y != NULL, "%s %s: %s", c.name, c.dtype,
                  gad_last_error() ? gad_last_error()->text : "unknown op");
        if (y) {
            CHECK_MSG(gad_rank(y) == c.out_rank &&
                          !memcmp(gad_shape(y), c.out_shape, (size_t)c.out_rank * 8),
                      "%s: output shape", c.name);
            CHECK_MSG(compare("y", &c, y, c.out, c.out_n, tol), "%s %s forward", c.name,
                      c.dtype);
            gad_tensor *w = nl ? gad_cast(gad_from_f64(c.w, c.out_shape, c.out_rank), gad_dtype(y))
                               : NULL;
            gad_tensor *g[MAXIN];
            /* a mask or an index (argsort, argmin) has no gradient to compare */
            int grads = nl > 0 && gad_dtype(y) != GAD_I64 && gad_dtype(y) != GAD_BOOL;
            if (grads) CHECK(gad_grad(gad_sum_all(gad_mul(y, w)), leaves, nl, g) == GAD_OK);
            for (int k = 0; grads && k < nl; k++) {
                int i = which[k];
                CHECK_MSG(g[k] && compare("grad", &c, g[k], c.grad[i], gad_numel(c.in[i]), tol),
                          "%s %s gradient of input %d", c.name, c.dtype, i);
                ngrads++;
            }
        }
        gad_clear_error();
        free_case(&c);
        gad_scope_end();
    }
    fclose(f);
    printf("  %d cases, %d gradients compared\n", ncases, ngrads);
    CHECK(ncases >= 100);
}

int main(void) {
    RUN(matches_pytorch);
    return test_summary();
}
