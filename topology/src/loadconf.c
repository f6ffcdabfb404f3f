/*
 * kretry_conf_load_topology(): a validated topology becomes configuration
 * properties, set through kretry_conf_set() so that one property table keeps
 * deciding what is valid.
 */
#include "conf.h"
#include "secret.h"
#include "topology.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void fail(char *errstr, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void fail(char *errstr, size_t size, const char *fmt, ...) {
        if (!errstr || !size)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, size, fmt, ap);
        va_end(ap);
}

static const kretry_topology_t *pick(const kretry_topology_file_t *f,
                                     const char *path,
                                     const char *name,
                                     char *errstr,
                                     size_t size) {
        char names[512];
        size_t len = 0, n = kretry_topology_count(f);
        if (name ? !!kretry_topology_find(f, name) : n == 1)
                return name ? kretry_topology_find(f, name)
                            : kretry_topology_at(f, 0);
        names[0] = '\0';
        for (size_t i = 0; i < n && len < sizeof(names); i++)
                len += (size_t)snprintf(names + len, sizeof(names) - len,
                                        "%s%s", i ? ", " : "",
                                        kretry_topology_at(f, i)->name);
        if (name)
                fail(errstr, size,
                     "%s: no topology named \"%s\" (the file "
                     "has: %s)",
                     path, name, names);
        else
                fail(errstr, size,
                     "%s: holds %zu topologies (%s): name the "
                     "one to load",
                     path, n, names);
        return NULL;
}

static kretry_err_t set(kretry_conf_t *conf,
                        const char *path,
                        const char *name,
                        const char *value,
                        char *errstr,
                        size_t size) {
        char reason[512];
        kretry_err_t err =
                kretry_conf_set(conf, name, value, reason, sizeof(reason));
        if (err && kretry_secret_property(name))
                kretry_secret_scrub(reason, sizeof(reason), value);
        if (err)
                fail(errstr, size, "%s: %s", path, reason);
        return err;
}

/* Set @p n name/value pairs in order; stop at the first refusal. */
static kretry_err_t set_pairs(kretry_conf_t *conf,
                              const char *path,
                              const char *const (*pairs)[2],
                              size_t n,
                              char *errstr,
                              size_t size) {
        kretry_err_t err = KRETRY_ERR_OK;
        for (size_t i = 0; !err && i < n; i++)
                err = set(conf, path, pairs[i][0], pairs[i][1], errstr, size);
        return err;
}

#define PAIRS(p) (p), sizeof(p) / sizeof((p)[0])

/* permanent_errors and breaker */
static kretry_err_t apply_storm(kretry_conf_t *conf,
                                const kretry_topology_t *t,
                                const char *path,
                                char *errstr,
                                size_t size) {
        char codes[2048], v[32], keys[32], cool[32];
        size_t len = 0;
        codes[0]   = '\0';
        for (size_t i = 0; i < t->permanent_error_cnt && len < sizeof(codes);
             i++)
                len += (size_t)snprintf(codes + len, sizeof(codes) - len,
                                        "%s%s", i ? "," : "",
                                        t->permanent_errors[i]);
        snprintf(v, sizeof(v), "%d", t->breaker ? t->breaker_failures : 0);
        snprintf(keys, sizeof(keys), "%d",
                 t->breaker && t->breaker_distinct_keys > 0
                         ? t->breaker_distinct_keys
                         : 1);
        snprintf(cool, sizeof(cool), "%lldms",
                 (long long)(t->breaker ? t->breaker_cooldown_ms : 30000));
        const char *const pairs[][2] = {{"retry.permanent.errors", codes},
                                        {"breaker.failures", v},
                                        {"breaker.distinct.keys", keys},
                                        {"breaker.cooldown", cool}};
        return set_pairs(conf, path, PAIRS(pairs), errstr, size);
}

/* ordering, handler concurrency and versioning */
static kretry_err_t apply_keyed(kretry_conf_t *conf,
                                const kretry_topology_t *t,
                                const char *path,
                                char *errstr,
                                size_t size) {
        static const char *const orderings[] = {"none", "key", "partition"};
        char conc[16];
        snprintf(conc, sizeof(conc), "%d", t->concurrency);
        const char *const pairs[][2] = {
                {"ordering", orderings[t->ordering]},
                {"routing",
                 t->transactional ? "transactional" : "at_least_once"},
                {"handler.concurrency", conc},
                {"ordering.on.dead.letter",
                 t->on_dead_letter == KRETRY_ON_DLQ_PARK_KEY ? "park_key"
                                                             : "continue"},
                {"versioning.header", t->versioning == KRETRY_VERSIONING_HEADER
                                              ? t->version_name
                                              : ""},
                {"versioning.field", t->versioning == KRETRY_VERSIONING_FIELD
                                             ? t->version_name
                                             : ""},
                {"versioning.discard",
                 t->discard_equal ? "older_or_equal" : "older"},
        };
        return set_pairs(conf, path, PAIRS(pairs), errstr, size);
}

