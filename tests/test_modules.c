/* test_modules.c: layer objects with PyTorch's names (gad.h "Layers with
 * PyTorch's names") against PyTorch: tests/reference/torch_layers.py built
 * the same model, wrote its state_dict to tests/data/torch_layers.safetensors
 * and its inputs, logits and running buffers to torch_layers_io.safetensors.
 * Here the model is built with gad's modules, the state_dict loaded
 * strictly (no renaming or transposing), and the logits and buffers
 * compared; gradients against finite differences in f64; the saved set
 * against the state_dict's names and shapes. Finite differences are
 * thinned under the sanitizers. */
#include "test.h"
#include "test_tmpdir.h"

#define MODEL GAD_SOURCE_DIR "/tests/data/torch_layers.safetensors"
#define IO GAD_SOURCE_DIR "/tests/data/torch_layers_io.safetensors"

/* f32 tolerance against PyTorch's logits: both compute in f32 in another
 * order (GEMM blocking, softmax), |logit| ~ 1 */
#define TOL 5e-6

enum { V = 11, D = 8, H = 2, FF = 16 };

/* torch_layers.py's Net: text.* and conv.* */
typedef struct net {
    gad_params *ps;
    gad_rng *rng;
    gad_module *embed, *layers, *norm, *rms, *head, *conv;
} net;

static int build_net(net *n, gad_dtype_t dtype) {
    memset(n, 0, sizeof *n);
    n->ps = gad_params_new();
    n->rng = gad_rng_new(7);
    gad_nn_ctx c = {.ps = n->ps, .rng = n->rng, .dtype = dtype};
    int64_t d = D;
    n->embed = gad_nn_embedding(&c, "text.embed", V, D, 0);
    n->layers = gad_nn_sequential(&c, "text.layers"); /* an nn.ModuleList */
    gad_nn_seq_add(n->layers, gad_nn_transformer_encoder_layer(
                                  &c, gad_nn_seq_next(n->layers), D, H, FF, 0.0, GAD_NN_GELU,
                                  1e-5, 0, 1));
    gad_nn_seq_add(n->layers, gad_nn_transformer_encoder_layer(
                                  &c, gad_nn_seq_next(n->layers), D, H, FF, 0.0, GAD_NN_RELU,
                                  1e-5, 1, 1));
    n->norm = gad_nn_layer_norm(&c, "text.norm", &d, 1, 1e-5, 1, 1);
    n->rms = gad_nn_rms_norm(&c, "text.rms", &d, 1, NAN, 1);
    n->head = gad_nn_linear(&c, "text.head", D, V, 1);

    gad_module *s = n->conv = gad_nn_sequential(&c, "conv");
    gad_conv_opts pad1 = {.padding = {1, 1}};
    gad_conv_opts grouped = {.stride = {1, 2}, .padding = {1, 0}, .groups = 2};
    gad_pool_opts pool2 = {.kernel = {2, 2}};
    gad_nn_seq_add(s, gad_nn_conv2d(&c, gad_nn_seq_next(s), 2, 4, 3, 3, &pad1, 1));
    gad_nn_seq_add(s, gad_nn_batch_norm2d(&c, gad_nn_seq_next(s), 4, 1e-5, 0.1, 1, 1));
    gad_nn_seq_add(s, gad_nn_relu());
    gad_nn_seq_add(s, gad_nn_max_pool2d(&pool2));
    gad_nn_seq_add(s, gad_nn_conv2d(&c, gad_nn_seq_next(s), 4, 6, 3, 2, &grouped, 0));
    gad_nn_seq_add(s, gad_nn_batch_norm2d(&c, gad_nn_seq_next(s), 6, 1e-5, NAN, 1, 1));
    gad_nn_seq_add(s, gad_nn_relu());
    gad_nn_seq_add(s, gad_nn_adaptive_avg_pool2d(1, 1));
    gad_nn_seq_add(s, gad_nn_flatten(1, -1));
    gad_nn_seq_add(s, gad_nn_linear(&c, gad_nn_seq_next(s), 6, 3, 1));
    return n->ps && n->rng && n->embed && n->layers && n->norm && n->rms && n->head && s &&
                   gad_module_child_count(s) == 10 && gad_module_child_count(n->layers) == 2
               ? 0
               : -1;
}

