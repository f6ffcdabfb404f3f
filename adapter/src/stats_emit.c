/*
 * Phase: the periodic stats callback.
 *
 * The periodic stats callback (stats.interval.ms): every interval, on the
 * thread driving the adapter, one JSON document with the counters, handler
 * latency percentiles over the interval, and per consumed topic the
 * messages waiting (high watermark minus what is done), consume and arrival
 * rates, the drain estimate and the age of the oldest held message. Figures
 * come from what the clients already know (cached watermarks, positions):
 * emitting sends nothing to the cluster.
 */
#include "adapter_int.h"
#include "latency.h"
#include "owned.h"
#include "part.h"
#include "stats.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Waiting messages of one topic's assigned partitions (-1 when no
 * partition's figures are known yet), and the messages that arrived since
 * the last document: the growth of each high watermark known then and now
 * (a partition assigned or first known since counts from the next one). */
static void topic_depth(kretry_adapter_t *a,
                        int t,
                        int64_t *waiting,
                        int64_t *arrived,
                        int64_t *oldest_ms,
                        json_t *per_part,
                        int64_t now) {
        *waiting   = -1;
        *arrived   = 0;
        *oldest_ms = -1;
        for (int p = 0; p < a->part_cap[t]; p++) {
                kretry_part_t *part = a->parts[t][p];
                int64_t lo, hi;
                if (!part || !part->assigned)
                        continue;
                if (part->held) {
                        int64_t ts = kretry_rkm_timestamp(part->held, NULL);
                        if (ts > 0 && now - ts > *oldest_ms)
                                *oldest_ms = now - ts;
                }
                if (rd_kafka_get_watermark_offsets(a->consumer, a->topics[t], p,
                                                   &lo, &hi) ||
                    hi < 0) {
                        part->emit_hi = -1;
                        continue;
                }
                int64_t done = part->stored >= 0 ? part->stored : lo;
                if (done < lo)
                        done = lo;
                *waiting = (*waiting < 0 ? 0 : *waiting) +
                           (hi > done ? hi - done : 0);
                json_array_append_new(
                        per_part,
                        json_pack("{s:i,s:I}", "partition", p, "waiting",
                                  (json_int_t)(hi > done ? hi - done : 0)));
                if (part->emit_hi >= 0 && hi > part->emit_hi)
                        *arrived += hi - part->emit_hi;
                part->emit_hi = hi;
        }
}

static json_t *
topic_json(kretry_adapter_t *a, int t, int64_t now, double secs) {
        int64_t waiting, arrived, oldest;
        json_t *parts = json_array();
        topic_depth(a, t, &waiting, &arrived, &oldest, parts, now);
        double consume =
                secs > 0
                        ? (double)(a->topic_consumed[t] - a->emit_consumed[t]) /
                                  secs
                        : 0;
        double arrival      = secs > 0 ? (double)arrived / secs : 0;
        a->emit_consumed[t] = a->topic_consumed[t];
        json_t *drain;
        if (waiting <= 0)
                drain = json_integer(0);
        else if (consume <= arrival)
                drain = json_string("never");
        else
                drain = json_integer((json_int_t)((double)waiting /
                                                  (consume - arrival) * 1000));
        return json_pack("{s:s,s:s,s:i,s:I,s:f,s:f,s:o,s:I,s:o}", "topic",
                         a->topics[t], "role", t ? "tier" : "source", "tier", t,
                         "waiting", (json_int_t)waiting, "consume_per_s",
                         consume, "arrival_per_s", arrival, "drain_ms", drain,
                         "oldest_held_age_ms", (json_int_t)oldest, "partitions",
                         parts);
}

