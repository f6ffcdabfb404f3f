/*
 * A bounds-checked walk of Avro binary against its writer schema, done
 * before avro-c reads a payload: it finds where the record ends (so that
 * trailing bytes can be refused) and rejects, with a precise reason, what
 * avro-c would read past the buffer, allocate absurdly for, or accept
 * silently (a boolean byte of 7, an int that overflows 32 bits, a string
 * that is not UTF-8). No allocation; recursion is bounded.
 */
#ifndef KRETRY_AVRO_CHECK_H
#define KRETRY_AVRO_CHECK_H

#include <avro.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting deeper than this (recursive schemas) is refused. */
#define KRETRY_AVRO_MAX_DEPTH 64
/* Array and map entries in one payload, whatever their encoded size. */
#define KRETRY_AVRO_MAX_ITEMS (1 << 20)

/*
 * Walk one datum of @p schema at the start of @p buf (@p len bytes).
 * @p base is added to every offset in messages (the position of @p buf in
 * the whole message, e.g. 5 after a confluent header).
 * Returns 0 with the datum's encoded size in *@p usedp, or -1 with
 * @p reason filled: "truncated: ...", "wrong type: ...", "malformed: ...".
 */
int kretry_avro_check(avro_schema_t schema,
                      const uint8_t *buf,
                      size_t len,
                      size_t base,
                      size_t *usedp,
                      char *reason,
                      size_t reason_size);

#endif
