/* Leaf: diagnostics of a topology file. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kretry_diags_init(kretry_diags_t *d) {
        memset(d, 0, sizeof(*d));
}

void kretry_diags_clear(kretry_diags_t *d) {
        for (size_t i = 0; i < d->cnt; i++)
                free(d->items[i].text);
        free(d->items);
        kretry_diags_init(d);
}

void kretry_diag_add(kretry_diags_t *d,
                     kretry_diag_level_t level,
                     int line,
                     int col,
                     const char *fmt,
                     ...) {
        va_list ap;
        va_start(ap, fmt);
        kretry_diag_vadd(d, level, line, col, fmt, ap);
        va_end(ap);
}

void kretry_diag_vadd(kretry_diags_t *d,
                      kretry_diag_level_t level,
                      int line,
                      int col,
                      const char *fmt,
                      va_list ap) {
        char buf[1024];
        vsnprintf(buf, sizeof(buf), fmt, ap);
        if (level == KRETRY_DIAG_ERROR)
                d->errors++;
        if (d->cnt == d->size) {
                size_t size          = d->size ? d->size * 2 : 8;
                kretry_diag_t *items = realloc(d->items, size * sizeof(*items));
                if (!items) {
                        d->oom = 1;
                        return;
                }
                d->items = items;
                d->size  = size;
        }
        char *text = strdup(buf);
        if (!text) {
                d->oom = 1;
                return;
        }
        d->items[d->cnt++] = (kretry_diag_t){level, line, col, text};
}

void kretry_diags_sort(kretry_diags_t *d) {
        /* Insertion sort: stable, and files have few diagnostics. */
        for (size_t i = 1; i < d->cnt; i++) {
                kretry_diag_t item = d->items[i];
                size_t j           = i;
                while (j > 0 && (d->items[j - 1].line > item.line ||
                                 (d->items[j - 1].line == item.line &&
                                  d->items[j - 1].col > item.col))) {
                        d->items[j] = d->items[j - 1];
                        j--;
                }
                d->items[j] = item;
        }
}

void kretry_diag_format(const kretry_diags_t *d,
                        size_t i,
                        const char *file,
                        char *dest,
                        size_t dest_size) {
        const kretry_diag_t *it = &d->items[i];
        const char *lvl = it->level == KRETRY_DIAG_WARNING ? "warning: " : "";
        if (it->line > 0)
                snprintf(dest, dest_size, "%s:%d:%d: %s%s", file, it->line,
                         it->col, lvl, it->text);
        else
                snprintf(dest, dest_size, "%s: %s%s", file, lvl, it->text);
}

size_t kretry_diags_render(const kretry_diags_t *d,
                           const char *file,
                           int errors_only,
                           char *dest,
                           size_t dest_size) {
        char line[1400];
        size_t len = 0;
        if (dest && dest_size)
                dest[0] = '\0';
        for (size_t i = 0; i < d->cnt; i++) {
                if (errors_only && d->items[i].level != KRETRY_DIAG_ERROR)
                        continue;
                kretry_diag_format(d, i, file, line, sizeof(line));
                int n = snprintf(dest && len < dest_size ? dest + len : NULL,
                                 dest && len < dest_size ? dest_size - len : 0,
                                 "%s%s", len ? "\n" : "", line);
                len += (size_t)n;
        }
        return len;
}
