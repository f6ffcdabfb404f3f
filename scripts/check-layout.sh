#!/bin/sh
# Checks that every include points down (README.md, "Layout"): each quoted
# #include "x.h" of a C file in a room resolves to the room that holds
# x.h, and that room must be the file's own or one the table below lets
# it use. An include that points up, or across from one front-end (cli,
# ui) to the other, fails the check. tests/ and bench/ stand outside the
# rooms and may include anything.
#
# Inside the engine (adapter/src) the same holds between its layers: the
# loop drives the phases, the phases use the services, the services the
# leaves (plain data, no adapter). A file includes the headers of its own
# layer and of the layers below it, never of one above.
#
#   scripts/check-layout.sh [ROOT]   (default: this repository)
set -eu
root="${1:-$(dirname "$0")/..}"
cd "$root"

# room  directory         the rooms it may include, below it
rooms='
include  adapter/include  -
schemas  schemas/src      include
engine   adapter/src      schemas include
topology topology/src     engine schemas include
ops      adapter/ops      topology engine schemas include
common   adapter/common   ops topology engine schemas include
run      adapter/run      common ops topology engine schemas include
cli      adapter/cli      run common ops topology engine schemas include
ui       adapter/ui       common ops topology engine schemas include
bin      adapter/bin      cli ui run common ops topology engine schemas include
'

# engine layer  its files (by name, .c and .h alike); any other file of
# adapter/src is a leaf
layers='
loop     adapter
phase    intake route workers keyed restore txn rebalance drain startup_check stats_emit msg_api
service  adapter_int part commit msg stats owned handles clock log
'

echo "$rooms" | awk 'NF { print $2 }' | while read -r dir; do
        [ ! -d "$dir" ] || find "$dir" -name '*.[ch]'
done | sort >/tmp/check-layout.$$.files
trap 'rm -f /tmp/check-layout.$$.*' EXIT

# file:line:header for every quoted include of a file in a room.
xargs grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
        </tmp/check-layout.$$.files |
        sed 's/^\([^:]*\):\([0-9]*\):.*"\([^"]*\)".*/\1 \2 \3/' \
                >/tmp/check-layout.$$.includes || true

awk -v rooms="$rooms" -v layers="$layers" -v files=/tmp/check-layout.$$.files '
BEGIN {
        n = split(rooms, lines, "\n")
        for (i = 1; i <= n; i++) {
                if ((nf = split(lines[i], f, " ")) < 3)
                        continue
                room_of_dir[f[2]] = f[1]
                dirs[++ndirs] = f[2]
                for (j = 3; j <= nf; j++)
                        allowed[f[1], f[j]] = 1
        }
        n = split(layers, lines, "\n")
        for (i = 1; i <= n; i++) {
                if ((nf = split(lines[i], f, " ")) < 2)
                        continue
                rank[f[1]] = ++nlayers
                for (j = 2; j <= nf; j++)
                        layer_of[f[j]] = f[1]
        }
        rank["leaf"] = ++nlayers
        # Which room holds each header, by its path below the room.
        while ((getline path < files) > 0)
                for (d = 1; d <= ndirs; d++)
                        if (index(path, dirs[d] "/") == 1) {
                                rel = substr(path, length(dirs[d]) + 2)
                                if (rel in holder && holder[rel] != room_of_dir[dirs[d]])
                                        twice[rel] = 1
                                holder[rel] = room_of_dir[dirs[d]]
                        }
}
# The engine layer of a file of adapter/src, by its name.
function layer(path,   name) {
        name = path; sub(/^.*\//, "", name); sub(/\.[ch]$/, "", name)
        return (name in layer_of) ? layer_of[name] : "leaf"
}
function room_of(path,   d) {
        for (d = 1; d <= ndirs; d++)
                if (index(path, dirs[d] "/") == 1)
                        return room_of_dir[dirs[d]]
        return ""
}
{
        file = $1; line = $2; hdr = $3
        from = room_of(file)
        # A header beside the file (the compiler looks there first).
        dir = file; sub(/\/[^\/]*$/, "", dir)
        if ((getline tmp < (dir "/" hdr)) >= 0) {
                close(dir "/" hdr)
                to = from
        } else if (hdr in holder) {
                to = holder[hdr]
        } else {
                next # not a header of a room (a system or generated one)
        }
        checked++
        if (hdr in twice) {
                printf "%s:%s: \"%s\" is a name two rooms use\n", file, line, hdr
                bad++
        } else if (to != from && !allowed[from, to]) {
                printf "%s:%s: %s includes \"%s\" of %s: rooms point down " \
                       "(README.md, Layout)\n", file, line, from, hdr, to
                bad++
        } else if (from == "engine" && to == "engine" &&
                   rank[layer(hdr)] < rank[layer(file)]) {
                printf "%s:%s: %s includes \"%s\" of %s: engine layers " \
                       "point down (README.md, Layout)\n", file, line,
                       layer(file), hdr, layer(hdr)
                bad++
        }
}
END {
        if (bad) {
                printf "check-layout: %d of %d includes point up or across\n",
                       bad, checked
                exit 1
        }
        printf "check-layout: %d includes point down\n", checked
}' /tmp/check-layout.$$.includes
