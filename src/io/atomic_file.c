/* atomic_file.c: durable writes and checked reads of whole files
 * (atomic_file.h). A save writes "<target>.tmp.<pid>.<k>" in the target's
 * directory through a 64 KiB buffer, fsyncs it, renames it over the target
 * and fsyncs the directory; on any failure the temporary file is removed
 * and an existing file is left as it was. The target is path, or the file
 * its symbolic links lead to; a FIFO, socket, device or directory is
 * refused, never replaced. A load opens a regular file
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
    const char *path;   /* as the caller named it, for messages */
    char *target;       /* the file replaced: path, or where its links lead */
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
    gad_atomic_file *w = gad_mem_alloc(sizeof *w);
    if (!w) return NULL;
    w->path = path;
    w->target = NULL;
    w->tmp = NULL;
    w->tmp_cap = 0;
    w->fd = -1;
    w->err = 0;
    w->len = 0;
    return w;
}

/* What a file that is not a regular one is, for messages. */
static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

/* Symbolic links followed before a save gives up (Linux's own limit). */
#define MAX_LINK_HOPS 40

/* The file a save of path replaces, in *out (gad_mem_alloc'd): path itself
 * when it is missing or a regular file; when it is a symbolic link, the
 * file the chain of links leads to (a relative target read from the
 * link's own folder), which may be missing (a dangling link: its target is
 * created). Replacing the link itself would cut it; renaming over a FIFO,
 * socket, device or directory would destroy or misuse it, so those are
 * GAD_SAVE_NOT_REGULAR with *what naming the kind. 0, or an errno value
 * and *what. */
static int resolve_target(const char *path, char **out, const char **what) {
    size_t len = strlen(path);
    char *cur = gad_mem_alloc(len + 1);
    if (!cur) {
        *what = "allocate the name of";
        return ENOMEM;
    }
    memcpy(cur, path, len + 1);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno == ENOENT) break; /* created by the rename */
            int e = errno;
            gad_mem_free(cur);
            *what = "look up the file to save";
            return e;
        }
        if (S_ISREG(st.st_mode)) break;
        if (!S_ISLNK(st.st_mode)) {
            gad_mem_free(cur);
            *what = kind_of(st.st_mode);
            return GAD_SAVE_NOT_REGULAR;
        }
        if (hops == MAX_LINK_HOPS) {
            gad_mem_free(cur);
            *what = "follow the symbolic links of";
            return ELOOP;
        }
        /* read the link; st_size is its length, except on file systems
         * that report 0, so grow the buffer until the link fits */
        size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 256;
        char *link = NULL;
        ssize_t n;
        for (;;) {
            link = gad_mem_alloc(cap);
            if (!link) {
                gad_mem_free(cur);
                *what = "allocate the name of";
                return ENOMEM;
            }
            n = readlink(cur, link, cap);
            if (n < 0 || (size_t)n < cap) break;
            gad_mem_free(link);
            cap *= 2;
        }
        if (n < 0) {
            int e = errno;
            gad_mem_free(link);
            gad_mem_free(cur);
            *what = "read the symbolic link";
            return e;
        }
        link[n] = 0;
        /* a relative target is relative to the link's folder */
        const char *slash = strrchr(cur, '/');
        size_t keep = (link[0] != '/' && slash) ? (size_t)(slash - cur) + 1 : 0;
        char *next = gad_mem_alloc(keep + (size_t)n + 1);
        if (!next) {
            gad_mem_free(link);
            gad_mem_free(cur);
            *what = "allocate the name of";
            return ENOMEM;
        }
        memcpy(next, cur, keep);
        memcpy(next + keep, link, (size_t)n + 1);
        gad_mem_free(link);
        gad_mem_free(cur);
        cur = next;
    }
    *out = cur;
    return 0;
}

int gad__atomic_file_create(gad_atomic_file *f, const char **what) {
    int err = resolve_target(f->path, &f->target, what);
    if (err) return err;
    size_t tlen = strlen(f->target);
    f->tmp_cap = tlen + 64;
    f->tmp = gad_mem_alloc(f->tmp_cap);
    if (!f->tmp) {
        *what = "allocate the temporary name to save";
        return ENOMEM;
    }
    int fd = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(f->tmp, f->tmp_cap, "%s.tmp.%ld.%u", f->target, (long)getpid(),
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
    if (stat(f->target, &old) == 0 && S_ISREG(old.st_mode))
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
    char *tmp = w->tmp, *target = w->target;
    gad_mem_free(w);

    *what = "write";
    if (!err && (err = fsync_retry(fd)) != 0) *what = "sync";
    if (close(fd) != 0 && errno != EINTR && !err) {
        err = errno;
        *what = "close";
    }
    /* Look again just before the rename: something not regular put there
     * since the save began is refused too (rename(2) would replace it). */
    struct stat st;
    if (!err && lstat(target, &st) == 0 && !S_ISREG(st.st_mode)) {
        err = GAD_SAVE_NOT_REGULAR;
        *what = S_ISLNK(st.st_mode) ? "a symbolic link made during the save"
                                    : kind_of(st.st_mode);
    }
    if (!err && rename(tmp, target) != 0) {
        err = errno;
        *what = "rename the temporary file over";
    }
    if (err) {
        unlink(tmp);
        gad_mem_free(tmp);
        gad_mem_free(target);
        return err;
    }
    /* The new file is in place; make the rename itself durable (tmp, no
     * longer needed, has room for the directory's name). */
    err = sync_dir_of(target, tmp);
    gad_mem_free(tmp);
    gad_mem_free(target);
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
    gad_mem_free(f->target);
    gad_mem_free(f);
}

/* ======================================================================== */
/* Reading                                                                   */
/* ======================================================================== */

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
