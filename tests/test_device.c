/* test_device.c: device dispatch without a GPU. A second device, "test"
 * (test_device.h, which test_dist.c shares): its memory is separate host memory
 * (blocks of its own, never core's caches) that core reaches only through
 * the table's copies, and its kernels are the CPU's. Every op of the
 * registry runs on it (forward and VJP, on every gradcheck sample) and must
 * give the CPU's bits; its results stay on it; f64 samples pass gradcheck
 * there; no op or VJP copies to the host (checks of index values happen in
 * the back end's kernels); inputs on two devices are a device error that
 * names the op and both devices. It is a test fixture, not a GPU. */
#include "test.h"

#include "backend/backend.h"
#include "gad_int.h"
#include "ops/ops_int.h"
#include "test_registry.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_device.h"

/* A copy of t on the test device (a leaf again if t was one), owned by the
 * current scope. */
static gad_tensor *to_td(gad_tensor *t) {
    if (!t) return NULL;
    gad_tensor *d = gad__own(gad__to_dev("test", t, TD));
    return d && gad_is_leaf(t) ? gad_requires_grad(d) : d;
}

/* t's elements as doubles (n at most), through gad_read_f64. */
static int64_t read_all(gad_tensor *t, double *out, size_t n) {
    int64_t k = gad_numel(t);
    if ((size_t)k > n || gad_read_f64(t, out, n) != GAD_OK) return -1;
    return k;
}

#define MAXEL 4096

/* Same values, bit for bit (NaN equal to NaN). */
static int same_bits(gad_tensor *a, gad_tensor *b) {
    static double va[MAXEL], vb[MAXEL];
    int64_t na = read_all(a, va, MAXEL), nb = read_all(b, vb, MAXEL);
    if (na < 0 || na != nb || gad_dtype(a) != gad_dtype(b) || gad_rank(a) != gad_rank(b))
        return 0;
    for (int i = 0; i < gad_rank(a); i++)
        if (gad_shape(a)[i] != gad_shape(b)[i]) return 0;
    for (int64_t i = 0; i < na; i++)
        if (memcmp(&va[i], &vb[i], sizeof va[i]) != 0 && !(isnan(va[i]) && isnan(vb[i])))
            return 0;
    return 1;
}

/* sum(y * w) with w fixed weights on y's device, for a scalar to
 * differentiate. */
static gad_tensor *project(gad_tensor *y, gad_rng *r) {
    gad_tensor *w = gad_rng_uniform_tensor(r, gad_shape(y), gad_rank(y), gad_dtype(y), 0.5, 1.5);
    if (y->dev != GAD_DEV_HOST) w = gad__own(gad__to_dev("test", w, y->dev));
    return gad_sum_all(gad_mul(y, w));
}

/* The pending error is of this kind, from op, with needle in its text. */
#define CHECK_DEV_ERR(kind_, op_, needle_)                                     \
    do {                                                                       \
        const gad_error *e_ = gad_last_error();                                \
        CHECK_MSG(e_ && e_->kind == (kind_) && !strcmp(e_->op, (op_)) &&       \
                      strstr(e_->text, (needle_)),                             \
                  "want %s error in %s (\"%s\"), got: %s",                     \
                  gad_status_str(kind_), (op_), (needle_), e_ ? e_->text : "none"); \
    } while (0)

/* --------------------------------------------------------- the registry */

TEST(every_op_runs_on_the_device) {
    gad_rng *rng = gad_rng_new(77);
    int ops = 0, cases = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        int mine = 0;
        for (int v = 0;; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) break;
            mine++;
            /* on the CPU */
            gad_tensor *y = s.apply(&s, s.in, s.n);
            CHECK_MSG(y != NULL, "%s %s on the CPU: %s", e->info.name, s.what,
                      gad_last_error() ? gad_last_error()->text : "");
            gad_tensor *leaves[12], *dleaves[12], *g[12], *dg[12], *din[12];
            int nl = 0;
            for (int i = 0; i < s.n; i++) {
                din[i] = to_td(s.in[i]);
                if (s.in[i] && gad_is_leaf(s.in[i])) {
                    leaves[nl] = s.in[i];
                    dleaves[nl++] = din[i];
                }
            }
            /* on the test device: no copy to the host anywhere in the
             * forward, the VJPs or the engine */
            long long to_host_before = atomic_load(&td_to_host);
            gad_tensor *dy = s.apply(&s, din, s.n);
            CHECK_MSG(dy != NULL, "%s %s on the device: %s", e->info.name, s.what,
                      gad_last_error() ? gad_last_error()->text : "");
            if (!y || !dy) {
                gad_clear_error();
                gad_scope_end();
                continue;
            }
            /* (an op of no tensor input, sinusoidal_positions, makes its
             * result on the CPU) */
            int inputs = 0;
            for (int i = 0; i < s.n; i++) inputs += s.in[i] != NULL;
            CHECK_MSG(dy->dev == TD || !inputs, "%s %s: the result is on %s", e->info.name,
                      s.what, gad__device_name(dy->dev));
            gad_rng *r1 = gad_rng_new(5 + (uint64_t)v), *r2 = gad_rng_new(5 + (uint64_t)v);
            gad_tensor *L = gad_is_tracked(y) ? project(y, r1) : NULL;
            gad_tensor *dL = gad_is_tracked(dy) ? project(dy, r2) : NULL;
            gad_rng_free(r1);
            gad_rng_free(r2);
            int gok = L && dL && gad_grad(L, leaves, nl, g) == GAD_OK &&
                      gad_grad(dL, dleaves, nl, dg) == GAD_OK;
            /* (to_device, whose sample goes to the host and back, is the
             * one op whose work is that copy; cross_entropy_ex reads its
             * targets and class weights on the host, as written) */
            CHECK_MSG(op == GAD_OP_TO_DEVICE || op == GAD_OP_CROSS_ENTROPY_EX ||
                          atomic_load(&td_to_host) == to_host_before,
                      "%s %s: the op or its VJP copied to the host", e->info.name, s.what);
            CHECK_MSG(same_bits(y, dy), "%s %s: values differ from the CPU's", e->info.name,
                      s.what);
            CHECK_MSG(gok || nl == 0 || !gad_is_tracked(y), "%s %s: grad failed: %s",
                      e->info.name, s.what, gad_last_error() ? gad_last_error()->text : "");
            for (int q = 0; gok && q < nl; q++) {
                CHECK_MSG(dg[q]->dev == TD, "%s %s: gradient %d is on %s", e->info.name,
                          s.what, q, gad__device_name(dg[q]->dev));
                CHECK_MSG(same_bits(g[q], dg[q]), "%s %s: gradient %d differs from the CPU's",
                          e->info.name, s.what, q);
            }
            /* finite differences on the device itself (f64 samples) */
            int f64 = 1;
            for (int i = 0; i < s.n; i++)
                if (din[i] && gad_is_leaf(din[i]) && gad_dtype(din[i]) != GAD_F64) f64 = 0;
            if (f64 && nl > 0 && GAD_OP_DIFFERENTIABLE(op)) {
                gad_gradcheck_result res;
                gad_status st = gad_gradcheck(s.apply, &s, din, s.n, NULL, &res);
                CHECK_MSG(st == GAD_OK && res.passed, "%s %s: gradcheck on the device: %s",
                          e->info.name, s.what,
                          st != GAD_OK && gad_last_error() ? gad_last_error()->text : "");
            }
            gad_clear_error();
            gad_scope_end();
            cases++;
        }
        if (mine) ops++;
    }
    gad_rng_free(rng);
    printf("  %d ops, %d cases on the test device, equal to the CPU bit for bit\n", ops, cases);
    CHECK(ops >= 40);
}

