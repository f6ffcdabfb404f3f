#include "topology_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A topology file is a page of text; anything larger is a mistake. */
#define MAX_FILE_SIZE (1024 * 1024)

char *kretry_topology_pool(kretry_topology_file_t *f, char *s) {
        if (!s)
                return NULL;
        if (f->pool_cnt == f->pool_size) {
                size_t size = f->pool_size ? f->pool_size * 2 : 32;
                char **pool = realloc(f->pool, size * sizeof(*pool));
                if (!pool) {
                        free(s);
                        return NULL;
                }
                f->pool      = pool;
                f->pool_size = size;
        }
        f->pool[f->pool_cnt++] = s;
        return s;
}

void kretry_topology_file_destroy(kretry_topology_file_t *f) {
        if (!f)
                return;
        if (f->raw)
                cyaml_free(&kretry_topology_cyaml_config,
                           &kretry_topology_file_schema, f->raw, 0);
        kretry_yaml_map_clear(&f->map);
        for (size_t i = 0; i < f->pool_cnt; i++)
                free(f->pool[i]);
        free(f->pool);
        free(f->topos);
        free(f->props);
        free(f->dir);
        free(f);
}

static char *dir_of(const char *path) {
        const char *slash = path ? strrchr(path, '/') : NULL;
        size_t n          = slash ? (size_t)(slash - path) + 1 : 0;
        char *dir         = malloc(n + 1);
        if (dir) {
                memcpy(dir, path, n);
                dir[n] = '\0';
        }
        return dir;
}

kretry_topology_file_t *kretry_topology_file_parse(const char *data,
                                                   size_t len,
                                                   const char *path,
                                                   kretry_diags_t *d) {
        kretry_topology_file_t *f = calloc(1, sizeof(*f));
        if (!f || !(f->dir = dir_of(path)))
                goto oom;
        if (kretry_yaml_check(data, len, &kretry_topology_file_schema, &f->map,
                              d))
                goto err;
        cyaml_err_t e = cyaml_load_data(
                (const uint8_t *)data, len, &kretry_topology_cyaml_config,
                &kretry_topology_file_schema, (cyaml_data_t **)&f->raw, NULL);
        if (e != CYAML_OK) {
                /* check.c should have caught it: say what libcyaml says. */
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0,
                                "cannot load the file: %s", cyaml_strerror(e));
                goto err;
        }
        kretry_topology_validate(f, d);
        if (d->oom)
                goto oom;
        kretry_diags_sort(d);
        if (d->errors)
                goto err;
        return f;
oom:
        kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0, "out of memory");
err:
        kretry_diags_sort(d);
        kretry_topology_file_destroy(f);
        return NULL;
}

static char *read_file(const char *path, size_t *lenp, kretry_diags_t *d) {
        FILE *fp  = fopen(path, "rb");
        char *buf = NULL;
        if (!fp) {
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0, "cannot open: %s",
                                strerror(errno));
                return NULL;
        }
        buf      = malloc(MAX_FILE_SIZE + 1);
        size_t n = buf ? fread(buf, 1, MAX_FILE_SIZE + 1, fp) : 0;
        if (!buf || ferror(fp))
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0, "cannot read: %s",
                                buf ? strerror(errno) : "out of memory");
        else if (n > MAX_FILE_SIZE)
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0,
                                "larger than %d bytes: not a topology file",
                                MAX_FILE_SIZE);
        else {
                buf[n] = '\0';
                *lenp  = n;
                fclose(fp);
                return buf;
        }
        free(buf);
        fclose(fp);
        return NULL;
}

kretry_topology_file_t *kretry_topology_file_load(const char *path,
                                                  kretry_diags_t *d) {
        size_t len = 0;
        char *data = read_file(path, &len, d);
        if (!data)
                return NULL;
        kretry_topology_file_t *f =
                kretry_topology_file_parse(data, len, path, d);
        free(data);
        return f;
}

size_t kretry_topology_count(const kretry_topology_file_t *f) {
        return f->cnt;
}

const kretry_topology_t *kretry_topology_at(const kretry_topology_file_t *f,
                                            size_t i) {
        return i < f->cnt ? &f->topos[i] : NULL;
}

const kretry_topology_t *kretry_topology_find(const kretry_topology_file_t *f,
                                              const char *name) {
        for (size_t i = 0; name && i < f->cnt; i++)
                if (!strcmp(f->topos[i].name, name))
                        return &f->topos[i];
        return NULL;
}

size_t kretry_topology_prop_count(const kretry_topology_file_t *f) {
        return f->prop_cnt;
}

const kretry_topo_prop_t *
kretry_topology_prop_at(const kretry_topology_file_t *f, size_t i) {
        return i < f->prop_cnt ? &f->props[i] : NULL;
}

