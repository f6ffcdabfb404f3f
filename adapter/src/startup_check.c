/*
 * Phase: the topology check before any client exists.
 *
 * The topology check of kretry_adapter_new(), before any client of the
 * adapter exists: a producer's handle for a tier or the DLQ, or the
 * consumer's subscription, would make a broker that allows it create a
 * missing topic with its default partition count (1 on stock Kafka) and
 * delete cleanup — copies from higher partitions could then never be
 * written, and the version store would expire. The check reads the whole
 * cluster's metadata (all topics: a request for named topics is what
 * auto-creates them, on the mock cluster always) with a short-lived
 * client, and shape.c decides. On a cluster with an authorizer it then
 * asks which operations this client's principal may perform on the
 * chain's topics and group, and acls.c names each binding missing: a
 * service without Write on the DLQ would otherwise start and retry its
 * dead letters forever. Credentials the cluster refuses end the check at
 * once. Runs on the thread that calls kretry_adapter_new().
 */
#include "startup_check.h"
#include "acls.h"
#include "adapter_int.h"
#include "clock.h"
#include "conf.h"
#include "diag.h"
#include "log.h"
#include "meta.h"
#include "part.h"
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What the check client's error callback saw of a refused login (a SASL
 * failure, or a TLS handshake the broker or the client refused: a bad
 * certificate), while the check's thread serves its queue
 * (rd_kafka_poll()); auth_tls: the TLS kind. */
static _Thread_local char auth_why[512];
static _Thread_local int auth_tls;

static void
check_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
        (void)rk, (void)opaque;
        /* A broker that refuses the client's certificate answers with a TLS
         * alert, which librdkafka reports as a failed receive. */
        int tls = err == RD_KAFKA_RESP_ERR__SSL ||
                  (err == RD_KAFKA_RESP_ERR__TRANSPORT &&
                   strstr(reason, "SSL routines"));
        if ((err == RD_KAFKA_RESP_ERR__AUTHENTICATION || tls) && !auth_why[0]) {
                snprintf(auth_why, sizeof(auth_why), "%s", reason);
                auth_tls = tls;
        }
}

/* A client for the metadata only: the producer's configuration (bootstrap,
 * security, the user's settings) without what would make it do more than
 * read: no idempotence (no InitProducerId), no transactions. */
static rd_kafka_t *
check_client(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        static const char *drop[] = {"enable.idempotence", "transactional.id"};
        rd_kafka_conf_t *rc       = rd_kafka_conf_dup_filter(
                      a->conf->producer, sizeof(drop) / sizeof(drop[0]), drop);
        rd_kafka_conf_set_opaque(rc, a);
        rd_kafka_conf_set_log_cb(rc, kretry_rdkafka_log_cb);
        rd_kafka_conf_set_error_cb(rc, check_error_cb);
        auth_why[0] = '\0';
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, rc, errstr, errstr_size);
        if (!rk)
                rd_kafka_conf_destroy(rc);
        return rk;
}

/* The whole cluster's metadata by @p deadline, asked in short slices: a
 * login the cluster refuses is seen between them (the error callback) and
 * ends the wait with RD_KAFKA_RESP_ERR__AUTHENTICATION, where librdkafka
 * would try again until the timeout and then the adapter forever. A
 * connection lost while the request was out (a broker busy or restarting)
 * is asked again after a short nap, within the same deadline. */
static rd_kafka_resp_err_t metadata(rd_kafka_t *rk,
                                    const struct rd_kafka_metadata **mdp,
                                    int64_t deadline) {
        for (;;) {
                int slice = kretry_left_ms(deadline, 500);
                rd_kafka_resp_err_t err =
                        rd_kafka_metadata(rk, 1, NULL, mdp, slice);
                rd_kafka_poll(rk, 0);
                if (auth_why[0] && err)
                        return RD_KAFKA_RESP_ERR__AUTHENTICATION;
                if (err == RD_KAFKA_RESP_ERR__TRANSPORT &&
                    kretry_left_ms(deadline, -1) > 100) {
                        struct timespec ts = {0, 100 * 1000 * 1000};
                        nanosleep(&ts, NULL);
                        continue;
                }
                if (err != RD_KAFKA_RESP_ERR__TIMED_OUT || slice < 500)
                        return err;
        }
}

