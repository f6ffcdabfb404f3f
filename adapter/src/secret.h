/*
 * Leaf: secret properties and their mask.
 *
 * Which configuration properties hold secrets, and the mask every printer
 * shows instead of their values. The one list: the CLI's error messages,
 * `kretry topology describe`, the topology checks, the DLQ and stats
 * clients' errors and the adapter's logs all ask here. Pure functions, no
 * I/O; safe from any thread.
 */
#ifndef KRETRY_SECRET_H
#define KRETRY_SECRET_H

#include <stddef.h>

/* What is printed in place of a secret value. */
#define KRETRY_SECRET_MASK "[redacted]"

/* 1 when @p name (a librdkafka property, with or without a "consumer." or
 * "producer." prefix) holds a secret: a password, a private key or its
 * passphrase, an OAUTHBEARER client secret or configuration. */
int kretry_secret_property(const char *name);

/* @p value, or the mask when @p name is a secret property. */
const char *kretry_secret_shown(const char *name, const char *value);

/* @p url into @p dest with the password of its user information, if any
 * ("https://user:PASSWORD@host/" -> "https://user:[redacted]@host/"), so
 * that a URL can be printed. Returns @p dest. */
const char *kretry_secret_url(const char *url, char *dest, size_t dest_size);

/* Replace every occurrence of @p secret in the NUL-terminated @p text (a
 * buffer of @p size bytes) with the mask, cutting what no longer fits.
 * An empty or NULL @p secret changes nothing. Returns the number of
 * occurrences replaced. */
int kretry_secret_scrub(char *text, size_t size, const char *secret);

/* The secret values of a configuration, to scrub from text that may quote
 * them (librdkafka's log lines and error strings). */
typedef struct {
        char **values;
        size_t cnt;
} kretry_secrets_t;

/* Add @p value (copied) when @p name is a secret property and @p value is
 * not empty; a value already held is not added twice. Returns -1 out of
 * memory, else 0. */
int kretry_secrets_add(kretry_secrets_t *s,
                       const char *name,
                       const char *value);

/* Scrub every held value from @p text (see kretry_secret_scrub()). */
void kretry_secrets_scrub(const kretry_secrets_t *s, char *text, size_t size);

void kretry_secrets_clear(kretry_secrets_t *s);

/* The secret property names, NULL-terminated, for those who read a
 * configuration object property by property (the adapter's clients). */
extern const char *const kretry_secret_names[];

#endif