static void emit(kretry_adapter_t *a, int64_t now) {
        json_t *doc = kretry_stats_counters(a);
        if (!doc)
                return;
        double secs = a->emit_at > 0 ? (double)(now - a->emit_at) / 1000.0 : 0;
        json_t *topics = json_array();
        for (int t = 0; t < a->topic_cnt; t++)
                json_array_append_new(topics, topic_json(a, t, now, secs));
        const kretry_latency_t *l = &a->latency;
        json_object_set_new(doc, "ts", json_integer(now));
        json_object_set_new(
                doc, "interval_ms",
                json_integer(a->emit_at > 0 ? now - a->emit_at : 0));
        json_object_set_new(
                doc, "handler_latency_ms",
                json_pack("{s:I,s:f,s:f,s:f}", "count", (json_int_t)l->count,
                          "p50",
                          (double)kretry_latency_quantile(l, 0.5) / 1000.0,
                          "p99",
                          (double)kretry_latency_quantile(l, 0.99) / 1000.0,
                          "max", (double)l->max_us / 1000.0));
        json_object_set_new(doc, "topics", topics);
        char *text = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        if (text)
                a->conf->stats_cb(text, strlen(text), a->conf->opaque);
        free(text);
        kretry_latency_reset(&a->latency);
        a->emit_at = now;
}

int64_t kretry_stats_maybe_emit(kretry_adapter_t *a, int64_t now) {
        int interval = a->conf->stats_interval_ms;
        if (!a->conf->stats_cb || interval <= 0)
                return -1;
        if (a->emit_next == 0)
                a->emit_next = now + interval;
        if (now >= a->emit_next) {
                emit(a, now);
                a->emit_next = now + interval;
        }
        return a->emit_next - now;
}

static const char *prom_escape(const char *s, char *buf, size_t size) {
        size_t n = 0;
        if (!s)
                s = ""; /* a document without the name */
        for (; *s && n + 2 < size; s++) {
                if (*s == '"' || *s == '\\')
                        buf[n++] = '\\';
                buf[n++] = *s == '\n' ? 'n' : *s;
        }
        buf[n] = '\0';
        return buf;
}

/* Append with snprintf semantics: @p len grows by what the text needs. */
#define OUT(...)                                                               \
        (len +=                                                                \
         (size_t)snprintf(dest && len < size ? dest + len : NULL,              \
                          dest && len < size ? size - len : 0, __VA_ARGS__))

