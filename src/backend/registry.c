/* registry.c: the table of back ends by device number. The CPU is device 0
 * from the start; other back ends (a GPU, the tests' device) register at
 * run time and get the next free number. Only the memory table is
 * required: a missing kernel is an unsupported error when an op needs it.
 * The one file of src/backend that names a back end: the CPU's table, and
 * the entry point of each back end whose devices come from a driver
 * (backend/driver.h). */
#include "backend/backend.h"
#include "backend/driver.h"

#include <pthread.h>

const gad_backend *gad__backends[GAD_MAX_DEVICES] = {[GAD_DEV_HOST] = &gad__cpu_backend};

/* Probed in this order by devices.c; a back end not built gives NULL. */
const gad_driver *(*const gad__drivers[])(void) = {gad__cuda_driver};
const int gad__ndrivers = (int)(sizeof gad__drivers / sizeof *gad__drivers);

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