/* The adapter's topics as the cluster reports them, into @p meta, within
 * @p timeout ms. */
static rd_kafka_resp_err_t snapshot(kretry_adapter_t *a,
                                    rd_kafka_t *rk,
                                    kretry_meta_t *meta,
                                    int timeout) {
        int64_t deadline                   = kretry_mono_ms() + timeout;
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err            = metadata(rk, &md, deadline);
        if (err)
                return err;
        for (int i = 0; i < md->topic_cnt; i++) {
                const rd_kafka_metadata_topic_t *mt = &md->topics[i];
                int mine = kretry_topic_index(a, mt->topic) >= 0 ||
                           !strcmp(mt->topic, a->dlq) ||
                           (a->versions_topic &&
                            !strcmp(mt->topic, a->versions_topic)) ||
                           (a->parked_topic &&
                            !strcmp(mt->topic, a->parked_topic));
                if (mine && !mt->err &&
                    kretry_meta_add(meta, mt->topic, mt->partition_cnt, -1))
                        err = RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
        }
        /* Their configuration (the changelog's cleanup.policy, the size
         * limits); left unknown, with a warning, where the cluster does not
         * answer. */
        char why[512], **names = calloc(meta->cnt + 1, sizeof(*names));
        for (size_t i = 0; names && i < meta->cnt; i++)
                names[i] = meta->topics[i].name;
        if (!names && !err)
                err = RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
        if (!err && meta->cnt && kretry_admin_controller_known(rk, md) &&
            kretry_admin_describe(rk, names, meta->cnt,
                                  kretry_left_ms(deadline, -1), meta, why,
                                  sizeof(why)))
                kretry_log(a, KRETRY_LOG_WARNING, "TOPOLOGY", "%s", why);
        free(names);
        rd_kafka_metadata_destroy(md);
        return err;
}

/* With @p fail, every error goes into @p errstr, one per line after a
 * heading, and is logged only when it did not fit there; warnings, and
 * without @p fail everything, are logged. */
static void report(kretry_adapter_t *a,
                   const kretry_diags_t *d,
                   int fail,
                   const char *heading,
                   char *errstr,
                   size_t errstr_size) {
        size_t len = (size_t)snprintf(
                errstr, errstr_size,
                "%s (topology.check=warn starts anyway):", heading);
        for (size_t i = 0; i < d->cnt; i++) {
                const kretry_diag_t *it = &d->items[i];
                int err = fail && it->level == KRETRY_DIAG_ERROR;
                if (err && len < errstr_size) {
                        size_t room = errstr_size - len;
                        int n       = snprintf(errstr + len, room, "\n  %s",
                                               it->text);
                        len += (size_t)n;
                        if ((size_t)n < room)
                                continue;
                }
                kretry_log(a, err ? KRETRY_LOG_ERR : KRETRY_LOG_WARNING,
                           "TOPOLOGY", "%s", it->text);
        }
}

/* A topic created a moment ago is listed by the broker that created it
 * before the others learn of it (on a cluster of several brokers, for up
 * to a second or two), and the check may ask one of those: a misfit is
 * looked at again, with fresh metadata, for this long before it is
 * reported. */
#define KRETRY_CHECK_SETTLE_MS 2000

/* Snapshot and shape check, again while the shape does not fit and the
 * settle time lasts; the last check's diagnostics stay in @p d. Returns the
 * snapshot's error; *@p misfit says whether the shape failed. */
