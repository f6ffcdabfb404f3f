#include "topo_acls.h"

#include <string.h>

/* The file's transactional.id for the producer, or NULL. */
static const char *transactional_id(const kretry_topology_file_t *f) {
        const char *id = NULL;
        for (size_t i = 0; i < kretry_topology_prop_count(f); i++) {
                const kretry_topo_prop_t *p = kretry_topology_prop_at(f, i);
                if (!strcmp(p->name, "transactional.id") ||
                    !strcmp(p->name, "producer.transactional.id"))
                        id = p->value;
        }
        return id;
}

static int one(const kretry_topology_file_t *f,
               const kretry_topology_t *t,
               kretry_acl_role_t role,
               kretry_acls_t *acls) {
        char changelog[256];
        int versions = t->versioning != KRETRY_VERSIONING_NONE &&
                       !kretry_topology_versions_topic(t, changelog,
                                                       sizeof(changelog));
        char parked[256];
        int parks = kretry_topology_parks(t) &&
                    !kretry_topology_parked_topic(t, parked, sizeof(parked));
        kretry_acl_chain_t c = {t->source,
                                t->tier_topics,
                                t->tier_cnt,
                                t->dlq,
                                versions ? changelog : NULL,
                                t->group,
                                t->transactional,
                                transactional_id(f),
                                parks ? parked : NULL};
        return kretry_acls_add(acls, &c, role);
}

int kretry_topology_acls(const kretry_topology_file_t *f,
                         const char *name,
                         kretry_acl_role_t role,
                         kretry_acls_t *acls) {
        int found = 0;
        for (size_t i = 0; i < kretry_topology_count(f); i++) {
                const kretry_topology_t *t = kretry_topology_at(f, i);
                if (name && strcmp(name, t->name))
                        continue;
                found = 1;
                if (one(f, t, role, acls))
                        return -1;
        }
        return found ? 0 : -2;
}
