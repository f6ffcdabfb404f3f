#include "admin.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The admin request itself is bounded by timeout_ms; waiting for its result
 * gets this much more, so the request's own timeout error wins. */
#define WAIT_SLACK_MS 1000

#define MOCK_HINT                                                              \
        " (librdkafka's mock cluster, e.g. kretry dev-broker, has no admin "   \
        "APIs)"

rd_kafka_t *kretry_admin_new(const kretry_topology_file_t *f,
                             const char *bootstrap,
                             char *errstr,
                             size_t errstr_size) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* The library never prints: librdkafka's own logger would write
         * connection errors to stderr. What the cluster did not answer is
         * reported through the admin results and timeouts instead. */
        rd_kafka_conf_set_log_cb(conf, NULL);
        for (size_t i = 0; i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                if (!strncmp(p->name, "consumer.", 9) ||
                    !strncmp(p->name, "producer.", 9))
                        continue;
                if (rd_kafka_conf_set(conf, p->name, p->value, errstr,
                                      errstr_size) != RD_KAFKA_CONF_OK)
                        goto err;
        }
        if (bootstrap &&
            rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr,
                              errstr_size) != RD_KAFKA_CONF_OK)
                goto err;
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errstr_size);
        if (rk)
                return rk;
err:
        rd_kafka_conf_destroy(conf);
        return NULL;
}

/* Wait for the result of one admin request on @p q. */
static rd_kafka_event_t *wait_result(rd_kafka_queue_t *q, int timeout_ms) {
        return rd_kafka_queue_poll(q, timeout_ms + WAIT_SLACK_MS);
}

static rd_kafka_AdminOptions_t *
options(rd_kafka_t *rk, rd_kafka_admin_op_t op, int timeout_ms) {
        rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
        rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, NULL, 0);
        rd_kafka_AdminOptions_set_operation_timeout(o, timeout_ms, NULL, 0);
        return o;
}

/* Does some topology need @p name? Sets *retention when it declares one. */
static int needed(const kretry_topology_t *topos,
                  size_t cnt,
                  const char *name,
                  int *retention) {
        int found  = 0;
        *retention = 0;
        for (size_t i = 0; i < cnt; i++) {
                const kretry_topology_t *t = &topos[i];
                int chain                  = !strcmp(t->dlq, name);
                for (int n = 0; n < t->tier_cnt; n++)
                        chain |= !strcmp(t->tier_topics[n], name);
                char vt[256];
                found |= chain || !strcmp(t->source, name);
                found |= t->versioning != KRETRY_VERSIONING_NONE &&
                         !kretry_topology_versions_topic(t, vt, sizeof(vt)) &&
                         !strcmp(vt, name);
                *retention |= chain && t->retention_ms;
        }
        return found;
}

static void retention_from(const rd_kafka_ConfigResource_t *res,
                           kretry_meta_t *meta) {
        size_t n;
        const rd_kafka_ConfigEntry_t **e =
                rd_kafka_ConfigResource_configs(res, &n);
        for (size_t i = 0; i < meta->cnt; i++) {
                if (strcmp(meta->topics[i].name,
                           rd_kafka_ConfigResource_name(res)))
                        continue;
                for (size_t j = 0; j < n; j++) {
                        const char *v = rd_kafka_ConfigEntry_value(e[j]);
                        if (!strcmp(rd_kafka_ConfigEntry_name(e[j]),
                                    "retention.ms") &&
                            v)
                                meta->topics[i].retention_ms =
                                        strtoll(v, NULL, 10);
                }
        }
}

