#include "topology_render.h"

#include "secret.h"

#include <jansson.h>
#include <string.h>

static const char *dur(int64_t ms, char *buf, size_t size) {
        kretry_topology_format_duration(ms, buf, size);
        return buf;
}

static void describe_chain(FILE *out, const kretry_topology_t *t) {
        char a[64], b[64], c[64];
        fprintf(out, "  attempt 1   %-32s the source\n", t->source);
        for (int n = 1; n < t->max_attempts; n++) {
                int tier      = n < t->tier_cnt ? n : t->tier_cnt;
                int64_t delay = t->tiers_ms[tier - 1];
                int64_t hi    = delay + (int64_t)((double)delay * t->jitter);
                int64_t lo    = delay - (int64_t)((double)delay * t->jitter);
                fprintf(out, "  attempt %-3d %-32s after %s (%s..%s)%s\n",
                        n + 1, t->tier_topics[tier - 1],
                        dur(delay, a, sizeof(a)), dur(lo, b, sizeof(b)),
                        dur(hi, c, sizeof(c)),
                        n > t->tier_cnt ? ", last tier reused" : "");
        }
        fprintf(out, "  then        %-32s dead letter after attempt %d%s\n",
                t->dlq, t->max_attempts,
                t->max_age_ms ? " or once older than max_age" : "");
}

static void describe_retention(FILE *out, const kretry_topology_t *t) {
        char a[64], b[64];
        int64_t worst = kretry_topology_worst_case_ms(t);
        fprintf(out,
                "  worst case  %s from first failure to the DLQ (every "
                "delay at +%g%% jitter)\n",
                dur(worst, a, sizeof(a)), t->jitter * 100.0);
        if (t->max_age_ms)
                fprintf(out, "  max age     %s\n",
                        dur(t->max_age_ms, a, sizeof(a)));
        if (!t->retention_ms) {
                fprintf(out, "  retention   cluster default (not declared: "
                             "the worst case is not checked against it)\n");
                return;
        }
        fprintf(out,
                "  retention   %s on tiers and DLQ; the worst case uses "
                "%.1f%% of it (limit 80%%), margin %s\n",
                dur(t->retention_ms, a, sizeof(a)),
                100.0 * (double)worst / (double)t->retention_ms,
                dur(t->retention_ms * 4 / 5 - worst, b, sizeof(b)));
}

static void describe_modes(FILE *out, const kretry_topology_t *t) {
        char a[64];
        fprintf(out, "  partitions  %s%.0d, replication %s%.0d\n",
                t->partitions ? "" : "the source's count", t->partitions,
                t->replication ? "" : "cluster default", t->replication);
        fprintf(out, "  ordering    %s\n",
                t->ordering == KRETRY_ORDERING_KEY
                        ? (t->on_dead_letter == KRETRY_ON_DLQ_PARK_KEY
                                   ? "key: same-key messages wait behind a "
                                     "retried "
                                     "one; a dead-lettered head parks its key"
                                   : "key: same-key messages wait behind a "
                                     "retried "
                                     "one; the key continues after a dead "
                                     "letter")
                : t->ordering == KRETRY_ORDERING_PARTITION
                        ? "partition: one message of a partition in the "
                          "handler at a time"
                        : "none: tiers are independent");
        if (t->concurrency > 1)
                fprintf(out, "  handler     up to %d messages at once\n",
                        t->concurrency);
        if (t->versioning != KRETRY_VERSIONING_NONE)
                fprintf(out, "  versioning  %s \"%s\", discard %s\n",
                        t->versioning == KRETRY_VERSIONING_HEADER ? "header"
                                                                  : "field",
                        t->version_name,
                        t->discard_equal ? "older and equal" : "older");
        else
                fprintf(out, "  versioning  none\n");
        fprintf(out, "  value       %s%s%s%s\n",
                t->format == KRETRY_FORMAT_AVRO ? "avro, schema " : "bytes",
                t->format == KRETRY_FORMAT_AVRO ? t->schema_path : "",
                t->format == KRETRY_FORMAT_AVRO ? ", wire " : "",
                t->format == KRETRY_FORMAT_AVRO
                        ? (t->wire == KRETRY_WIRE_CONFLUENT ? "confluent"
                                                            : "raw")
                        : "");
        for (size_t i = 0; i < t->permanent_error_cnt; i++)
                fprintf(out, "%s%s%s", i ? ", " : "  permanent   ",
                        t->permanent_errors[i],
                        i + 1 == t->permanent_error_cnt ? " (always FAIL)\n"
                                                        : "");
        if (t->breaker)
                fprintf(out,
                        "  breaker     open after %d transient failures "
                        "over %d keys, cooldown %s\n",
                        t->breaker_failures, t->breaker_distinct_keys,
                        dur(t->breaker_cooldown_ms, a, sizeof(a)));
        if (t->alert_dlq_messages > 0)
                fprintf(out, "  alert       %lld or more messages in the DLQ\n",
                        (long long)t->alert_dlq_messages);
        if (t->alert_dlq_rate > 0)
                fprintf(out,
                        "  alert       %lld or more messages a minute into "
                        "the DLQ\n",
                        (long long)t->alert_dlq_rate);
        if (t->alert_oldest_age_ms)
                fprintf(out,
                        "  alert       oldest waiting message older than "
                        "%s\n",
                        dur(t->alert_oldest_age_ms, a, sizeof(a)));
}

