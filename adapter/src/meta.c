/* Leaf: what the cluster holds: topics and configs. */
#include "meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The admin request itself is bounded by timeout_ms; waiting for its result
 * gets this much more, so the request's own timeout error wins. */
#define WAIT_SLACK_MS 1000

int kretry_meta_add(kretry_meta_t *m,
                    const char *name,
                    int partitions,
                    int64_t retention_ms) {
        kretry_meta_topic_t *t =
                realloc(m->topics, (m->cnt + 1) * sizeof(*m->topics));
        if (!t)
                return -1;
        m->topics = t;
        if (!(t[m->cnt].name = strdup(name)))
                return -1;
        t[m->cnt].partitions        = partitions;
        t[m->cnt].replication       = 0;
        t[m->cnt].retention_ms      = retention_ms;
        t[m->cnt].compact           = -1;
        t[m->cnt].min_insync        = -1;
        t[m->cnt].max_message_bytes = -1;
        m->cnt++;
        return 0;
}

const kretry_meta_topic_t *kretry_meta_find(const kretry_meta_t *m,
                                            const char *name) {
        for (size_t i = 0; i < m->cnt; i++)
                if (!strcmp(m->topics[i].name, name))
                        return &m->topics[i];
        return NULL;
}

void kretry_meta_clear(kretry_meta_t *m) {
        for (size_t i = 0; i < m->cnt; i++)
                free(m->topics[i].name);
        free(m->topics);
        m->topics = NULL;
        m->cnt    = 0;
}

/* Wait for the result of one admin request on @p q. */
rd_kafka_event_t *kretry_admin_wait(rd_kafka_queue_t *q, int timeout_ms) {
        return rd_kafka_queue_poll(q, timeout_ms + WAIT_SLACK_MS);
}

/* The request waits @p timeout_ms for the broker's answer; the operation
 * (the controller creating a topic or its partitions) gets three quarters
 * of it, so that a slow controller answers REQUEST_TIMED_OUT for the topics
 * it has not finished — they may still appear — before the request as a
 * whole times out and reads as failed for every topic. librdkafka ignores
 * the operation timeout of the other requests. */
rd_kafka_AdminOptions_t *
kretry_admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op, int timeout_ms) {
        rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
        rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, NULL, 0);
        rd_kafka_AdminOptions_set_operation_timeout(o, timeout_ms * 3 / 4, NULL,
                                                    0);
        return o;
}

int kretry_admin_controller_known(rd_kafka_t *rk,
                                  const struct rd_kafka_metadata *md) {
        int32_t id = rd_kafka_controllerid(rk, 0);
        for (int i = 0; id >= 0 && i < md->broker_cnt; i++)
                if (md->brokers[i].id == id)
                        return 1;
        return 0;
}

static void configs_from(const rd_kafka_ConfigResource_t *res,
                         kretry_meta_t *meta) {
        size_t n;
        const rd_kafka_ConfigEntry_t **e =
                rd_kafka_ConfigResource_configs(res, &n);
        kretry_meta_topic_t *t = (kretry_meta_topic_t *)kretry_meta_find(
                meta, rd_kafka_ConfigResource_name(res));
        for (size_t j = 0; t && j < n; j++) {
                const char *name = rd_kafka_ConfigEntry_name(e[j]);
                const char *v    = rd_kafka_ConfigEntry_value(e[j]);
                if (!v)
                        continue;
                if (!strcmp(name, "retention.ms"))
                        t->retention_ms = strtoll(v, NULL, 10);
                else if (!strcmp(name, "min.insync.replicas"))
                        t->min_insync = atoi(v);
                else if (!strcmp(name, "max.message.bytes"))
                        t->max_message_bytes = strtoll(v, NULL, 10);
                else if (!strcmp(name, "cleanup.policy"))
                        t->compact = strstr(v, "compact") != NULL;
        }
}

int kretry_admin_describe(rd_kafka_t *rk,
                          char **names,
                          size_t cnt,
                          int timeout_ms,
                          kretry_meta_t *meta,
                          char *errstr,
                          size_t errstr_size) {
        rd_kafka_ConfigResource_t **res = calloc(cnt, sizeof(*res));
        rd_kafka_queue_t *q             = rd_kafka_queue_new(rk);
        for (size_t i = 0; res && i < cnt; i++)
                res[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC,
                                                     names[i]);
        rd_kafka_AdminOptions_t *o = kretry_admin_options(
                rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
        rd_kafka_DescribeConfigs(rk, res, res ? cnt : 0, o, q);
        rd_kafka_event_t *ev = kretry_admin_wait(q, timeout_ms);
        const rd_kafka_DescribeConfigs_result_t *r =
                ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
        int rc = -1;
        if (!r || rd_kafka_event_error(ev)) {
                snprintf(errstr, errstr_size,
                         "DescribeConfigs: %s; the configuration of existing "
                         "topics is unknown",
                         ev ? rd_kafka_event_error_string(ev) : "no answer");
        } else {
                size_t n;
                const rd_kafka_ConfigResource_t **rs =
                        rd_kafka_DescribeConfigs_result_resources(r, &n);
                rc = 0;
                for (size_t i = 0; i < n; i++) {
                        if (!rd_kafka_ConfigResource_error(rs[i])) {
                                configs_from(rs[i], meta);
                                continue;
                        }
                        snprintf(errstr, errstr_size, "DescribeConfigs %s: %s",
                                 rd_kafka_ConfigResource_name(rs[i]),
                                 rd_kafka_ConfigResource_error_string(rs[i]));
                        rc = -1;
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        for (size_t i = 0; res && i < cnt; i++)
                rd_kafka_ConfigResource_destroy(res[i]);
        free(res);
        rd_kafka_queue_destroy(q);
        return rc;
}
