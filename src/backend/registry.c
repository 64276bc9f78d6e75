/* registry.c: the table of back ends by device number. The CPU is device 0
 * from the start; other back ends (a GPU, the tests' device) register at
 * run time and get the next free number. Only the memory table is
 * required: a missing kernel is an unsupported error when an op needs it. */
#include "backend/backend.h"

#include <pthread.h>

const gad_backend *gad__backends[GAD_MAX_DEVICES] = {[GAD_DEV_HOST] = &gad__cpu_backend};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int gad__err_unsupported(const char *op, int dev) {
    const char *pub = gad__op_public();
    gad__err(GAD_ERR_UNSUPPORTED, pub ? pub : op, "not supported on %s", gad__device_name(dev));
    return 1;
}

int gad__backend_register(const gad_backend *be) {
    if (!be || !be->mem) return -1;
    pthread_mutex_lock(&reg_lock);
    int dev = gad__device_register(be->mem);
    if (dev > 0) gad__backends[dev] = be;
    pthread_mutex_unlock(&reg_lock);
    return dev;
}
