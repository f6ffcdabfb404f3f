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
# With the engine's objects built (BUILD, default build/ in ROOT) the engine
# is also drawn from its calls: a file calls another when its object leaves
# undefined a symbol that the other's object defines (nm). In that drawing,
# from includes and calls, with x.c and x.h one node, no arrow may point up
# a layer and no circle may take more than two files: two that call each
# other are a pair, three or more a knot. Without the objects only the
# includes are checked, and the check says so.
#
#   scripts/check-layout.sh [ROOT [BUILD]]   (default: this repository)
set -eu
root="${1:-$(dirname "$0")/..}"
cd "$root"
objs="${2:-build}/CMakeFiles/kretry_obj.dir/adapter/src"

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
phase    intake assign route workers keyed restore txn txn_open rebalance drain startup_check stats_emit msg_api
service  adapter_int part commit job msg stats owned handles clock log
'

# Both awk programs below read the layers the same way: rank[layer] (loop
# first, leaf last) and layer_of[file].
read_layers_awk='
function read_layers(   n, i, j, nf, lines, f) {
        n = split(layers, lines, "\n")
        for (i = 1; i <= n; i++) {
                if ((nf = split(lines[i], f, " ")) < 2)
                        continue
                rank[f[1]] = ++nlayers
                for (j = 2; j <= nf; j++)
                        layer_of[f[j]] = f[1]
        }
        rank["leaf"] = ++nlayers
}
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

awk -v rooms="$rooms" -v layers="$layers" -v files=/tmp/check-layout.$$.files "$read_layers_awk"'
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
        read_layers()
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

if [ ! -d "$objs" ] || ! ls "$objs"/*.c.o >/dev/null 2>&1; then
        echo "check-layout: engine calls not checked: no objects in $objs" \
             "(build first)"
        exit 0
fi
{
        # The engine's includes of its own headers, by node (x for x.c, x.h).
        grep '^adapter/src/' /tmp/check-layout.$$.includes |
                while read -r file line hdr; do
                        [ -e "adapter/src/$hdr" ] || continue
                        echo "inc $file $hdr"
                done
        for o in "$objs"/*.c.o; do
                # An object left from a source since removed is not drawn.
                n="${o##*/}"
                [ -e "adapter/src/${n%.o}" ] || continue
                nm -P "$o" | awk -v f="${o##*/}" '
                        $2 == "U" { print "use", f, $1; next }
                        $2 ~ /^[TDBRCGS]$/ { print "def", f, $1 }'
        done
} >/tmp/check-layout.$$.graph

awk -v layers="$layers" "$read_layers_awk"'
function node(path) {
        sub(/^.*\//, "", path); sub(/\.c\.o$/, "", path); sub(/\.[ch]$/, "", path)
        return path
}
function layer(n) { return (n in layer_of) ? layer_of[n] : "leaf" }
function arrow(a, b, sym) {
        if (a == b)
                return
        nodes[a] = nodes[b] = 1
        if (!((a, b) in edge)) {
                edge[a, b] = 1
                succ[a] = succ[a] " " b
        }
        if (sym == "")
                incl[a, b] = 1
        else if (!((a, b) in calls))
                calls[a, b] = sym
        else if (length(calls[a, b]) < 60)
                calls[a, b] = calls[a, b] ", " sym
}
# How an arrow is drawn: the calls (some of them), or the include.
function why(a, b) {
        if ((a, b) in calls)
                return "calls " calls[a, b] (((a, b) in incl) ? " (and includes it)" : "")
        return "includes it"
}
BEGIN {
        read_layers()
}
$1 == "inc" { arrow(node($2), node($3), ""); next }
$1 == "def" { owner[$3] = node($2); next }
$1 == "use" { nu++; user[nu] = node($2); sym[nu] = $3 }
# Tarjan: the strongly connected parts of the drawing.
function visit(v,   k, w, list, m) {
        index_of[v] = low[v] = ++counter
        stack[++sp] = v; on[v] = 1
        m = split(succ[v], list, " ")
        for (k = 1; k <= m; k++) {
                w = list[k]
                if (!(w in index_of)) {
                        visit(w)
                        if (low[w] < low[v]) low[v] = low[w]
                } else if (on[w] && index_of[w] < low[v])
                        low[v] = index_of[w]
        }
        if (low[v] == index_of[v]) {
                ++parts
                do {
                        w = stack[sp--]; on[w] = 0
                        part_of[w] = parts; size[parts]++
                        members[parts] = members[parts] " " w
                } while (w != v)
        }
}
END {
        for (i = 1; i <= nu; i++)
                if (sym[i] in owner)
                        arrow(user[i], owner[sym[i]], sym[i])
        for (k in edge) {
                split(k, p, SUBSEP)
                arrows++
                if (rank[layer(p[2])] < rank[layer(p[1])]) {
                        printf "adapter/src: %s (%s) -> %s (%s): %s: engine " \
                               "layers point down (README.md, Layout)\n",
                               p[1], layer(p[1]), p[2], layer(p[2]), why(p[1], p[2])
                        bad++
                }
        }
        for (v in nodes)
                if (!(v in index_of))
                        visit(v)
        # A circle of more than two files: a part of three or more nodes
        # with an arrow not answered by one back (that arrow closes a circle
        # through a third node), or more pairs than a tree of them holds.
        for (c = 1; c <= parts; c++) {
                if (size[c] < 3)
                        continue
                m = split(members[c], list, " ")
                oneway = ""; pairs = 0
                for (i = 1; i <= m; i++)
                        for (j = 1; j <= m; j++) {
                                if (i == j || !((list[i], list[j]) in edge))
                                        continue
                                if ((list[j], list[i]) in edge) {
                                        if (i < j) pairs++
                                } else
                                        oneway = oneway sprintf("\n  %s -> %s: %s",
                                                list[i], list[j], why(list[i], list[j]))
                        }
                if (oneway == "" && pairs < m)
                        continue
                printf "adapter/src: a circle of more than two files:%s%s\n",
                       members[c], oneway == "" ? " (pairs that close a ring)" : oneway
                bad++
        }
        if (bad) {
                printf "check-layout: %d knots or upward arrows in the " \
                       "engine drawn from %d arrows\n", bad, arrows
                exit 1
        }
        printf "check-layout: the engine drawn from includes and calls: %d " \
               "arrows, none up, no circle of more than two files\n", arrows
}' /tmp/check-layout.$$.graph
