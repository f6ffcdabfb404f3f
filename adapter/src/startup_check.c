/*
 * The topology check of kretry_adapter_new(), before any client of the
 * adapter exists: a producer's handle for a tier or the DLQ, or the
 * consumer's subscription, would make a broker that allows it create a
 * missing topic with its default partition count (1 on stock Kafka) and
 * delete cleanup — copies from higher partitions could then never be
 * written, and the version store would expire. The check reads the whole
 * cluster's metadata (all topics: a request for named topics is what
 * auto-creates them, on the mock cluster always) with a short-lived
 * client, and shape.c decides. Runs on the thread that calls
 * kretry_adapter_new().
 */
#include "adapter_int.h"
#include "meta.h"
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, rc, errstr, errstr_size);
        if (!rk)
                rd_kafka_conf_destroy(rc);
        return rk;
}

/* The adapter's topics as the cluster reports them, into @p meta, within
 * @p timeout ms. */
static rd_kafka_resp_err_t snapshot(kretry_adapter_t *a,
                                    rd_kafka_t *rk,
                                    kretry_meta_t *meta,
                                    int timeout) {
        int64_t deadline                   = kretry_mono_ms() + timeout;
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, timeout);
        if (err)
                return err;
        for (int i = 0; i < md->topic_cnt; i++) {
                const rd_kafka_metadata_topic_t *mt = &md->topics[i];
                int mine = kretry_topic_index(a, mt->topic) >= 0 ||
                           !strcmp(mt->topic, a->dlq) ||
                           (a->versions_topic &&
                            !strcmp(mt->topic, a->versions_topic));
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
                   char *errstr,
                   size_t errstr_size) {
        size_t len =
                (size_t)snprintf(errstr, errstr_size,
                                 "the cluster's topics do not fit the topology "
                                 "(topology.check=warn starts anyway):");
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
                                    a->versions_topic, c->topology_file};
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

kretry_err_t
kretry_startup_check(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        const kretry_conf_t *c = a->conf;
        if (c->topology_check == KRETRY_TOPOLOGY_CHECK_OFF)
                return KRETRY_ERR_OK;
        int fail       = c->topology_check == KRETRY_TOPOLOGY_CHECK_FAIL;
        rd_kafka_t *rk = check_client(a, errstr, errstr_size);
        if (!rk)
                return KRETRY_ERR_KAFKA;
        kretry_diags_t d;
        kretry_diags_init(&d);
        int misfit              = 0;
        rd_kafka_resp_err_t err = check_settled(a, rk, &d, &misfit);
        rd_kafka_destroy(rk);
        kretry_err_t rc = KRETRY_ERR_OK;
        if (err) {
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
        } else {
                if (misfit && fail)
                        rc = KRETRY_ERR_TOPOLOGY;
                report(a, &d, fail, errstr, errstr_size);
                if (d.oom)
                        rc = KRETRY_ERR_NO_MEM;
        }
        kretry_diags_clear(&d);
        if (rc == KRETRY_ERR_OK)
                errstr[0] = '\0';
        return rc;
}
