/*
 * Leaf: diagnostics of a topology file.
 *
 * Diagnostics of a topology file: every error and warning found, each with
 * the line and column (1-based; 0 when the problem has no position, e.g. a
 * file that cannot be read) it refers to. Loading collects all of them
 * instead of stopping at the first, so an operator fixes a file in one go.
 */
#ifndef KRETRY_TOPO_DIAG_H
#define KRETRY_TOPO_DIAG_H

#include <stdarg.h>
#include <stddef.h>

typedef enum { KRETRY_DIAG_ERROR, KRETRY_DIAG_WARNING } kretry_diag_level_t;

typedef struct {
        kretry_diag_level_t level;
        int line, col;
        char *text;
} kretry_diag_t;

typedef struct {
        kretry_diag_t *items;
        size_t cnt, size;
        int errors; /* number of KRETRY_DIAG_ERROR items */
        int oom;    /* an item could not be recorded */
} kretry_diags_t;

void kretry_diags_init(kretry_diags_t *d);
void kretry_diags_clear(kretry_diags_t *d);

/* Record one diagnostic; printf-style text. */
void kretry_diag_add(kretry_diags_t *d,
                     kretry_diag_level_t level,
                     int line,
                     int col,
                     const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));

void kretry_diag_vadd(kretry_diags_t *d,
                      kretry_diag_level_t level,
                      int line,
                      int col,
                      const char *fmt,
                      va_list ap);

/* Sort by position (stable): the reader meets them in file order. */
void kretry_diags_sort(kretry_diags_t *d);

/* Render item @p i as "FILE:LINE:COL: [warning: ]TEXT" (no newline);
 * "FILE: TEXT" when it has no position. */
void kretry_diag_format(const kretry_diags_t *d,
                        size_t i,
                        const char *file,
                        char *dest,
                        size_t dest_size);

/* Render every item, or only errors when @p errors_only, one per line,
 * into @p dest (truncated, NUL-terminated). Returns the length needed. */
size_t kretry_diags_render(const kretry_diags_t *d,
                           const char *file,
                           int errors_only,
                           char *dest,
                           size_t dest_size);

#endif
