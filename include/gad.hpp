/* SPDX-License-Identifier: MIT */
/*
 * gad.hpp: a thin, header-only C++ layer over gad.h (C++11 or later; tested
 * as C++11, C++17 and C++20 with -Wall -Wextra -Wpedantic). It adds no
 * state and no library: every name below is an inline call of the C API,
 * whose rules (ownership by scopes, the first error of the thread, threads)
 * hold unchanged. gad.h itself may be used from C++ directly; this header
 * takes away what C++ makes awkward there (compound literals, manual scope
 * pairs, operator-less arithmetic).
 *
 *   gad::scope s;          gad_scope_begin() now, gad_scope_end() when s goes
 *                          out of scope (also when an exception leaves it).
 *   gad::no_grad ng;       the same for gad_no_grad_begin / gad_no_grad_end.
 *
 *   gad::tensor t;         a non-owning handle: a gad_tensor * with
 *                          operators. It converts implicitly from and to
 *                          gad_tensor *, so it goes straight into any gad_*
 *                          function, and gad_* results go straight into it.
 *                          Who owns the tensor is what gad.h says (rule 2).
 *   a + b, a - b, a * b, a / b, -a
 *                          gad_add, gad_sub, gad_mul, gad_div, gad_neg on
 *                          tensors (broadcasting; one side may be a plain
 *                          gad_tensor *). With a double on either
 *                          side: t * s and t + s are gad_mul_scalar and
 *                          gad_add_scalar (t - s adds -s, exactly the same
 *                          value); t / s, s / t and s - t divide or subtract
 *                          through a rank-0 tensor of t's dtype on t's
 *                          device (whatever the thread's default device),
 *                          made in a scope of their own, so nothing is
 *                          left behind.
 *   t.item(), t.rank(), t.numel(), t.dtype(), t.print(), t.get()
 *                          the C accessors (C's error behaviour; no throw).
 *
 *   gad::owned w{gad_requires_grad(gad_scalar_f32(0))};
 *                          a tensor plus one reference that it owns: it
 *                          adopts a reference you own (one returned with no
 *                          scope open, or from gad_retain or gad_keep),
 *                          retains on copy and releases in its destructor.
 *                          Never give it a reference a scope owns. It is a
 *                          gad::tensor, so the operators take it.
 *   gad::unique<gad_optim> opt{gad_adamw_new(...)};
 *                          std::unique_ptr that calls gad_optim_free (also
 *                          for gad_rng, gad_checkpoint and gad_params).
 *
 *   Shapes, axes, ranges and tensor lists as braced lists (the C API takes
 *   a pointer and a count; C's (int64_t[]){2, 3} is not C++):
 *     gad::from_f32(data, {2, 3})   also from_f64, from_i64, from_bool
 *     gad::zeros({2, 3}), gad::ones({2, 3}, GAD_F64), gad::full({2}, GAD_F32, 7)
 *     gad::randn({4, 4}, seed)
 *     gad::reshape(t, {3, -1}), gad::view(t, {6}), gad::broadcast_to(t, {4, 3})
 *     gad::permute(t, {1, 0}), gad::flip(t, {0}), gad::roll(t, {1, -2}, {0, 1})
 *     gad::sum(t, {0}), gad::mean(t, {-1}, true), gad::variance, gad::stddev
 *     gad::any(mask, {1}), gad::all(mask, {0, 2}, true)
 *     gad::slice(t, {gad::range(0, 2), gad::all(), gad::range(gad::nil, gad::nil, -1)})
 *     gad::cat({a, b}, 0), gad::stack({a, b}, 0)
 *     gad::sort(t, -1, true).values / .indices, gad::topk(t, 5) (the same two),
 *     gad::sample_logits(logits, rng, 0.8, 50, 0.95) (temperature, top_k, top_p)
 *     gad::max_pool2d(t, opts), gad::avg_pool2d, gad::adaptive_avg_pool2d(t, 1, 1)
 *     gad::pad(t, {1, 1, 2, 2}, GAD_PAD_REFLECT), gad::interpolate(t, {8, 8}, mode)
 *     gad::pixel_shuffle(t, 2), gad::unfold(t, opts), gad::fold(c, {H, W}, opts)
 *   PyTorch's defaults for the math ops that take parameters:
 *     gad::gelu_ex(t) (approximate "none", the exact form; "tanh" is
 *     gad_gelu), gad::elu(t) (alpha 1), gad::hardtanh(t) (-1, 1);
 *     gad::pow(t, e) with e a tensor (gad_pow) or a double (gad_pow_scalar),
 *     gad::pow(s, t) through a rank-0 tensor as s - t does.
 *   (gad.h's GAD_ALL, GAD_RANGE and GAD_RANGE_STEP work in C++ too.)
 *   Option structs have no compound literals in C++ either: name them,
 *     gad_adamw_opts opts{};   // every field 0: the defaults
 *     opts.lr = 3e-3;
 *     gad_optim *opt = gad_adamw_new(params, n, &opts);
 *   (C++20 may write gad_adamw_opts{.lr = 3e-3}.)
 *
 * Errors: exceptions or status codes, chosen when this header is included.
 *
 *   By default (when the compiler has exceptions enabled), gad::check(x)
 *   returns x unless it is a NULL pointer or a gad_status other than
 *   GAD_OK; then it throws gad::error, which carries a copy of the thread's
 *   pending gad_error (record(), kind(), what() is its text), and clears the
 *   thread's error so that the next failure is reported afresh. Every
 *   function and operator of this header checks its result that way. gad_*
 *   calls do not throw by themselves: since a NULL input gives NULL and
 *   keeps the first error (rule 3), one check of the end of an expression
 *   covers it all: gad::check(gad_mean_all(gad_square(x * w - y))).
 *   Open a gad::scope so that the tensors of an expression that threw are
 *   freed as the exception unwinds.
 *
 *   With GAD_HPP_NO_EXCEPTIONS defined before the include (or with the
 *   compiler's exceptions off, -fno-exceptions), gad::check returns its
 *   argument unchanged, nothing throws, and errors are the C API's: a NULL
 *   tensor or a status code, with gad_last_error() saying what and where.
 *   Choose one mode for a whole program: the inline functions differ.
 *
 * Example: examples/cpp_quickstart.cpp (ctest builds and runs it).
 */