static void free_net(net *n) {
    gad_module *m[6] = {n->embed, n->layers, n->norm, n->rms, n->head, n->conv};
    for (int i = 0; i < 6; i++) gad_module_free(m[i]);
    gad_params_free(n->ps);
    gad_rng_free(n->rng);
}

/* Text.forward: a causal bool mask (true: masked) on layers.0, the padding
 * tokens as a key padding mask on layers.1. */
static gad_tensor *text_forward(net *n, gad_tensor *idx) {
    int64_t T = gad_shape(idx)[1];
    gad_tensor *causal = gad_gt(gad_unsqueeze(gad_arange(0, (double)T, 1, GAD_I64), 0),
                                gad_unsqueeze(gad_arange(0, (double)T, 1, GAD_I64), 1));
    gad_tensor *x = gad_module_forward(n->embed, idx);
    x = gad_nn_encoder_layer_forward(gad_module_child(n->layers, 0), x, causal, NULL, 0);
    x = gad_nn_encoder_layer_forward(gad_module_child(n->layers, 1), x, NULL,
                                     gad_eq_scalar(idx, 0), 0);
    return gad_module_forward(n->head, gad_module_forward(n->rms, gad_module_forward(n->norm, x)));
}

static double max_diff(gad_tensor *a, gad_tensor *b) {
    if (!a || !b || gad_numel(a) != gad_numel(b)) return INFINITY;
    int64_t k = gad_numel(a);
    double *x = malloc((size_t)k * sizeof *x), *y = malloc((size_t)k * sizeof *y), w = 0;
    gad_read_f64(a, x, (size_t)k);
    gad_read_f64(b, y, (size_t)k);
    for (int64_t i = 0; i < k; i++) w = fmax(w, isnan(x[i] - y[i]) ? INFINITY : fabs(x[i] - y[i]));
    free(x);
    free(y);
    return w;
}

TEST(state_dict_loads_strictly_and_gives_pytorch_logits) {
    net n;
    CHECK(build_net(&n, GAD_F32) == 0);
    gad_params_load_info info;
    CHECK(gad_params_load(n.ps, MODEL, 1, &info) == GAD_OK);
    CHECK(info.loaded == 45 && info.missing == 0 && info.unexpected == 0);
    CHECK(gad_params_count(n.ps) + gad_params_buffer_count(n.ps) == 45);
    gad_checkpoint *io = gad_load(IO);
    CHECK(io != NULL);
    gad_scope_begin();
    gad_module_train(n.embed, 0), gad_module_train(n.layers, 0);
    double e = max_diff(text_forward(&n, gad_checkpoint_get(io, "text.idx")),
                        gad_checkpoint_get(io, "text.logits"));
    CHECK_MSG(e <= TOL, "text logits differ by %g", e);
    /* train-mode batch norm: the batch's statistics, the running ones
     * updated (momentum 0.1 in conv.1, None = cumulative in conv.5) */
    CHECK(gad_module_training(n.conv) == 1);
    e = max_diff(gad_module_forward(n.conv, gad_checkpoint_get(io, "conv.img_a")),
                 gad_checkpoint_get(io, "conv.logits_train_a"));
    CHECK_MSG(e <= TOL, "train logits (a) differ by %g", e);
    e = max_diff(gad_module_forward(n.conv, gad_checkpoint_get(io, "conv.img_b")),
                 gad_checkpoint_get(io, "conv.logits_train_b"));
    CHECK_MSG(e <= TOL, "train logits (b) differ by %g", e);
    const char *bufs[6] = {"1.running_mean", "1.running_var", "1.num_batches_tracked",
                           "5.running_mean", "5.running_var", "5.num_batches_tracked"};
    for (int i = 0; i < 6; i++) {
        char want[64], have[64];
        snprintf(want, sizeof want, "after.%s", bufs[i]);
        snprintf(have, sizeof have, "conv.%s", bufs[i]);
        gad_tensor *got = gad_params_get(n.ps, have);
        e = max_diff(got, gad_checkpoint_get(io, want));
        CHECK_MSG(e <= 1e-6, "%s differs by %g", have, e);
        if (i % 3 == 2) {
            int64_t k = -1;
            CHECK(gad_dtype(got) == GAD_I64 && gad_rank(got) == 0);
            gad_read_i64(got, &k, 1);
            CHECK(k == 2);
        }
    }
    gad_module_train(n.conv, 0);
    CHECK(gad_module_training(gad_module_child(n.conv, 1)) == 0);
    e = max_diff(gad_module_forward(n.conv, gad_checkpoint_get(io, "conv.img_a")),
                 gad_checkpoint_get(io, "conv.logits_eval"));
    CHECK_MSG(e <= TOL, "eval logits differ by %g", e);
    /* evaluation leaves the buffers alone */
    int64_t k = -1;
    gad_read_i64(gad_params_get(n.ps, "conv.1.num_batches_tracked"), &k, 1);
    CHECK(k == 2);
    gad_scope_end();
    gad_checkpoint_free(io);
    free_net(&n);
    CHECK(gad_last_error() == NULL);
}

