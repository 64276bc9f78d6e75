/* atomic_file.c: durable writes and checked reads of whole files
 * (atomic_file.h). A save writes "<path>.tmp.<pid>.<k>" in path's
 * directory through a 64 KiB buffer, fsyncs it, renames it over path and
 * fsyncs the directory; on any failure the temporary file is removed and an
 * existing file at path is left as it was. A load opens a regular file
 * (without ever blocking on, or opening, anything else) and reads exact
 * byte counts, retrying on EINTR and short reads. Nothing here
 * records an error: each step returns an errno value and names itself.
 * Memory comes from gad_mem_alloc (gad.h), so that an allocation-failure
 * test reaches it. */
#include "atomic_file.h"

#include "gad.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ======================================================================== */
/* Writing                                                                   */
/* ======================================================================== */

/* Buffered output to a file descriptor: small pieces are gathered, large
 * ones written directly. `err` keeps the first errno. */
#define WBUF_CAP ((size_t)1 << 16)
struct gad_atomic_file {
    const char *path;
    char *tmp; /* the temporary file's name; later its directory's */
    size_t tmp_cap;
    int fd; /* -1 until the temporary file exists */
    int err;
    size_t len;
    unsigned char buf[WBUF_CAP];
};

/* write(2) all of p[0..n), retrying on EINTR and short writes. 0 or an
 * errno value. */
static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void wb_flush(gad_atomic_file *w) {
    if (!w->err && w->len) w->err = write_all(w->fd, w->buf, w->len);
    w->len = 0;
}

static int fsync_retry(int fd) {
    while (fsync(fd) != 0) {
        if (errno != EINTR) return errno;
    }
    return 0;
}

/* Open the directory holding path and fsync it, using dir (room for
 * strlen(path) + 2 bytes) for its name: nothing is allocated, because this
 * runs after the rename, when a failure could no longer be undone. 0 or an
 * errno value; file systems that cannot sync a directory (EINVAL) count as
 * success. */
static int sync_dir_of(const char *path, char *dir) {
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) {
        memcpy(dir, slash ? "/" : ".", 2);
    } else {
        size_t n = (size_t)(slash - path);
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    int fd;
    do fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno;
    int err = fsync_retry(fd);
    close(fd);
    return err == EINVAL ? 0 : err;
}

/* Distinguishes temporary files of concurrent saves in one process. */
static atomic_uint save_counter;

gad_atomic_file *gad__atomic_file_new(const char *path) {
    size_t plen = strlen(path);
    char *tmp = gad_mem_alloc(plen + 64);
    gad_atomic_file *w = gad_mem_alloc(sizeof *w);
    if (!tmp || !w) {
        gad_mem_free(tmp);
        gad_mem_free(w);
        return NULL;
    }
    w->path = path;
    w->tmp = tmp;
    w->tmp_cap = plen + 64;
    w->fd = -1;
    w->err = 0;
    w->len = 0;
    return w;
}

int gad__atomic_file_create(gad_atomic_file *f, const char **what) {
    int fd = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(f->tmp, f->tmp_cap, "%s.tmp.%ld.%u", f->path, (long)getpid(),
                 atomic_fetch_add(&save_counter, 1u));
        do fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        while (fd < 0 && errno == EINTR);
        if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0) {
        *what = "create a temporary file to save";
        return errno;
    }
    f->fd = fd;
    /* Keep the permissions of a file being replaced. */
    struct stat old;
    if (stat(f->path, &old) == 0 && S_ISREG(old.st_mode))
        (void)fchmod(fd, old.st_mode & 07777);
    return 0;
}

void gad__atomic_file_write(gad_atomic_file *w, const void *data, size_t n) {
    const unsigned char *p = data;
    if (n >= WBUF_CAP) {
        wb_flush(w);
        if (!w->err) w->err = write_all(w->fd, p, n);
        return;
    }
    if (n > WBUF_CAP - w->len) wb_flush(w);
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

int gad__atomic_file_error(const gad_atomic_file *f) { return f->err; }

int gad__atomic_file_commit(gad_atomic_file *w, const char **what) {
    wb_flush(w);
    int fd = w->fd, err = w->err;
    char *tmp = w->tmp;
    const char *path = w->path;
    gad_mem_free(w);

    *what = "write";
    if (!err && (err = fsync_retry(fd)) != 0) *what = "sync";
    if (close(fd) != 0 && errno != EINTR && !err) {
        err = errno;
        *what = "close";
    }
    if (!err && rename(tmp, path) != 0) {
        err = errno;
        *what = "rename the temporary file over";
    }
    if (err) {
        unlink(tmp);
        gad_mem_free(tmp);
        return err;
    }
    /* The new file is in place; make the rename itself durable (tmp, no
     * longer needed, holds the directory's name). */
    err = sync_dir_of(path, tmp);
    gad_mem_free(tmp);
    if (err != 0) *what = "sync the directory after saving";
    return err;
}

void gad__atomic_file_discard(gad_atomic_file *f) {
    if (!f) return;
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->tmp);
    }
    gad_mem_free(f->tmp);
    gad_mem_free(f);
}

/* ======================================================================== */
/* Reading                                                                   */
/* ======================================================================== */

/* What a file that is not a regular one is, for messages. */
static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

int gad__read_file_open(gad_read_file *f, const char *path,
                        const char **what) {
    f->fd = -1;
    f->size = 0;
    /* Refuse what is not a regular file before opening it. A failed stat
     * (a missing file) is left to open, whose errno the caller reports. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        *what = kind_of(st.st_mode);
        return GAD_READ_NOT_REGULAR;
    }
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    while (fd < 0 && errno == EINTR);
    f->fd = fd;
    if (fd < 0) {
        *what = "open";
        return errno;
    }
    int err = 0;
    if (fstat(fd, &st) != 0) {
        err = errno;
        *what = "stat";
    } else if (!S_ISREG(st.st_mode)) { /* replaced since the stat above */
        err = GAD_READ_NOT_REGULAR;
        *what = kind_of(st.st_mode);
    } else {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            err = errno;
            *what = "set the blocking mode of";
        }
    }
    if (err) {
        gad__read_file_close(f);
        return err;
    }
    f->size = (uint64_t)st.st_size;
    return 0;
}

/* read(2) exactly n bytes; 0, an errno value, or -1 at an early end. */
int gad__read_file_read(gad_read_file *f, void *data, size_t n) {
    unsigned char *p = data;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t r = read(f->fd, p, chunk);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int gad__read_file_pread(const gad_read_file *f, void *data, size_t n, uint64_t off) {
    unsigned char *p = data;
    while (n > 0) {
        off_t o = (off_t)off;
        if (o < 0 || (uint64_t)o != off) return EOVERFLOW;
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t r = pread(f->fd, p, chunk, o);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) return -1;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

void gad__read_file_close(gad_read_file *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}
