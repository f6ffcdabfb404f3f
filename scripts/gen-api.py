#!/usr/bin/env python3
"""docs/api.md from kretry.h's doc comments.

    scripts/gen-api.py [--check] [HEADER [OUT]]

Writes OUT (default docs/api.md) from HEADER (default
adapter/include/kretry/kretry.h): the header's opening comment, then every
group (@name) with its types, enums (each value with its comment) and
functions, each with its declaration and comment. With --check it writes
nothing and fails (exit 1) when a public function (KRETRY_EXPORT) or type
has no doc comment, or when OUT differs from what it would write.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def clean(comment):
    """The text of a /** */ comment: markers and leading stars removed."""
    body = re.sub(r"^/\*\*<?|\*/$", "", comment.strip())
    lines = [re.sub(r"^\s*\* ?", "", l) for l in body.split("\n")]
    # A first line that is the opening one keeps its text unindented.
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return [l.rstrip() for l in lines]


def inline(text):
    text = re.sub(r"@p (\w+)", r"`\1`", text)
    text = re.sub(r"\b(kretry_\w+)\(\)", r"`\1()`", text)
    return text


def to_markdown(lines):
    """Doxygen tags to Markdown paragraphs; an indented run after a blank
    line (the property table) is fenced as text, kept as written."""
    paras, cur, block = [], None, None
    for line in lines + [""]:
        if block is not None:
            if line.startswith("  ") or (not line and False):
                block.append(line[2:])
                continue
            paras.append("```text\n" + "\n".join(block) + "\n```")
            block = None
        s = line.strip()
        if not s:
            if cur:
                paras.append(cur)
            cur = None
            continue
        if cur is None and line.startswith("  ") and not s.startswith("@"):
            block = [line[2:]]
            continue
        tag = re.match(r"@(brief|returns?|param|remark)\b\s*(.*)", s)
        if tag:
            if cur:
                paras.append(cur)
            kind, rest = tag.groups()
            if kind.startswith("return"):
                cur = "**Returns** " + rest
            elif kind == "param":
                m = re.match(r"(\w+(?:\s*,\s*\w+)*)\s+(.*)", rest) or re.match(r"(.*)()", rest)
                names = ", ".join("`%s`" % n.strip() for n in m.group(1).split(","))
                cur = "- **%s**: %s" % (names, m.group(2))
            else:
                cur = rest
        else:
            cur = s if cur is None else cur + " " + s
    if block is not None:
        paras.append("```text\n" + "\n".join(block) + "\n```")
    # Consecutive parameters form one list.
    out = []
    for p in paras:
        p = p if p.startswith("```") else inline(p)
        if out and p.startswith("- **") and out[-1].startswith("- **"):
            out[-1] += "\n" + p
        else:
            out.append(p)
    return "\n\n".join(out)


def parse(text):
    """Items in header order: ('file'|'group'|'func'|'type'|'enum'|'macro', ...)."""
    items = []
    pos = 0
    pending = None  # the last doc comment, until a declaration takes it
    tok = re.compile(
        r"(?P<doc>/\*\*<?.*?\*/)|(?P<cmt>/\*.*?\*/|//[^\n]*)"
        r"|(?P<pp>^\#(?:[^\\\n]|\\.)*)"
        r"|(?P<decl>(?:KRETRY_EXPORT|typedef)\b[^;{]*(?:\{.*?\}[^;]*)?;)"
        r"|(?P<other>\S)", re.S | re.M)
    for m in tok.finditer(text):
        if m.group("doc"):
            d = m.group("doc")
            if re.match(r"/\*\*\s*@name\s", d):
                items.append(("group", re.sub(r"/\*\*\s*@name\s+|\s*\*/", "", d)))
                pending = None
            elif re.match(r"/\*\*@[{}]\*/", d):
                pending = None
            elif not items:
                items.append(("file", clean(d)))
            else:
                pending = d
        elif m.group("pp"):
            pp = m.group("pp")
            mm = re.match(r"#define (KRETRY_VERSION\w*|KRETRY_ERR_MAP)", pp)
            if mm:
                items.append(("macro", mm.group(1), pp, pending))
            pending = None if not pp.startswith("#define KRETRY_VERSION_") else pending
        elif m.group("decl"):
            decl = m.group("decl")
            if decl.startswith("KRETRY_EXPORT"):
                proto = " ".join(decl.replace("KRETRY_EXPORT", "", 1).split())
                name = re.search(r"(\w+)\s*\(", proto).group(1)
                items.append(("func", name, proto, pending))
            elif re.match(r"typedef\s+enum", decl):
                name = re.search(r"\}\s*(\w+)\s*;", decl).group(1)
                members = re.findall(
                    r"(KRETRY_\w+)\s*=\s*(-?\w+)\s*,?\s*(/\*\*<.*?\*/)?", decl, re.S)
                items.append(("enum", name, members, pending))
            else:
                proto = " ".join(decl.split())
                proto = re.sub(r"\(\s+", "(", proto)
                name = re.search(r"(\w+)\s*(?:\)\s*\(|;)", proto).group(1)
                items.append(("type", name, proto, pending))
            pending = None
        elif m.group("other"):
            pending = None if m.group("other") not in "}" else pending
    return items


def render(items, header_path):
    out = ["# kretry API reference", "",
           "<!-- Generated by scripts/gen-api.py from %s: do not edit. -->"
           % header_path, ""]
    missing = []
    for it in items:
        kind = it[0]
        if kind == "file":
            text = [l for l in it[1] if not l.startswith("@file")]
            text = [re.sub(r"^@brief\s*", "", l) for l in text]
            out += [to_markdown(text), ""]
        elif kind == "group":
            out += ["## " + it[1], ""]
        elif kind == "macro":
            _, name, pp, doc = it
            if name == "KRETRY_ERR_MAP":
                codes = re.findall(r'XX\((\w+),\s*(-?\d+),\s*"([^"]*)"\)', pp)
                out += ["### Error codes (`kretry_err_t`)", "",
                        "| code | value | meaning |", "|---|---|---|"]
                out += ["| `KRETRY_ERR_%s` | %s | %s |" % c for c in codes]
                out += [""]
            elif name == "KRETRY_VERSION":
                out += ["### `KRETRY_VERSION`, `KRETRY_VERSION_MAJOR`, "
                        "`_MINOR`, `_PATCH`", "",
                        to_markdown(clean(doc)) if doc else "", ""]
        elif kind in ("func", "type"):
            _, name, proto, doc = it
            if not doc:
                missing.append(name)
            out += ["### `%s`" % (name + "()" if kind == "func" else name), "",
                    "```c", proto, "```", ""]
            if doc:
                out += [to_markdown(clean(doc)), ""]
        elif kind == "enum":
            _, name, members, doc = it
            if not doc:
                missing.append(name)
            out += ["### `%s`" % name, ""]
            if doc:
                out += [to_markdown(clean(doc)), ""]
            if members:
                out += ["| name | value | meaning |", "|---|---|---|"]
                for n, v, c in members:
                    text = " ".join(l.strip() for l in clean(c)) if c else ""
                    out.append("| `%s` | %s | %s |" % (n, v, inline(text)))
                out += [""]
    text = "\n".join(out).rstrip() + "\n"
    return re.sub(r"\n{3,}", "\n\n", text), missing


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    header = args[0] if args else ROOT + "/adapter/include/kretry/kretry.h"
    dest = args[1] if len(args) > 1 else ROOT + "/docs/api.md"
    with open(header) as f:
        items = parse(f.read())
    text, missing = render(items, "adapter/include/kretry/kretry.h")
    funcs = sum(1 for i in items if i[0] == "func")
    if missing:
        for name in missing:
            print("%s: %s has no doc comment" % (header, name), file=sys.stderr)
        return 1
    if check:
        try:
            with open(dest) as f:
                current = f.read()
        except OSError:
            current = ""
        if current != text:
            print("%s is stale: run scripts/gen-api.py and commit it" % dest,
                  file=sys.stderr)
            return 1
        print("api: %d functions, each with a comment; %s is current" % (funcs, dest))
        return 0
    with open(dest, "w") as f:
        f.write(text)
    print("api: %d functions written to %s" % (funcs, dest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
