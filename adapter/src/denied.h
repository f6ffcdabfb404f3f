/*
 * Leaf: refusals for want of an ACL.
 *
 * Refusals for want of an ACL while running: a copy the cluster will not
 * take (Write on a tier, the DLQ or the changelog), a commit it will not
 * record (Read on the group), a topic it will not let the consumer read.
 * Waiting never heals them; an operator must grant the ACL. They are
 * counted by cause, said as an ERROR once per cause and minute (not a
 * WARNING per try), and held as a gauge that /readyz reads: the copies
 * refused now, plus one for each of commit and read while the last try of
 * that cause was refused.
 */
#ifndef KRETRY_DENIED_H
#define KRETRY_DENIED_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

typedef enum {
        KRETRY_DENIED_COPY,   /* produce to a tier, the DLQ, the changelog */
        KRETRY_DENIED_COMMIT, /* offset commit, the group or a topic */
        KRETRY_DENIED_READ,   /* fetch or metadata of a consumed topic */
        KRETRY_DENIED_CAUSES
} kretry_denied_cause_t;

/* "copy", "commit", "read": the cause's label in stats and /metrics. */
const char *kretry_denied_name(kretry_denied_cause_t cause);

/* Is @p err a refusal for want of an ACL (topic, group, cluster or
 * transactional id authorization failed)? */
int kretry_denied_err(rd_kafka_resp_err_t err);

/* Rate limit of the ERROR line: once per cause and this long. */
#define KRETRY_DENIED_LOG_MS 60000

/* Should a refusal of @p cause seen at @p now_ms (monotonic) be said as an
 * ERROR? Yes at the first and once KRETRY_DENIED_LOG_MS has passed since
 * the last one said; @p last_ms[cause] is updated then. */
int kretry_denied_say(int64_t last_ms[KRETRY_DENIED_CAUSES],
                      kretry_denied_cause_t cause,
                      int64_t now_ms);

#endif
