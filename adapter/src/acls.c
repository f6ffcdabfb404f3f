/* Leaf: the ACL bindings a retry chain needs. */
#include "acls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The group id of the DLQ readers of dlq inspect, dlq export and the
 * page's browser (adapter/ops/dlq_reader.c), and the suffix of replay's
 * progress group (adapter/ops/dlq_replay.c). */
#define DLQ_READER_GROUP "kretry-dlq-reader"
#define REPLAY_GROUP_SUFFIX ".kretry-replay"

int kretry_acl_role_parse(const char *s, kretry_acl_role_t *role) {
        static const struct {
                const char *name;
                kretry_acl_role_t role;
        } roles[] = {{"run", KRETRY_ACL_ROLE_RUN},
                     {"operator", KRETRY_ACL_ROLE_OPERATOR},
                     {"ui", KRETRY_ACL_ROLE_UI},
                     {"ui-replay", KRETRY_ACL_ROLE_UI_REPLAY}};
        for (size_t i = 0; s && i < sizeof(roles) / sizeof(roles[0]); i++)
                if (!strcmp(s, roles[i].name)) {
                        *role = roles[i].role;
                        return 0;
                }
        return -1;
}

static int add(kretry_acls_t *a,
               rd_kafka_ResourceType_t restype,
               rd_kafka_ResourcePatternType_t pattern,
               const char *name,
               rd_kafka_AclOperation_t op,
               const char *why) {
        for (size_t i = 0; i < a->cnt; i++) {
                const kretry_acl_t *b = &a->items[i];
                if (b->restype == restype && b->pattern == pattern &&
                    b->op == op && !strcmp(b->name, name))
                        return 0;
        }
        if (a->cnt == a->size) {
                size_t size     = a->size ? a->size * 2 : 16;
                kretry_acl_t *n = realloc(a->items, size * sizeof(*n));
                if (!n)
                        return -1;
                a->items = n;
                a->size  = size;
        }
        kretry_acl_t *b = &a->items[a->cnt++];
        b->restype      = restype;
        b->pattern      = pattern;
        b->op           = op;
        b->why          = why;
        snprintf(b->name, sizeof(b->name), "%s", name);
        return 0;
}

static int topic(kretry_acls_t *a,
                 const char *name,
                 rd_kafka_AclOperation_t op,
                 const char *why) {
        return add(a, RD_KAFKA_RESOURCE_TOPIC,
                   RD_KAFKA_RESOURCE_PATTERN_LITERAL, name, op, why);
}

static int group(kretry_acls_t *a,
                 const char *name,
                 rd_kafka_AclOperation_t op,
                 const char *why) {
        return add(a, RD_KAFKA_RESOURCE_GROUP,
                   RD_KAFKA_RESOURCE_PATTERN_LITERAL, name, op, why);
}

/* A compacted topic kretry keeps state in (the version changelog, the
 * parked keys): read back on assignment (@p restores), written as the
 * state changes (@p records), its cleanup.policy read at start. */
static int store(kretry_acls_t *a,
                 const char *name,
                 const char *restores,
                 const char *records) {
        int rc = topic(a, name, RD_KAFKA_ACL_OPERATION_READ, restores);
        rc |= topic(a, name, RD_KAFKA_ACL_OPERATION_WRITE, records);
        rc |= topic(a, name, RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS,
                    "the startup check reads its cleanup.policy");
        return rc;
}

/* What the engine does: consume, copy, restore, commit; the startup check
 * reads every topic's configuration. */
