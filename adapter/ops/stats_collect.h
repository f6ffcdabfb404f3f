/*
 * kretry stats' figures of one topology in one call: what `kretry stats`
 * prints and `kretry ui` serves. Opens its own clients from the topology
 * file, takes two snapshots @p window_ms apart (one with 0), reads the
 * oldest waiting messages and evaluates the topology's alerts: the report
 * is complete when it returns. Blocks the calling thread for the window
 * plus the cluster's answers (each bounded by @p timeout_ms).
 */
#ifndef KRETRY_CLI_STATS_COLLECT_H
#define KRETRY_CLI_STATS_COLLECT_H

#include "stats_calc.h"
#include "topology.h"

#include <stddef.h>

/*
 * The report of topology @p t of file @p f; @p bootstrap (may be NULL)
 * overrides the file's bootstrap.servers; @p verbose passes librdkafka's
 * log lines to stderr. Returns the report (free with stats_report_free();
 * its names borrow from @p t), or NULL with @p errstr filled when the
 * cluster did not answer at all or memory ran out.
 */
stats_report_t *stats_collect(const kretry_topology_file_t *f,
                              const kretry_topology_t *t,
                              const char *bootstrap,
                              int64_t window_ms,
                              int timeout_ms,
                              int verbose,
                              char *errstr,
                              size_t errstr_size);

void stats_report_free(stats_report_t *r);

#endif
