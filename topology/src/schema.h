/*
 * The libcyaml schema of a topology file and the raw structures libcyaml
 * fills from it. Every scalar is loaded as text (durations, percentages,
 * counts) so that ${VAR} expansion applies to all of them and validate.c
 * parses them with kretry's own parsers and messages. Enumerations start at
 * 1: 0 means "not given" and lets validation apply defaults and tell "absent"
 * from "set to the default".
 *
 * The `kafka:` mapping (and value.schemas, handler.http.headers) has free-form
 * keys, which a libcyaml schema cannot express: it is an ignored field here and
 * collected by check.c.
 */
#ifndef KRETRY_TOPO_SCHEMA_H
#define KRETRY_TOPO_SCHEMA_H

#include <cyaml/cyaml.h>

enum {
        KRETRY_RAW_ORDERING_NONE = 1,
        KRETRY_RAW_ORDERING_KEY,
        KRETRY_RAW_ORDERING_PARTITION
};
enum { KRETRY_RAW_DLQ_CONTINUE = 1, KRETRY_RAW_DLQ_PARK_KEY };
enum { KRETRY_RAW_ROUTING_AT_LEAST_ONCE = 1, KRETRY_RAW_ROUTING_TRANSACTIONAL };
enum { KRETRY_RAW_DISCARD_OLDER = 1, KRETRY_RAW_DISCARD_OLDER_OR_EQUAL };
enum { KRETRY_RAW_FORMAT_BYTES = 1, KRETRY_RAW_FORMAT_AVRO };
enum { KRETRY_RAW_WIRE_RAW = 1, KRETRY_RAW_WIRE_CONFLUENT };
enum { KRETRY_RAW_BODY_RAW = 1, KRETRY_RAW_BODY_JSON };

typedef struct {
        char **tiers;
        unsigned tiers_count;
        char *max_attempts;
        char *jitter;
        char *max_age;
} kretry_raw_retry_t;

typedef struct {
        char *retry_pattern;
        char *partitions;
        char *replication;
        char *retention;
        char *min_insync_replicas;
} kretry_raw_topics_t;

typedef struct {
        char *header;
        char *field;
        int discard;
} kretry_raw_versioning_t;

typedef struct {
        int format;
        char *schema;
        int wire;
} kretry_raw_value_t;

typedef struct {
        char *failures;
        char *distinct_keys;
        char *cooldown;
} kretry_raw_breaker_t;

/* handler.http (kretry run --http); `headers:` is free-form, collected by
 * check.c. */
typedef struct {
        char *url;
        char *timeout;
        char *content_type;
        char *ce_type;
        int body;
        char *ca_file;
        char *cert_file;
        char *key_file;
        char *retry_statuses;
        char *fail_statuses;
} kretry_raw_http_t;

typedef struct {
        char *concurrency;
        kretry_raw_http_t *http;
} kretry_raw_handler_t;

typedef struct {
        char *dlq_messages;
        char *oldest_age;
        char *dlq_rate;
} kretry_raw_alerts_t;

typedef struct {
        char *name;
        char *source;
        char *group;
        kretry_raw_retry_t *retry;
        char *dlq;
        kretry_raw_topics_t *topics;
        int ordering;
        int routing;
        int on_dead_letter;
        kretry_raw_versioning_t *versioning;
        kretry_raw_value_t *value;
        char **permanent_errors;
        unsigned permanent_errors_count;
        kretry_raw_breaker_t *breaker;
        kretry_raw_handler_t *handler;
        kretry_raw_alerts_t *alerts;
} kretry_raw_topology_t;

typedef struct {
        kretry_raw_topology_t *topologies;
        unsigned topologies_count;
} kretry_raw_file_t;

/* The schema of a whole file (top-level value). */
extern const cyaml_schema_value_t kretry_topology_file_schema;

/* The libcyaml configuration used to load and free raw files. */
extern const cyaml_config_t kretry_topology_cyaml_config;

#endif