/* An op given inputs on two devices fails with a device error naming it
 * and both devices, and copies nothing. */
TEST(mixed_devices_are_an_error) {
    gad_rng *rng = gad_rng_new(78);
    int checked = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        gad_scope_begin();
        gad_op_sample s;
        memset(&s, 0, sizeof s);
        int ok = e->sample(&s, rng, 0);
        int tensors = 0;
        for (int i = 0; ok && i < s.n; i++) tensors += s.in[i] != NULL;
        if (ok && tensors >= 2) {
            gad_tensor *mixed[12];
            for (int i = 0; i < s.n; i++) mixed[i] = i == 0 ? to_td(s.in[i]) : s.in[i];
            gad_clear_error();
            long long copies = atomic_load(&td_to_host) + atomic_load(&td_from_host);
            gad_tensor *y = s.apply(&s, mixed, s.n);
            const gad_error *err = gad_last_error();
            CHECK_MSG(!y && err && err->kind == GAD_ERR_DEVICE, "%s: %s", e->info.name,
                      err ? err->text : "no error");
            CHECK_MSG(err && strstr(err->message, "test:0") && strstr(err->message, "cpu"),
                      "%s: %s", e->info.name, err ? err->message : "");
            CHECK_MSG(atomic_load(&td_to_host) + atomic_load(&td_from_host) == copies,
                      "%s: copied before refusing", e->info.name);
            checked++;
        }
        gad_clear_error();
        gad_scope_end();
    }
    gad_rng_free(rng);
    printf("  %d ops with two or more inputs refuse mixed devices\n", checked);
    CHECK(checked >= 15);
}

/* ---- half precision (issue 29): no device has half kernels. Every op of
 * the registry on bf16 inputs on the test device either moves the
 * elements (views, copies, gather, ...: the host's bits) or answers the
 * unsupported error (or, for an op that takes no floats, the dtype
 * error): never a float kernel on 2-byte data. */
TEST(half_tensors_on_the_device) {
    gad_rng *rng = gad_rng_new(79);
    int refused = 0, moved = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        gad_scope_begin();
        gad_op_sample s;
        memset(&s, 0, sizeof s);
        int ok = e->sample(&s, rng, 0), any = 0;
        gad_tensor *h[12], *d[12];
        for (int i = 0; ok && i < s.n; i++) {
            h[i] = s.in[i];
            if (s.in[i] && (gad_dtype(s.in[i]) == GAD_F32 || gad_dtype(s.in[i]) == GAD_F64)) {
                h[i] = gad_detach(gad_cast(s.in[i], GAD_BF16));
                any = 1;
            }
            d[i] = h[i] ? gad__own(gad__to_dev("test", h[i], TD)) : NULL;
        }
        if (ok && any) {
            gad_clear_error();
            gad_tensor *y = s.apply(&s, d, s.n);
            const gad_error *err = gad_last_error();
            if (y) {
                gad_tensor *want = s.apply(&s, h, s.n);
                gad_tensor *got = gad_contiguous(gad_to_device(y, GAD_DEV_HOST));
                want = want ? gad_contiguous(want) : NULL;
                CHECK_MSG(want && got && gad_dtype(got) == gad_dtype(want) &&
                              gad_numel(got) == gad_numel(want) &&
                              !memcmp(gad_data(got), gad_data(want),
                                      (size_t)gad_numel(got) * gad_dtype_size(gad_dtype(got))),
                          "%s: bf16 on the device differs from the host", e->info.name);
                moved++;
            } else {
                CHECK_MSG(err && (err->kind == GAD_ERR_UNSUPPORTED || err->kind == GAD_ERR_DTYPE),
                          "%s: %s", e->info.name, err ? err->text : "no error");
                refused++;
            }
        }
        gad_clear_error();
        gad_scope_end();
    }
    gad_rng_free(rng);
    printf("  bf16 on the device: %d ops move elements, %d refuse\n", moved, refused);
    CHECK(refused >= 50);
    /* half gradients are clipped on the CPU only: elsewhere an unsupported
     * error naming the gradient, and nothing is scaled */
    gad_scope_begin();
    float v[3] = {3, 4, 12};
    gad_tensor *h = gad_cast(gad_from_f32(v, (int64_t[]){3}, 1), GAD_BF16);
    gad_tensor *g[2] = {gad_from_f32(v, (int64_t[]){3}, 1), gad__own(gad__to_dev("test", h, TD))};
    CHECK(g[1] && isnan(gad_clip_grad_norm(g, 2, 1)));
    const gad_error *err = gad_last_error();
    CHECK(err && err->kind == GAD_ERR_UNSUPPORTED && strstr(err->text, "grads[1]") &&
          strstr(err->text, "bf16"));
    float back[3];
    CHECK(gad_read_f32(g[0], back, 3) == GAD_OK && back[2] == 12);
    gad_clear_error();
    gad_scope_end();
}

/* ------------------------------------------------------------ the rest */

