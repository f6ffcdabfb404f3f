#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define PATH_MAX_LEN 512

typedef struct {
        yaml_parser_t parser;
        yaml_event_t ev;
        int have_ev;
        int fatal; /* a syntax error: the event stream cannot go on */
        kretry_yaml_map_t *map;
        kretry_diags_t *d;
} walk_t;

static void walk_node(walk_t *w,
                      const cyaml_schema_value_t *schema,
                      const char *path,
                      const char *label);

#define LINE(m) ((int)(m).line + 1)
#define COL(m) ((int)(m).column + 1)

#define err_at(w, m, ...)                                                      \
        kretry_diag_add((w)->d, KRETRY_DIAG_ERROR, LINE(m), COL(m), __VA_ARGS__)

static int next(walk_t *w) {
        if (w->fatal)
                return -1;
        if (w->have_ev)
                yaml_event_delete(&w->ev);
        w->have_ev = 0;
        if (!yaml_parser_parse(&w->parser, &w->ev)) {
                const char *ctx = w->parser.context;
                kretry_diag_add(
                        w->d, KRETRY_DIAG_ERROR, LINE(w->parser.problem_mark),
                        COL(w->parser.problem_mark),
                        "YAML syntax error: %s%s%s",
                        w->parser.problem ? w->parser.problem : "invalid YAML",
                        ctx ? " " : "", ctx ? ctx : "");
                w->fatal = 1;
                return -1;
        }
        w->have_ev = 1;
        return 0;
}

static yaml_event_type_t cur(const walk_t *w) {
        return w->have_ev ? w->ev.type : YAML_NO_EVENT;
}

static int loc_add(walk_t *w, const char *path, yaml_mark_t m) {
        kretry_yaml_map_t *map = w->map;
        if (map->loc_cnt == map->loc_size) {
                size_t size = map->loc_size ? map->loc_size * 2 : 64;
                void *p     = realloc(map->locs, size * sizeof(*map->locs));
                if (!p)
                        return -1;
                map->locs     = p;
                map->loc_size = size;
        }
        char *dup = strdup(path);
        if (!dup)
                return -1;
        map->locs[map->loc_cnt++] = (kretry_yaml_loc_t){dup, LINE(m), COL(m)};
        return 0;
}

static int kv_add(walk_t *w,
                  const char *mapping,
                  const char *key,
                  const char *value,
                  yaml_mark_t m) {
        kretry_yaml_map_t *map = w->map;
        if (map->kv_cnt == map->kv_size) {
                size_t size = map->kv_size ? map->kv_size * 2 : 16;
                void *p     = realloc(map->kvs, size * sizeof(*map->kvs));
                if (!p)
                        return -1;
                map->kvs     = p;
                map->kv_size = size;
        }
        kretry_yaml_kv_t kv = {strdup(mapping), strdup(key), strdup(value),
                               LINE(m), COL(m)};
        if (!kv.map || !kv.key || !kv.value) {
                free(kv.map);
                free(kv.key);
                free(kv.value);
                return -1;
        }
        map->kvs[map->kv_cnt++] = kv;
        return 0;
}

/* Skip the node whose first event is current; leaves its last event
 * current. */
static void skip_node(walk_t *w) {
        int depth = 0;
        do {
                switch (cur(w)) {
                case YAML_MAPPING_START_EVENT:
                case YAML_SEQUENCE_START_EVENT:
                        depth++;
                        break;
                case YAML_MAPPING_END_EVENT:
                case YAML_SEQUENCE_END_EVENT:
                        depth--;
                        break;
                default:
                        break;
                }
        } while (depth > 0 && next(w) == 0);
}

static const char *node_kind(const walk_t *w) {
        switch (cur(w)) {
        case YAML_MAPPING_START_EVENT:
                return "a mapping";
        case YAML_SEQUENCE_START_EVENT:
                return "a sequence";
        case YAML_SCALAR_EVENT:
                return w->ev.data.scalar.length ? "a single value" : "nothing";
        default:
                return "an alias";
        }
}

static void type_error(walk_t *w, const char *label, const char *expected) {
        err_at(w, w->ev.start_mark, "%s: expected %s, got %s", label, expected,
               node_kind(w));
        skip_node(w);
}

static const cyaml_schema_field_t *
field_find(const cyaml_schema_value_t *s, const char *key, size_t *idxp) {
        const cyaml_schema_field_t *f = s->mapping.fields;
        for (size_t i = 0; f[i].key; i++) {
                if (!strcmp(f[i].key, key)) {
                        *idxp = i;
                        return &f[i];
                }
        }
        return NULL;
}

static void field_list(const cyaml_schema_value_t *s, char *dest, size_t size) {
        size_t len = 0;
        dest[0]    = '\0';
        for (const cyaml_schema_field_t *f = s->mapping.fields;
             f->key && len < size; f++)
                len += (size_t)snprintf(dest + len, size - len, "%s%s",
                                        len ? ", " : "", f->key);
}