/* DescribeConfigs for @p names; 0, or -1 with @p errstr filled. */
static int describe_configs(rd_kafka_t *rk,
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
        rd_kafka_AdminOptions_t *o =
                options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
        rd_kafka_DescribeConfigs(rk, res, res ? cnt : 0, o, q);
        rd_kafka_event_t *ev = wait_result(q, timeout_ms);
        const rd_kafka_DescribeConfigs_result_t *r =
                ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
        int rc = -1;
        if (!r || rd_kafka_event_error(ev)) {
                snprintf(errstr, errstr_size,
                         "the cluster did not answer DescribeConfigs within "
                         "%d ms%s: %s; retention of existing topics is "
                         "unknown" MOCK_HINT,
                         timeout_ms, "",
                         ev ? rd_kafka_event_error_string(ev) : "timed out");
        } else {
                size_t n;
                const rd_kafka_ConfigResource_t **rs =
                        rd_kafka_DescribeConfigs_result_resources(r, &n);
                for (size_t i = 0; i < n; i++)
                        retention_from(rs[i], meta);
                rc = 0;
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

int kretry_admin_snapshot(rd_kafka_t *rk,
                          const kretry_topology_t *topos,
                          size_t cnt,
                          int timeout_ms,
                          kretry_meta_t *meta,
                          char *errstr,
                          size_t errstr_size) {
        const struct rd_kafka_metadata *md = NULL;
        /* all_topics=1: asking for named topics would auto-create them on
         * clusters that allow it (the mock cluster always does). */
        rd_kafka_resp_err_t err =
                rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
        if (err) {
                snprintf(errstr, errstr_size,
                         "cannot read the cluster's metadata within %d ms: %s",
                         timeout_ms, rd_kafka_err2str(err));
                return -1;
        }
        char **describe = calloc((size_t)md->topic_cnt + 1, sizeof(char *));
        size_t dcnt     = 0;
        int rc          = describe ? 0 : -1;
        for (int i = 0; describe && i < md->topic_cnt; i++) {
                const rd_kafka_metadata_topic_t *mt = &md->topics[i];
                int retention;
                if (mt->err || !needed(topos, cnt, mt->topic, &retention))
                        continue;
                if (kretry_meta_add(meta, mt->topic, mt->partition_cnt, -1))
                        rc = -1;
                if (retention)
                        describe[dcnt++] = mt->topic;
        }
        if (rc)
                snprintf(errstr, errstr_size, "out of memory");
        else if (dcnt && describe_configs(rk, describe, dcnt, timeout_ms, meta,
                                          errstr, errstr_size))
                rc = 1;
        free(describe);
        rd_kafka_metadata_destroy(md);
        return rc;
}

static kretry_plan_action_t *
action_for(kretry_plan_t *plan, kretry_plan_op_t op, const char *topic) {
        for (size_t i = 0; i < plan->cnt; i++)
                if (plan->actions[i].op == op &&
                    !strcmp(plan->actions[i].topic, topic))
                        return &plan->actions[i];
        return NULL;
}

static void
set_result(kretry_plan_action_t *a, rd_kafka_resp_err_t err, const char *msg) {
        int ok  = !err || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
        a->done = ok ? 1 : -1;
        snprintf(a->result, sizeof(a->result), "%s%s%s",
                 ok ? (err ? "already exists" : "done")
                    : rd_kafka_err2name(err),
                 !ok && msg ? ": " : "", !ok && msg ? msg : "");
}

/* Mark every action of @p op that got no answer. */
static void set_unanswered(kretry_plan_t *plan,
                           kretry_plan_op_t op,
                           const char *request,
                           int timeout_ms) {
        for (size_t i = 0; i < plan->cnt; i++) {
                kretry_plan_action_t *a = &plan->actions[i];
                if (a->op != op || a->done)
                        continue;
                a->done = -1;
                snprintf(a->result, sizeof(a->result),
                         "the cluster did not answer %s within %d ms" MOCK_HINT,
                         request, timeout_ms);
        }
}

static void topic_results(kretry_plan_t *plan,
                          kretry_plan_op_t op,
                          const rd_kafka_topic_result_t **tr,
                          size_t n) {
        for (size_t i = 0; i < n; i++) {
                kretry_plan_action_t *a =
                        action_for(plan, op, rd_kafka_topic_result_name(tr[i]));
                if (a)
                        set_result(a, rd_kafka_topic_result_error(tr[i]),
                                   rd_kafka_topic_result_error_string(tr[i]));
        }
}

static void create_topics(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        rd_kafka_NewTopic_t **nt = calloc(plan->cnt, sizeof(*nt));
        size_t n                 = 0;
        char err[256], ret[32];
        for (size_t i = 0; nt && i < plan->cnt; i++) {
                kretry_plan_action_t *a = &plan->actions[i];
                if (a->op != KRETRY_PLAN_CREATE)
                        continue;
                nt[n] = rd_kafka_NewTopic_new(
                        a->topic, a->partitions,
                        a->replication ? a->replication : -1, err, sizeof(err));
                snprintf(ret, sizeof(ret), "%" PRId64, a->retention_ms);
                if (nt[n] && a->retention_ms)
                        rd_kafka_NewTopic_set_config(nt[n], "retention.ms",
                                                     ret);
                if (nt[n] && a->compact)
                        rd_kafka_NewTopic_set_config(nt[n], "cleanup.policy",
                                                     "compact");
                if (nt[n])
                        n++;
        }
        if (n) {
                rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
                rd_kafka_AdminOptions_t *o =
                        options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms);
                rd_kafka_CreateTopics(rk, nt, n, o, q);
                rd_kafka_event_t *ev = wait_result(q, timeout_ms);
                const rd_kafka_CreateTopics_result_t *r =
                        ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
                size_t rn = 0;
                if (r)
                        topic_results(
                                plan, KRETRY_PLAN_CREATE,
                                rd_kafka_CreateTopics_result_topics(r, &rn),
                                rn);
                if (ev)
                        rd_kafka_event_destroy(ev);
                rd_kafka_AdminOptions_destroy(o);
                rd_kafka_queue_destroy(q);
                rd_kafka_NewTopic_destroy_array(nt, n);
        }
        free(nt);
        set_unanswered(plan, KRETRY_PLAN_CREATE, "CreateTopics", timeout_ms);
}

static void
add_partitions(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        rd_kafka_NewPartitions_t **np = calloc(plan->cnt, sizeof(*np));
        size_t n                      = 0;
        char err[256];
        for (size_t i = 0; np && i < plan->cnt; i++) {
                kretry_plan_action_t *a = &plan->actions[i];
                if (a->op == KRETRY_PLAN_ADD_PARTITIONS &&
                    (np[n] = rd_kafka_NewPartitions_new(a->topic,
                                                        (size_t)a->partitions,
                                                        err, sizeof(err))))
                        n++;
        }
        if (n) {
                rd_kafka_queue_t *q        = rd_kafka_queue_new(rk);
                rd_kafka_AdminOptions_t *o = options(
                        rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeout_ms);
                rd_kafka_CreatePartitions(rk, np, n, o, q);
                rd_kafka_event_t *ev = wait_result(q, timeout_ms);
                const rd_kafka_CreatePartitions_result_t *r =
                        ev ? rd_kafka_event_CreatePartitions_result(ev) : NULL;
                size_t rn = 0;
                if (r)
                        topic_results(
                                plan, KRETRY_PLAN_ADD_PARTITIONS,
                                rd_kafka_CreatePartitions_result_topics(r, &rn),
                                rn);
                if (ev)
                        rd_kafka_event_destroy(ev);
                rd_kafka_AdminOptions_destroy(o);
                rd_kafka_queue_destroy(q);
                rd_kafka_NewPartitions_destroy_array(np, n);
        }
        free(np);
        set_unanswered(plan, KRETRY_PLAN_ADD_PARTITIONS, "CreatePartitions",
                       timeout_ms);
}

/* AlterConfigs replaces a topic's whole dynamic configuration (librdkafka
 * 2.0.2 has no IncrementalAlterConfigs): read the current dynamic entries
 * first and send them back with the new retention.ms. */
static rd_kafka_ConfigResource_t *
current_config(rd_kafka_t *rk, const char *topic, int timeout_ms) {
        rd_kafka_ConfigResource_t *req =
                rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
        rd_kafka_ConfigResource_t *out = NULL;
        rd_kafka_queue_t *q            = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *o =
                options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
        rd_kafka_DescribeConfigs(rk, &req, 1, o, q);
        rd_kafka_event_t *ev = wait_result(q, timeout_ms);
        const rd_kafka_DescribeConfigs_result_t *r =
                ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
        size_t n = 0;
        const rd_kafka_ConfigResource_t **rs =
                r ? rd_kafka_DescribeConfigs_result_resources(r, &n) : NULL;
        if (n == 1 && !rd_kafka_ConfigResource_error(rs[0])) {
                out = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC,
                                                  topic);
                size_t cn;
                const rd_kafka_ConfigEntry_t **e =
                        rd_kafka_ConfigResource_configs(rs[0], &cn);
                for (size_t i = 0; i < cn; i++)
                        if (rd_kafka_ConfigEntry_source(e[i]) ==
                                    RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG &&
                            rd_kafka_ConfigEntry_value(e[i]))
                                rd_kafka_ConfigResource_set_config(
                                        out, rd_kafka_ConfigEntry_name(e[i]),
                                        rd_kafka_ConfigEntry_value(e[i]));
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_ConfigResource_destroy(req);
        rd_kafka_queue_destroy(q);
        return out;
}

static void
alter_retention(rd_kafka_t *rk, kretry_plan_action_t *a, int timeout_ms) {
        char ret[32];
        rd_kafka_ConfigResource_t *res =
                current_config(rk, a->topic, timeout_ms);
        if (!res)
                return; /* set_unanswered() reports it */
        snprintf(ret, sizeof(ret), "%" PRId64, a->retention_ms);
        rd_kafka_ConfigResource_set_config(res, "retention.ms", ret);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *o =
                options(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS, timeout_ms);
        rd_kafka_AlterConfigs(rk, &res, 1, o, q);
        rd_kafka_event_t *ev = wait_result(q, timeout_ms);
        const rd_kafka_AlterConfigs_result_t *r =
                ev ? rd_kafka_event_AlterConfigs_result(ev) : NULL;
        size_t n = 0;
        const rd_kafka_ConfigResource_t **rs =
                r ? rd_kafka_AlterConfigs_result_resources(r, &n) : NULL;
        if (n == 1)
                set_result(a, rd_kafka_ConfigResource_error(rs[0]),
                           rd_kafka_ConfigResource_error_string(rs[0]));
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_ConfigResource_destroy(res);
        rd_kafka_queue_destroy(q);
}

int kretry_admin_apply(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        int failed = 0;
        if (plan->conflicts)
                return -1;
        create_topics(rk, plan, timeout_ms);
        add_partitions(rk, plan, timeout_ms);
        for (size_t i = 0; i < plan->cnt; i++)
                if (plan->actions[i].op == KRETRY_PLAN_ALTER_RETENTION)
                        alter_retention(rk, &plan->actions[i], timeout_ms);
        set_unanswered(plan, KRETRY_PLAN_ALTER_RETENTION,
                       "DescribeConfigs/AlterConfigs", timeout_ms);
        for (size_t i = 0; i < plan->cnt; i++)
                failed += plan->actions[i].done < 0;
        return failed;
}
