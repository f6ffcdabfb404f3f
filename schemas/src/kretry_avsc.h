/*
 * kretry's own Avro schemas, compiled in from the .avsc files of
 * schemas/kretry/ by cmake/embed_avsc.cmake: NUL-terminated JSON text.
 */
#ifndef KRETRY_AVSC_H
#define KRETRY_AVSC_H

/* schemas/kretry/dlq_context.avsc: one record of kretry dlq export. */
extern const char kretry_avsc_dlq_context[];
/* schemas/kretry/version_record.avsc: a version-store changelog value. */
extern const char kretry_avsc_version_record[];

#endif