static void unknown_key(walk_t *w,
                        const cyaml_schema_value_t *s,
                        const char *path,
                        const char *key) {
        char allowed[512];
        field_list(s, allowed, sizeof(allowed));
        err_at(w, w->ev.start_mark, "unknown key \"%s\" %s%s (allowed: %s)",
               key, *path ? "in " : "at the top level", path, allowed);
}

static void missing_keys(walk_t *w,
                         const cyaml_schema_value_t *s,
                         const char *path,
                         const unsigned char *seen,
                         yaml_mark_t m) {
        const cyaml_schema_field_t *f = s->mapping.fields;
        for (size_t i = 0; f[i].key; i++) {
                if (seen[i] || (f[i].value.flags & CYAML_FLAG_OPTIONAL))
                        continue;
                err_at(w, m, "%s%smissing required key \"%s\"", path,
                       *path ? ": " : "", f[i].key);
        }
}

static void
walk_mapping(walk_t *w, const cyaml_schema_value_t *s, const char *path) {
        unsigned char seen[64] = {0};
        yaml_mark_t start      = w->ev.start_mark;
        while (next(w) == 0 && cur(w) != YAML_MAPPING_END_EVENT) {
                char key[128], child[PATH_MAX_LEN];
                size_t idx = 0;
                if (cur(w) != YAML_SCALAR_EVENT) {
                        err_at(w, w->ev.start_mark,
                               "%s%skeys must be plain names", path,
                               *path ? ": " : "");
                        skip_node(w);
                        if (next(w) == 0)
                                skip_node(w);
                        continue;
                }
                snprintf(key, sizeof(key), "%s",
                         (const char *)w->ev.data.scalar.value);
                const cyaml_schema_field_t *f = field_find(s, key, &idx);
                if (!f)
                        unknown_key(w, s, path, key);
                else if (seen[idx])
                        err_at(w, w->ev.start_mark, "duplicate key \"%s\"%s%s",
                               key, *path ? " in " : "", path);
                if (next(w))
                        return;
                if (!f || seen[idx]) {
                        skip_node(w);
                        continue;
                }
                seen[idx] = 1;
                snprintf(child, sizeof(child), "%s%s%s", path, *path ? "." : "",
                         key);
                walk_node(w, &f->value, child, key);
        }
        if (!w->fatal)
                missing_keys(w, s, path, seen, start);
}

static void walk_sequence(walk_t *w,
                          const cyaml_schema_value_t *s,
                          const char *path,
                          const char *label) {
        for (unsigned i = 0; next(w) == 0 && cur(w) != YAML_SEQUENCE_END_EVENT;
             i++) {
                char child[PATH_MAX_LEN];
                snprintf(child, sizeof(child), "%s[%u]", path, i);
                walk_node(w, s->sequence.entry, child, label);
        }
}

/* A free-form mapping (kafka:, value.schemas:, handler.http.headers:):
 * names to single values. */
static void walk_free_map(walk_t *w, const char *path, const char *label) {
        static const char *const kinds[][2] = {
                {"property", "a mapping of property names to values"},
                {"schema id", "a mapping of schema ids to .avsc files"},
                {"header", "a mapping of header names to values"}};
        size_t n         = strlen(path);
        int k            = !strcmp(path, "kafka")                       ? 0
                           : n > 8 && !strcmp(path + n - 8, ".headers") ? 2
                                                                        : 1;
        const char *kind = kinds[k][0];
        if (cur(w) != YAML_MAPPING_START_EVENT) {
                type_error(w, label, kinds[k][1]);
                return;
        }
        while (next(w) == 0 && cur(w) != YAML_MAPPING_END_EVENT) {
                if (cur(w) != YAML_SCALAR_EVENT) {
                        char what[64];
                        snprintf(what, sizeof(what), "a %s name", kind);
                        type_error(w, label, k == 1 ? "a schema id" : what);
                        if (next(w) == 0)
                                skip_node(w);
                        continue;
                }
                char key[256];
                snprintf(key, sizeof(key), "%s",
                         (const char *)w->ev.data.scalar.value);
                if (next(w))
                        return;
                if (cur(w) != YAML_SCALAR_EVENT) {
                        char l[300];
                        snprintf(l, sizeof(l), "%s.%s", label, key);
                        type_error(w, l, "a single value");
                        continue;
                }
                for (size_t i = 0; i < w->map->kv_cnt; i++)
                        if (!strcmp(w->map->kvs[i].map, path) &&
                            !strcmp(w->map->kvs[i].key, key))
                                err_at(w, w->ev.start_mark,
                                       "%s: duplicate %s \"%s\"", label, kind,
                                       key);
                if (kv_add(w, path, key, (const char *)w->ev.data.scalar.value,
                           w->ev.start_mark))
                        w->d->oom = 1;
        }
}

static void
walk_enum(walk_t *w, const cyaml_schema_value_t *s, const char *label) {
        const char *v = (const char *)w->ev.data.scalar.value;
        char allowed[256];
        size_t len = 0;
        allowed[0] = '\0';
        for (uint32_t i = 0; i < s->enumeration.count; i++) {
                if (!strcmp(s->enumeration.strings[i].str, v))
                        return;
                len += (size_t)snprintf(allowed + len, sizeof(allowed) - len,
                                        "%s%s", i ? ", " : "",
                                        s->enumeration.strings[i].str);
        }
        err_at(w, w->ev.start_mark, "%s: \"%s\" is not one of: %s", label, v,
               allowed);
}