size_t kretry_stats_prometheus(const char *json, char *dest, size_t size) {
        json_t *doc = json ? json_loads(json, 0, NULL) : NULL;
        size_t len  = 0;
        if (dest && size)
                dest[0] = '\0';
        if (!doc)
                return 0;
        static const char *const counters[][2] = {
                {"consumed", "messages consumed from the source and the tiers"},
                {"ok", "messages handled OK"},
                {"handler_calls", "handler invocations"},
                {"stale", "messages skipped as older versions"},
                {"forwarded", "messages parked behind their key's head"},
                {"produce_errors",
                 "copy deliveries that failed and were retried"},
                {"too_large",
                 "copies refused as too large for their topic (each once)"},
                {"foreign", "tier copies of another consumer group, skipped"},
                {"breaker_trips", "times the circuit breaker opened"},
                {"txn_commits",
                 "routing transactional: transactions committed"},
                {"txn_aborts",
                 "routing transactional: transactions aborted (their "
                 "messages decided again)"},
        };
        for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
                OUT("# HELP kretry_%s_total %s\n# TYPE kretry_%s_total "
                    "counter\nkretry_%s_total %lld\n",
                    counters[i][0], counters[i][1], counters[i][0],
                    counters[i][0],
                    (long long)json_integer_value(
                            json_object_get(doc, counters[i][0])));
        }
        OUT("# HELP kretry_retried_total messages copied to a retry tier\n"
            "# TYPE kretry_retried_total counter\n");
        json_t *v;
        size_t i;
        json_array_foreach(json_object_get(doc, "retried"), i, v)
                OUT("kretry_retried_total{tier=\"%zu\"} %lld\n", i + 1,
                    (long long)json_integer_value(v));
        OUT("# HELP kretry_dead_lettered_total messages copied to the DLQ\n"
            "# TYPE kretry_dead_lettered_total counter\n");
        const char *cls;
        json_object_foreach(json_object_get(doc, "dead_lettered"), cls, v)
                OUT("kretry_dead_lettered_total{class=\"%s\"} %lld\n", cls,
                    (long long)json_integer_value(v));
        OUT("# HELP kretry_denied_total refusals for want of an ACL, by "
            "cause\n# TYPE kretry_denied_total counter\n");
        json_object_foreach(json_object_get(doc, "denied"), cls, v)
                OUT("kretry_denied_total{cause=\"%s\"} %lld\n", cls,
                    (long long)json_integer_value(v));
        static const char *const gauges[][3] = {
                {"inflight", "kretry_inflight_messages",
                 "messages consumed and not yet decided (handler.concurrency "
                 "> 1)"},
                {"inflight_bytes", "kretry_inflight_bytes",
                 "bytes of key and value of those messages"},
                {"buffered", "kretry_buffered_messages",
                 "tier messages kept in memory behind one not due yet"},
                {"buffered_bytes", "kretry_buffered_bytes",
                 "memory those messages take (key, value, headers)"},
                {"held", "kretry_held_messages",
                 "messages held until their due time"},
                {"breaker_open", "kretry_breaker_open",
                 "1 while the circuit breaker holds consumption paused"},
                {"assigned", "kretry_assigned_partitions",
                 "source partitions assigned to this member"},
                {"denied_now", "kretry_denied_now",
                 "copies refused for want of an ACL now, plus 1 for each of "
                 "commit, read and transaction refused at its last try"},
        };
        for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
                json_t *n = json_object_get(doc, gauges[g][0]);
                if (json_is_integer(n) || json_is_boolean(n))
                        OUT("# HELP %s %s\n# TYPE %s gauge\n%s %lld\n",
                            gauges[g][1], gauges[g][2], gauges[g][1],
                            gauges[g][1],
                            json_is_boolean(n)
                                    ? (long long)json_is_true(n)
                                    : (long long)json_integer_value(n));
        }
        json_t *lat = json_object_get(doc, "handler_latency_ms");
        OUT("# HELP kretry_handler_latency_seconds handler latency over the "
            "last interval\n# TYPE kretry_handler_latency_seconds gauge\n");
        static const char *const qs[][2] = {
                {"p50", "0.5"}, {"p99", "0.99"}, {"max", "1"}};
        for (size_t q = 0; lat && q < 3; q++)
                OUT("kretry_handler_latency_seconds{quantile=\"%s\"} %g\n",
                    qs[q][1],
                    json_number_value(json_object_get(lat, qs[q][0])) / 1000.0);
        OUT("# HELP kretry_topic_waiting_messages messages not yet done per "
            "consumed topic\n# TYPE kretry_topic_waiting_messages gauge\n");
        json_array_foreach(json_object_get(doc, "topics"), i, v) {
                char esc[512];
                int64_t w = json_integer_value(json_object_get(v, "waiting"));
                if (w >= 0)
                        OUT("kretry_topic_waiting_messages{topic=\"%s\"} "
                            "%lld\n",
                            prom_escape(json_string_value(
                                                json_object_get(v, "topic")),
                                        esc, sizeof(esc)),
                            (long long)w);
        }
        OUT("# HELP kretry_partition_waiting_messages messages not yet done "
            "per assigned partition (lag)\n# TYPE "
            "kretry_partition_waiting_messages gauge\n");
        json_array_foreach(json_object_get(doc, "topics"), i, v) {
                char esc[512];
                json_t *pv;
                size_t j;
                prom_escape(json_string_value(json_object_get(v, "topic")), esc,
                            sizeof(esc));
                json_array_foreach(json_object_get(v, "partitions"), j, pv)
                        OUT("kretry_partition_waiting_messages{topic=\"%s\","
                            "partition=\"%lld\"} %lld\n",
                            esc,
                            (long long)json_integer_value(
                                    json_object_get(pv, "partition")),
                            (long long)json_integer_value(
                                    json_object_get(pv, "waiting")));
        }
        OUT("# HELP kretry_topic_oldest_held_age_seconds age of the oldest "
            "message held until due\n# TYPE "
            "kretry_topic_oldest_held_age_seconds gauge\n");
        json_array_foreach(json_object_get(doc, "topics"), i, v) {
                char esc[512];
                int64_t o = json_integer_value(
                        json_object_get(v, "oldest_held_age_ms"));
                if (o >= 0)
                        OUT("kretry_topic_oldest_held_age_seconds{topic=\"%s\"}"
                            " "
                            "%g\n",
                            prom_escape(json_string_value(
                                                json_object_get(v, "topic")),
                                        esc, sizeof(esc)),
                            (double)o / 1000.0);
        }
        json_decref(doc);
        return len;
}
