/* registry.c: the table of back ends by device number. The CPU is device 0
 * from the start; other back ends (a GPU, the tests' device) register at
 * run time and get the next free number. */
#include "backend/backend.h"

#include <pthread.h>

const gad_backend *gad__backends[GAD_MAX_DEVICES] = {[GAD_DEV_HOST] = &gad__cpu_backend};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int gad__backend_register(const gad_backend *be) {
    if (!be || !be->mem) return -1;
    pthread_mutex_lock(&reg_lock);
    int dev = gad__device_register(be->mem);
    if (dev > 0) gad__backends[dev] = be;
    pthread_mutex_unlock(&reg_lock);
    return dev;
}
