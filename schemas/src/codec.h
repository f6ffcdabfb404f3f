/*
 * The value codec: Avro payloads, raw binary or the Confluent wire format
 * (magic byte 0, a 4-byte big-endian schema id, Avro binary), decoded into
 * one avro-c value per codec. Plain data: no Kafka, no network (schema ids
 * map to local .avsc files), so it is unit-testable on byte buffers.
 *
 * Every payload is first checked against its writer schema by a bounds-
 * checked walk (the walk also yields the precise reason for a rejection:
 * the field, the offset, what was expected); only a payload that passes is
 * handed to avro-c's reader. avro-c's reader trusts length prefixes (a
 * string claiming 2^60 bytes becomes a malloc of that size), so this order
 * is what makes hostile input safe.
 *
 * Threads: a codec is used by one thread at a time (the one driving the
 * adapter). Not reentrant: a decode invalidates the previous value.
 */
#ifndef KRETRY_CODEC_H
#define KRETRY_CODEC_H

#include <avro.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kretry_codec_s kretry_codec_t;

/* Largest schema id map; ids themselves are any non-negative int32. */
#define KRETRY_CODEC_MAX_IDS 256

/*
 * Create a codec.
 *
 * @param format "avro" ("bytes" has no codec: NULL with errstr saying so).
 * @param schema_path the reader schema (.avsc): the record the handler sees.
 * @param wire "raw" (Avro binary of @p schema_path) or "confluent".
 * @param ids NULL or "" (confluent: every id is decoded with @p schema_path
 *        as its writer schema), or "ID=PATH,ID=PATH" (confluent only): the
 *        writer schema of each id; other ids are refused. A writer schema
 *        that differs from the reader schema is resolved to it (avro-c's
 *        resolved writer: added fields with defaults, promotions, reordered
 *        fields); an unresolvable pair fails here, not per message.
 * @returns the codec (free with kretry_codec_destroy()), or NULL with
 *          @p errstr filled.
 */
kretry_codec_t *kretry_codec_new(const char *format,
                                 const char *schema_path,
                                 const char *wire,
                                 const char *ids,
                                 char *errstr,
                                 size_t errstr_size);

void kretry_codec_destroy(kretry_codec_t *codec);

/*
 * Decode one payload (@p buf may be NULL when @p len is 0: a null value).
 *
 * @param valuep receives the decoded record, an instance of the reader
 *        schema; owned by the codec and valid until the next decode or
 *        kretry_codec_destroy().
 * @returns 0, or -1 with @p reason filled ("confluent wire: magic byte 0x05,
 *          expected 0x00", "schema id 9 is not mapped", "truncated: ...",
 *          "3 trailing bytes after the record", ...).
 */
int kretry_codec_decode(kretry_codec_t *codec,
                        const void *buf,
                        size_t len,
                        avro_value_t **valuep,
                        char *reason,
                        size_t reason_size);

/* A record of the reader schema that the caller owns (free it with
 * avro_value_decref()), for a decoded record that must outlive the next
 * decode: handlers running at once each read their own. Returns 0, or -1
 * when memory is short. */
int kretry_codec_value_new(kretry_codec_t *codec, avro_value_t *value);

/* The schema id of the last successful confluent decode, or -1. */
int32_t kretry_codec_last_id(const kretry_codec_t *codec);

/* The reader schema (borrowed for the codec's lifetime). */
avro_schema_t kretry_codec_schema(const kretry_codec_t *codec);

/*
 * Check at start-up that the reader schema has a top-level field @p field
 * whose type is int, long, or a union of null with one of them.
 * Returns 0, or -1 with @p errstr filled.
 */
int kretry_codec_check_int_field(const kretry_codec_t *codec,
                                 const char *field,
                                 char *errstr,
                                 size_t errstr_size);

/*
 * Read top-level field @p field of a decoded record as a 64-bit integer
 * (an int, a long, or a [null, int|long] union holding one).
 * Returns 0; -1 when the record has no such field; -2 when the field is
 * not an int or long; -3 when it is null.
 */
int kretry_codec_field_int64(const avro_value_t *value,
                             const char *field,
                             int64_t *out);

/* The body of kretry_msg_value_avro() (public, declared without avro-c's
 * types): the record the last decode of the message's codec returned, or
 * NULL when the message was not decoded (value.format bytes). */
const void *kretry_codec_public_value(const avro_value_t *value);

/* Encode @p value as Avro binary into @p dest (raw; a confluent frame when
 * @p id >= 0). Returns the bytes written, or -1 when it does not fit.
 * For tests and tools (the demo's producer). */
int64_t kretry_codec_encode(avro_value_t *value,
                            int32_t id,
                            void *dest,
                            size_t dest_size);

#endif