static int run_role(kretry_acls_t *a, const kretry_acl_chain_t *c) {
        int rc = topic(a, c->source, RD_KAFKA_ACL_OPERATION_READ,
                       "kretry consumes the source");
        rc |= topic(a, c->source, RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS,
                    "the startup check reads its max.message.bytes");
        for (int i = 0; i < c->tier_cnt; i++) {
                rc |= topic(a, c->tiers[i], RD_KAFKA_ACL_OPERATION_READ,
                            "kretry consumes the retries");
                rc |= topic(a, c->tiers[i], RD_KAFKA_ACL_OPERATION_WRITE,
                            "kretry copies retried messages to it");
                rc |= topic(a, c->tiers[i],
                            RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS,
                            "the startup check reads its configuration");
        }
        rc |= topic(a, c->dlq, RD_KAFKA_ACL_OPERATION_WRITE,
                    "kretry copies dead letters to it");
        rc |= topic(a, c->dlq, RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS,
                    "the startup check reads its configuration");
        if (c->changelog)
                rc |= store(a, c->changelog,
                            "kretry restores the versions on assignment",
                            "kretry records each version handled");
        if (c->parked) {
                rc |= store(a, c->parked,
                            "kretry restores the parked keys on assignment",
                            "kretry records each key it parks or releases");
                rc |= topic(a, c->dlq, RD_KAFKA_ACL_OPERATION_READ,
                            "the first restore reads the parks an older "
                            "kretry left in the DLQ, once");
        }
        rc |= group(a, c->group, RD_KAFKA_ACL_OPERATION_READ,
                    "kretry joins the group, commits and reads its offsets");
        if (c->transactional) {
                char prefix[256];
                int own = c->transactional_id && *c->transactional_id;
                snprintf(prefix, sizeof(prefix), "kretry.%s.", c->group);
                rc |= add(a, RD_KAFKA_RESOURCE_TRANSACTIONAL_ID,
                          own ? RD_KAFKA_RESOURCE_PATTERN_LITERAL
                              : RD_KAFKA_RESOURCE_PATTERN_PREFIXED,
                          own ? c->transactional_id : prefix,
                          RD_KAFKA_ACL_OPERATION_WRITE,
                          "kretry commits its copies and offsets in "
                          "transactions");
        }
        return rc ? -1 : 0;
}

/* What stats, dlq inspect and dlq export read (the page's figures and
 * browser too). */
static int read_role(kretry_acls_t *a, const kretry_acl_chain_t *c) {
        char replay[300];
        snprintf(replay, sizeof(replay), "%s" REPLAY_GROUP_SUFFIX, c->group);
        int rc = topic(a, c->source, RD_KAFKA_ACL_OPERATION_READ,
                       "stats reads its oldest waiting message");
        for (int i = 0; i < c->tier_cnt; i++)
                rc |= topic(a, c->tiers[i], RD_KAFKA_ACL_OPERATION_READ,
                            "stats reads its oldest waiting message");
        rc |= topic(a, c->dlq, RD_KAFKA_ACL_OPERATION_READ,
                    "dlq inspect, export and replay read it");
        rc |= group(a, c->group, RD_KAFKA_ACL_OPERATION_DESCRIBE,
                    "stats reads the group's committed offsets");
        rc |= group(a, DLQ_READER_GROUP, RD_KAFKA_ACL_OPERATION_DESCRIBE,
                    "the DLQ readers look up its coordinator (they never "
                    "join or commit)");
        rc |= group(a, replay, RD_KAFKA_ACL_OPERATION_DESCRIBE,
                    "stats reads the replay's progress");
        return rc ? -1 : 0;
}

static int replay_role(kretry_acls_t *a, const kretry_acl_chain_t *c) {
        char replay[300];
        snprintf(replay, sizeof(replay), "%s" REPLAY_GROUP_SUFFIX, c->group);
        int rc = topic(a, c->source, RD_KAFKA_ACL_OPERATION_WRITE,
                       "dlq replay republishes to the source");
        rc |= group(a, replay, RD_KAFKA_ACL_OPERATION_READ,
                    "dlq replay commits its progress");
        return rc ? -1 : 0;
}

/* Whether @p acls holds a Read or Write binding on @p b's resource, which
 * implies @p b when it is a Describe. */
static int implied(const kretry_acls_t *acls, const kretry_acl_t *b) {
        for (size_t i = 0;
             b->op == RD_KAFKA_ACL_OPERATION_DESCRIBE && i < acls->cnt; i++) {
                const kretry_acl_t *o = &acls->items[i];
                if ((o->op == RD_KAFKA_ACL_OPERATION_READ ||
                     o->op == RD_KAFKA_ACL_OPERATION_WRITE) &&
                    o->restype == b->restype && o->pattern == b->pattern &&
                    !strcmp(o->name, b->name))
                        return 1;
        }
        return 0;
}

/* Least privilege lists no binding another implies. */
static void drop_implied(kretry_acls_t *acls) {
        size_t n = 0;
        for (size_t i = 0; i < acls->cnt; i++)
                if (!implied(acls, &acls->items[i]))
                        acls->items[n++] = acls->items[i];
        acls->cnt = n;
}

int kretry_acls_add(kretry_acls_t *acls,
                    const kretry_acl_chain_t *c,
                    kretry_acl_role_t role) {
        int rc = -1;
        switch (role) {
        case KRETRY_ACL_ROLE_RUN:
                rc = run_role(acls, c);
                break;
        case KRETRY_ACL_ROLE_UI:
                rc = read_role(acls, c);
                break;
        case KRETRY_ACL_ROLE_OPERATOR:
        case KRETRY_ACL_ROLE_UI_REPLAY:
                rc = read_role(acls, c) || replay_role(acls, c) ? -1 : 0;
                break;
        }
        drop_implied(acls);
        return rc;
}

