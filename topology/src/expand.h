/*
 * ${VAR} and ${VAR:-default} in topology values, read from the environment
 * when the file is loaded; ${file:/ABSOLUTE/PATH}, the contents of a file
 * (a mounted secret) without its trailing newline. "$$" stands for one "$".
 * Pure apart from getenv() and reading the named files.
 */
#ifndef KRETRY_TOPO_EXPAND_H
#define KRETRY_TOPO_EXPAND_H

#include <stddef.h>

/* The largest file ${file:PATH} reads (a PEM key chain fits). */
#define KRETRY_EXPAND_FILE_MAX 65536

/* Expand @p s. Returns a new string (free with free()), or NULL with the
 * reason in @p errstr (an undefined variable, or a file that cannot be read
 * and why, is named; an unterminated reference or out of memory is said;
 * a file's contents are never quoted). */
char *kretry_expand_env(const char *s, char *errstr, size_t errstr_size);

#endif
