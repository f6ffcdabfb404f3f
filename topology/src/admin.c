#include "admin.h"

#include "secret.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOCK_HINT                                                              \
        " (librdkafka's mock cluster, e.g. kretry dev-broker, has no admin "   \
        "APIs)"

/* Where admin_error_cb puts an authentication failure, while
 * auth_failure() serves the client's queued errors (one thread at a time
 * asks; others see NULL and drop theirs). */
static _Thread_local char *auth_dest;
static _Thread_local size_t auth_size;

static void
admin_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
        (void)rk, (void)opaque;
        /* A certificate the broker refuses comes back as a TLS alert on a
         * failed receive. */
        int tls = err == RD_KAFKA_RESP_ERR__SSL ||
                  (err == RD_KAFKA_RESP_ERR__TRANSPORT &&
                   strstr(reason, "SSL routines"));
        if ((err == RD_KAFKA_RESP_ERR__AUTHENTICATION || tls) && auth_dest)
                snprintf(auth_dest, auth_size, "%s%s",
                         tls ? "the TLS handshake failed (a certificate "
                               "refused): "
                             : "",
                         reason);
}

/* After a request to the cluster failed: appends to @p errstr what the
 * brokers answered about the client's credentials, when they refused them
 * (a wrong password looks like a broken connection otherwise). */
static void auth_failure(rd_kafka_t *rk, char *errstr, size_t errstr_size) {
        char why[512] = "";
        auth_dest     = why;
        auth_size     = sizeof(why);
        rd_kafka_poll(rk, 0);
        auth_dest  = NULL;
        size_t len = strlen(errstr);
        if (why[0] && len < errstr_size)
                snprintf(errstr + len, errstr_size - len,
                         "; the cluster refused the credentials: %s", why);
}

rd_kafka_t *kretry_admin_new(const kretry_topology_file_t *f,
                             const char *bootstrap,
                             char *errstr,
                             size_t errstr_size) {
        return kretry_admin_new_x(f, bootstrap, NULL, 0, errstr, errstr_size);
}

/* "name=value" into @p conf. */
static int
set_x(rd_kafka_conf_t *conf, const char *x, char *errstr, size_t errstr_size) {
        char name[256];
        const char *eq = strchr(x, '=');
        if (!eq || eq == x || (size_t)(eq - x) >= sizeof(name)) {
                snprintf(errstr, errstr_size, "-X %s: expected NAME=VALUE", x);
                return -1;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - x), x);
        return rd_kafka_conf_set(conf, name, eq + 1, errstr, errstr_size) ==
                               RD_KAFKA_CONF_OK
                       ? 0
                       : -1;
}

rd_kafka_t *kretry_admin_new_x(const kretry_topology_file_t *f,
                               const char *bootstrap,
                               const char *const *xprops,
                               size_t xcnt,
                               char *errstr,
                               size_t errstr_size) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* The library never prints: librdkafka's own logger would write
         * connection errors to stderr. What the cluster did not answer is
         * reported through the admin results and timeouts instead. */
        rd_kafka_conf_set_log_cb(conf, NULL);
        rd_kafka_conf_set_error_cb(conf, admin_error_cb);
        for (size_t i = 0; i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                if (!strncmp(p->name, "consumer.", 9) ||
                    !strncmp(p->name, "producer.", 9))
                        continue;
                if (rd_kafka_conf_set(conf, p->name, p->value, errstr,
                                      errstr_size) != RD_KAFKA_CONF_OK) {
                        if (kretry_secret_property(p->name))
                                kretry_secret_scrub(errstr, errstr_size,
                                                    p->value);
                        goto err;
                }
        }
        for (size_t i = 0; i < xcnt; i++)
                if (set_x(conf, xprops[i], errstr, errstr_size))
                        goto err;
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

/* Does some topology need @p name (its source, a tier, the DLQ, the
 * changelog or the parked keys)? */
static int
needed(const kretry_topology_t *topos, size_t cnt, const char *name) {
        for (size_t i = 0; i < cnt; i++) {
                const kretry_topology_t *t = &topos[i];
                char vt[256];
                if (!strcmp(t->dlq, name) || !strcmp(t->source, name))
                        return 1;
                for (int n = 0; n < t->tier_cnt; n++)
                        if (!strcmp(t->tier_topics[n], name))
                                return 1;
                if (t->versioning != KRETRY_VERSIONING_NONE &&
                    !kretry_topology_versions_topic(t, vt, sizeof(vt)) &&
                    !strcmp(vt, name))
                        return 1;
                if (kretry_topology_parks(t) &&
                    !kretry_topology_parked_topic(t, vt, sizeof(vt)) &&
                    !strcmp(vt, name))
                        return 1;
        }
        return 0;
}

