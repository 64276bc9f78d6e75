/* selftest.h: `helix_lm --quick`, the self-test ctest runs (selftest.c). */
#ifndef HELIX_SELFTEST_H
#define HELIX_SELFTEST_H

#include "config.h"

int cmd_quick(const config *base, const given_set *given);

#endif
