/*
 * Leaf: refusals for want of an ACL.
 *
 * Refusals for want of an ACL (denied.h): which errors they are, and when
 * one is said again.
 */
#include "denied.h"

const char *kretry_denied_name(kretry_denied_cause_t cause) {
        static const char *const names[KRETRY_DENIED_CAUSES] = {
                "copy", "commit", "read"};
        return cause < KRETRY_DENIED_CAUSES ? names[cause] : "?";
}

int kretry_denied_err(rd_kafka_resp_err_t err) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                return 1;
        default:
                return 0;
        }
}

int kretry_denied_say(int64_t last_ms[KRETRY_DENIED_CAUSES],
                      kretry_denied_cause_t cause,
                      int64_t now_ms) {
        if (last_ms[cause] && now_ms - last_ms[cause] < KRETRY_DENIED_LOG_MS)
                return 0;
        last_ms[cause] = now_ms ? now_ms : 1; /* 0 means never */
        return 1;
}
