/*
 * Phase: the topology check before any client exists (startup_check.c).
 */
#ifndef KRETRY_STARTUP_CHECK_H
#define KRETRY_STARTUP_CHECK_H

#include "kretry/kretry.h"

#include <stddef.h>

/* startup_check.c: the cluster's topics fit the topology (every tier, the
 * DLQ and the changelog exist with the source's partitions, the changelog
 * is compacted), read without creating any; by topology.check. Before the
 * clients exist. KRETRY_ERR_TOPOLOGY with every problem in @p errstr. */
kretry_err_t
kretry_startup_check(kretry_adapter_t *a, char *errstr, size_t errstr_size);

/* startup_check.c: "missing ACL: Write on topic orders.dlq (why):
 * `kretry topology acls FILE --principal User:NAME --apply` grants it"
 * for binding @p b (an acls.h kretry_acl_t) into @p dest. */
struct kretry_acl_s;
void kretry_acl_hint(const kretry_adapter_t *a,
                     const struct kretry_acl_s *b,
                     char *dest,
                     size_t size);

#endif