/* Add the topics of @p md that @p topos need to @p meta; their names go to
 * @p names (room for every topic). Returns how many, or -1 out of memory. */
static int collect(const struct rd_kafka_metadata *md,
                   const kretry_topology_t *topos,
                   size_t cnt,
                   kretry_meta_t *meta,
                   char **names) {
        int n = 0;
        for (int i = 0; i < md->topic_cnt; i++) {
                const rd_kafka_metadata_topic_t *mt = &md->topics[i];
                if (mt->err || !needed(topos, cnt, mt->topic))
                        continue;
                if (kretry_meta_add(meta, mt->topic, mt->partition_cnt, -1))
                        return -1;
                meta->topics[meta->cnt - 1].replication =
                        mt->partition_cnt ? mt->partitions[0].replica_cnt : 0;
                names[n++] = mt->topic;
        }
        return n;
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
                auth_failure(rk, errstr, errstr_size);
                return -1;
        }
        char **names = calloc((size_t)md->topic_cnt + 1, sizeof(char *));
        int n        = names ? collect(md, topos, cnt, meta, names) : -1;
        int rc       = 0;
        if (n < 0) {
                snprintf(errstr, errstr_size, "out of memory");
                rc = -1;
        } else if (n && !kretry_admin_controller_known(rk, md)) {
                snprintf(errstr, errstr_size,
                         "the cluster names no controller among its "
                         "brokers, so it cannot be asked for topic "
                         "configurations: retention.ms, min.insync.replicas "
                         "and max.message.bytes of existing topics are "
                         "unknown" MOCK_HINT);
                rc = 1;
        } else if (n && kretry_admin_describe(rk, names, (size_t)n, timeout_ms,
                                              meta, errstr, errstr_size)) {
                rc = 1;
        }
        free(names);
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

/* The broker's answer for one action: "done", or its error and text. A
 * topic the controller had not finished within the operation timeout may
 * still be created: say so. */
static void
set_result(kretry_plan_action_t *a, rd_kafka_resp_err_t err, const char *msg) {
        int ok  = !err || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
        a->done = ok ? 1 : -1;
        if (ok)
                snprintf(a->result, sizeof(a->result), "%s",
                         err ? "already exists" : "done");
        else
                snprintf(a->result, sizeof(a->result), "%s%s%s%s",
                         rd_kafka_err2name(err), msg && *msg ? ": " : "",
                         msg ? msg : "",
                         err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT
                                 ? " (the controller did not finish within "
                                   "the operation timeout; it may still: run "
                                   "plan again)"
                                 : "");
}

/* @p a got no answer of its own: the request's error (@p ev; timeout,
 * authorization, TLS...), or none at all. */
static void unanswered(kretry_plan_action_t *a,
                       const char *request,
                       rd_kafka_event_t *ev,
                       int timeout_ms) {
        if (ev && rd_kafka_event_error(ev))
                set_result(a, rd_kafka_event_error(ev),
                           rd_kafka_event_error_string(ev));
        else
                snprintf(a->result, sizeof(a->result),
                         "no answer to %s within %d ms", request, timeout_ms);
        a->done = -1;
}

/* Every action of @p op that got no answer of its own. */
static void set_unanswered(kretry_plan_t *plan,
                           kretry_plan_op_t op,
                           const char *request,
                           rd_kafka_event_t *ev,
                           int timeout_ms) {
        for (size_t i = 0; i < plan->cnt; i++)
                if (plan->actions[i].op == op && !plan->actions[i].done)
                        unanswered(&plan->actions[i], request, ev, timeout_ms);
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

static void set_number(rd_kafka_NewTopic_t *nt, const char *name, int64_t v) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        if (v > 0)
                rd_kafka_NewTopic_set_config(nt, name, buf);
}

