/*
 * Phase: intake (intake.c): what the poll loop takes from the queues and
 * where each message goes; held messages, buffers and pause state.
 * Polling thread.
 */
#ifndef KRETRY_INTAKE_H
#define KRETRY_INTAKE_H

#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>

/* intake.c: what the poll loop takes from the queues, and where it goes.
 * Each returns how many messages it handed on: held messages due at
 * @p now (wall clock) and copies whose source caught up; messages kept
 * behind a held one whose turn came while they were stopped; one batch of
 * consumed messages. */
int kretry_intake_due(kretry_adapter_t *a, int64_t now);
int kretry_intake_stalled(kretry_adapter_t *a);
int kretry_intake_consume(kretry_adapter_t *a);

#endif
