/*
 * Service: the log. kretry's lines and librdkafka's go to the application's
 * log callback, every secret value of the configuration scrubbed first.
 */
#include "log.h"
#include "adapter_int.h"
#include "clock.h"
#include "denied.h"
#include "secret.h"

#include <stdarg.h>
#include <stdio.h>

void kretry_log(kretry_adapter_t *a,
                kretry_log_level_t level,
                const char *fac,
                const char *fmt,
                ...) {
        if (!a->conf->log_cb)
                return;
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        kretry_secrets_scrub(&a->secrets, buf, sizeof(buf));
        a->conf->log_cb(level, fac, buf, a->conf->log_opaque);
}

void kretry_rdkafka_log_cb(const rd_kafka_t *rk,
                           int level,
                           const char *fac,
                           const char *buf) {
        kretry_adapter_t *a = rd_kafka_opaque(rk);
        char facility[64], line[2048];
        if (!a || !a->conf->log_cb)
                return;
        if (level < KRETRY_LOG_ERR)
                level = KRETRY_LOG_ERR;
        snprintf(facility, sizeof(facility), "rdkafka.%s", fac);
        /* librdkafka masks its sensitive properties in its configuration
         * dump; whatever else may quote a secret is masked here. */
        if (a->secrets.cnt) {
                snprintf(line, sizeof(line), "%s", buf);
                kretry_secrets_scrub(&a->secrets, line, sizeof(line));
                buf = line;
        }
        a->conf->log_cb((kretry_log_level_t)level, facility, buf,
                        a->conf->log_opaque);
}

void kretry_denied_note(kretry_adapter_t *a,
                        kretry_denied_cause_t cause,
                        rd_kafka_resp_err_t err,
                        const char *what) {
        static const char *const grant[KRETRY_DENIED_CAUSES] = {
                "the copy is produced again every 10 s at most, its partition "
                "waits and its offset stays uncommitted until Write on that "
                "topic is granted",
                "offsets stay uncommitted (consumed again by the next owner) "
                "until Read on the group is granted",
                "nothing of it is consumed until Read and Describe on that "
                "topic are granted"};
        atomic_fetch_add_explicit(&a->stats.denied[cause], 1,
                                  memory_order_relaxed);
        int say = kretry_denied_say(a->denied_said, cause, kretry_mono_ms());
        kretry_log(a, say ? KRETRY_LOG_ERR : KRETRY_LOG_DEBUG, "DENIED",
                   "%s: %s: the cluster's ACLs do not allow it; %s (kretry "
                   "topology acls prints what each role needs; said once a "
                   "minute)",
                   what, rd_kafka_err2str(err), grant[cause]);
}