static rd_kafka_NewTopic_t *new_topic(const kretry_plan_action_t *a) {
        char err[256];
        rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(
                a->topic, a->partitions, a->replication ? a->replication : -1,
                err, sizeof(err));
        if (!nt)
                return NULL;
        set_number(nt, "retention.ms", a->retention_ms);
        set_number(nt, "min.insync.replicas", a->min_insync);
        set_number(nt, "max.message.bytes", a->max_message_bytes);
        if (a->compact)
                rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
        return nt;
}

static void create_topics(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        rd_kafka_NewTopic_t **nt = calloc(plan->cnt, sizeof(*nt));
        rd_kafka_event_t *ev     = NULL;
        size_t n                 = 0;
        for (size_t i = 0; nt && i < plan->cnt; i++)
                if (plan->actions[i].op == KRETRY_PLAN_CREATE &&
                    (nt[n] = new_topic(&plan->actions[i])))
                        n++;
        if (n) {
                rd_kafka_queue_t *q        = rd_kafka_queue_new(rk);
                rd_kafka_AdminOptions_t *o = kretry_admin_options(
                        rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms);
                rd_kafka_CreateTopics(rk, nt, n, o, q);
                ev = kretry_admin_wait(q, timeout_ms);
                const rd_kafka_CreateTopics_result_t *r =
                        ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
                /* The count is read after the call that sets it: as two
                 * arguments of one call their order is unspecified (GCC
                 * passed 0, and every created topic read as unanswered). */
                size_t rn = 0;
                const rd_kafka_topic_result_t **tr =
                        r ? rd_kafka_CreateTopics_result_topics(r, &rn) : NULL;
                topic_results(plan, KRETRY_PLAN_CREATE, tr, rn);
                rd_kafka_AdminOptions_destroy(o);
                rd_kafka_queue_destroy(q);
                rd_kafka_NewTopic_destroy_array(nt, n);
        }
        free(nt);
        set_unanswered(plan, KRETRY_PLAN_CREATE, "CreateTopics", ev,
                       timeout_ms);
        if (ev)
                rd_kafka_event_destroy(ev);
}

static void
add_partitions(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        rd_kafka_NewPartitions_t **np = calloc(plan->cnt, sizeof(*np));
        rd_kafka_event_t *ev          = NULL;
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
                rd_kafka_AdminOptions_t *o = kretry_admin_options(
                        rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeout_ms);
                rd_kafka_CreatePartitions(rk, np, n, o, q);
                ev = kretry_admin_wait(q, timeout_ms);
                const rd_kafka_CreatePartitions_result_t *r =
                        ev ? rd_kafka_event_CreatePartitions_result(ev) : NULL;
                size_t rn = 0; /* read after the call, as above */
                const rd_kafka_topic_result_t **tr =
                        r ? rd_kafka_CreatePartitions_result_topics(r, &rn)
                          : NULL;
                topic_results(plan, KRETRY_PLAN_ADD_PARTITIONS, tr, rn);
                rd_kafka_AdminOptions_destroy(o);
                rd_kafka_queue_destroy(q);
                rd_kafka_NewPartitions_destroy_array(np, n);
        }
        free(np);
        set_unanswered(plan, KRETRY_PLAN_ADD_PARTITIONS, "CreatePartitions", ev,
                       timeout_ms);
        if (ev)
                rd_kafka_event_destroy(ev);
}

/* Is @p name among the first @p n entries of @p kv? */
static int kv_has(const kretry_admin_kv_t *kv, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (!strcmp(kv[i].name, name))
                        return 1;
        return 0;
}

rd_kafka_ConfigResource_t *
kretry_admin_alter_request(const char *topic,
                           const kretry_admin_kv_t *current,
                           size_t current_cnt,
                           const kretry_admin_kv_t *changes,
                           size_t change_cnt) {
        rd_kafka_ConfigResource_t *res =
                rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
        rd_kafka_resp_err_t err =
                res ? 0 : RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
        for (size_t i = 0; !err && i < current_cnt; i++)
                if (!kv_has(changes, change_cnt, current[i].name) &&
                    !kv_has(current, i, current[i].name))
                        err = rd_kafka_ConfigResource_set_config(
                                res, current[i].name, current[i].value);
        for (size_t i = 0; !err && i < change_cnt; i++)
                if (!kv_has(changes, i, changes[i].name))
                        err = rd_kafka_ConfigResource_set_config(
                                res, changes[i].name, changes[i].value);
        if (err && res) {
                rd_kafka_ConfigResource_destroy(res);
                res = NULL;
        }
        return res;
}