#ifndef GAD_HPP
#define GAD_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <type_traits>

#include "gad.h"

#if !defined(GAD_HPP_NO_EXCEPTIONS) &&                                         \
    !(defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND))
#define GAD_HPP_NO_EXCEPTIONS 1
#endif

#ifndef GAD_HPP_NO_EXCEPTIONS
#include <exception>
#endif

namespace gad {

/* ---------------------------------------------------------------- errors */

#ifndef GAD_HPP_NO_EXCEPTIONS
/* What gad::check throws: the thread's error record at the time. */
class error : public std::exception {
  public:
    explicit error(const gad_error &record) : rec_(record) {}
    const char *what() const noexcept override { return rec_.text; }
    const gad_error &record() const noexcept { return rec_; }
    gad_status kind() const noexcept { return rec_.kind; }

  private:
    gad_error rec_;
};

namespace detail {
/* Throw the pending error of this thread (and clear it). A failure that
 * recorded nothing (a NULL given to check by hand) is a domain error. */
[[noreturn]] inline void raise_pending(gad_status fallback) {
    gad_error rec;
    const gad_error *pending = gad_last_error();
    if (pending) {
        rec = *pending;
    } else {
        std::memset(&rec, 0, sizeof rec);
        rec.kind = fallback == GAD_OK ? GAD_ERR_DOMAIN : fallback;
        std::strcpy(rec.op, "gad.hpp");
        std::strcpy(rec.message, "a failure with no error recorded");
        std::strcpy(rec.text, gad_status_str(rec.kind));
        std::strcat(rec.text, " error in gad.hpp: a failure with no error recorded");
    }
    gad_clear_error();
    throw error(rec);
}
} // namespace detail

/* A pointer returned by a gad_* function: itself, or gad::error if NULL. */
template <class T> inline T *check(T *p) {
    if (!p) detail::raise_pending(GAD_ERR_DOMAIN);
    return p;
}
/* A status: itself when GAD_OK, else gad::error. */
inline gad_status check(gad_status s) {
    if (s != GAD_OK) detail::raise_pending(s);
    return s;
}
#else
template <class T> inline T *check(T *p) { return p; }
inline gad_status check(gad_status s) { return s; }
#endif

/* ---------------------------------------------------------------- guards */

/* gad_scope_begin now, gad_scope_end at the end of the enclosing block. */
class scope {
  public:
    scope() { gad_scope_begin(); }
    ~scope() { gad_scope_end(); }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;
};

/* gad_no_grad_begin now, gad_no_grad_end at the end of the block. */
class no_grad {
  public:
    no_grad() { gad_no_grad_begin(); }
    ~no_grad() { gad_no_grad_end(); }
    no_grad(const no_grad &) = delete;
    no_grad &operator=(const no_grad &) = delete;
};

/* ---------------------------------------------------------------- handles */

/* A non-owning handle to a tensor: what the C API's gad_tensor * is, with
 * operators. Default-constructed, it holds NULL. */
class tensor {
  public:
    tensor() noexcept = default;
    tensor(gad_tensor *p) noexcept : p_(p) {} // NOLINT: implicit by design
    operator gad_tensor *() const noexcept { return p_; }
    gad_tensor *get() const noexcept { return p_; }