int64_t kretry_topology_worst_case_ms(const kretry_topology_t *t) {
        int64_t sum = 0;
        if (t->tier_cnt == 0)
                return 0;
        /* The n-th failure (n = 1 .. max_attempts-1) waits in tier
         * min(n, T); the max_attempts-th goes to the DLQ. */
        for (int n = 1; n < t->max_attempts; n++)
                sum += t->tiers_ms[(n < t->tier_cnt ? n : t->tier_cnt) - 1];
        /* jitter is parsed from a decimal percentage: round the product so
         * that 20% of 60000 is exactly 12000, then take whole ms upward. */
        double extra = (double)sum * t->jitter;
        int64_t e    = (int64_t)(extra + 0.5);
        if ((double)e < extra - 1e-6)
                e++;
        return sum + e;
}

void kretry_topology_format_duration(int64_t ms, char *dest, size_t size) {
        static const struct {
                const char *unit;
                int64_t ms;
        } units[]  = {{"d", 86400000},
                      {"h", 3600000},
                      {"m", 60000},
                      {"s", 1000},
                      {"ms", 1}};
        size_t len = 0;
        dest[0]    = '\0';
        if (ms == 0) {
                snprintf(dest, size, "0s");
                return;
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (ms < units[i].ms || len >= size)
                        continue;
                len += (size_t)snprintf(dest + len, size - len, "%lld%s",
                                        (long long)(ms / units[i].ms),
                                        units[i].unit);
                ms %= units[i].ms;
        }
}

static int topic_add(kretry_topology_topic_t **v,
                     size_t *cnt,
                     const char *name,
                     int partitions) {
        for (size_t i = 0; i < *cnt; i++)
                if (!strcmp((*v)[i].name, name))
                        return 0;
        kretry_topology_topic_t *p = realloc(*v, (*cnt + 1) * sizeof(**v));
        if (!p)
                return -1;
        *v = p;
        snprintf(p[*cnt].name, sizeof(p[*cnt].name), "%s", name);
        p[*cnt].partitions = partitions;
        (*cnt)++;
        return 0;
}

int kretry_topology_versions_topic(const kretry_topology_t *t,
                                   char *dest,
                                   size_t dest_size) {
        int n = snprintf(dest, dest_size, "%s.%s.versions", t->group,
                         t->source);
        return n > 0 && (size_t)n < dest_size && n < 250 ? 0 : -1;
}

int kretry_topology_parked_topic(const kretry_topology_t *t,
                                 char *dest,
                                 size_t dest_size) {
        int n = snprintf(dest, dest_size, "%s.%s.parked", t->group, t->source);
        return n > 0 && (size_t)n < dest_size && n < 250 ? 0 : -1;
}

int kretry_topology_parks(const kretry_topology_t *t) {
        return t->ordering == KRETRY_ORDERING_KEY &&
               t->on_dead_letter == KRETRY_ON_DLQ_PARK_KEY;
}

int kretry_topology_topics(const char *path,
                           int default_partitions,
                           kretry_topology_topic_t **topicsp,
                           size_t *cntp,
                           char *errstr,
                           size_t errstr_size) {
        kretry_diags_t d;
        kretry_diags_init(&d);
        kretry_topology_file_t *f  = kretry_topology_file_load(path, &d);
        kretry_topology_topic_t *v = NULL;
        size_t cnt                 = 0;
        int rc                     = -1;
        if (!f) {
                kretry_diags_render(&d, path, 1, errstr, errstr_size);
                goto done;
        }
        for (size_t i = 0; i < f->cnt; i++) {
                const kretry_topology_t *t = &f->topos[i];
                int p   = t->partitions ? t->partitions : default_partitions;
                int bad = topic_add(&v, &cnt, t->source, p);
                for (int n = 0; n < t->tier_cnt && !bad; n++)
                        bad = topic_add(&v, &cnt, t->tier_topics[n], p);
                char vt[256];
                if (!bad && t->versioning != KRETRY_VERSIONING_NONE &&
                    !kretry_topology_versions_topic(t, vt, sizeof(vt)))
                        bad = topic_add(&v, &cnt, vt, p);
                if (!bad && kretry_topology_parks(t) &&
                    !kretry_topology_parked_topic(t, vt, sizeof(vt)))
                        bad = topic_add(&v, &cnt, vt, p);
                if (bad || topic_add(&v, &cnt, t->dlq, p)) {
                        snprintf(errstr, errstr_size, "out of memory");
                        goto done;
                }
        }
        *topicsp = v;
        *cntp    = cnt;
        v        = NULL;
        rc       = 0;
done:
        free(v);
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
        return rc;
}