TEST(placement_and_read_back) {
    gad_scope_begin();
    float v[6] = {1, -2, 3.5f, 4, 5, -6};
    gad_tensor *h = gad_from_f32(v, (int64_t[]){2, 3}, 2);
    gad_tensor *d = gad__own(gad__to_dev("test", h, TD));
    CHECK(d && d->dev == TD && d->st->dev == TD);
    /* reads copy to the host */
    float back[6] = {0};
    CHECK(gad_read_f32(d, back, 6) == GAD_OK && memcmp(back, v, sizeof v) == 0);
    double dv[6];
    gad_tensor *t = gad_transpose(d); /* a strided view, read in its order */
    CHECK(t && t->dev == TD && gad_read_f64(t, dv, 6) == GAD_OK && dv[1] == 4 && dv[2] == -2);
    CHECK(gad_item(gad_sum_all(d)) == 5.5);
    char buf[200];
    gad_snprint(buf, sizeof buf, d);
    CHECK_MSG(strstr(buf, "device=test:0") != NULL, "%s", buf);
    /* host pointers are refused */
    CHECK(gad_data(d) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "data", "test:0");
    gad_clear_error();
    CHECK(gad_data_mut(d) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "data_mut", "test:0");
    gad_clear_error();
    /* constants made by ops follow their inputs */
    CHECK(gad_zeros_like(d)->dev == TD && gad_full_like(d, 2)->dev == TD);
    gad_tensor *c = gad_cast(d, GAD_F64);
    CHECK(c && c->dev == TD && gad_item(gad_sum_all(c)) == 5.5);
    gad_tensor *cl = gad_contiguous(t);
    CHECK(cl && cl->dev == TD && gad_is_contiguous(cl));
    /* and back to the host */
    gad_tensor *hb = gad__own(gad__to_dev("test", t, GAD_DEV_HOST));
    CHECK(hb && hb->dev == GAD_DEV_HOST && same_bits(hb, gad_transpose(h)));
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

/* Copy-on-write works there too: writing through an optimizer-style
 * gad__make_unique gives a private device storage. */
TEST(copy_on_write_on_the_device) {
    gad_scope_begin();
    gad_tensor *d = gad__own(gad__to_dev("test", gad_ones((int64_t[]){4}, 1, GAD_F32), TD));
    gad_tensor *alias = gad_detach(d);
    CHECK(!gad_is_unique(d));
    CHECK(gad__make_unique("test", d) == 0);
    CHECK(gad_is_unique(d) && d->st != alias->st && d->st->dev == TD);
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

/* gad_write_*: in place on the device, one copy, copy-on-write for a
 * shared storage, a view keeps the old values; from gad_host_alloc's
 * memory too (pinned where there is a GPU, plain here). */
TEST(write_into_a_device_tensor) {
    gad_scope_begin();
    gad_tensor *d = gad__own(gad__to_dev("test", gad_zeros((int64_t[]){2, 3}, 2, GAD_F32), TD));
    gad_tensor *old = gad_detach(d); /* shares the storage */
    float *src = gad_host_alloc(6 * sizeof *src), got[6];
    CHECK(src != NULL);
    for (int i = 0; src && i < 6; i++) src[i] = (float)i + 0.5f;
    long long before = atomic_load(&td_from_host);
    gad_tensor *keep = d;
    CHECK(src && gad_write_f32(d, src, 6) == GAD_OK);
    CHECK(atomic_load(&td_from_host) == before + 1); /* one copy, no staging */
    CHECK(d == keep && gad_device_of(d) == TD && d->st->dev == TD && d->st != old->st);
    CHECK(gad_read_f32(d, got, 6) == GAD_OK && got[0] == 0.5f && got[5] == 5.5f);
    CHECK(gad_read_f32(old, got, 6) == GAD_OK && got[0] == 0 && got[5] == 0);
    int64_t idx[4] = {3, 1, 4, 1};
    gad_tensor *i64 = gad__own(gad__to_dev("test", gad_zeros((int64_t[]){4}, 1, GAD_I64), TD));
    CHECK(gad_write_i64(i64, idx, 4) == GAD_OK);
    int64_t back[4] = {0};
    CHECK(gad_read_i64(i64, back, 4) == GAD_OK && back[2] == 4 && back[3] == 1);
    CHECK(gad_write_i64(d, idx, 4) == GAD_ERR_DTYPE);
    gad_clear_error();
    gad_host_free(src);
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

/* The anomaly check and index checks run in the back end, and report. */
TEST(checks_in_the_back_end) {
    gad_scope_begin();
    gad_tensor *x = to_td(gad_requires_grad(gad_ones((int64_t[]){3}, 1, GAD_F64)));
    gad_tensor *idx = to_td(gad_from_i64((int64_t[]){0, 3}, (int64_t[]){2}, 1));
    long long th = atomic_load(&td_to_host);
    CHECK(gad_gather(x, 0, idx) == NULL);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "gather", "index 3 out of bounds for size 3");
    gad_clear_error();
    CHECK(gad_embedding_fused(gad_reshape(x, (int64_t[]){3, 1}, 2), idx) == NULL);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "embedding_fused", "index 3 out of bounds for 3 rows");
    gad_clear_error();
    CHECK(atomic_load(&td_to_host) == th);
    int was = gad_set_anomaly(1);
    gad_tensor *g;
    gad_tensor *l = gad_sum_all(gad_sqrt(gad_mul_scalar(x, 0)));
    CHECK(gad_grad(l, &x, 1, &g) == GAD_ERR_DOMAIN);
    CHECK_DEV_ERR(GAD_ERR_DOMAIN, "sqrt", "anomaly");
    gad_clear_error();
    gad_set_anomaly(was);
    gad_scope_end();
}

/* ------------------------------------------- deferred index checks */

/* The CUDA back end's way, on the test device in its deferred mode
 * (test_device.h): an op given an out-of-range index (positive or
 * negative) returns without an error and copies nothing to the host; the
 * next synchronising call (gad_item, gad_read_*, gad_device_sync) fails
 * with an index error that names the op, the value and the bound; after it
 * the device works (a correct op gives correct values, the next sync is
 * OK). Of several bad indices only the first is reported, and one in an op
 * whose result is never read is still reported at the next sync. */
TEST(deferred_index_checks) {
    int was = td_defer_index(1);
    gad_scope_begin();
    /* every input on the device first: a copy from the host is a
     * synchronising call too */
    gad_tensor *x = to_td(gad_from_f64((double[]){1, 2, 3}, (int64_t[]){3}, 1));
    gad_tensor *x2 = to_td(gad_from_f64((double[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2));
    gad_tensor *good = to_td(gad_from_i64((int64_t[]){2, -3, 1}, (int64_t[]){3}, 1));
    gad_tensor *pos3 = to_td(gad_from_i64((int64_t[]){0, 3}, (int64_t[]){2}, 1));
    gad_tensor *neg4 = to_td(gad_from_i64((int64_t[]){1, -4}, (int64_t[]){2}, 1));
    gad_tensor *many = to_td(gad_from_i64((int64_t[]){0, 5, 1, 7, -9}, (int64_t[]){5}, 1));
    gad_tensor *src = to_td(gad_from_f64((double[]){10, 20}, (int64_t[]){2}, 1));
    gad_tensor *table = to_td(gad_requires_grad(
        gad_from_f32((float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){3, 2}, 2)));
    gad_tensor *emb_bad = to_td(gad_from_i64((int64_t[]){2, -1}, (int64_t[]){2}, 1));
    gad_tensor *logits = to_td(gad_requires_grad(gad_from_f64(
        (double[]){0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 1, 1}, (int64_t[]){3, 4}, 2)));
    gad_tensor *targets = to_td(gad_from_i64((int64_t[]){1, 9, -2}, (int64_t[]){3}, 1));
    gad_tensor *mask = to_td(gad_from_f64((double[]){1, 0, 1}, (int64_t[]){3}, 1));
    gad_tensor *lp = to_td(gad_from_f64((double[]){-1, -2, -3, -4, -5, -6}, (int64_t[]){2, 3}, 2));
    gad_tensor *cls = to_td(gad_from_i64((int64_t[]){5, 0}, (int64_t[]){2}, 1));
    CHECK_MSG(!gad_last_error(), "setup: %s", gad_last_error() ? gad_last_error()->text : "");
    long long th = atomic_load(&td_to_host);
    double got[6];

    /* gather, a positive bad index: reported by gad_item */
    gad_tensor *y = gad_gather(x, 0, pos3);
    CHECK(y && !gad_last_error() && atomic_load(&td_to_host) == th);
    CHECK(isnan(gad_item(gad_sum_all(y))));
    CHECK_DEV_ERR(GAD_ERR_INDEX, "gather", "index 3 out of bounds for size 3 at position 1");
    CHECK_DEV_ERR(GAD_ERR_INDEX, "gather", "reported at this synchronising call");
    if (gad_last_error()) printf("  %s\n", gad_last_error()->text);
    gad_clear_error();
    /* the device works after it */
    CHECK(gad_item(gad_sum_all(gad_gather(x, 0, good))) == 3 + 1 + 2);
    CHECK(gad_device_sync(TD) == GAD_OK);

    /* take, a negative one: reported by gad_read_f64 */
    th = atomic_load(&td_to_host);
    y = gad_take(x2, 1, neg4);
    CHECK(y && !gad_last_error() && atomic_load(&td_to_host) == th);
    CHECK(gad_read_f64(y, got, 6) == GAD_ERR_INDEX);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "take", "index -4 out of bounds for size 3 at position 1");
    gad_clear_error();
    y = gad_take(x2, 1, gad_slice(good, (gad_range[]){GAD_RANGE(0, 2)}, 1));
    CHECK(y && gad_read_f64(y, got, 6) == GAD_OK && got[0] == 3 && got[1] == 4);

    /* scatter_add: reported by gad_device_sync */
    y = gad_scatter_add(x, 0, neg4, src);
    CHECK(y && !gad_last_error());
    CHECK(gad_device_sync(TD) == GAD_ERR_INDEX);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "scatter_add", "index -4 out of bounds for size 3");
    gad_clear_error();
    y = gad_scatter_add(x, 0, gad_slice(good, (gad_range[]){GAD_RANGE(0, 2)}, 1), src);
    CHECK(y && gad_read_f64(y, got, 3) == GAD_OK && got[0] == 21 && got[1] == 2 &&
          got[2] == 13);

    /* the embedding, forward and backward (which skips the bad row) */
    gad_tensor *e = gad_embedding_fused(table, emb_bad), *g = NULL;
    CHECK(e && !gad_last_error());
    CHECK(gad_grad(gad_sum_all(e), &table, 1, &g) == GAD_OK && g);
    float gf[6];
    CHECK(g && gad_read_f32(g, gf, 6) == GAD_ERR_INDEX);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "embedding_fused", "index -1 out of bounds [0, 3) at position 1");
    gad_clear_error();
    e = gad_embedding_fused(table, gad_slice(good, (gad_range[]){GAD_RANGE(2, 3)}, 1));
    CHECK(e && gad_read_f32(e, gf, 6) == GAD_OK && gf[0] == 3 && gf[1] == 4);

    /* masked_ce: the first weighted row's bad target (row 1's is not
     * weighted), forward and backward */
    gad_tensor *l = gad_masked_ce(logits, targets, mask);
    CHECK(l && !gad_last_error());
    CHECK(gad_grad(l, &logits, 1, &g) == GAD_OK);
    CHECK(isnan(gad_item(l)));
    CHECK_DEV_ERR(GAD_ERR_INDEX, "masked_ce", "target -2 of row 2 out of bounds for 4 classes");
    gad_clear_error();
    CHECK(gad_device_sync(TD) == GAD_OK);

    /* a layer's check ([0, C), no wrapping): nll_loss */
    l = gad_nll_loss(lp, cls, GAD_REDUCE_MEAN);
    CHECK(l && !gad_last_error());
    CHECK(isnan(gad_item(l)));
    CHECK_DEV_ERR(GAD_ERR_INDEX, "nll_loss", "index 5 out of bounds [0, 3) at position 0");
    gad_clear_error();

    /* index_select checks before the gather it runs: it is the one named */
    CHECK(gad_index_select(x, 0, pos3) && gad_device_sync(TD) == GAD_ERR_INDEX);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "index_select", "index 3 out of bounds");
    gad_clear_error();

    /* only the first of several: the first bad position of the first op
     * with one; the others are not reported later either */
    CHECK(gad_gather(x, 0, good) && gad_gather(x, 0, many) && gad_take(x2, 1, neg4) &&
          gad_scatter_add(x, 0, pos3, src));
    CHECK(!gad_last_error());
    CHECK(gad_device_sync(TD) == GAD_ERR_INDEX);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "gather", "index 5 out of bounds for size 3 at position 1");
    gad_clear_error();
    CHECK(gad_device_sync(TD) == GAD_OK);

    /* a result never read: still reported at the next sync */
    gad_scope_begin();
    gad_take(x2, 1, neg4);
    gad_scope_end();
    CHECK(gad_device_sync(TD) == GAD_ERR_INDEX);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "take", "index -4");
    gad_clear_error();

    /* and the device works: values, gradients, a clean sync */
    CHECK(gad_read_f64(gad_gather(x, 0, good), got, 3) == GAD_OK && got[0] == 3 &&
          got[1] == 1 && got[2] == 2);
    g = NULL;
    e = gad_embedding_fused(table, gad_slice(good, (gad_range[]){GAD_RANGE(2, 3)}, 1));
    CHECK(gad_grad(gad_sum_all(e), &table, 1, &g) == GAD_OK && g &&
          gad_read_f32(g, gf, 6) == GAD_OK && gf[2] == 1 && gf[3] == 1 && gf[0] == 0);
    CHECK(gad_device_sync(TD) == GAD_OK && !gad_last_error());
    gad_scope_end();
    td_defer_index(was);
    CHECK(atomic_load(&td_live) == 0);
}