/* With GAD_MODULES_KEEP=PATH: a model with gad's own initial values
 * saved to PATH, and its logits (the reference script's sequence: text,
 * conv in training on img_a then img_b, conv in evaluation on img_a) to
 * PATH.io, for `torch_layers.py --check PATH` (PyTorch loads the file
 * strictly and compares its logits with gad's). Not a ctest by itself. */
static void keep_for_pytorch(void) {
    const char *keep = getenv("GAD_MODULES_KEEP");
    if (!keep || !*keep) return;
    net n;
    CHECK(build_net(&n, GAD_F32) == 0);
    CHECK(gad_params_save(n.ps, keep) == GAD_OK);
    gad_checkpoint *io = gad_load(IO);
    CHECK(io != NULL);
    gad_scope_begin();
    gad_module_train(n.embed, 0), gad_module_train(n.layers, 0);
    gad_tensor *t[4];
    t[0] = text_forward(&n, gad_checkpoint_get(io, "text.idx"));
    t[1] = gad_module_forward(n.conv, gad_checkpoint_get(io, "conv.img_a"));
    t[2] = gad_module_forward(n.conv, gad_checkpoint_get(io, "conv.img_b"));
    t[3] = gad_module_forward(gad_module_train(n.conv, 0), gad_checkpoint_get(io, "conv.img_a"));
    const char *names[4] = {"text.logits", "conv.logits_train_a", "conv.logits_train_b",
                            "conv.logits_eval"};
    char path[1024];
    snprintf(path, sizeof path, "%s.io", keep);
    CHECK(gad_save(path, names, t, 4) == GAD_OK);
    gad_scope_end();
    gad_checkpoint_free(io);
    free_net(&n);
}