/* The changes of an ALTER_CONFIG action as name/value pairs, the values
 * printed into @p bufs. Returns how many. */
static size_t changes_of(const kretry_plan_action_t *a,
                         kretry_admin_kv_t *kv,
                         char (*bufs)[32]) {
        size_t n = 0;
        const struct {
                const char *name;
                int64_t v;
        } all[] = {{"retention.ms", a->retention_ms},
                   {"min.insync.replicas", a->min_insync},
                   {"max.message.bytes", a->max_message_bytes}};
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
                if (!all[i].v)
                        continue;
                snprintf(bufs[n], sizeof(bufs[n]), "%" PRId64, all[i].v);
                kv[n].name  = all[i].name;
                kv[n].value = bufs[n];
                n++;
        }
        if (a->compact)
                kv[n++] = (kretry_admin_kv_t){"cleanup.policy", "compact"};
        return n;
}

/* The AlterConfigs request for @p a: the topic's dynamic entries, read
 * with DescribeConfigs, with the action's changes. NULL with the action's
 * result set when the cluster did not tell. */
static rd_kafka_ConfigResource_t *
alter_request(rd_kafka_t *rk, kretry_plan_action_t *a, int timeout_ms) {
        rd_kafka_ConfigResource_t *req =
                rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, a->topic);
        rd_kafka_ConfigResource_t *out = NULL;
        rd_kafka_queue_t *q            = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *o     = kretry_admin_options(
                    rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
        rd_kafka_DescribeConfigs(rk, &req, 1, o, q);
        rd_kafka_event_t *ev = kretry_admin_wait(q, timeout_ms);
        const rd_kafka_DescribeConfigs_result_t *r =
                ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
        size_t n = 0, cn = 0;
        const rd_kafka_ConfigResource_t **rs =
                r ? rd_kafka_DescribeConfigs_result_resources(r, &n) : NULL;
        const rd_kafka_ConfigEntry_t **e =
                n == 1 ? rd_kafka_ConfigResource_configs(rs[0], &cn) : NULL;
        kretry_admin_kv_t *cur = calloc(cn + 1, sizeof(*cur)), ch[4];
        size_t cur_cnt         = 0;
        char bufs[3][32];
        for (size_t i = 0; cur && i < cn; i++)
                if (rd_kafka_ConfigEntry_source(e[i]) ==
                            RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG &&
                    rd_kafka_ConfigEntry_value(e[i]))
                        cur[cur_cnt++] = (kretry_admin_kv_t){
                                rd_kafka_ConfigEntry_name(e[i]),
                                rd_kafka_ConfigEntry_value(e[i])};
        if (n == 1 && rd_kafka_ConfigResource_error(rs[0]))
                set_result(a, rd_kafka_ConfigResource_error(rs[0]),
                           rd_kafka_ConfigResource_error_string(rs[0]));
        else if (n == 1 && cur)
                out = kretry_admin_alter_request(a->topic, cur, cur_cnt, ch,
                                                 changes_of(a, ch, bufs));
        else
                unanswered(a, "DescribeConfigs", ev, timeout_ms);
        free(cur);
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_ConfigResource_destroy(req);
        rd_kafka_queue_destroy(q);
        return out;
}

static void
alter_config(rd_kafka_t *rk, kretry_plan_action_t *a, int timeout_ms) {
        rd_kafka_ConfigResource_t *res = alter_request(rk, a, timeout_ms);
        if (!res)
                return; /* its result says why */
        rd_kafka_queue_t *q        = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *o = kretry_admin_options(
                rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS, timeout_ms);
        rd_kafka_AlterConfigs(rk, &res, 1, o, q);
        rd_kafka_event_t *ev = kretry_admin_wait(q, timeout_ms);
        const rd_kafka_AlterConfigs_result_t *r =
                ev ? rd_kafka_event_AlterConfigs_result(ev) : NULL;
        size_t n = 0;
        const rd_kafka_ConfigResource_t **rs =
                r ? rd_kafka_AlterConfigs_result_resources(r, &n) : NULL;
        if (n == 1)
                set_result(a, rd_kafka_ConfigResource_error(rs[0]),
                           rd_kafka_ConfigResource_error_string(rs[0]));
        else
                unanswered(a, "AlterConfigs", ev, timeout_ms);
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_ConfigResource_destroy(res);
        rd_kafka_queue_destroy(q);
}

