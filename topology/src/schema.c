#include "schema.h"

#define STR(key, st, member)                                                   \
        CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_OPTIONAL, st, member, 0,        \
                               CYAML_UNLIMITED)
#define STR_REQ(key, st, member)                                               \
        CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_DEFAULT, st, member, 0,         \
                               CYAML_UNLIMITED)
#define ENUM(key, st, member, table)                                           \
        CYAML_FIELD_ENUM(key, CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT, st,     \
                         member, table, CYAML_ARRAY_LEN(table))
#define MAP(key, st, member, fields)                                           \
        CYAML_FIELD_MAPPING_PTR(key, CYAML_FLAG_OPTIONAL, st, member, fields)

static const cyaml_schema_value_t string_entry = {
        CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_strval_t ordering_values[] = {
        {"none", KRETRY_RAW_ORDERING_NONE},
        {"key", KRETRY_RAW_ORDERING_KEY},
        {"partition", KRETRY_RAW_ORDERING_PARTITION},
};
static const cyaml_strval_t routing_values[] = {
        {"at_least_once", KRETRY_RAW_ROUTING_AT_LEAST_ONCE},
        {"transactional", KRETRY_RAW_ROUTING_TRANSACTIONAL},
};
static const cyaml_strval_t dead_letter_values[] = {
        {"continue", KRETRY_RAW_DLQ_CONTINUE},
        {"park_key", KRETRY_RAW_DLQ_PARK_KEY},
};
static const cyaml_strval_t discard_values[] = {
        {"older", KRETRY_RAW_DISCARD_OLDER},
        {"older_or_equal", KRETRY_RAW_DISCARD_OLDER_OR_EQUAL},
};
static const cyaml_strval_t format_values[] = {
        {"bytes", KRETRY_RAW_FORMAT_BYTES},
        {"avro", KRETRY_RAW_FORMAT_AVRO},
};
static const cyaml_strval_t body_values[] = {
        {"raw", KRETRY_RAW_BODY_RAW},
        {"json", KRETRY_RAW_BODY_JSON},
};
static const cyaml_strval_t wire_values[] = {
        {"raw", KRETRY_RAW_WIRE_RAW},
        {"confluent", KRETRY_RAW_WIRE_CONFLUENT},
};

/* Sequence bounds are checked by validate.c, which names the limit. */
static const cyaml_schema_field_t retry_fields[] = {
        CYAML_FIELD_SEQUENCE("tiers",
                             CYAML_FLAG_POINTER,
                             kretry_raw_retry_t,
                             tiers,
                             &string_entry,
                             0,
                             CYAML_UNLIMITED),
        STR("max_attempts", kretry_raw_retry_t, max_attempts),
        STR("jitter", kretry_raw_retry_t, jitter),
        STR("max_age", kretry_raw_retry_t, max_age),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t topics_fields[] = {
        STR("retry_pattern", kretry_raw_topics_t, retry_pattern),
        STR("partitions", kretry_raw_topics_t, partitions),
        STR("replication", kretry_raw_topics_t, replication),
        STR("retention", kretry_raw_topics_t, retention),
        STR("min_insync_replicas", kretry_raw_topics_t, min_insync_replicas),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t versioning_fields[] = {
        STR("header", kretry_raw_versioning_t, header),
        STR("field", kretry_raw_versioning_t, field),
        ENUM("discard", kretry_raw_versioning_t, discard, discard_values),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t value_fields[] = {
        ENUM("format", kretry_raw_value_t, format, format_values),
        STR("schema", kretry_raw_value_t, schema),
        ENUM("wire", kretry_raw_value_t, wire, wire_values),
        /* schema id -> .avsc: free-form keys, collected by check.c */
        CYAML_FIELD_IGNORE("schemas", CYAML_FLAG_OPTIONAL),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t breaker_fields[] = {
        STR("failures", kretry_raw_breaker_t, failures),
        STR("distinct_keys", kretry_raw_breaker_t, distinct_keys),
        STR("cooldown", kretry_raw_breaker_t, cooldown),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t http_fields[] = {
        STR_REQ("url", kretry_raw_http_t, url),
        STR("timeout", kretry_raw_http_t, timeout),
        /* header name -> value: free-form keys, collected by check.c */
        CYAML_FIELD_IGNORE("headers", CYAML_FLAG_OPTIONAL),
        STR("content_type", kretry_raw_http_t, content_type),
        STR("ce_type", kretry_raw_http_t, ce_type),
        ENUM("body", kretry_raw_http_t, body, body_values),
        STR("ca_file", kretry_raw_http_t, ca_file),
        STR("cert_file", kretry_raw_http_t, cert_file),
        STR("key_file", kretry_raw_http_t, key_file),
        STR("retry_statuses", kretry_raw_http_t, retry_statuses),
        STR("fail_statuses", kretry_raw_http_t, fail_statuses),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t handler_fields[] = {
        STR("concurrency", kretry_raw_handler_t, concurrency),
        MAP("http", kretry_raw_handler_t, http, http_fields),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t alerts_fields[] = {
        STR("dlq_messages", kretry_raw_alerts_t, dlq_messages),
        STR("oldest_age", kretry_raw_alerts_t, oldest_age),
        STR("dlq_rate", kretry_raw_alerts_t, dlq_rate),
        CYAML_FIELD_END,
};

static const cyaml_schema_field_t topology_fields[] = {
        STR("name", kretry_raw_topology_t, name),
        STR_REQ("source", kretry_raw_topology_t, source),
        STR_REQ("group", kretry_raw_topology_t, group),
        CYAML_FIELD_MAPPING_PTR("retry",
                                CYAML_FLAG_DEFAULT,
                                kretry_raw_topology_t,
                                retry,
                                retry_fields),
        STR("dlq", kretry_raw_topology_t, dlq),
        MAP("topics", kretry_raw_topology_t, topics, topics_fields),
        ENUM("ordering", kretry_raw_topology_t, ordering, ordering_values),
        ENUM("routing", kretry_raw_topology_t, routing, routing_values),
        ENUM("on_dead_letter",
             kretry_raw_topology_t,
             on_dead_letter,
             dead_letter_values),
        MAP("versioning", kretry_raw_topology_t, versioning, versioning_fields),
        MAP("value", kretry_raw_topology_t, value, value_fields),
        CYAML_FIELD_SEQUENCE("permanent_errors",
                             CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                             kretry_raw_topology_t,
                             permanent_errors,
                             &string_entry,
                             0,
                             CYAML_UNLIMITED),
        MAP("breaker", kretry_raw_topology_t, breaker, breaker_fields),
        MAP("alerts", kretry_raw_topology_t, alerts, alerts_fields),
        MAP("handler", kretry_raw_topology_t, handler, handler_fields),
        CYAML_FIELD_END,
};

static const cyaml_schema_value_t topology_entry = {
        CYAML_VALUE_MAPPING(
                CYAML_FLAG_DEFAULT, kretry_raw_topology_t, topology_fields),
};

static const cyaml_schema_field_t file_fields[] = {
        CYAML_FIELD_IGNORE("kafka", CYAML_FLAG_OPTIONAL),
        CYAML_FIELD_SEQUENCE("topologies",
                             CYAML_FLAG_POINTER,
                             kretry_raw_file_t,
                             topologies,
                             &topology_entry,
                             0,
                             CYAML_UNLIMITED),
        CYAML_FIELD_END,
};

const cyaml_schema_value_t kretry_topology_file_schema = {
        CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, kretry_raw_file_t, file_fields),
};

/* libcyaml logs nothing: check.c has reported every structural problem
 * with its position before libcyaml sees the file. */
const cyaml_config_t kretry_topology_cyaml_config = {
        .log_fn    = NULL,
        .mem_fn    = cyaml_mem,
        .log_level = CYAML_LOG_ERROR,
        .flags     = CYAML_CFG_NO_ALIAS,
};