/* The names, dtypes and shapes gad writes are the state_dict's. */
TEST(saved_set_has_the_state_dict_names_and_shapes) {
    net n;
    CHECK(build_net(&n, GAD_F32) == 0);
    char dir[256], path[300];
    if (test_make_tmpdir(dir, sizeof dir, "gad_modules", 1)) return;
    snprintf(path, sizeof path, "%s/net.safetensors", dir);
    CHECK(gad_params_load(n.ps, MODEL, 1, NULL) == GAD_OK);
    CHECK(gad_params_save(n.ps, path) == GAD_OK);
    gad_checkpoint *a = gad_load(MODEL), *b = gad_load(path);
    CHECK(a && b && gad_checkpoint_count(a) == gad_checkpoint_count(b));
    gad_scope_begin();
    for (int i = 0; a && b && i < gad_checkpoint_count(a); i++) {
        const char *name = gad_checkpoint_name(a, i);
        gad_tensor *x = gad_checkpoint_get(a, name), *y = gad_checkpoint_get(b, name);
        CHECK_MSG(y != NULL, "gad did not write \"%s\"", name);
        if (!y) {
            gad_clear_error();
            continue;
        }
        CHECK_MSG(gad_dtype(x) == gad_dtype(y) && gad_rank(x) == gad_rank(y) &&
                      !memcmp(gad_shape(x), gad_shape(y), (size_t)gad_rank(x) * sizeof(int64_t)),
                  "\"%s\" differs in dtype or shape", name);
        CHECK(max_diff(x, y) == 0);
    }
    gad_scope_end();
    gad_checkpoint_free(a);
    gad_checkpoint_free(b);
    /* and it loads back strictly into a fresh model */
    net m;
    CHECK(build_net(&m, GAD_F32) == 0);
    CHECK(gad_params_load(m.ps, path, 1, NULL) == GAD_OK);
    free_net(&m);
    free_net(&n);
    test_remove_tree(dir, 0);
}

/* The loss of the whole model: text logits and train-mode conv logits,
 * each weighted by fixed values. */
static double loss_value(net *n, gad_tensor *idx, gad_tensor *img, gad_tensor *wt, gad_tensor *wc,
                         gad_tensor **out) {
    gad_tensor *l = gad_add(gad_sum_all(gad_mul(text_forward(n, idx), wt)),
                            gad_sum_all(gad_mul(gad_module_forward(n->conv, img), wc)));
    if (out) *out = l;
    double v = NAN;
    gad_read_f64(l, &v, 1);
    return v;
}

TEST(gradients_match_finite_differences_f64) {
    net n;
    CHECK(build_net(&n, GAD_F64) == 0);
    gad_scope_begin();
    int64_t ids[6] = {3, 0, 7, 1, 9, 0};
    gad_tensor *idx = gad_from_i64(ids, (int64_t[]){2, 3}, 2);
    gad_tensor *img = gad_rng_normal_tensor(n.rng, (int64_t[]){2, 2, 6, 8}, 4, GAD_F64, 0, 1);
    gad_tensor *wt = gad_rng_uniform_tensor(n.rng, (int64_t[]){2, 3, V}, 3, GAD_F64, 0.5, 1.5);
    gad_tensor *wc = gad_rng_uniform_tensor(n.rng, (int64_t[]){2, 3}, 2, GAD_F64, 0.5, 1.5);
    gad_tensor *L;
    loss_value(&n, idx, img, wt, wc, &L);
    int np = gad_params_count(n.ps);
    gad_tensor **g = calloc((size_t)np, sizeof *g);
    CHECK(gad_params_grad(n.ps, L, g) == GAD_OK);
    const double eps = 1e-6;
    int64_t checked = 0;
    double worst = 0;
    const char *worst_name = "";
    int per = TEST_SANITIZED ? 4 : 24; /* elements checked per tensor */
    for (int p = 0; p < np; p++) {
        gad_tensor *t = gad_params_at(n.ps, p);
        const char *name = gad_params_name(n.ps, p);
        int64_t k = gad_numel(t), step = k > per ? k / per : 1;
        double *v = malloc((size_t)k * sizeof *v), *ga = malloc((size_t)k * sizeof *ga);
        gad_read_f64(t, v, (size_t)k);
        gad_read_f64(g[p], ga, (size_t)k);
        int pad_row = !strcmp(name, "text.embed.weight");
        if (pad_row) /* padding_idx 0: no gradient */
            for (int64_t j = 0; j < D; j++) CHECK(ga[j] == 0);
        for (int64_t j = pad_row ? D : 0; j < k; j += step) {
            double keep = v[j];
            v[j] = keep + eps;
            gad_write_f64(t, v, (size_t)k);
            double lp = loss_value(&n, idx, img, wt, wc, NULL);
            v[j] = keep - eps;
            gad_write_f64(t, v, (size_t)k);
            double lm = loss_value(&n, idx, img, wt, wc, NULL);
            v[j] = keep;
            gad_write_f64(t, v, (size_t)k);
            double num = (lp - lm) / (2 * eps), err = fabs(num - ga[j]) / (1e-6 + 1e-4 * fabs(num));
            if (err > worst) worst = err, worst_name = name;
            checked++;
        }
        free(v);
        free(ga);
    }
    CHECK_MSG(worst <= 1, "worst gradient error %.3g of the tolerance in \"%s\"", worst,
              worst_name);
    CHECK(checked > (TEST_SANITIZED ? 100 : 500));
    free(g);
    gad_scope_end();
    free_net(&n);
}