/* The client properties and the HTTP handler as the run will use them:
 * secret values masked, header values never shown (they carry tokens). */
static void describe_clients(FILE *out,
                             const kretry_topology_file_t *f,
                             const kretry_topology_t *t) {
        for (size_t i = 0; i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                fprintf(out, "  %-11s %s = %s\n", i ? "" : "kafka", p->name,
                        kretry_secret_shown(p->name, p->value));
        }
        if (!t->http.url)
                return;
        char url[2048];
        fprintf(out, "  http        POST %s\n",
                kretry_secret_url(t->http.url, url, sizeof(url)));
        for (size_t i = 0; i < t->http.header_cnt; i++) {
                const char *h = t->http.headers[i];
                fprintf(out,
                        "              header %.*s: " KRETRY_SECRET_MASK "\n",
                        (int)strcspn(h, ":"), h);
        }
}

void topology_describe_text(FILE *out,
                            const kretry_topology_file_t *f,
                            const kretry_topology_t *t) {
        fprintf(out, "topology %s: source %s, group %s\n", t->name, t->source,
                t->group);
        describe_chain(out, t);
        fprintf(out, "  attempts    %d in all, the first included\n",
                t->max_attempts);
        describe_retention(out, t);
        describe_modes(out, t);
        describe_clients(out, f, t);
}

static json_t *durs_json(const int64_t *ms, int cnt) {
        json_t *a = json_array();
        for (int i = 0; a && i < cnt; i++)
                json_array_append_new(a, json_integer(ms[i]));
        return a;
}

/* {"name": value} of the kafka: section, secrets masked. */
static json_t *kafka_json(const kretry_topology_file_t *f) {
        json_t *o = json_object();
        for (size_t i = 0; o && i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                json_object_set_new(
                        o, p->name,
                        json_string(kretry_secret_shown(p->name, p->value)));
        }
        return o;
}

/* handler.http: its URL and header names (values never shown), or null. */
static json_t *http_json(const kretry_topology_t *t) {
        if (!t->http.url)
                return json_null();
        json_t *names = json_array();
        for (size_t i = 0; names && i < t->http.header_cnt; i++) {
                const char *h = t->http.headers[i];
                json_array_append_new(names, json_stringn(h, strcspn(h, ":")));
        }
        char url[2048];
        return json_pack("{s:s,s:o}", "url",
                         kretry_secret_url(t->http.url, url, sizeof(url)),
                         "headers", names);
}

static json_t *topology_json(const kretry_topology_file_t *f,
                             const kretry_topology_t *t) {
        json_t *tiers = json_array();
        for (int i = 0; tiers && i < t->tier_cnt; i++)
                json_array_append_new(
                        tiers, json_pack("{s:i,s:s,s:I}", "tier", i + 1,
                                         "topic", t->tier_topics[i], "delay_ms",
                                         (json_int_t)t->tiers_ms[i]));
        json_t *perm = json_array();
        for (size_t i = 0; perm && i < t->permanent_error_cnt; i++)
                json_array_append_new(perm,
                                      json_string(t->permanent_errors[i]));
        int64_t worst = kretry_topology_worst_case_ms(t);
        return json_pack(
                "{s:s,s:s,s:s,s:o,s:o,s:i,s:f,s:I,s:s,s:I,s:I,s:I,s:I,s:s,s:s,"
                "s:s?,s:s?,s:s,s:o,s:o,s:o}",
                "name", t->name, "source", t->source, "group", t->group,
                "tiers", tiers, "delays_ms",
                durs_json(t->tiers_ms, t->tier_cnt), "max_attempts",
                t->max_attempts, "jitter", t->jitter, "max_age_ms",
                (json_int_t)t->max_age_ms, "dlq", t->dlq, "partitions",
                (json_int_t)t->partitions, "replication",
                (json_int_t)t->replication, "retention_ms",
                (json_int_t)t->retention_ms, "worst_case_to_dlq_ms",
                (json_int_t)worst, "ordering",
                t->ordering == KRETRY_ORDERING_KEY         ? "key"
                : t->ordering == KRETRY_ORDERING_PARTITION ? "partition"
                                                           : "none",
                "on_dead_letter",
                t->on_dead_letter == KRETRY_ON_DLQ_PARK_KEY ? "park_key"
                                                            : "continue",
                "versioning_header",
                t->versioning == KRETRY_VERSIONING_HEADER ? t->version_name
                                                          : NULL,
                "versioning_field",
                t->versioning == KRETRY_VERSIONING_FIELD ? t->version_name
                                                         : NULL,
                "value_format",
                t->format == KRETRY_FORMAT_AVRO ? "avro" : "bytes",
                "permanent_errors", perm, "kafka", kafka_json(f), "http",
                http_json(t));
}