static void walk_node(walk_t *w,
                      const cyaml_schema_value_t *s,
                      const char *path,
                      const char *label) {
        if (loc_add(w, path, w->ev.start_mark))
                w->d->oom = 1;
        if (cur(w) == YAML_ALIAS_EVENT) {
                err_at(w, w->ev.start_mark,
                       "%s: aliases (*%s) are not supported", label,
                       (const char *)w->ev.data.alias.anchor);
                return;
        }
        if (s->type == CYAML_IGNORE)
                walk_free_map(w, path, label);
        else if (s->type == CYAML_MAPPING)
                cur(w) == YAML_MAPPING_START_EVENT
                        ? walk_mapping(w, s, path)
                        : type_error(w, label, "a mapping");
        else if (s->type == CYAML_SEQUENCE)
                cur(w) == YAML_SEQUENCE_START_EVENT
                        ? walk_sequence(w, s, path, label)
                        : type_error(w, label, "a list");
        else if (cur(w) != YAML_SCALAR_EVENT)
                type_error(w, label, "a single value");
        else if (!w->ev.data.scalar.length &&
                 w->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                err_at(w, w->ev.start_mark, "%s: a value is required", label);
        else if (s->type == CYAML_ENUM)
                walk_enum(w, s, label);
}

/* YAML forbids tabs in indentation; libyaml's own message for them
 * ("found character that cannot start any token") does not say so. */
static int check_tabs(const char *data, size_t len, kretry_diags_t *d) {
        int line = 1, col = 1, indent = 1, found = 0;
        for (size_t i = 0; i < len; i++, col++) {
                if (data[i] == '\n') {
                        line++;
                        col    = 0;
                        indent = 1;
                } else if (data[i] == '\t' && indent) {
                        kretry_diag_add(d, KRETRY_DIAG_ERROR, line, col,
                                        "tab character in indentation: YAML "
                                        "indents with spaces only");
                        found  = 1;
                        indent = 0;
                } else if (data[i] != ' ') {
                        indent = 0;
                }
        }
        return found ? -1 : 0;
}

static void walk_document(walk_t *w, const cyaml_schema_value_t *schema) {
        if (next(w) || next(w)) /* STREAM_START, then DOCUMENT_START */
                return;
        if (cur(w) == YAML_STREAM_END_EVENT ||
            (next(w) == 0 && cur(w) == YAML_SCALAR_EVENT &&
             !w->ev.data.scalar.length)) {
                kretry_diag_add(w->d, KRETRY_DIAG_ERROR, 1, 1,
                                "the file is empty: expected a mapping with "
                                "a \"topologies\" list");
                return;
        }
        if (w->fatal)
                return;
        walk_node(w, schema, "", "the file");
        if (next(w) || next(w)) /* DOCUMENT_END, then STREAM_END */
                return;
        if (cur(w) == YAML_DOCUMENT_START_EVENT)
                err_at(w, w->ev.start_mark,
                       "a second YAML document: a topology file holds one");
}

int kretry_yaml_check(const char *data,
                      size_t len,
                      const cyaml_schema_value_t *schema,
                      kretry_yaml_map_t *map,
                      kretry_diags_t *d) {
        int errors = d->errors;
        if (check_tabs(data, len, d))
                return -1;
        walk_t w = {.map = map, .d = d};
        if (!yaml_parser_initialize(&w.parser)) {
                d->oom = 1;
                return -1;
        }
        yaml_parser_set_input_string(&w.parser, (const unsigned char *)data,
                                     len);
        walk_document(&w, schema);
        if (w.have_ev)
                yaml_event_delete(&w.ev);
        yaml_parser_delete(&w.parser);
        return d->errors > errors || d->oom ? -1 : 0;
}

void kretry_yaml_map_clear(kretry_yaml_map_t *map) {
        for (size_t i = 0; i < map->loc_cnt; i++)
                free(map->locs[i].path);
        for (size_t i = 0; i < map->kv_cnt; i++) {
                free(map->kvs[i].map);
                free(map->kvs[i].key);
                free(map->kvs[i].value);
        }
        free(map->locs);
        free(map->kvs);
        memset(map, 0, sizeof(*map));
}

void kretry_yaml_map_pos(const kretry_yaml_map_t *map,
                         const char *path,
                         int *linep,
                         int *colp) {
        char p[PATH_MAX_LEN];
        snprintf(p, sizeof(p), "%s", path);
        for (;;) {
                for (size_t i = 0; i < map->loc_cnt; i++) {
                        if (!strcmp(map->locs[i].path, p)) {
                                *linep = map->locs[i].line;
                                *colp  = map->locs[i].col;
                                return;
                        }
                }
                char *cut = strrchr(p, '.');
                char *br  = strrchr(p, '[');
                if (br > cut)
                        cut = br;
                if (!cut)
                        break;
                *cut = '\0';
        }
        *linep = 0;
        *colp  = 0;
}