/* Linear reads its weight [out, in] through a transposed view: the layer's
 * output equals x @ w^T computed from a packed transpose. */
TEST(linear_matches_the_functional_form) {
    gad_params *ps = gad_params_new();
    gad_rng *rng = gad_rng_new(3);
    gad_nn_ctx c = {ps, rng, GAD_F32};
    gad_module *lin = gad_nn_linear(&c, "", 5, 3, 1);
    CHECK(lin && gad_params_get(ps, "weight") && gad_params_get(ps, "bias"));
    CHECK(!strcmp(gad_module_type(lin), "Linear") && !strcmp(gad_module_prefix(lin), ""));
    gad_scope_begin();
    gad_tensor *w = gad_module_tensor(lin, "weight");
    CHECK(gad_shape(w)[0] == 3 && gad_shape(w)[1] == 5);
    /* PyTorch's init: |w| <= 1/sqrt(5) */
    float vals[15];
    gad_read_f32(w, vals, 15);
    for (int i = 0; i < 15; i++) CHECK(fabsf(vals[i]) <= 1 / sqrtf(5.0f));
    gad_tensor *x = gad_rng_normal_tensor(rng, (int64_t[]){4, 5}, 2, GAD_F32, 0, 1);
    gad_tensor *want =
        gad_add(gad_matmul(x, gad_contiguous(gad_transpose(w))), gad_module_tensor(lin, "bias"));
    CHECK(max_diff(gad_module_forward(lin, x), want) <= 1e-6);
    /* no bias */
    gad_module *nob = gad_nn_linear(&c, "nob", 5, 3, 0);
    CHECK(nob && gad_params_count(ps) == 3);
    CHECK(gad_module_tensor(nob, "bias") == NULL && gad_last_error()->kind == GAD_ERR_INDEX);
    gad_clear_error();
    gad_scope_end();
    gad_module_free(nob);
    gad_module_free(lin);
    gad_params_free(ps);
    gad_rng_free(rng);
}

/* Multi-dim LayerNorm and RMSNorm against the functional ops on the
 * flattened tail; RMSNorm's eps None is f32's machine epsilon. */
TEST(norms_over_several_dims) {
    gad_params *ps = gad_params_new();
    gad_nn_ctx c = {ps, NULL, GAD_F64};
    int64_t shape[2] = {3, 4};
    gad_module *ln = gad_nn_layer_norm(&c, "ln", shape, 2, 1e-5, 1, 0);
    gad_module *rn = gad_nn_rms_norm(&c, "rn", shape, 2, NAN, 0);
    CHECK(ln && rn && gad_params_count(ps) == 1); /* ln.weight only */
    gad_scope_begin();
    gad_tensor *x = gad_randn((int64_t[]){2, 3, 4}, 3, 5);
    x = gad_cast(x, GAD_F64);
    gad_tensor *flat = gad_reshape(x, (int64_t[]){2, 12}, 2);
    CHECK(max_diff(gad_module_forward(ln, x), gad_layer_norm(flat, NULL, NULL, 1e-5)) <= 1e-12);
    CHECK(max_diff(gad_module_forward(rn, x), gad_rms_norm(flat, 2.220446049250313e-16)) <= 1e-12);
    CHECK(gad_module_forward(ln, gad_reshape(x, (int64_t[]){2, 4, 3}, 3)) == NULL);
    CHECK(gad_last_error() && gad_last_error()->kind == GAD_ERR_SHAPE &&
          strstr(gad_last_error()->message, "LayerNorm") == NULL &&
          !strcmp(gad_last_error()->op, "LayerNorm"));
    gad_clear_error();
    gad_scope_end();
    gad_module_free(ln);
    gad_module_free(rn);
    gad_params_free(ps);
}