    double item() const { return gad_item(p_); }
    int rank() const { return gad_rank(p_); }
    int64_t numel() const { return gad_numel(p_); }
    gad_dtype_t dtype() const { return gad_dtype(p_); }
    void print() const { gad_print(p_); }

  protected:
    gad_tensor *p_ = nullptr;
};

/* A handle that owns one reference (see the header comment). */
class owned : public tensor {
  public:
    owned() noexcept = default;
    explicit owned(gad_tensor *adopt) noexcept : tensor(adopt) {}
    owned(const owned &o) noexcept : tensor(gad_retain(o.p_)) {}
    owned(owned &&o) noexcept : tensor(o.p_) { o.p_ = nullptr; }
    owned &operator=(owned o) noexcept {
        gad_tensor *t = p_;
        p_ = o.p_;
        o.p_ = t;
        return *this;
    }
    ~owned() { gad_release(p_); }
    /* Give up the reference without releasing it. */
    gad_tensor *release() noexcept {
        gad_tensor *t = p_;
        p_ = nullptr;
        return t;
    }
};

/* std::unique_ptr for gad's other objects: one overload per type with a
 * gad_<type>_free in gad.h (tests/cpp/compile_headers.sh instantiates
 * gad::unique for each it finds there, so a new one cannot be missed). */
struct deleter {
    void operator()(gad_optim *o) const noexcept { gad_optim_free(o); }
    void operator()(gad_rng *r) const noexcept { gad_rng_free(r); }
    void operator()(gad_checkpoint *c) const noexcept { gad_checkpoint_free(c); }
    void operator()(gad_params *p) const noexcept { gad_params_free(p); }
    void operator()(gad_sampler *s) const noexcept { gad_sampler_free(s); }
    void operator()(gad_module *m) const noexcept { gad_module_free(m); } /* issue 29 layers */
    void operator()(gad_grad_scaler *s) const noexcept { gad_grad_scaler_free(s); } /* issue 29 amp */
};
template <class T> using unique = std::unique_ptr<T, deleter>;

/* ---------------------------------------------------------------- lists */

typedef std::initializer_list<int64_t> shape;
typedef std::initializer_list<int> axes;
typedef std::initializer_list<gad_range> ranges;
typedef std::initializer_list<gad_tensor *> tensors;

/* Python's None in a range. */
static const int64_t nil = GAD_NIL;
inline gad_range range(int64_t start, int64_t end, int64_t step = GAD_NIL) {
    gad_range r = {start, end, step};
    return r;
}
inline gad_range all() { return range(GAD_NIL, GAD_NIL); }

namespace detail {
template <class L> inline int count(L l) { return static_cast<int>(l.size()); }
} // namespace detail

inline tensor from_f32(const float *data, shape s) {
    return check(gad_from_f32(data, s.begin(), detail::count(s)));
}
inline tensor from_f64(const double *data, shape s) {
    return check(gad_from_f64(data, s.begin(), detail::count(s)));
}
inline tensor from_i64(const int64_t *data, shape s) {
    return check(gad_from_i64(data, s.begin(), detail::count(s)));
}
inline tensor from_bool(const uint8_t *data, shape s) {
    return check(gad_from_bool(data, s.begin(), detail::count(s)));
}
inline tensor zeros(shape s, gad_dtype_t dtype = GAD_F32) {
    return check(gad_zeros(s.begin(), detail::count(s), dtype));
}
inline tensor ones(shape s, gad_dtype_t dtype = GAD_F32) {
    return check(gad_ones(s.begin(), detail::count(s), dtype));
}
inline tensor full(shape s, gad_dtype_t dtype, double value) {
    return check(gad_full(s.begin(), detail::count(s), dtype, value));
}
inline tensor randn(shape s, uint64_t seed) {
    return check(gad_randn(s.begin(), detail::count(s), seed));
}
inline tensor reshape(tensor t, shape s) {
    return check(gad_reshape(t, s.begin(), detail::count(s)));
}
inline tensor view(tensor t, shape s) {
    return check(gad_view(t, s.begin(), detail::count(s)));
}
inline tensor broadcast_to(tensor t, shape s) {
    return check(gad_broadcast_to(t, s.begin(), detail::count(s)));
}
inline tensor permute(tensor t, axes a) {
    return check(gad_permute(t, a.begin(), detail::count(a)));
}
inline tensor flip(tensor t, axes dims) {
    return check(gad_flip(t, dims.begin(), detail::count(dims)));
}
/* shifts[i] along dims[i] (one dim per shift); without dims, the flattened
 * tensor by its one shift */
inline tensor roll(tensor t, shape shifts, axes dims) {
    if (dims.size() != shifts.size())
        gad_error_set(GAD_ERR_SHAPE, "roll", "%d shifts for %d dims", detail::count(shifts),
                      detail::count(dims));
    return check(dims.size() != shifts.size()
                     ? nullptr
                     : gad_roll(t, shifts.begin(), dims.begin(), detail::count(shifts)));
}
inline tensor roll(tensor t, shape shifts) {
    return check(gad_roll(t, shifts.begin(), nullptr, detail::count(shifts)));
}
/* pooling (issue 28): the options by value, so that a braced or named
 * gad_pool_opts reads in place; indices (optional) as in gad.h */
inline tensor max_pool2d(tensor t, const gad_pool_opts &o, gad_tensor **indices = nullptr) {
    return check(gad_max_pool2d(t, &o, indices));
}
inline tensor max_pool1d(tensor t, const gad_pool_opts &o, gad_tensor **indices = nullptr) {
    return check(gad_max_pool1d(t, &o, indices));
}
inline tensor avg_pool2d(tensor t, const gad_pool_opts &o) {
    return check(gad_avg_pool2d(t, &o));
}
inline tensor avg_pool1d(tensor t, const gad_pool_opts &o) {
    return check(gad_avg_pool1d(t, &o));
}
inline tensor adaptive_avg_pool2d(tensor t, int64_t oh, int64_t ow) {
    return check(gad_adaptive_avg_pool2d(t, oh, ow));
}
inline tensor adaptive_max_pool2d(tensor t, int64_t oh, int64_t ow,
                                  gad_tensor **indices = nullptr) {
    return check(gad_adaptive_max_pool2d(t, oh, ow, indices));
}
/* shape ops for images (issue 28): pads in PyTorch's order, sizes and
 * scale factors as braced lists (one per spatial dim) */
inline tensor pad(tensor t, shape pads, gad_pad_mode mode = GAD_PAD_CONSTANT,
                  double value = 0) {
    return check(gad_pad(t, pads.begin(), detail::count(pads), mode, value));
}
inline tensor interpolate(tensor t, shape size, gad_interp_mode mode = GAD_INTERP_NEAREST,
                          bool align_corners = false) {
    return check(gad_interpolate(t, size.begin(), nullptr, detail::count(size), mode,
                                 align_corners));
}
inline tensor interpolate_scale(tensor t, std::initializer_list<double> scale_factor,
                                gad_interp_mode mode = GAD_INTERP_NEAREST,
                                bool align_corners = false) {
    return check(gad_interpolate(t, nullptr, scale_factor.begin(),
                                 detail::count(scale_factor), mode, align_corners));
}
inline tensor pixel_shuffle(tensor t, int64_t r) { return check(gad_pixel_shuffle(t, r)); }
inline tensor pixel_unshuffle(tensor t, int64_t r) { return check(gad_pixel_unshuffle(t, r)); }
inline tensor unfold(tensor t, const gad_fold_opts &o) { return check(gad_unfold(t, &o)); }
inline tensor fold(tensor t, shape output_size, const gad_fold_opts &o) {
    if (output_size.size() != 2)
        gad_error_set(GAD_ERR_SHAPE, "fold", "output_size of %d dims (takes 2)",
                      detail::count(output_size));
    return check(output_size.size() != 2 ? nullptr : gad_fold(t, output_size.begin(), &o));
}

/* convolution (issue 28): gad_conv_opts with chained setters taking braced
 * lists, one value per spatial dim (extra values are ignored, missing ones
 * stay 0, the default):
 *     gad::conv2d(x, w, b, gad::conv_opts().stride({2, 2}).padding({1, 1}))
 *     gad::conv2d(x, w, nullptr, gad::conv_opts().same().groups(4)) */
struct conv_opts : gad_conv_opts {
    conv_opts() : gad_conv_opts() {}
    conv_opts &stride(shape v) { return set(gad_conv_opts::stride, v); }
    conv_opts &padding(shape v) { return set(gad_conv_opts::padding, v); }
    conv_opts &dilation(shape v) { return set(gad_conv_opts::dilation, v); }
    conv_opts &output_padding(shape v) { return set(gad_conv_opts::output_padding, v); }
    conv_opts &groups(int64_t g) {
        gad_conv_opts::groups = g;
        return *this;
    }
    conv_opts &valid() {
        padding_mode = GAD_CONV_PAD_VALID;
        return *this;
    }
    conv_opts &same() {
        padding_mode = GAD_CONV_PAD_SAME;
        return *this;
    }

