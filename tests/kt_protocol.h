/* Which group protocol the suites' consumers join with: header-only, for
 * the test harnesses and for it_worker (which the bench builds too,
 * without them). */
#ifndef KT_PROTOCOL_H
#define KT_PROTOCOL_H

#include <stdlib.h>
#include <string.h>

/* 1 when KRETRY_TEST_GROUP_PROTOCOL=consumer: the consumers join with the
 * consumer group protocol (KIP-848; on real Kafka, scripts/test.sh's
 * second real pass). */
static inline int kt_consumer_protocol(void) {
        const char *p = getenv("KRETRY_TEST_GROUP_PROTOCOL");
        return p && !strcmp(p, "consumer");
}

/* 1 for a consumer property of the classic group protocol only
 * (session.timeout.ms, heartbeat.interval.ms, partition.assignment.strategy,
 * with or without "consumer."): under the consumer protocol the broker sets
 * them (scripts/kafka.sh: sessions of 6 s, heartbeats every 500 ms) and
 * librdkafka refuses them, so the harnesses leave them out. */
static inline int kt_classic_only(const char *name) {
        if (!strncmp(name, "consumer.", 9))
                name += 9;
        return !strcmp(name, "session.timeout.ms") ||
               !strcmp(name, "heartbeat.interval.ms") ||
               !strcmp(name, "partition.assignment.strategy");
}

#endif