/* MultiheadAttention with separate q, k, v, a key padding mask and a float
 * mask against the same computed by hand with gad ops. */
TEST(mha_cross_attention_and_masks) {
    gad_params *ps = gad_params_new();
    gad_rng *rng = gad_rng_new(11);
    gad_nn_ctx c = {ps, rng, GAD_F64};
    gad_module *m = gad_nn_multihead_attention(&c, "attn", 4, 2, 0.0, 1);
    CHECK(m && gad_params_count(ps) == 4);
    gad_scope_begin();
    gad_tensor *q = gad_rng_normal_tensor(rng, (int64_t[]){2, 3, 4}, 3, GAD_F64, 0, 1);
    gad_tensor *kv = gad_rng_normal_tensor(rng, (int64_t[]){2, 5, 4}, 3, GAD_F64, 0, 1);
    uint8_t pad[10] = {0, 0, 0, 1, 1, 0, 0, 0, 0, 1};
    gad_tensor *kpm = gad_from_bool(pad, (int64_t[]){2, 5}, 2);
    gad_tensor *am = gad_rng_normal_tensor(rng, (int64_t[]){3, 5}, 2, GAD_F64, 0, 1);
    gad_tensor *y = gad_nn_mha_forward(m, q, kv, kv, kpm, am, 0);
    /* by hand: the float masks added, heads split, softmax, merged */
    gad_tensor *w = gad_module_tensor(m, "in_proj_weight");
    gad_tensor *b = gad_module_tensor(m, "in_proj_bias");
    gad_tensor *proj[3], *in[3] = {q, kv, kv};
    for (int i = 0; i < 3; i++) {
        gad_tensor *wi = gad_slice(w, (gad_range[]){GAD_RANGE(4 * i, 4 * i + 4)}, 1);
        gad_tensor *bi = gad_slice(b, (gad_range[]){GAD_RANGE(4 * i, 4 * i + 4)}, 1);
        int64_t T = gad_shape(in[i])[1];
        gad_tensor *p = gad_add(gad_matmul(in[i], gad_transpose(wi)), bi);
        proj[i] = gad_permute(gad_reshape(p, (int64_t[]){2, T, 2, 2}, 4), (int[]){0, 2, 1, 3}, 4);
    }
    gad_tensor *s = gad_mul(gad_matmul(proj[0], gad_transpose(proj[1])),
                            gad_scalar(1 / sqrt(2.0), GAD_F64));
    s = gad_add(s, am);
    s = gad_masked_fill(s, gad_reshape(kpm, (int64_t[]){2, 1, 1, 5}, 4), -INFINITY);
    gad_tensor *o = gad_matmul(gad_softmax(s, -1), proj[2]);
    o = gad_reshape(gad_permute(o, (int[]){0, 2, 1, 3}, 4), (int64_t[]){2, 3, 4}, 3);
    o = gad_add(gad_matmul(o, gad_transpose(gad_module_tensor(m, "out_proj.weight"))),
                gad_module_tensor(m, "out_proj.bias"));
    CHECK(max_diff(y, o) <= 1e-12);
    /* unbatched, and bool attn_mask true = masked (the causal one equals is_causal) */
    gad_tensor *q1 = gad_select(q, 0, 0);
    uint8_t tri[9] = {0, 1, 1, 0, 0, 1, 0, 0, 0};
    gad_tensor *causal = gad_from_bool(tri, (int64_t[]){3, 3}, 2);
    gad_tensor *y1 = gad_nn_mha_forward(m, q1, q1, q1, NULL, causal, 0);
    gad_tensor *y2 = gad_nn_mha_forward(m, q1, q1, q1, NULL, NULL, 1);
    CHECK(y1 && gad_rank(y1) == 2 && max_diff(y1, y2) <= 1e-12);
    gad_scope_end();
    gad_module_free(m);
    gad_params_free(ps);
    gad_rng_free(rng);
}