  private:
    conv_opts &set(int64_t (&dst)[3], shape v) {
        int i = 0;
        for (int64_t x : v)
            if (i < 3) dst[i++] = x;
        return *this;
    }
};
inline tensor conv1d(tensor x, tensor w, tensor b = tensor(), const conv_opts &o = conv_opts()) {
    return check(gad_conv1d(x, w, b, &o));
}
inline tensor conv2d(tensor x, tensor w, tensor b = tensor(), const conv_opts &o = conv_opts()) {
    return check(gad_conv2d(x, w, b, &o));
}
inline tensor conv3d(tensor x, tensor w, tensor b = tensor(), const conv_opts &o = conv_opts()) {
    return check(gad_conv3d(x, w, b, &o));
}
inline tensor conv_transpose1d(tensor x, tensor w, tensor b = tensor(),
                               const conv_opts &o = conv_opts()) {
    return check(gad_conv_transpose1d(x, w, b, &o));
}
inline tensor conv_transpose2d(tensor x, tensor w, tensor b = tensor(),
                               const conv_opts &o = conv_opts()) {
    return check(gad_conv_transpose2d(x, w, b, &o));
}
inline tensor conv_transpose3d(tensor x, tensor w, tensor b = tensor(),
                               const conv_opts &o = conv_opts()) {
    return check(gad_conv_transpose3d(x, w, b, &o));
}
/* ---- normalization (issue 28): torch.nn.functional's defaults; a NULL
 * (nullptr) weight, bias or running statistic is none. */
inline tensor batch_norm(tensor x, gad_tensor *running_mean, gad_tensor *running_var,
                         gad_tensor *weight = nullptr, gad_tensor *bias = nullptr,
                         bool training = false, double momentum = 0.1, double eps = 1e-5) {
    return check(gad_batch_norm(x, running_mean, running_var, weight, bias, training ? 1 : 0,
                                momentum, eps));
}
inline tensor group_norm(tensor x, int64_t groups, gad_tensor *weight = nullptr,
                         gad_tensor *bias = nullptr, double eps = 1e-5) {
    return check(gad_group_norm(x, groups, weight, bias, eps));
}
inline tensor instance_norm(tensor x, gad_tensor *running_mean = nullptr,
                            gad_tensor *running_var = nullptr, gad_tensor *weight = nullptr,
                            gad_tensor *bias = nullptr, bool use_input_stats = true,
                            double momentum = 0.1, double eps = 1e-5) {
    return check(gad_instance_norm(x, running_mean, running_var, weight, bias,
                                   use_input_stats ? 1 : 0, momentum, eps));
}

inline tensor sum(tensor t, axes a, bool keepdims = false) {
    return check(gad_sum(t, a.begin(), detail::count(a), keepdims ? 1 : 0));
}
inline tensor mean(tensor t, axes a, bool keepdims = false) {
    return check(gad_mean(t, a.begin(), detail::count(a), keepdims ? 1 : 0));
}
inline tensor variance(tensor t, axes a, bool keepdims = false) {
    return check(gad_variance(t, a.begin(), detail::count(a), keepdims ? 1 : 0));
}
inline tensor stddev(tensor t, axes a, bool keepdims = false) {
    return check(gad_stddev(t, a.begin(), detail::count(a), keepdims ? 1 : 0));
}
/* comparisons and selection: any/all take axes lists; the others are the
 * C functions (gad_eq, gad_where, gad_masked_fill, gad_tril, ...) */
inline tensor any(tensor t, axes a, bool keepdims = false) {
    return check(gad_any(t, a.begin(), detail::count(a), keepdims ? 1 : 0));
}
inline tensor all(tensor t, axes a, bool keepdims = false) {
    return check(gad_all(t, a.begin(), detail::count(a), keepdims ? 1 : 0));
}
inline tensor slice(tensor t, ranges r) {
    return check(gad_slice(t, r.begin(), detail::count(r)));
}
inline tensor cat(tensors ts, int axis) {
    return check(gad_cat(ts.begin(), detail::count(ts), axis));
}
inline tensor stack(tensors ts, int axis) {
    return check(gad_stack(ts.begin(), detail::count(ts), axis));
}

/* sort and topk give two tensors, the values (differentiable) and their i64
 * indices; the sampler takes its options as arguments (gad_sample_opts) */
struct values_indices {
    tensor values, indices;
};
inline values_indices sort(tensor x, int dim = -1, bool descending = false) {
    gad_tensor *ix = nullptr;
    values_indices r;
    r.values = check(gad_sort(x, dim, descending ? 1 : 0, &ix));
    r.indices = ix;
    return r;
}
inline values_indices topk(tensor x, int64_t k, int dim = -1, bool largest = true,
                           bool sorted = true) {
    gad_tensor *ix = nullptr;
    values_indices r;
    r.values = check(gad_topk(x, k, dim, largest ? 1 : 0, sorted ? 1 : 0, &ix));
    r.indices = ix;
    return r;
}
inline tensor sample_logits(tensor logits, gad_rng *rng, double temperature = 1.0,
                            int64_t top_k = 0, double top_p = 0.0) {
    gad_sample_opts o;
    o.temperature = temperature;
    o.top_k = top_k;
    o.top_p = top_p;
    return check(gad_sample_logits(logits, &o, rng));
}

/* ---------------------------------------- attention and positions (issue 27) */

/* gad_scaled_dot_product_attention with PyTorch's defaults: no mask, not
 * causal, no dropout, scale 1/sqrt(d). */
inline tensor scaled_dot_product_attention(tensor q, tensor k, tensor v, tensor mask = tensor(),
                                           bool is_causal = false, double dropout_p = 0,
                                           double scale = 0, gad_rng *rng = nullptr) {
    return check(gad_scaled_dot_product_attention(q, k, v, mask, is_causal ? 1 : 0, dropout_p,
                                                  scale, rng));
}
/* gad_rope: positions 0..T-1 and base 10000 unless given; split halves
 * unless interleaved. */
inline tensor rope(tensor x, tensor positions = tensor(), double base = 10000,
                   bool interleaved = false) {
    return check(gad_rope(x, positions, base, interleaved ? 1 : 0));
}
inline tensor sinusoidal_positions(int64_t T, int64_t d, double base = 10000,
                                   gad_dtype_t dtype = GAD_F32) {
    return check(gad_sinusoidal_positions(T, d, base, dtype));
}

/* ---------------------------------------------------------------- operators */

namespace detail {
/* op(t, a rank-0 tensor of value s in t's dtype on t's device), the
 * scalar freed before returning: made in a scope of its own, the result
 * handed out by gad_keep (to the caller's scope, or to the caller when
 * none is open). The thread's default device is t's while the scalar is
 * made, and restored after. */
template <class F> inline tensor with_scalar(tensor t, double s, F op) {
    gad_scope_begin();
    gad_tensor *r = nullptr;
    if (t) {
        gad_device saved = gad_set_default_device(gad_device_of(t));
        gad_tensor *st = gad_scalar(s, gad_dtype(t));
        gad_set_default_device(saved);
        r = op(st);
    }
    gad_keep(r);
    gad_scope_end();
    return check(r);
}
} // namespace detail

inline tensor operator+(tensor a, tensor b) { return check(gad_add(a, b)); }
inline tensor operator-(tensor a, tensor b) { return check(gad_sub(a, b)); }
inline tensor operator*(tensor a, tensor b) { return check(gad_mul(a, b)); }
inline tensor operator/(tensor a, tensor b) { return check(gad_div(a, b)); }
inline tensor operator-(tensor a) { return check(gad_neg(a)); }
/* A gad_tensor * on one side of a - b: without these the built-in
 * difference of two pointers would be as good a match. (Templates, so that
 * t - 0 stays the scalar operator below.) */
template <class P, class = typename std::enable_if<std::is_same<P, gad_tensor *>::value>::type>
inline tensor operator-(P a, tensor b) {
    return check(gad_sub(a, b));
}
template <class P, class = typename std::enable_if<std::is_same<P, gad_tensor *>::value>::type>
inline tensor operator-(tensor a, P b) {
    return check(gad_sub(a, b));
}

inline tensor operator+(tensor a, double s) { return check(gad_add_scalar(a, s)); }
inline tensor operator+(double s, tensor a) { return check(gad_add_scalar(a, s)); }
inline tensor operator-(tensor a, double s) { return check(gad_add_scalar(a, -s)); }
inline tensor operator*(tensor a, double s) { return check(gad_mul_scalar(a, s)); }
inline tensor operator*(double s, tensor a) { return check(gad_mul_scalar(a, s)); }
inline tensor operator-(double s, tensor a) {
    return detail::with_scalar(a, s, [&](gad_tensor *st) { return gad_sub(st, a); });
}
inline tensor operator/(tensor a, double s) {
    return detail::with_scalar(a, s, [&](gad_tensor *st) { return gad_div(a, st); });
}
inline tensor operator/(double s, tensor a) {
    return detail::with_scalar(a, s, [&](gad_tensor *st) { return gad_div(st, a); });
}

/* ---------------------------------------------------- math, PyTorch's defaults */

inline tensor gelu_ex(tensor t, const char *approximate = "none") {
    return check(gad_gelu_ex(t, approximate));
}
inline tensor elu(tensor t, double alpha = 1.0) { return check(gad_elu(t, alpha)); }
inline tensor hardtanh(tensor t, double min_val = -1.0, double max_val = 1.0) {
    return check(gad_hardtanh(t, min_val, max_val));
}
inline tensor pow(tensor t, tensor e) { return check(gad_pow(t, e)); }
inline tensor pow(tensor t, double e) { return check(gad_pow_scalar(t, e)); }
inline tensor pow(double s, tensor e) {
    return detail::with_scalar(e, s, [&](gad_tensor *st) { return gad_pow(st, e); });
}

} // namespace gad

#endif /* GAD_HPP */
