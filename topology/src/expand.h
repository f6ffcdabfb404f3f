/*
 * ${VAR} and ${VAR:-default} in topology values, read from the environment
 * when the file is loaded. "$$" stands for one "$". Pure apart from getenv().
 */
#ifndef KRETRY_TOPO_EXPAND_H
#define KRETRY_TOPO_EXPAND_H

#include <stddef.h>

/* Expand @p s. Returns a new string (free with free()), or NULL with the
 * reason in @p errstr (an undefined variable is named; an unterminated
 * reference or out of memory is said). */
char *kretry_expand_env(const char *s, char *errstr, size_t errstr_size);

#endif