/* Integer data (labels, tokens) gathered on the device: gather, take and
 * index_select of i64 x give the CPU's values, stay on the device and copy
 * nothing to the host. */
TEST(integer_gather_on_the_device) {
    gad_scope_begin();
    int64_t xv[12];
    for (int i = 0; i < 12; i++) xv[i] = INT64_MAX - 100 + 9 * i;
    gad_tensor *x = gad_from_i64(xv, (int64_t[]){3, 4}, 2);
    gad_tensor *gi = gad_from_i64((int64_t[]){2, 0, -1, 1, 0, 2, 1, -3}, (int64_t[]){2, 4}, 2);
    gad_tensor *ti = gad_from_i64((int64_t[]){3, -4, 1}, (int64_t[]){3}, 1);
    gad_tensor *si = gad_from_i64((int64_t[]){2, 2, 0, -1, 1}, (int64_t[]){5}, 1);
    gad_tensor *dx = to_td(x), *dgi = to_td(gi), *dti = to_td(ti), *dsi = to_td(si);
    long long th = atomic_load(&td_to_host);
    gad_tensor *cpu[4] = {gad_gather(x, 0, gi), gad_take(x, 1, ti), gad_index_select(x, 0, si),
                          gad_index_select(x, 1, si)};
    gad_tensor *dev[4] = {gad_gather(dx, 0, dgi), gad_take(dx, 1, dti),
                          gad_index_select(dx, 0, dsi), gad_index_select(dx, 1, dsi)};
    CHECK(atomic_load(&td_to_host) == th);
    for (int k = 0; k < 4; k++) {
        CHECK_MSG(cpu[k] && dev[k] && dev[k]->dev == TD && gad_dtype(dev[k]) == GAD_I64,
                  "case %d: %s", k, gad_last_error() ? gad_last_error()->text : "");
        int64_t a[20], b[20];
        int64_t n = gad_numel(cpu[k]);
        CHECK(n <= 20 && n == gad_numel(dev[k]));
        CHECK(gad_read_i64(cpu[k], a, 20) == GAD_OK && gad_read_i64(dev[k], b, 20) == GAD_OK);
        CHECK_MSG(memcmp(a, b, (size_t)n * sizeof a[0]) == 0, "case %d differs", k);
    }
    /* a bad index is found on the device too */
    th = atomic_load(&td_to_host);
    CHECK(gad_index_select(dx, 0, to_td(gad_from_i64((int64_t[]){3}, (int64_t[]){1}, 1))) ==
          NULL);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "index_select", "index 3 out of bounds for size 3");
    gad_clear_error();
    CHECK(atomic_load(&td_to_host) == th);
    gad_scope_end();
}

