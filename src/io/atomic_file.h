/* atomic_file.h: durable file I/O for checkpoints (src/io/atomic_file.c).
 * Writing replaces a file atomically: the bytes go to a temporary file
 * "<target>.tmp.<pid>.<k>" in the directory of the file replaced (path, or
 * where its symbolic links lead), which is fsync'd and renamed over it,
 * and then the directory is fsync'd; on any failure the
 * temporary file is removed and an existing file at path is left as it
 * was. Reading opens a regular file, takes its size and reads exact byte
 * counts, in order or at given offsets. Every failure is an errno value and the words of the step that
 * failed, ready for "cannot <what> <path>: <strerror>"; the caller makes
 * the message and records the error. Private to src/io. */
#ifndef GAD_IO_ATOMIC_FILE_H
#define GAD_IO_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ writing */

/* A file being written to replace path. */
typedef struct gad_atomic_file gad_atomic_file;

/* Room for writing over path (which must stay valid until the file is
 * committed or discarded): one allocation, with the write buffer, and
 * nothing touched on disk. NULL if it fails. */
gad_atomic_file *gad__atomic_file_new(const char *path);

/* gad__atomic_file_create's and _commit's result when the file to replace
 * is not a regular one; *what then says what it is ("a FIFO (named pipe)",
 * "a socket", "a directory", "a character device", ...). */
#define GAD_SAVE_NOT_REGULAR (-3)

/* Find the file to replace and create the temporary file beside it, with
 * the permissions of a regular file being replaced. The file replaced is
 * path when path is missing or a regular file; when path is a symbolic
 * link, the file its links lead to (relative targets read from each link's
 * folder; a dangling link's target is created; more than 40 links: ELOOP),
 * so that the link stays and its target is replaced atomically in its own
 * folder. A FIFO, socket, device or directory is GAD_SAVE_NOT_REGULAR:
 * nothing is opened, created or replaced. 0, or an errno value or
 * GAD_SAVE_NOT_REGULAR and *what (then discard f). */
int gad__atomic_file_create(gad_atomic_file *f, const char **what);

/* Append p[0..n): small pieces are gathered, large ones written directly.
 * A failed write is kept (gad__atomic_file_error) and later ones do
 * nothing. */
void gad__atomic_file_write(gad_atomic_file *f, const void *p, size_t n);

/* The errno value of the first failed write, or 0. */
int gad__atomic_file_error(const gad_atomic_file *f);

/* Flush, fsync, close, rename over the file found by _create (looked at
 * again just before: GAD_SAVE_NOT_REGULAR if something other than a
 * regular file is there now), then fsync the directory; free f. 0, or an errno value
 * and *what. Until the rename, a failure removes the temporary file and
 * leaves path as it was; when only the directory's fsync fails, the new
 * file is in place. Nothing is allocated. */
int gad__atomic_file_commit(gad_atomic_file *f, const char **what);

/* Close and remove the temporary file (if it was created); free f. */
void gad__atomic_file_discard(gad_atomic_file *f);

/* ------------------------------------------------------------ reading */

/* A regular file open for reading (fd -1: closed). */
typedef struct gad_read_file {
    int fd;
    uint64_t size; /* bytes, when it was opened */
} gad_read_file;

/* gad__read_file_open's result when path is not a regular file; *what
 * then says what it is ("a FIFO (named pipe)", "a socket", "a directory",
 * "a character device", ...). */
#define GAD_READ_NOT_REGULAR (-2)

/* Open path for reading, never blocking and never opening anything but a
 * regular file: path is stat'ed first (a FIFO, socket, directory or device
 * is refused without being opened: opening a FIFO waits for a writer, and
 * opening a device may act on it), then opened with O_NONBLOCK (in case it
 * was replaced meanwhile), fstat'ed again, and O_NONBLOCK cleared. 0; or an
 * errno value and *what naming the step that failed; or
 * GAD_READ_NOT_REGULAR and *what naming what path is. f is closed on
 * failure. */
int gad__read_file_open(gad_read_file *f, const char *path, const char **what);

/* read(2) exactly n bytes; 0, an errno value, or -1 at an early end. */
int gad__read_file_read(gad_read_file *f, void *p, size_t n);

/* pread(2) exactly n bytes at byte off of the file (the file position is
 * neither used nor moved, so that several threads may read one file at
 * once); 0, an errno value, or -1 at an early end. */
int gad__read_file_pread(const gad_read_file *f, void *p, size_t n, uint64_t off);

void gad__read_file_close(gad_read_file *f);

#endif /* GAD_IO_ATOMIC_FILE_H */
