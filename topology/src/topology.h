/*
 * A topology file loaded and validated: the typed model every other part
 * (describe, plan, apply, the library's kretry_conf_load_topology(), the dev
 * broker) works from. Plain data; loading reads one file and nothing else.
 */
#ifndef KRETRY_TOPOLOGY_H
#define KRETRY_TOPOLOGY_H

#include "diag.h"

#include <stddef.h>
#include <stdint.h>

#define KRETRY_TOPO_MAX_TIERS 32

typedef enum {
        KRETRY_ORDERING_NONE,
        KRETRY_ORDERING_KEY,
        KRETRY_ORDERING_PARTITION
} kretry_ordering_t;
typedef enum { KRETRY_ON_DLQ_CONTINUE, KRETRY_ON_DLQ_PARK_KEY } kretry_on_dlq_t;
typedef enum {
        KRETRY_VERSIONING_NONE,
        KRETRY_VERSIONING_HEADER,
        KRETRY_VERSIONING_FIELD
} kretry_versioning_t;
typedef enum { KRETRY_FORMAT_BYTES, KRETRY_FORMAT_AVRO } kretry_format_t;
typedef enum { KRETRY_WIRE_RAW, KRETRY_WIRE_CONFLUENT } kretry_wire_t;

/* handler.http: what kretry run --http takes from the file (the library
 * ignores it: an application brings its own handler). */
typedef struct {
        const char *url;    /* NULL: not declared */
        int64_t timeout_ms; /* 0: kretry run's default */
        const char *content_type, *ce_type;
        const char *ca_file, *cert_file, *key_file; /* resolved */
        const char *retry_statuses, *fail_statuses;
        int body_json;
        const char **headers; /* "Name: value", ${VAR} expanded */
        size_t header_cnt;
} kretry_topo_http_t;

/* Where a value came from, for messages about it after loading. */
typedef struct {
        int line, col;
} kretry_pos_t;

typedef struct {
        const char *name; /* defaults to the source */
        const char *source;
        const char *group;
        int64_t tiers_ms[KRETRY_TOPO_MAX_TIERS];
        int tier_cnt;
        int max_attempts;   /* default applied: tiers + 1 */
        double jitter;      /* fraction 0..1 */
        int64_t max_age_ms; /* 0: none */
        const char *dlq;    /* expanded name */
        const char *retry_pattern;
        char *tier_topics[KRETRY_TOPO_MAX_TIERS]; /* expanded names */
        int partitions;                           /* 0: the source's count */
        int replication;                          /* 0: the cluster's default */
        int64_t retention_ms;                     /* 0: not declared */
        int min_insync; /* topics.min_insync_replicas; 0: min(2, replication) */
        kretry_ordering_t ordering;
        int transactional; /* routing: transactional */
        kretry_on_dlq_t on_dead_letter;
        kretry_versioning_t versioning;
        const char *version_name; /* header or field name */
        int discard_equal;        /* older_or_equal */
        kretry_format_t format;
        const char *schema_path; /* as written, relative to the file */
        const char *schema_file; /* schema_path resolved against the file */
        kretry_wire_t wire;
        /* value.schemas (wire: confluent): each id's writer schema, its
         * path resolved against the file; none: any id, read with
         * schema_file. */
        int32_t *schema_ids;
        const char **schema_id_files;
        size_t schema_id_cnt;
        const char **permanent_errors;
        size_t permanent_error_cnt;
        int breaker; /* declared */
        int breaker_failures, breaker_distinct_keys;
        int64_t breaker_cooldown_ms;
        int concurrency;             /* handler.concurrency, default 1 */
        kretry_topo_http_t http;     /* handler.http */
        int alerts;                  /* declared */
        int64_t alert_dlq_messages;  /* -1: none */
        int64_t alert_oldest_age_ms; /* 0: none */
        int64_t alert_dlq_rate;      /* messages a minute into the DLQ, 0:
                                      * none */

        /* Positions of what the engine may refuse, for its messages. */
        kretry_pos_t pos, ordering_pos, versioning_pos, value_pos,
                permanent_errors_pos, breaker_pos;
} kretry_topology_t;

typedef struct {
        const char *name;
        const char *value;
        kretry_pos_t pos;
} kretry_topo_prop_t;

typedef struct kretry_topology_file_s kretry_topology_file_t;

/* The version store's changelog topic of @p t: "{group}.{source}.versions"
 * (the engine's versioning.topic default). 0, or -1 when it does not fit. */
int kretry_topology_versions_topic(const kretry_topology_t *t,
                                   char *dest,
                                   size_t dest_size);

/* The parked keys' topic of @p t: "{group}.{source}.parked" (the engine's
 * ordering.parked.topic default). 0, or -1 when it does not fit. */
int kretry_topology_parked_topic(const kretry_topology_t *t,
                                 char *dest,
                                 size_t dest_size);

/* 1 when @p t parks keys (ordering: key, on_dead_letter: park_key): it has
 * a parked keys' topic. */
int kretry_topology_parks(const kretry_topology_t *t);

/* Load and validate @p path. Diagnostics (errors and warnings, sorted by
 * position) go to @p diags, which the caller initialised and clears.
 * Returns the file (free with kretry_topology_file_destroy()) when it has no
 * error, NULL otherwise. */
kretry_topology_file_t *kretry_topology_file_load(const char *path,
                                                  kretry_diags_t *diags);

/* Same, from memory; @p path is only used to resolve relative paths. */
kretry_topology_file_t *kretry_topology_file_parse(const char *data,
                                                   size_t len,
                                                   const char *path,
                                                   kretry_diags_t *diags);

void kretry_topology_file_destroy(kretry_topology_file_t *f);

size_t kretry_topology_count(const kretry_topology_file_t *f);
const kretry_topology_t *kretry_topology_at(const kretry_topology_file_t *f,
                                            size_t i);
/* The topology named @p name, or NULL. */
const kretry_topology_t *kretry_topology_find(const kretry_topology_file_t *f,
                                              const char *name);

/* The `kafka:` properties, ${VAR} expanded. */
size_t kretry_topology_prop_count(const kretry_topology_file_t *f);
const kretry_topo_prop_t *
kretry_topology_prop_at(const kretry_topology_file_t *f, size_t i);

/* Worst-case time from the first failure to the DLQ: every delay at
 * +jitter, tiers reused up to max_attempts (rounded up to whole ms). */
int64_t kretry_topology_worst_case_ms(const kretry_topology_t *t);

/* Render @p ms for a person: "1h6m", "2d", "1m30s", "250ms". */
void kretry_topology_format_duration(int64_t ms, char *dest, size_t size);

/**
 * One topic a topology file declares, for tools that create them all (the
 * dev broker: the mock cluster has no CreateTopics).
 */
typedef struct {
        char name[256];
        int partitions;
} kretry_topology_topic_t;

/*
 * Every distinct topic of every topology in @p path: sources, retry tiers
 * and DLQs, in file order. A topic's partition count is its topology's
 * topics.partitions, or @p default_partitions when that is not declared.
 * Returns 0 and an array (free with free()) in *@p topicsp, its length in
 * *@p cntp; or -1 with every error of the file in @p errstr, one per line.
 */
int kretry_topology_topics(const char *path,
                           int default_partitions,
                           kretry_topology_topic_t **topicsp,
                           size_t *cntp,
                           char *errstr,
                           size_t errstr_size);

#endif