/* The engine refuses a VJP that fills a gradient it was not asked for or
 * of the wrong shape: an op's bug becomes an error, not a wrong sum. */
static int bad_vjp(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)need;
    gin[0] = gad_reshape(gy, (int64_t[]){-1}, 1); /* [2,2] -> [4]: wrong */
    return 0;
}

TEST(engine_checks_what_a_vjp_fills) {
    static const gad_op_info bad = {"bad_op", bad_vjp, 0};
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_ones((int64_t[]){2, 2}, 2, GAD_F32));
    gad_tensor *y = gad__tensor_like("bad_op", x);
    gad__fill(y, 1);
    y = gad__own(gad__track(y, &bad, &x, 1, NULL, 0));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(y), &x, 1, &g) == GAD_ERR_DOMAIN);
    CHECK_DEV_ERR(GAD_ERR_DOMAIN, "bad_op", "internal error");
    gad_clear_error();
    gad_scope_end();
}

/* ------------------------------------------------------ the public API */

TEST(devices_are_counted_and_named) {
    CHECK(gad_device_count(GAD_DEVICE_CPU) == 1);
    CHECK(gad_device_count(GAD_DEVICE_OTHER) == 1);
    CHECK(gad_device_type_of(GAD_CPU) == GAD_DEVICE_CPU);
    CHECK(gad_device_type_of(TD) == GAD_DEVICE_OTHER);
    CHECK(gad_device_type_of(-1) == -1 && gad_device_type_of(99) == -1);
    CHECK(strcmp(gad_device_name(GAD_CPU), "cpu") == 0);
    CHECK(strcmp(gad_device_name(TD), "test:0") == 0);
    CHECK(strcmp(gad_device_name(42), "?") == 0);
    /* this machine has no GPU (or this build no CUDA): asking is an error */
    int ncuda = gad_device_count(GAD_DEVICE_CUDA);
    CHECK(gad_cuda(ncuda) == -1);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "cuda", "no CUDA device");
    gad_clear_error();
    size_t f = 0, t = 0;
    CHECK(gad_device_memory(GAD_CPU, &f, &t) == GAD_OK && t > 0 && f <= t);
    CHECK(gad_device_memory(TD, &f, &t) == GAD_OK && f == (size_t)1 << 30);
    CHECK(gad_device_memory(7, &f, &t) == GAD_ERR_DEVICE);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "device_memory", "7 names no device");
    gad_clear_error();
    CHECK(gad_device_sync(GAD_CPU) == GAD_OK && gad_device_sync(TD) == GAD_OK);
    CHECK(gad_device_sync(-3) == GAD_ERR_DEVICE);
    gad_clear_error();
    CHECK(gad_device_of(NULL) == -1);
    gad_clear_error();
}

