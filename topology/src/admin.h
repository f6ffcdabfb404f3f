/*
 * The thin admin layer between a plan and a cluster: a metadata snapshot
 * (Metadata + DescribeConfigs) and the execution of a plan (CreateTopics,
 * CreatePartitions, AlterConfigs). Every call has a short timeout and says
 * what the cluster did not answer: librdkafka's mock cluster, for one, has
 * no admin APIs and would otherwise make each call wait for its full
 * request timeout.
 */
#ifndef KRETRY_TOPO_ADMIN_H
#define KRETRY_TOPO_ADMIN_H

#include "acls.h"
#include "meta.h"
#include "plan.h"
#include "topology.h"

#include <librdkafka/rdkafka.h>

/* A client for admin requests, configured from the file's kafka:
 * properties (prefixed consumer./producer. ones are skipped);
 * @p bootstrap (may be NULL) overrides bootstrap.servers. Returns NULL with
 * @p errstr filled. Free with rd_kafka_destroy(). */
rd_kafka_t *kretry_admin_new(const kretry_topology_file_t *f,
                             const char *bootstrap,
                             char *errstr,
                             size_t errstr_size);

/* Same, with @p xcnt "name=value" properties (-X) set after the file's,
 * before @p bootstrap. */
rd_kafka_t *kretry_admin_new_x(const kretry_topology_file_t *f,
                               const char *bootstrap,
                               const char *const *xprops,
                               size_t xcnt,
                               char *errstr,
                               size_t errstr_size);

/* Create @p acls as ALLOW bindings for @p principal on any host
 * (CreateAcls; Kafka keeps one copy of a binding created twice). @p why
 * (acls->cnt entries) gets, per binding, "" when it was created or the
 * cluster's reason. Returns how many failed. */
int kretry_admin_create_acls(rd_kafka_t *rk,
                             const kretry_acls_t *acls,
                             const char *principal,
                             int timeout_ms,
                             char (*why)[256]);

/* Snapshot the topics @p topos need into @p meta (zeroed by the caller).
 * Returns 0; 1 when the topics are known but their retention is not (a
 * note is in @p errstr); -1 when the metadata could not be read. */
int kretry_admin_snapshot(rd_kafka_t *rk,
                          const kretry_topology_t *topos,
                          size_t cnt,
                          int timeout_ms,
                          kretry_meta_t *meta,
                          char *errstr,
                          size_t errstr_size);

/* Perform every change of @p plan (which must have no conflict), filling
 * each action's done/result: "done", or the broker's own error text.
 * Returns the number of failed actions. */
int kretry_admin_apply(rd_kafka_t *rk, kretry_plan_t *plan, int timeout_ms);

typedef struct {
        const char *name, *value;
} kretry_admin_kv_t;

/* The AlterConfigs request for @p topic. AlterConfigs replaces a topic's
 * whole dynamic configuration (chosen when kretry ran on librdkafka 2.0.2,
 * which has no IncrementalAlterConfigs), so the request carries @p current
 * (the topic's dynamic entries, as DescribeConfigs reports them) with
 * @p changes applied — each key once: Kafka refuses a request that names a
 * key twice (INVALID_REQUEST). A change wins over a current entry of the
 * same name, the first of two equal names wins otherwise. NULL when out of
 * memory; free with rd_kafka_ConfigResource_destroy(). */
rd_kafka_ConfigResource_t *
kretry_admin_alter_request(const char *topic,
                           const kretry_admin_kv_t *current,
                           size_t current_cnt,
                           const kretry_admin_kv_t *changes,
                           size_t change_cnt);

#endif