/* value: the codec's properties, schema paths resolved against the file. */
static kretry_err_t apply_value(kretry_conf_t *conf,
                                const kretry_topology_t *t,
                                const char *path,
                                char *errstr,
                                size_t size) {
        char ids[8192];
        size_t len = 0;
        int avro   = t->format == KRETRY_FORMAT_AVRO;
        ids[0]     = '\0';
        for (size_t i = 0; i < t->schema_id_cnt && len < sizeof(ids); i++)
                len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%d=%s",
                                        i ? "," : "", (int)t->schema_ids[i],
                                        t->schema_id_files[i]);
        if (len >= sizeof(ids)) {
                fail(errstr, size, "%s: value.schemas: the paths are too long",
                     path);
                return KRETRY_ERR_INVALID_VALUE;
        }
        const char *const pairs[][2] = {
                {"value.format", avro ? "avro" : "bytes"},
                {"value.schema", avro ? t->schema_file : ""},
                {"value.wire",
                 t->wire == KRETRY_WIRE_CONFLUENT ? "confluent" : "raw"},
                {"value.schema.ids", ids},
        };
        return set_pairs(conf, path, PAIRS(pairs), errstr, size);
}

static kretry_err_t apply(kretry_conf_t *conf,
                          const kretry_topology_file_t *f,
                          const kretry_topology_t *t,
                          const char *path,
                          char *errstr,
                          size_t size) {
        char tiers[KRETRY_TOPO_MAX_TIERS * 24], v[64];
        size_t len       = 0;
        kretry_err_t err = KRETRY_ERR_OK;
        for (size_t i = 0; !err && i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                err = set(conf, path, p->name, p->value, errstr, size);
        }
        for (int i = 0; i < t->tier_cnt; i++)
                len += (size_t)snprintf(tiers + len, sizeof(tiers) - len,
                                        "%s%lldms", i ? "," : "",
                                        (long long)t->tiers_ms[i]);
        const char *const pairs[][2] = {
                {"source.topic", t->source},
                {"group.id", t->group},
                {"retry.tiers", tiers},
                {"retry.topic.pattern", t->retry_pattern},
                {"dlq.topic", t->dlq},
        };
        if (!err)
                err = set_pairs(conf, path, PAIRS(pairs), errstr, size);
        snprintf(v, sizeof(v), "%d", t->max_attempts);
        if (!err)
                err = set(conf, path, "retry.max.attempts", v, errstr, size);
        snprintf(v, sizeof(v), "%.6g%%", t->jitter * 100.0);
        if (!err)
                err = set(conf, path, "retry.jitter", v, errstr, size);
        snprintf(v, sizeof(v), "%lldms", (long long)t->max_age_ms);
        if (!err)
                err = set(conf, path, "retry.max.age", t->max_age_ms ? v : "0",
                          errstr, size);
        if (!err)
                err = apply_keyed(conf, t, path, errstr, size);
        if (!err)
                err = apply_value(conf, t, path, errstr, size);
        if (!err)
                err = apply_storm(conf, t, path, errstr, size);
        return err;
}

/* Set everything on a copy and swap it in: @p conf changes only when all
 * of it was accepted. */
static kretry_err_t load_into(kretry_conf_t *conf,
                              const kretry_topology_file_t *f,
                              const kretry_topology_t *t,
                              const char *path,
                              char *errstr,
                              size_t size) {
        kretry_conf_t *copy = kretry_conf_dup(conf);
        if (!copy) {
                fail(errstr, size, "out of memory");
                return KRETRY_ERR_NO_MEM;
        }
        kretry_err_t err = apply(copy, f, t, path, errstr, size);
        snprintf(copy->topology_file, sizeof(copy->topology_file), "%s", path);
        if (!err) {
                kretry_conf_t tmp = *conf;
                *conf             = *copy;
                *copy             = tmp;
        }
        kretry_conf_destroy(copy);
        return err;
}

kretry_err_t kretry_conf_load_topology(kretry_conf_t *conf,
                                       const char *path,
                                       const char *name,
                                       char *errstr,
                                       size_t errstr_size) {
        kretry_diags_t d;
        if (!conf || !path) {
                fail(errstr, errstr_size, "conf and path are required");
                return KRETRY_ERR_INVALID_ARG;
        }
        if (access(path, R_OK)) {
                fail(errstr, errstr_size, "%s: cannot open: %s", path,
                     strerror(errno));
                return KRETRY_ERR_IO;
        }
        kretry_diags_init(&d);
        kretry_topology_file_t *f = kretry_topology_file_load(path, &d);
        kretry_err_t err          = KRETRY_ERR_PARSE;
        const kretry_topology_t *t;
        if (!f) {
                kretry_diags_render(&d, path, 1, errstr, errstr_size);
                if (d.oom)
                        err = KRETRY_ERR_NO_MEM;
        } else if (!(t = pick(f, path, name, errstr, errstr_size))) {
                err = KRETRY_ERR_INVALID_VALUE;
        } else {
                err = load_into(conf, f, t, path, errstr, errstr_size);
        }
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
        return err;
}