TEST(to_device_moves_and_differentiates) {
    gad_scope_begin();
    double v[4] = {1, -2, 3, 0.5};
    gad_tensor *x = gad_requires_grad(gad_from_f64(v, (int64_t[]){4}, 1));
    CHECK(gad_to_device(x, GAD_CPU) == x); /* already there: itself */
    gad_tensor *d = gad_to_device(x, TD);
    CHECK(d && gad_device_of(d) == TD && gad_is_tracked(d));
    double back[4];
    CHECK(gad_read_f64(d, back, 4) == GAD_OK && memcmp(back, v, sizeof v) == 0);
    /* l = sum(to_cpu(to_td(x)^2)) * 3: dl/dx = 6x, and it lands on the CPU */
    gad_tensor *l = gad_mul_scalar(gad_sum_all(gad_to_device(gad_square(d), GAD_CPU)), 3);
    CHECK(l && gad_device_of(l) == GAD_CPU);
    gad_tensor *g = NULL;
    CHECK(gad_grad(l, &x, 1, &g) == GAD_OK && g && gad_device_of(g) == GAD_CPU);
    double gv[4];
    CHECK(gad_read_f64(g, gv, 4) == GAD_OK);
    for (int i = 0; i < 4; i++) CHECK_MSG(gv[i] == 6 * v[i], "g[%d] = %g", i, gv[i]);
    /* a strided view moves as its elements in row-major order */
    gad_tensor *m = gad_from_f64((double[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2);
    gad_tensor *mt = gad_to_device(gad_transpose(gad_to_device(m, TD)), GAD_CPU);
    CHECK(mt && same_bits(mt, gad_contiguous(gad_transpose(m))));
    CHECK(gad_to_device(x, 9) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "to_device", "9 names no device");
    gad_clear_error();
    /* mixing is still an error: nothing moves by itself */
    CHECK(gad_add(x, d) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "add", "cpu and test:0");
    gad_clear_error();
    /* a 0-d CPU tensor combines with a tensor on the device (PyTorch's
     * rule): the result is on the device, in the dimensioned one's dtype */
    gad_tensor *dd = gad_mul(d, gad_scalar_f64(2));
    CHECK(dd && gad_device_of(dd) == TD && gad_dtype(dd) == gad_dtype(d));
    gad_tensor *dd_cpu = dd ? gad_to_device(dd, GAD_CPU) : NULL;
    CHECK(dd_cpu && same_bits(dd_cpu, gad_mul_scalar(gad_to_device(d, GAD_CPU), 2)));
    CHECK(gad_device_of(gad_sub(gad_scalar_f32(1), d)) == TD);
    /* a 0-d tensor on the device with a CPU tensor: still an error */
    CHECK(gad_add(x, gad_to_device(gad_scalar_f64(1), TD)) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "add", "cpu and test:0");
    gad_clear_error();
    /* the embedding's error names the embedding, not the gather inside it */
    gad_tensor *ew = gad_to_device(gad_zeros((int64_t[]){3, 2}, 2, GAD_F32), TD);
    CHECK(gad_embedding(ew, gad_from_i64((int64_t[]){0, 2}, (int64_t[]){2}, 1)) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "embedding", "weight is on test:0, indices on cpu");
    gad_clear_error();
    /* a device listed twice for offloading is refused */
    CHECK(gad_set_offload_devices((gad_device[]){TD, TD}, 2) == GAD_ERR_DOMAIN);
    CHECK_DEV_ERR(GAD_ERR_DOMAIN, "set_offload_devices", "listed twice");
    gad_clear_error();
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

/* gad_mem_stats and gad_device_mem_stats: a device's bytes are counted by
 * its back end (the hook of gad_devmem), move exactly as its storages are
 * made and freed, and stay out of the CPU's live_bytes. */
static gad_mem_stats mstats(void) {
    gad_mem_stats m;
    gad_mem_stats_get(&m);
    return m;
}

static int64_t td_bytes(void) {
    int64_t live = -1, cached = -1;
    if (gad_device_mem_stats(TD, &live, &cached) != GAD_OK || cached != 0) return -1;
    return live;
}

TEST(device_memory_is_counted) {
    gad_mem_stats m0 = mstats();
    int64_t d0 = td_bytes();
    CHECK(d0 == 0 && m0.device_live_bytes == 0 && m0.device_cached_bytes == 0);
    /* made on the host, then moved: the host's copy is counted while it lives */
    gad_tensor *h = gad_full((int64_t[]){10, 100}, 2, GAD_F32, 1.5);
    CHECK(h && mstats().live_bytes >= m0.live_bytes + 4000);
    gad_mem_stats m1 = mstats();
    gad_tensor *a = gad__to_dev("test", h, TD); /* 4000 bytes there */
    CHECK(a && a->dev == TD);
    gad_mem_stats m2 = mstats();
    CHECK_MSG(m2.device_live_bytes == 4000 && td_bytes() == 4000,
              "device_live_bytes %lld, the device's %lld", (long long)m2.device_live_bytes,
              (long long)td_bytes());
    CHECK_MSG(m2.live_bytes == m1.live_bytes, "host bytes %lld -> %lld",
              (long long)m1.live_bytes, (long long)m2.live_bytes);
    CHECK(m2.live_storages == m1.live_storages + 1);
    /* a view shares the storage: no new bytes */
    gad_tensor *v = gad_transpose(a);
    CHECK(v && mstats().device_live_bytes == 4000);
    /* an op's result on the device: f64 [10, 100] is 8000 more */
    gad_tensor *c = gad_cast(a, GAD_F64);
    gad_mem_stats m3 = mstats();
    CHECK(c && c->dev == TD && m3.device_live_bytes == 12000 && td_bytes() == 12000);
    CHECK(m3.live_bytes == m2.live_bytes);
    gad_release(c);
    CHECK(mstats().device_live_bytes == 4000 && td_bytes() == 4000);
    gad_release(a); /* the view still holds the storage */
    CHECK(mstats().device_live_bytes == 4000);
    gad_release(v);
    gad_mem_stats m4 = mstats();
    CHECK(m4.device_live_bytes == 0 && td_bytes() == 0 && m4.live_bytes == m1.live_bytes);
    CHECK(m4.live_storages == m1.live_storages);
    gad_release(h);
    CHECK(mstats().live_bytes == m0.live_bytes);
    /* the CPU's share is gad_mem_stats' own pair */
    int64_t live = -1, cached = -1;
    gad_mem_stats m5 = mstats();
    CHECK(gad_device_mem_stats(GAD_CPU, &live, &cached) == GAD_OK);
    CHECK(live == m5.live_bytes && cached == m5.cached_bytes);
    CHECK(gad_device_mem_stats(GAD_CPU, NULL, NULL) == GAD_OK);
    CHECK(gad_device_mem_stats(9, &live, NULL) == GAD_ERR_DEVICE);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "device_mem_stats", "9 names no device");
    gad_clear_error();
    CHECK(atomic_load(&td_live) == 0);
}

static void *default_in_thread(void *arg) {
    *(int *)arg = gad_default_device();
    gad_scope_begin();
    gad_tensor *z = gad_zeros((int64_t[]){2}, 1, GAD_F32);
    if (!z || gad_device_of(z) != GAD_CPU) *(int *)arg = -2;
    gad_scope_end();
    return NULL;
}

TEST(constructors_follow_the_default_device) {
    CHECK(gad_default_device() == GAD_CPU);
    CHECK(gad_set_default_device(12) == -1);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "set_default_device", "12 names no device");
    gad_clear_error();
    CHECK(gad_default_device() == GAD_CPU);
    gad_scope_begin();
    int64_t sh[2] = {2, 3};
    /* on the CPU first, for the values the device must reproduce */
    gad_rng *r = gad_rng_new(7);
    gad_tensor *want[12] = {
        gad_zeros(sh, 2, GAD_F32), gad_ones(sh, 2, GAD_F64), gad_full(sh, 2, GAD_F32, 2.5),
        gad_scalar(4, GAD_F64), gad_arange(0, 5, 1, GAD_I64), gad_linspace(0, 1, 5, GAD_F32),
        gad_eye(3, GAD_F64), gad_randn(sh, 2, 11), gad_rng_uniform_tensor(r, sh, 2, GAD_F32, -1, 1),
        gad_rng_normal_tensor(r, sh, 2, GAD_F64, 0, 2), gad_rng_int_tensor(r, sh, 2, 0, 9),
        gad_from_f32((float[]){1, 2}, (int64_t[]){2}, 1)};
    gad_rng_free(r);
    CHECK(gad_set_default_device(TD) == GAD_CPU && gad_default_device() == TD);
    r = gad_rng_new(7);
    gad_tensor *got[12] = {
        gad_zeros(sh, 2, GAD_F32), gad_ones(sh, 2, GAD_F64), gad_full(sh, 2, GAD_F32, 2.5),
        gad_scalar(4, GAD_F64), gad_arange(0, 5, 1, GAD_I64), gad_linspace(0, 1, 5, GAD_F32),
        gad_eye(3, GAD_F64), gad_randn(sh, 2, 11), gad_rng_uniform_tensor(r, sh, 2, GAD_F32, -1, 1),
        gad_rng_normal_tensor(r, sh, 2, GAD_F64, 0, 2), gad_rng_int_tensor(r, sh, 2, 0, 9),
        gad_from_f32((float[]){1, 2}, (int64_t[]){2}, 1)};
    gad_rng_free(r);
    for (int i = 0; i < 12; i++) {
        CHECK_MSG(got[i] && gad_device_of(got[i]) == TD, "constructor %d", i);
        CHECK_MSG(want[i] && same_bits(got[i], want[i]), "constructor %d: other values", i);
    }
    /* *_like follow their argument, not the default */
    CHECK(gad_device_of(gad_zeros_like(want[0])) == GAD_CPU);
    /* the default is per thread: another thread starts on the CPU */
    pthread_t th;
    int seen = -1;
    CHECK(pthread_create(&th, NULL, default_in_thread, &seen) == 0 && pthread_join(th, NULL) == 0);
    CHECK_MSG(seen == GAD_CPU, "the other thread saw %d", seen);
    /* a training step's pieces work there: dropout's mask follows x */
    gad_rng *dr = gad_rng_new(3);
    gad_tensor *x = gad_ones((int64_t[]){64}, 1, GAD_F32);
    gad_tensor *y = gad_dropout(x, 0.5, dr, 1);
    gad_rng_free(dr);
    CHECK(y && gad_device_of(y) == TD);
    double s = y ? gad_item(gad_sum_all(y)) : 0;
    CHECK_MSG(s > 0 && s < 128 && fmod(s, 2.0) == 0, "dropout sum %g", s);
    CHECK(gad_set_default_device(GAD_CPU) == TD);
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

TEST(save_and_load_device_tensors) {
    char dir[] = "/tmp/gad_test_device_XXXXXX"; /* mkdtemp's template */
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/dev.safetensors", dir);
    gad_scope_begin();
    gad_tensor *h = gad_from_f32((float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2);
    gad_tensor *d = gad_transpose(gad_to_device(h, TD)); /* strided, on the device */
    const char *names[1] = {"w"};
    CHECK(gad_save(path, names, &d, 1) == GAD_OK);
    gad_checkpoint *ck = gad_load(path);
    CHECK(ck != NULL);
    gad_set_default_device(TD); /* a load lands on the CPU whatever the default */
    gad_tensor *w = ck ? gad_checkpoint_get(ck, "w") : NULL;
    gad_set_default_device(GAD_CPU);
    CHECK(w && gad_device_of(w) == GAD_CPU && same_bits(w, gad_contiguous(gad_transpose(h))));
    gad_checkpoint_free(ck);
    /* the device pointer: the host's elements on the CPU */
    CHECK(gad_device_ptr(h) == gad_data(h));
    CHECK(gad_device_ptr(d) != NULL && gad_device_ptr(NULL) == NULL);
    gad_clear_error();
    gad_scope_end();
    remove(path);
    rmdir(dir);
    CHECK(atomic_load(&td_live) == 0);
}

/* A small model trained on a device: the same bits as on the CPU, for
 * AdamW and SGD (momentum, Nesterov, weight decay), with the global norm
 * clipped there, and a state saved, loaded back to the device and resumed
 * equal to an uninterrupted run. */
typedef struct run_cfg {
    int dev, adamw, steps, save_at; /* save_at > 0: checkpoint, reload, go on */
    const char *path;
} run_cfg;

static int train_small(run_cfg c, double out[12]) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(21);
    gad_tensor *w = gad_rng_normal_tensor(r, (int64_t[]){3, 4}, 2, GAD_F64, 0, 1);
    gad_tensor *x = gad_rng_normal_tensor(r, (int64_t[]){5, 3}, 2, GAD_F64, 0, 1);
    gad_tensor *t = gad_rng_normal_tensor(r, (int64_t[]){5, 4}, 2, GAD_F64, 0, 1);
    gad_rng_free(r);
    w = gad_keep(gad_requires_grad(gad_to_device(w, c.dev)));
    x = gad_to_device(x, c.dev), t = gad_to_device(t, c.dev);
    gad_optim *o = c.adamw ? gad_adamw_new(&w, 1, &(gad_adamw_opts){.lr = 0.05, .weight_decay = 0.1})
                           : gad_sgd_new(&w, 1, &(gad_sgd_opts){.lr = 0.05, .momentum = 0.9,
                                                                .nesterov = 1, .weight_decay = 0.01});
    int ok = o != NULL;
    for (int step = 0; ok && step < c.steps; step++) {
        if (c.save_at > 0 && step == c.save_at) { /* to a file and back */
            const char *nm[8];
            gad_tensor *st[8];
            int k = gad_optim_state(o, nm, st, 8);
            ok = k > 0 && gad_save(c.path, nm, st, k) == GAD_OK;
            static char names[8][32]; /* the optimizer's own die with it */
            for (int i = 0; ok && i < k; i++) {
                snprintf(names[i], sizeof names[i], "%s", nm[i]);
                nm[i] = names[i];
            }
            gad_optim_free(o);
            o = c.adamw ? gad_adamw_new(&w, 1, &(gad_adamw_opts){.lr = 0.05, .weight_decay = 0.1})
                        : gad_sgd_new(&w, 1, &(gad_sgd_opts){.lr = 0.05, .momentum = 0.9,
                                                             .nesterov = 1, .weight_decay = 0.01});
            gad_checkpoint *ck = ok ? gad_load(c.path) : NULL;
            gad_tensor *lt[8];
            for (int i = 0; ck && i < k; i++) lt[i] = gad_checkpoint_get(ck, nm[i]);
            ok = ck && o && gad_optim_load_state(o, nm, lt, k) == GAD_OK;
            gad_checkpoint_free(ck);
        }
        gad_scope_begin();
        gad_tensor *d = gad_sub(gad_matmul(x, w), t);
        gad_tensor *g = NULL;
        ok = ok && gad_grad(gad_mean_all(gad_mul(d, d)), &w, 1, &g) == GAD_OK &&
             gad_device_of(g) == c.dev;
        double norm = ok ? gad_clip_grad_norm(&g, 1, 0.5) : NAN;
        ok = ok && isfinite(norm) && gad_optim_step(o, &g) == GAD_OK;
        gad_scope_end();
    }
    ok = ok && gad_device_of(w) == c.dev && gad_read_f64(w, out, 12) == GAD_OK;
    gad_optim_free(o);
    gad_release(w);
    gad_scope_end();
    return ok;
}

TEST(training_on_the_device) {
    char dir[] = "/tmp/gad_test_train_XXXXXX"; /* mkdtemp's template */
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/opt.safetensors", dir);
    for (int adamw = 0; adamw < 2; adamw++) {
        double cpu[12], dev[12], resumed[12];
        CHECK(train_small((run_cfg){GAD_CPU, adamw, 12, 0, NULL}, cpu));
        CHECK(train_small((run_cfg){TD, adamw, 12, 0, NULL}, dev));
        CHECK(train_small((run_cfg){TD, adamw, 12, 5, path}, resumed));
        CHECK_MSG(memcmp(cpu, dev, sizeof cpu) == 0, "%s: the device's weights differ",
                  adamw ? "AdamW" : "SGD");
        CHECK_MSG(memcmp(dev, resumed, sizeof dev) == 0, "%s: a resumed run differs",
                  adamw ? "AdamW" : "SGD");
    }
    /* a checkpoint loads onto any device */
    gad_scope_begin();
    gad_tensor *h = gad_from_f32((float[]){1, 2, 3}, (int64_t[]){3}, 1);
    const char *nm[1] = {"h"};
    CHECK(gad_save(path, nm, &h, 1) == GAD_OK);
    gad_checkpoint *ck = gad_load(path);
    gad_tensor *d = ck ? gad_checkpoint_get_on(ck, "h", TD) : NULL;
    CHECK(d && gad_device_of(d) == TD && same_bits(gad_to_device(d, GAD_CPU), h));
    CHECK(ck && gad_checkpoint_get_on(ck, "h", 40) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "checkpoint_get_on", "40 names no device");
    gad_clear_error();
    gad_checkpoint_free(ck);
    gad_scope_end();
    remove(path);
    rmdir(dir);
    CHECK(atomic_load(&td_live) == 0);
}

int main(void) {
    register_test_device();
    if (TD < 0) {
        fprintf(stderr, "could not register the test device\n");
        return 1;
    }
    RUN(every_op_runs_on_the_device);
    RUN(mixed_devices_are_an_error);
    RUN(half_tensors_on_the_device);
    RUN(placement_and_read_back);
    RUN(copy_on_write_on_the_device);
    RUN(checks_in_the_back_end);
    RUN(integer_gather_on_the_device);
    RUN(deferred_index_checks);
    RUN(engine_checks_what_a_vjp_fills);
    RUN(devices_are_counted_and_named);
    RUN(to_device_moves_and_differentiates);
    RUN(device_memory_is_counted);
    RUN(constructors_follow_the_default_device);
    RUN(save_and_load_device_tensors);
    RUN(training_on_the_device);
    RUN(write_into_a_device_tensor);
    return test_summary();
}
