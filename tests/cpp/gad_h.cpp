// SPDX-License-Identifier: MIT
// gad.h from C++: every macro of the header in use, and the ones that make
// values checked at compile time. tests/cpp/compile_headers.sh compiles this
// with every C++ compiler found, -Wall -Wextra -Wpedantic -Werror (and a few
// stricter warnings C++ projects turn on), as C++11, C++17 and C++20.
#include "gad.h"

#include <cstddef>

static_assert(GAD_RANGE(1, 2).start == 1 && GAD_RANGE(1, 2).end == 2 &&
                  GAD_RANGE(1, 2).step == GAD_NIL,
              "GAD_RANGE");
static_assert(GAD_RANGE_STEP(-1, -5, -2).start == -1 &&
                  GAD_RANGE_STEP(-1, -5, -2).end == -5 &&
                  GAD_RANGE_STEP(-1, -5, -2).step == -2,
              "GAD_RANGE_STEP");
static_assert(GAD_ALL.start == GAD_NIL && GAD_ALL.end == GAD_NIL &&
                  GAD_ALL.step == GAD_NIL,
              "GAD_ALL");
static_assert(GAD_NIL == INT64_MIN, "GAD_NIL");
static_assert(GAD_MAX_RANK == 8 && GAD_SHAPE_FORMAT_CAP > 0, "limits");
static_assert(GAD_VERSION_MAJOR >= 0 && GAD_VERSION_MINOR >= 0 &&
                  GAD_VERSION_PATCH >= 0 && sizeof GAD_VERSION_STRING > 1,
              "version");
static_assert(GAD_CREATE_GRAPH == 1u, "flags");
static_assert(GAD_OK == 0 && GAD_STATUS_COUNT_ > GAD_ERR_DEVICE, "status");

#define NAME_(code, name) name,
static const char *const status_names[] = {GAD_STATUS_LIST(NAME_)};
#undef NAME_
static_assert(sizeof status_names / sizeof status_names[0] == GAD_STATUS_COUNT_,
              "GAD_STATUS_LIST");

// Ranges from variables of other integer types convert as in C.
gad_tensor *slice_rows(gad_tensor *t, std::size_t lo, long hi, int step) {
    const gad_range r[] = {GAD_RANGE_STEP(lo, hi, step), GAD_RANGE(0, lo), GAD_ALL};
    return gad_slice(t, r, 3);
}

// The C idioms' C++ forms: a named shape array, named options.
gad_optim *make_adamw(gad_tensor *const *params, int n) {
    gad_adamw_opts opts{};
    opts.lr = 3e-3;
    opts.no_weight_decay = 1;
    return gad_adamw_new(params, n, &opts);
}
gad_tensor *make_zeros() {
    const int64_t shape[] = {2, 3};
    return gad_zeros(shape, 2, GAD_F32);
}
const char *status_name(int i) { return status_names[i]; }