/* Can the cluster run admin requests at all? Fails every change at once,
 * without waiting for a timeout, when it names no controller. */
static int
controller_check(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err =
                rd_kafka_metadata(rk, 0, NULL, &md, timeout_ms);
        int known = !err && kretry_admin_controller_known(rk, md);
        for (size_t i = 0; !known && i < plan->cnt; i++) {
                kretry_plan_action_t *a = &plan->actions[i];
                if (a->op > KRETRY_PLAN_ALTER_CONFIG)
                        continue; /* not a change */
                a->done = -1;
                snprintf(a->result, sizeof(a->result), "%s",
                         err ? rd_kafka_err2str(err)
                             : "the cluster names no controller among its "
                               "brokers: it cannot run admin "
                               "requests" MOCK_HINT);
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        return known;
}

int kretry_admin_apply(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms) {
        int failed = 0;
        if (plan->conflicts)
                return -1;
        if (controller_check(rk, plan, timeout_ms)) {
                create_topics(rk, plan, timeout_ms);
                add_partitions(rk, plan, timeout_ms);
                for (size_t i = 0; i < plan->cnt; i++)
                        if (plan->actions[i].op == KRETRY_PLAN_ALTER_CONFIG)
                                alter_config(rk, &plan->actions[i], timeout_ms);
        }
        for (size_t i = 0; i < plan->cnt; i++)
                failed += plan->actions[i].done < 0;
        return failed;
}

int kretry_admin_create_acls(rd_kafka_t *rk,
                             const kretry_acls_t *acls,
                             const char *principal,
                             int timeout_ms,
                             char (*why)[256]) {
        rd_kafka_AclBinding_t **b = calloc(acls->cnt + 1, sizeof(*b));
        rd_kafka_queue_t *q       = rd_kafka_queue_new(rk);
        char err[256]             = "out of memory";
        int failed                = (int)acls->cnt;
        for (size_t i = 0; b && i < acls->cnt; i++) {
                const kretry_acl_t *a = &acls->items[i];
                b[i]                  = rd_kafka_AclBinding_new(
                                         a->restype, a->name, a->pattern, principal, "*", a->op,
                                         RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, err, sizeof(err));
                if (!b[i])
                        goto out;
        }
        if (!b || !q)
                goto out;
        rd_kafka_AdminOptions_t *o = kretry_admin_options(
                rk, RD_KAFKA_ADMIN_OP_CREATEACLS, timeout_ms);
        rd_kafka_CreateAcls(rk, b, acls->cnt, o, q);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_event_t *ev = kretry_admin_wait(q, timeout_ms);
        const rd_kafka_CreateAcls_result_t *r =
                ev ? rd_kafka_event_CreateAcls_result(ev) : NULL;
        if (!r || rd_kafka_event_error(ev)) {
                snprintf(err, sizeof(err), "%s",
                         ev ? rd_kafka_event_error_string(ev)
                            : "no answer in time");
                auth_failure(rk, err, sizeof(err));
        } else {
                size_t n;
                const rd_kafka_acl_result_t **res =
                        rd_kafka_CreateAcls_result_acls(r, &n);
                failed = 0;
                for (size_t i = 0; i < acls->cnt; i++) {
                        const rd_kafka_error_t *e =
                                i < n ? rd_kafka_acl_result_error(res[i])
                                      : NULL;
                        /* The name first: the broker's text may be long
                         * (a refused request's whole description). */
                        if (i >= n)
                                snprintf(why[i], sizeof(why[i]),
                                         "not answered");
                        else if (e)
                                snprintf(why[i], sizeof(why[i]), "%s: %s",
                                         rd_kafka_error_name(e),
                                         rd_kafka_error_string(e));
                        else
                                why[i][0] = '\0';
                        failed += why[i][0] != '\0';
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
out:
        if (failed == (int)acls->cnt && acls->cnt && !why[0][0])
                for (size_t i = 0; i < acls->cnt; i++)
                        snprintf(why[i], sizeof(why[i]), "%s", err);
        for (size_t i = 0; b && i < acls->cnt; i++)
                if (b[i])
                        rd_kafka_AclBinding_destroy(b[i]);
        free(b);
        if (q)
                rd_kafka_queue_destroy(q);
        return failed;
}