void kretry_acls_clear(kretry_acls_t *acls) {
        free(acls->items);
        *acls = (kretry_acls_t){0};
}

const char *kretry_acl_op_name(rd_kafka_AclOperation_t op) {
        switch (op) {
        case RD_KAFKA_ACL_OPERATION_READ:
                return "Read";
        case RD_KAFKA_ACL_OPERATION_WRITE:
                return "Write";
        case RD_KAFKA_ACL_OPERATION_DESCRIBE:
                return "Describe";
        case RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS:
                return "DescribeConfigs";
        case RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE:
                return "IdempotentWrite";
        case RD_KAFKA_ACL_OPERATION_ALL:
                return "All";
        default:
                return rd_kafka_AclOperation_name(op);
        }
}

const char *kretry_acl_restype_name(rd_kafka_ResourceType_t restype) {
        switch (restype) {
        case RD_KAFKA_RESOURCE_TOPIC:
                return "topic";
        case RD_KAFKA_RESOURCE_GROUP:
                return "group";
        case RD_KAFKA_RESOURCE_TRANSACTIONAL_ID:
                return "transactional-id";
        default:
                return "cluster";
        }
}

void kretry_acl_describe(const kretry_acl_t *b, char *dest, size_t size) {
        snprintf(dest, size, "%s on %s %s%s", kretry_acl_op_name(b->op),
                 kretry_acl_restype_name(b->restype), b->name,
                 b->pattern == RD_KAFKA_RESOURCE_PATTERN_PREFIXED
                         ? " (prefixed)"
                         : "");
}

void kretry_acl_command(const kretry_acl_t *b,
                        const char *principal,
                        const char *bootstrap,
                        char *dest,
                        size_t size) {
        snprintf(dest, size,
                 "kafka-acls.sh --bootstrap-server %s --command-config "
                 "admin.properties --add --allow-principal %s --operation %s "
                 "--%s %s%s",
                 bootstrap && *bootstrap ? bootstrap : "HOST:PORT", principal,
                 kretry_acl_op_name(b->op), kretry_acl_restype_name(b->restype),
                 b->name,
                 b->pattern == RD_KAFKA_RESOURCE_PATTERN_PREFIXED
                         ? " --resource-pattern-type prefixed"
                         : "");
}

int kretry_acl_allowed(const rd_kafka_AclOperation_t *ops,
                       size_t cnt,
                       rd_kafka_AclOperation_t op) {
        for (size_t i = 0; i < cnt; i++) {
                rd_kafka_AclOperation_t o = ops[i];
                if (o == op || o == RD_KAFKA_ACL_OPERATION_ALL)
                        return 1;
                if (op == RD_KAFKA_ACL_OPERATION_DESCRIBE &&
                    (o == RD_KAFKA_ACL_OPERATION_READ ||
                     o == RD_KAFKA_ACL_OPERATION_WRITE ||
                     o == RD_KAFKA_ACL_OPERATION_DELETE ||
                     o == RD_KAFKA_ACL_OPERATION_ALTER))
                        return 1;
                if (op == RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS &&
                    o == RD_KAFKA_ACL_OPERATION_ALTER_CONFIGS)
                        return 1;
        }
        return 0;
}

static const kretry_authz_t *
find(const kretry_authz_t *said, size_t cnt, const kretry_acl_t *b) {
        for (size_t i = 0; i < cnt; i++)
                if (said[i].restype == b->restype && said[i].name &&
                    !strcmp(said[i].name, b->name))
                        return &said[i];
        return NULL;
}

size_t kretry_acls_missing(const kretry_acls_t *need,
                           const kretry_authz_t *said,
                           size_t said_cnt,
                           size_t *missing) {
        size_t n = 0;
        for (size_t i = 0; i < need->cnt; i++) {
                const kretry_acl_t *b = &need->items[i];
                if (b->pattern != RD_KAFKA_RESOURCE_PATTERN_LITERAL)
                        continue;
                const kretry_authz_t *s = find(said, said_cnt, b);
                if (!s || s->state == KRETRY_AUTHZ_UNKNOWN)
                        continue;
                /* Denied: not even Describe, which Read and Write imply
                 * (DescribeConfigs does not: it stays unknown). */
                if (s->state == KRETRY_AUTHZ_DENIED
                            ? b->op != RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS
                            : !kretry_acl_allowed(s->ops, s->ops_cnt, b->op))
                        missing[n++] = i;
        }
        return n;
}