static rd_kafka_resp_err_t check_settled(kretry_adapter_t *a,
                                         rd_kafka_t *rk,
                                         kretry_diags_t *d,
                                         int *misfit) {
        const kretry_conf_t *c = a->conf;
        int timeout            = c->topology_check_timeout_ms;
        int64_t deadline       = kretry_mono_ms() + timeout;
        int64_t settle = kretry_mono_ms() + (timeout < KRETRY_CHECK_SETTLE_MS
                                                     ? timeout
                                                     : KRETRY_CHECK_SETTLE_MS);
        for (;;) {
                kretry_meta_t meta      = {0};
                rd_kafka_resp_err_t err = snapshot(
                        a, rk, &meta, (int)kretry_left_ms(deadline, timeout));
                kretry_shape_t s = {a->topics[0],      a->topics + 1,
                                    a->topic_cnt - 1,  a->dlq,
                                    a->versions_topic, c->topology_file,
                                    a->parked_topic};
                *misfit          = !err && kretry_shape_check(&s, &meta, d);
                kretry_meta_clear(&meta);
                if (err || !*misfit || d->oom || kretry_mono_ms() >= settle ||
                    kretry_left_ms(deadline, -1) < 500)
                        return err;
                kretry_diags_clear(d); /* empty again, ready for the next */
                struct timespec ts = {0, 200 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

/* The chain's names as acls.c takes them. The transactional id is left
 * out: no cluster reports the operations allowed on one (a missing grant
 * refuses init_transactions, which names it). */
static kretry_acl_chain_t acl_chain(const kretry_adapter_t *a) {
        return (kretry_acl_chain_t){a->topics[0],
                                    a->topics + 1,
                                    a->topic_cnt - 1,
                                    a->dlq,
                                    a->versions_topic,
                                    a->group,
                                    0,
                                    NULL,
                                    a->parked_topic};
}

/* What the cluster allows on each of @p n topics (a DescribeTopics
 * result) into @p said. */
static void topics_said(const rd_kafka_DescribeTopics_result_t *r,
                        kretry_authz_t *said,
                        size_t *n) {
        size_t cnt;
        const rd_kafka_TopicDescription_t **t =
                rd_kafka_DescribeTopics_result_topics(r, &cnt);
        for (size_t i = 0; i < cnt; i++) {
                const rd_kafka_error_t *e =
                        rd_kafka_TopicDescription_error(t[i]);
                kretry_authz_t *s = &said[(*n)++];
                *s                = (kretry_authz_t){RD_KAFKA_RESOURCE_TOPIC,
                                                     rd_kafka_TopicDescription_name(t[i]),
                                                     KRETRY_AUTHZ_UNKNOWN, NULL, 0};
                if (e && rd_kafka_error_code(e) ==
                                 RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                        s->state = KRETRY_AUTHZ_DENIED;
                else if (
                        !e &&
                        (s->ops =
                                 rd_kafka_TopicDescription_authorized_operations(
                                         t[i], &s->ops_cnt)))
                        s->state = KRETRY_AUTHZ_OPS;
        }
}

static void group_said(const rd_kafka_DescribeConsumerGroups_result_t *r,
                       kretry_authz_t *said,
                       size_t *n) {
        size_t cnt;
        const rd_kafka_ConsumerGroupDescription_t **g =
                rd_kafka_DescribeConsumerGroups_result_groups(r, &cnt);
        for (size_t i = 0; i < cnt; i++) {
                const rd_kafka_error_t *e =
                        rd_kafka_ConsumerGroupDescription_error(g[i]);
                kretry_authz_t *s = &said[(*n)++];
                *s                = (kretry_authz_t){
                                       RD_KAFKA_RESOURCE_GROUP,
                                       rd_kafka_ConsumerGroupDescription_group_id(g[i]),
                                       KRETRY_AUTHZ_UNKNOWN, NULL, 0};
                if (e && rd_kafka_error_code(e) ==
                                 RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
                        s->state = KRETRY_AUTHZ_DENIED;
                else if (
                        !e &&
                        (s->ops =
                                 rd_kafka_ConsumerGroupDescription_authorized_operations(
                                         g[i], &s->ops_cnt)))
                        s->state = KRETRY_AUTHZ_OPS;
        }
}

/* One admin request with authorized operations asked, its result event
 * (NULL: no answer in time). */
static rd_kafka_event_t *ask(rd_kafka_t *rk,
                             rd_kafka_queue_t *q,
                             const char **names,
                             size_t cnt,
                             int group,
                             int timeout) {
        rd_kafka_AdminOptions_t *o = kretry_admin_options(
                rk,
                group ? RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS
                      : RD_KAFKA_ADMIN_OP_DESCRIBETOPICS,
                timeout);
        rd_kafka_error_t *e =
                rd_kafka_AdminOptions_set_include_authorized_operations(o, 1);
        if (e) {
                rd_kafka_error_destroy(e);
                rd_kafka_AdminOptions_destroy(o);
                return NULL;
        }
        if (group) {
                rd_kafka_DescribeConsumerGroups(rk, names, cnt, o, q);
        } else {
                rd_kafka_TopicCollection_t *tc =
                        rd_kafka_TopicCollection_of_topic_names(names, cnt);
                rd_kafka_DescribeTopics(rk, tc, o, q);
                rd_kafka_TopicCollection_destroy(tc);
        }
        rd_kafka_AdminOptions_destroy(o);
        return kretry_admin_wait(q, timeout);
}

/* The principal as the fix names it: User:<sasl.username> when the client
 * logs in with one, else a placeholder (a certificate's subject is the
 * broker's to say). */
static void principal(const kretry_adapter_t *a, char *dest, size_t size) {
        char user[256];
        size_t n = sizeof(user);
        if (rd_kafka_conf_get(a->conf->producer, "sasl.username", user, &n) ==
                    RD_KAFKA_CONF_OK &&
            user[0])
                snprintf(dest, size, "User:%s", user);
        else
                snprintf(dest, size, "User:NAME");
}

void kretry_acl_hint(const kretry_adapter_t *a,
                     const kretry_acl_t *b,
                     char *dest,
                     size_t size) {
        char who[300], what[400];
        const char *file = a->conf->topology_file;
        principal(a, who, sizeof(who));
        kretry_acl_describe(b, what, sizeof(what));
        snprintf(dest, size,
                 "missing ACL: %s (%s): `kretry topology acls %s --principal "
                 "%s --apply` grants it",
                 what, b->why, *file ? file : "FILE", who);
}

/* One error per binding of role run that the cluster's authorizer says
 * this client lacks, each naming the command that grants them. */
static void report_missing(const kretry_adapter_t *a,
                           const kretry_acls_t *need,
                           const size_t *missing,
                           size_t n,
                           kretry_diags_t *d) {
        char hint[2048]; /* the hint names a topology path and a principal */
        for (size_t i = 0; i < n; i++) {
                kretry_acl_hint(a, &need->items[missing[i]], hint,
                                sizeof(hint));
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0, "%s", hint);
        }
}

/* Ask the cluster what this client's principal may do on the chain's
 * topics and group, and record one error per binding of role run that is
 * missing (acls.c). A cluster without an authorizer allows everything;
 * one that does not report operations (librdkafka's mock cluster) says
 * nothing, nor does a cluster that does not answer in time: the check then
 * says nothing either. Returns how many are missing, -1 out of memory. */
static int authz_check(kretry_adapter_t *a,
                       rd_kafka_t *rk,
                       int timeout,
                       kretry_diags_t *d) {
        kretry_acls_t need    = {0};
        kretry_acl_chain_t c  = acl_chain(a);
        size_t tcnt           = (size_t)a->topic_cnt + 3;
        const char **names    = calloc(tcnt, sizeof(*names));
        kretry_authz_t *said  = calloc(tcnt + 1, sizeof(*said));
        size_t *missing       = NULL;
        rd_kafka_queue_t *q   = rd_kafka_queue_new(rk);
        rd_kafka_event_t *tev = NULL, *gev = NULL;
        int rc = -1;
        if (!names || !said || !q ||
            kretry_acls_add(&need, &c, KRETRY_ACL_ROLE_RUN) ||
            !(missing = calloc(need.cnt + 1, sizeof(*missing))))
                goto out;
        size_t n = 0, said_cnt = 0;
        for (int i = 0; i < a->topic_cnt; i++)
                names[n++] = a->topics[i];
        names[n++] = a->dlq;
        if (a->versions_topic)
                names[n++] = a->versions_topic;
        if (a->parked_topic)
                names[n++] = a->parked_topic;
        int64_t deadline = kretry_mono_ms() + timeout;
        tev              = ask(rk, q, names, n, 0, timeout);
        if (tev && rd_kafka_event_DescribeTopics_result(tev) &&
            !rd_kafka_event_error(tev))
                topics_said(rd_kafka_event_DescribeTopics_result(tev), said,
                            &said_cnt);
        /* Only a cluster that reported operations on a topic is asked about
         * the group: the mock cluster has no DescribeGroups to answer. */
        int known = 0;
        for (size_t i = 0; i < said_cnt; i++)
                known |= said[i].state != KRETRY_AUTHZ_UNKNOWN;
        const char *group = a->group;
        if (known &&
            (gev = ask(rk, q, &group, 1, 1, kretry_left_ms(deadline, -1))) &&
            rd_kafka_event_DescribeConsumerGroups_result(gev) &&
            !rd_kafka_event_error(gev))
                group_said(rd_kafka_event_DescribeConsumerGroups_result(gev),
                           said, &said_cnt);
        size_t m = kretry_acls_missing(&need, said, said_cnt, missing);
        report_missing(a, &need, missing, m, d);
        rc = (int)m;
out:
        if (tev)
                rd_kafka_event_destroy(tev);
        if (gev)
                rd_kafka_event_destroy(gev);
        if (q)
                rd_kafka_queue_destroy(q);
        kretry_acls_clear(&need);
        free(missing);
        free(said);
        free(names);
        return rc;
}

/* Is the cluster's controller one of the brokers it lists? */
static int controller_known(rd_kafka_t *rk) {
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(rk, 0, NULL, &md, 2000) || !md)
                return 0;
        int known = kretry_admin_controller_known(rk, md);
        rd_kafka_metadata_destroy(md);
        return known;
}

kretry_err_t
kretry_startup_check(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        const kretry_conf_t *c = a->conf;
        if (c->topology_check == KRETRY_TOPOLOGY_CHECK_OFF)
                return KRETRY_ERR_OK;
        int fail       = c->topology_check == KRETRY_TOPOLOGY_CHECK_FAIL;
        rd_kafka_t *rk = check_client(a, errstr, errstr_size);
        if (!rk)
                return KRETRY_ERR_KAFKA;
        kretry_diags_t d, acl;
        kretry_diags_init(&d);
        kretry_diags_init(&acl);
        int misfit = 0, lacking = 0;
        int64_t deadline = kretry_mono_ms() + c->topology_check_timeout_ms;
        rd_kafka_resp_err_t err = check_settled(a, rk, &d, &misfit);
        /* Within the check's bound, but never less than half a second: a
         * cluster slow to list its topics still answers the question. */
        int left = kretry_left_ms(deadline, -1);
        /* librdkafka sends DescribeTopics to the controller, and waits for
         * one to be known as long as the request may take: a cluster that
         * names none it lists (librdkafka's mock cluster: controller 0 of
         * brokers from 1) cannot answer, and the
         * question would only cost the start its whole bound. */
        if (!err && controller_known(rk))
                lacking = authz_check(a, rk, left < 500 ? 500 : left, &acl);
        rd_kafka_destroy(rk);
        kretry_err_t rc = KRETRY_ERR_OK;
        if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
                /* Whatever topology.check says: an adapter would only try
                 * the same credentials again, forever. */
                snprintf(errstr, errstr_size, "topology check: %s: %s",
                         auth_tls ? "the TLS handshake failed (a certificate "
                                    "refused)"
                                  : "the cluster refused the credentials",
                         auth_why);
                rc = KRETRY_ERR_KAFKA;
        } else if (err) {
                snprintf(errstr, errstr_size,
                         "topology check: cannot read the cluster's metadata "
                         "within %d ms: %s (topology.check=warn starts "
                         "anyway)",
                         c->topology_check_timeout_ms, rd_kafka_err2str(err));
                if (!fail) /* else errstr says it */
                        kretry_log(a, KRETRY_LOG_WARNING, "TOPOLOGY", "%s",
                                   errstr);
                rc = err == RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE
                             ? KRETRY_ERR_NO_MEM
                     : fail ? KRETRY_ERR_KAFKA
                            : KRETRY_ERR_OK;
        } else if (lacking > 0) {
                /* A topic this client may not describe is not listed in the
                 * metadata: the shape's "does not exist" would mislead
                 * while ACLs are missing. */
                if (fail)
                        rc = KRETRY_ERR_TOPOLOGY;
                report(a, &acl, fail,
                       "this client lacks ACLs the topology needs", errstr,
                       errstr_size);
                if (!fail)
                        report(a, &d, 0, "", errstr, errstr_size);
        } else {
                if (misfit && fail)
                        rc = KRETRY_ERR_TOPOLOGY;
                report(a, &d, fail,
                       "the cluster's topics do not fit the "
                       "topology",
                       errstr, errstr_size);
        }
        if (d.oom || acl.oom || lacking < 0)
                rc = KRETRY_ERR_NO_MEM;
        kretry_diags_clear(&acl);
        kretry_diags_clear(&d);
        if (rc == KRETRY_ERR_OK)
                errstr[0] = '\0';
        return rc;
}