/* Tied weights: a head sharing the embedding's tensor. The set counts it
 * once; the file holds two entries (safetensors refuses shared tensors),
 * and loads back strictly into a tied model. */
TEST(tied_weights_are_saved_as_two_entries_and_load) {
    gad_params *ps = gad_params_new();
    gad_rng *rng = gad_rng_new(5);
    gad_nn_ctx c = {ps, rng, GAD_F32};
    gad_module *emb = gad_nn_embedding(&c, "embed", 6, 4, GAD_NN_NO_PADDING);
    gad_module *head = gad_nn_linear_tied(&c, "head", gad_module_tensor(emb, "weight"), 1);
    CHECK(emb && head && gad_params_count(ps) == 2);
    CHECK(gad_params_get(ps, "head.weight") == gad_params_get(ps, "embed.weight"));
    char dir[256], path[300];
    if (test_make_tmpdir(dir, sizeof dir, "gad_tied", 1)) return;
    snprintf(path, sizeof path, "%s/tied.safetensors", dir);
    CHECK(gad_params_save(ps, path) == GAD_OK);
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp && gad_checkpoint_count(cp) == 3);
    gad_scope_begin();
    CHECK(max_diff(gad_checkpoint_get(cp, "head.weight"), gad_checkpoint_get(cp, "embed.weight")) ==
          0);
    gad_scope_end();
    gad_checkpoint_free(cp);
    /* a second tied model loads it strictly; the tie holds */
    gad_params *ps2 = gad_params_new();
    gad_nn_ctx c2 = {ps2, rng, GAD_F32};
    gad_module *emb2 = gad_nn_embedding(&c2, "embed", 6, 4, GAD_NN_NO_PADDING);
    gad_module *head2 = gad_nn_linear_tied(&c2, "head", gad_module_tensor(emb2, "weight"), 1);
    gad_params_load_info info;
    CHECK(gad_params_load(ps2, path, 1, &info) == GAD_OK && info.unexpected == 0);
    gad_scope_begin();
    CHECK(max_diff(gad_params_get(ps2, "embed.weight"), gad_params_get(ps, "embed.weight")) == 0);
    CHECK(gad_params_get(ps2, "head.weight") == gad_params_get(ps2, "embed.weight"));
    /* the head's gradient reaches the one tensor from both uses */
    int64_t ids[3] = {1, 4, 2};
    gad_tensor *x = gad_module_forward(emb2, gad_from_i64(ids, (int64_t[]){3}, 1));
    gad_tensor *y = gad_module_forward(head2, x);
    gad_tensor *g[2];
    CHECK(gad_params_grad(ps2, gad_sum_all(y), g) == GAD_OK && g[0] && g[1]);
    gad_scope_end();
    /* an untied model loads it too: two tensors with the same values */
    gad_params *ps3 = gad_params_new();
    gad_nn_ctx c3 = {ps3, rng, GAD_F32};
    gad_module *emb3 = gad_nn_embedding(&c3, "embed", 6, 4, GAD_NN_NO_PADDING);
    gad_module *head3 = gad_nn_linear(&c3, "head", 4, 6, 1);
    CHECK(gad_params_load(ps3, path, 1, NULL) == GAD_OK);
    gad_module *m[6] = {emb, head, emb2, head2, emb3, head3};
    for (int i = 0; i < 6; i++) gad_module_free(m[i]);
    gad_params_free(ps);
    gad_params_free(ps2);
    gad_params_free(ps3);
    gad_rng_free(rng);
    test_remove_tree(dir, 0);
}

