/*
 * The ACL bindings a role needs on the chains of a topology file (acls.c
 * on each topology's names): what `kretry topology acls` prints and
 * creates. Plain data.
 */
#ifndef KRETRY_TOPO_ACLS_H
#define KRETRY_TOPO_ACLS_H

#include "acls.h"
#include "topology.h"

/* What @p role needs on the topology named @p name of @p f (NULL: on every
 * topology of the file), each binding once, into @p acls (zeroed by the
 * caller; free with kretry_acls_clear()). Under routing=transactional the
 * transactional id is the file's kafka: transactional.id (or
 * producer.transactional.id) when set. 0; -1 out of memory; -2 when no
 * topology is named @p name. */
int kretry_topology_acls(const kretry_topology_file_t *f,
                         const char *name,
                         kretry_acl_role_t role,
                         kretry_acls_t *acls);

#endif