int topology_describe_json(FILE *out,
                           const kretry_topology_file_t *f,
                           const kretry_topology_t *const *topos,
                           size_t cnt) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < cnt; i++) {
                json_t *o = topology_json(f, topos[i]);
                if (!o || json_array_append_new(arr, o)) {
                        json_decref(arr);
                        return -1;
                }
        }
        if (!arr || json_dumpf(arr, out, JSON_INDENT(2))) {
                json_decref(arr);
                return -1;
        }
        fputc('\n', out);
        json_decref(arr);
        return 0;
}

/* "retention 1d -> 7d, min.insync.replicas 1 -> 2, ...": what changes
 * (a changelog's cleanup.policy, when it is not compacted, to compact). */
static void alter_text(FILE *out, const kretry_plan_action_t *a) {
        char r1[64], r2[64];
        const char *sep = "";
        if (a->retention_ms) {
                fprintf(out, "retention %s -> %s",
                        dur(a->current_retention_ms, r1, sizeof(r1)),
                        dur(a->retention_ms, r2, sizeof(r2)));
                sep = ", ";
        }
        if (a->min_insync) {
                fprintf(out, "%smin.insync.replicas %d -> %d", sep,
                        a->current_min_insync, a->min_insync);
                sep = ", ";
        }
        if (a->max_message_bytes) {
                fprintf(out, "%smax.message.bytes %lld -> %lld", sep,
                        (long long)a->current_max_message_bytes,
                        (long long)a->max_message_bytes);
                sep = ", ";
        }
        if (a->compact)
                fprintf(out, "%scleanup.policy -> compact", sep);
}

static void action_text(FILE *out, const kretry_plan_action_t *a) {
        char r1[64];
        fprintf(out, "  %-16s %-28s %-7s ", kretry_plan_op_name(a->op),
                a->topic, a->role);
        switch (a->op) {
        case KRETRY_PLAN_CREATE:
                fprintf(out, "partitions=%d replication=%s%.0d", a->partitions,
                        a->replication ? "" : "default", a->replication);
                if (a->retention_ms)
                        fprintf(out, " retention.ms=%lld (%s)",
                                (long long)a->retention_ms,
                                dur(a->retention_ms, r1, sizeof(r1)));
                if (a->compact)
                        fprintf(out, " cleanup.policy=compact");
                if (a->min_insync)
                        fprintf(out, " min.insync.replicas=%d", a->min_insync);
                if (a->max_message_bytes)
                        fprintf(out, " max.message.bytes=%lld",
                                (long long)a->max_message_bytes);
                break;
        case KRETRY_PLAN_ADD_PARTITIONS:
                fprintf(out, "%d -> %d partitions", a->current_partitions,
                        a->partitions);
                break;
        case KRETRY_PLAN_ALTER_CONFIG:
                alter_text(out, a);
                break;
        default:
                fprintf(out, "%s", a->reason);
        }
        if (a->done)
                fprintf(out, "  [%s]", a->result);
        fputc('\n', out);
}

void topology_plan_text(FILE *out, const kretry_plan_t *plan) {
        if (!plan->cnt) {
                fprintf(out, "nothing to do: the cluster holds every topic "
                             "as declared\n");
                return;
        }
        for (size_t i = 0; i < plan->cnt; i++)
                action_text(out, &plan->actions[i]);
        fprintf(out, "%d change(s), %d conflict(s)\n", plan->changes,
                plan->conflicts);
}

int topology_plan_json(FILE *out, const kretry_plan_t *plan) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < plan->cnt; i++) {
                const kretry_plan_action_t *a = &plan->actions[i];
                json_t *o                     = json_pack(
                                            "{s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:I,s:I,s:s}", "action",
                                            kretry_plan_op_name(a->op), "topology", a->topology,
                                            "topic", a->topic, "role", a->role, "partitions",
                                            a->partitions, "current_partitions",
                                            a->current_partitions, "replication", a->replication,
                                            "retention_ms", (json_int_t)a->retention_ms,
                                            "current_retention_ms",
                                            (json_int_t)a->current_retention_ms, "reason",
                                            a->reason);
                if (o && a->compact)
                        json_object_set_new(o, "cleanup_policy",
                                            json_string("compact"));
                if (o && a->min_insync)
                        json_object_set_new(o, "min_insync_replicas",
                                            json_pack("{s:i,s:i}", "value",
                                                      a->min_insync, "current",
                                                      a->current_min_insync));
                if (o && a->max_message_bytes)
                        json_object_set_new(
                                o, "max_message_bytes",
                                json_pack("{s:I,s:I}", "value",
                                          (json_int_t)a->max_message_bytes,
                                          "current",
                                          (json_int_t)a
                                                  ->current_max_message_bytes));
                if (!o || json_array_append_new(arr, o)) {
                        json_decref(arr);
                        return -1;
                }
        }
        json_t *doc = json_pack("{s:o,s:i,s:i}", "actions", arr, "changes",
                                plan->changes, "conflicts", plan->conflicts);
        if (!doc || json_dumpf(doc, out, JSON_INDENT(2))) {
                json_decref(doc);
                return -1;
        }
        fputc('\n', out);
        json_decref(doc);
        return 0;
}