/* Hyper-parameters PyTorch refuses: clear errors naming the layer, its
 * prefix and the values; nothing is added to the set. */
TEST(invalid_hyper_parameters) {
    gad_params *ps = gad_params_new();
    gad_nn_ctx c = {ps, NULL, GAD_F32};
    CHECK(gad_nn_multihead_attention(&c, "enc.attn", 10, 3, 0.0, 1) == NULL);
    CHECK(gad_last_error()->kind == GAD_ERR_DOMAIN &&
          !strcmp(gad_last_error()->op, "MultiheadAttention") &&
          strstr(gad_last_error()->message, "\"enc.attn\": embed_dim = 10 is not divisible by "
                                            "num_heads = 3"));
    gad_clear_error();
    gad_conv_opts g3 = {.groups = 3};
    CHECK(gad_nn_conv2d(&c, "c", 4, 6, 3, 3, &g3, 1) == NULL);
    CHECK(gad_last_error()->kind == GAD_ERR_DOMAIN && !strcmp(gad_last_error()->op, "Conv2d") &&
          strstr(gad_last_error()->message, "groups = 3 must divide in_channels = 4"));
    gad_clear_error();
    CHECK(gad_nn_embedding(&c, "e", 5, 2, 5) == NULL);
    CHECK(strstr(gad_last_error()->message, "padding_idx = 5"));
    gad_clear_error();
    CHECK(gad_nn_transformer_encoder_layer(&c, "t", 6, 4, 8, 0.1, GAD_NN_RELU, 1e-5, 0, 1) == NULL);
    CHECK(strstr(gad_last_error()->message, "d_model = 6 must be > 0 and divisible by nhead = 4"));
    gad_clear_error();
    CHECK(gad_params_count(ps) == 0 && gad_params_buffer_count(ps) == 0);
    /* a name already in the set: nothing added */
    gad_module *a = gad_nn_linear(&c, "fc", 2, 2, 1);
    CHECK(a && gad_nn_linear(&c, "fc", 2, 2, 1) == NULL);
    CHECK(strstr(gad_last_error()->message, "\"fc.weight\" is already in the set"));
    gad_clear_error();
    CHECK(gad_params_count(ps) == 2);
    /* a Sequential given a failed child refuses to run */
    gad_module *s = gad_nn_sequential(&c, "seq");
    CHECK(gad_nn_seq_add(s, gad_nn_dropout(&c, 1.5)) == NULL);
    gad_clear_error();
    gad_scope_begin();
    CHECK(gad_module_forward(s, gad_zeros((int64_t[]){2}, 1, GAD_F32)) == NULL);
    CHECK(strstr(gad_last_error()->message, "a child failed"));
    gad_clear_error();
    /* wrong input shapes name the layer */
    CHECK(gad_module_forward(a, gad_zeros((int64_t[]){2, 3}, 2, GAD_F32)) == NULL);
    CHECK(!strcmp(gad_last_error()->op, "Linear") &&
          strstr(gad_last_error()->message, "\"fc\": x [2,3] must be [..., 2]"));
    gad_clear_error();
    gad_scope_end();
    gad_module_free(s);
    gad_module_free(a);
    gad_params_free(ps);
}

int main(void) {
    RUN(state_dict_loads_strictly_and_gives_pytorch_logits);
    RUN(saved_set_has_the_state_dict_names_and_shapes);
    RUN(keep_for_pytorch);
    RUN(gradients_match_finite_differences_f64);
    RUN(linear_matches_the_functional_form);
    RUN(norms_over_several_dims);
    RUN(mha_cross_attention_and_masks);
    RUN(tied_weights_are_saved_as_two_entries_and_load);
    RUN(invalid_hyper_parameters);
    return test_summary();
}
