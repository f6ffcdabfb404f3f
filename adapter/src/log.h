/*
 * Service: the log (log.c). kretry_log from the polling thread and the
 * workers; kretry_rdkafka_log_cb from librdkafka's threads too; refusals
 * for want of an ACL, counted and said once a minute (kretry_denied_note).
 */
#ifndef KRETRY_LOG_H
#define KRETRY_LOG_H

#include "denied.h"
#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>

void kretry_log(kretry_adapter_t *a,
                kretry_log_level_t level,
                const char *fac,
                const char *fmt,
                ...)
#ifdef __GNUC__
        __attribute__((format(printf, 4, 5)))
#endif
        ;
/* librdkafka's log lines to the log callback; the client's opaque is the
 * adapter. */
void kretry_rdkafka_log_cb(const rd_kafka_t *rk,
                           int level,
                           const char *fac,
                           const char *buf);
/* log.c: a refusal of @p cause for want of an ACL, counted; said as an
 * ERROR once per cause and minute (denied.h), else at DEBUG: "@p what:
 * @p err; ..." with what an operator must grant. */
void kretry_denied_note(kretry_adapter_t *a,
                        kretry_denied_cause_t cause,
                        rd_kafka_resp_err_t err,
                        const char *what);

#endif
