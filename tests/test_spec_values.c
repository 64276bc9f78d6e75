/* test_spec_values.c: reference values quoted in SPEC that the per-area
 * tests do not already pin down, computed from gad's ops: rms_norm (§4.2),
 * cross-entropy (§3.4), whiten (§3.4), layer_norm's forward and its correct
 * gradient (§3.4, D3), and one test per error kind (SPEC D11). */
#include "test.h"

static gad_tensor *mat(const float *v, int64_t r, int64_t c) {
    return gad_from_f32(v, (int64_t[]){r, c}, 2);
}

/* rms_norm(x) = x / sqrt(mean(x^2) + eps) over the last axis */
static gad_tensor *rms(gad_tensor *x, double eps) {
    gad_tensor *ms = gad_mean(gad_square(x), (int[]){-1}, 1, 1);
    return gad_div(x, gad_sqrt(gad_add_scalar(ms, eps)));
}

TEST(rms_values) {
    gad_scope_begin();
    CHECK_VALUES(rms(mat((float[]){3, 4}, 1, 2), 0), 1e-7, 0.84852815, 1.1313709);
    gad_scope_end();
}

/* cross_entropy = nll(log_softmax(logits)), written with take */
TEST(cross_entropy_values) {
    gad_scope_begin();
    gad_tensor *logits = gad_requires_grad(mat((float[]){1, 2, 3, 0, 0, 0}, 2, 3));
    gad_tensor *t = gad_from_i64((int64_t[]){2, 0}, (int64_t[]){2}, 1);
    gad_tensor *none = gad_neg(gad_take(gad_log_softmax(logits, -1), 1, t));
    CHECK_VALUES(none, 1e-6, 0.40760595, 1.0986123);
    CHECK_NEAR(gad_item(gad_sum_all(none)), 1.5062182, 1e-6);
    gad_tensor *mean = gad_mean_all(none);
    CHECK_NEAR(gad_item(mean), 0.7531091, 1e-6);
    gad_tensor *g;
    CHECK(gad_grad(mean, &logits, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 1e-7, 0.04501529, 0.122364245, -0.16737953, -0.33333334, 0.16666666,
                 0.16666666);
    gad_scope_end();
}

TEST(whiten_values) {
    gad_scope_begin();
    gad_tensor *x = gad_from_f32((float[]){1, 2, 3, 4}, (int64_t[]){4}, 1);
    gad_tensor *w = gad_div(gad_sub(x, gad_mean_all(x)),
                            gad_add_scalar(gad_stddev(x, (int[]){0}, 1, 0), 1e-8));
    CHECK_VALUES(w, 1e-6, -1.3416407, -0.4472136, 0.4472136, 1.3416407);
    gad_scope_end();
}

/* layer_norm over the last axis with the variance path on the tape (D3):
 * the gradient matches finite differences, unlike g's. */
TEST(layer_norm_forward_and_gradient) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_cast(mat((float[]){1, 3, 6, 2, -1, 0.5f}, 2, 3), GAD_F64));
    gad_tensor *mu = gad_mean(x, (int[]){-1}, 1, 1);
    gad_tensor *var = gad_variance(x, (int[]){-1}, 1, 1);
    gad_tensor *ln = gad_div(gad_sub(x, mu), gad_sqrt(gad_add_scalar(var, 1e-5)));
    CHECK_VALUES(ln, 1e-6, -1.1355486, -0.1622213, 1.2977697, 1.2247407, -1.2247407, 0);
    gad_tensor *w = gad_cast(mat((float[]){1, 2, 3, 4, 5, 6}, 2, 3), GAD_F64);
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(w, ln)), &x, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 1e-3, -0.038, 0.065, -0.025, -0.408, -0.408, 0.816);
    gad_scope_end();
}

/* ------------------------------------------------------ one per error kind */

static void *fail_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx, (void)size, (void)align;
    return NULL;
}
static void fail_free(void *ctx, void *p, size_t size) { (void)ctx, (void)p, (void)size; }

TEST(every_error_kind) {
    gad_scope_begin();
    gad_tensor *a = mat((float[]){1, 2, 3, 4, 5, 6}, 2, 3);
    /* shape */
    CHECK(gad_add(a, gad_transpose(a)) == NULL);
    CHECK(strstr(gad_last_error()->message, "[2,3]") && strstr(gad_last_error()->message, "[3,2]"));
    CHECK_ERR(GAD_ERR_SHAPE, "add");
    /* dtype */
    CHECK(gad_mul(a, gad_cast(a, GAD_F64)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "mul");
    /* index */
    CHECK(gad_select(a, 0, 2) == NULL);
    CHECK(strstr(gad_last_error()->message, "2") != NULL);
    CHECK_ERR(GAD_ERR_INDEX, "select");
    /* domain */
    CHECK(gad_clamp(a, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clamp");
    /* not-unique: writing into the output of a tracked op */
    gad_tensor *l = gad_requires_grad(gad_clone(a));
    CHECK(gad_data_mut(gad_exp(l)) == NULL);
    CHECK_ERR(GAD_ERR_NOT_UNIQUE, "data_mut");
    /* io */
    CHECK(gad_graph_dot(a, NULL) == GAD_ERR_IO);
    CHECK_ERR(GAD_ERR_IO, "graph_dot");
    gad_scope_end();
    /* unsupported: more tracked inputs than a node can hold */
    gad_scope_begin();
    enum { N = 65536 };
    gad_tensor **many = malloc(N * sizeof *many);
    gad_tensor *x = gad_requires_grad(gad_zeros((int64_t[]){1}, 1, GAD_F32));
    for (int i = 0; i < N; i++) many[i] = x;
    CHECK(gad_cat(many, N, 0) == NULL);
    CHECK_ERR(GAD_ERR_UNSUPPORTED, "cat");
    gad_no_grad_begin(); /* untracked, the same call works */
    CHECK(gad_numel(gad_cat(many, N, 0)) == N);
    gad_no_grad_end();
    free(many);
    gad_scope_end();
    /* memory */
    gad_cache_trim();
    gad_allocator failing = {fail_alloc, fail_free, NULL};
    gad_set_allocator(&failing);
    CHECK(gad_zeros((int64_t[]){4}, 1, GAD_F32) == NULL);
    gad_set_allocator(NULL);
    CHECK_ERR(GAD_ERR_MEMORY, "zeros");
    /* every kind has a name */
    for (int k = 0; k < GAD_STATUS_COUNT_; k++) CHECK(strcmp(gad_status_str(k), "unknown") != 0);
    CHECK(!strcmp(gad_status_str(GAD_ERR_FORMAT), "format"));
}

int main(void) {
    RUN(rms_values);
    RUN(cross_entropy_values);
    RUN(whiten_values);
    RUN(layer_norm_forward_and_gradient);
    RUN(every_error_kind);
    return test_summary();
}
