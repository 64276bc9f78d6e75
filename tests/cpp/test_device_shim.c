/* test_device_shim.c: the test device (test_device.h, C) for the C++
 * tests, which cannot include its C internals: a second device on a
 * machine without a GPU. */
#include "test_device.h"

int gad_test_register_device(void);

int gad_test_register_device(void) {
    if (TD < 0) register_test_device();
    return TD;
}
