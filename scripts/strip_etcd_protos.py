#!/usr/bin/env python3
"""Copies etcd v3 .proto files, dropping the gogoproto and google.api options.

Debian's golang-etcd-server-dev ships etcd's protos with Go-specific options (gogoproto) and
grpc-gateway HTTP annotations (google.api.http). Neither changes the wire format, and their
own .proto files are not something plain protoc + grpc_cpp_plugin should need, so the build
removes them and compiles the rest.

usage: strip_etcd_protos.py SRC_ROOT OUT_ROOT REL_PATH...
  writes OUT_ROOT/REL_PATH for each SRC_ROOT/REL_PATH. Fails if anything of the two option
  families survives (a new syntax the scanner does not know).
"""
import os
import re
import sys

DROPPED_IMPORTS = ("gogoproto/gogo.proto", "google/api/annotations.proto")
OPTION_START = re.compile(r"option\s*\(\s*(gogoproto|google\.api)\.[\w.]*\s*\)\s*=\s*")
FIELD_OPTIONS = re.compile(r"\s*\[([^\[\]]*)\]")


def skip_value(text, i):
    """Index just past an option value starting at text[i]: a scalar up to ';' or a braced
    message literal (with nested braces and quoted strings), plus the trailing ';'."""
    depth = 0
    quote = None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
        if depth == 0 and not quote and text[i - 1] == "}":
            # A message literal may omit the ';' after its closing brace.
            while i < len(text) and text[i] in " \t":
                i += 1
            return i + 1 if i < len(text) and text[i] == ";" else i
    raise ValueError("unterminated option value")


def drop_options(text):
    out = []
    pos = 0
    for m in OPTION_START.finditer(text):
        if m.start() < pos:
            continue  # inside a value already skipped
        out.append(text[pos:m.start()].rstrip(" \t"))
        pos = skip_value(text, m.end())
    out.append(text[pos:])
    return "".join(out)


def drop_field_options(text):
    def keep(m):
        entries = [e.strip() for e in m.group(1).split(",")]
        entries = [e for e in entries if e and not e.startswith("(gogoproto.")]
        return " [" + ", ".join(entries) + "]" if entries else ""

    return FIELD_OPTIONS.sub(keep, text)


def strip(text):
    lines = [
        line for line in text.splitlines(keepends=True)
        if not any(line.strip() == 'import "%s";' % imp for imp in DROPPED_IMPORTS)
    ]
    text = drop_field_options(drop_options("".join(lines)))
    # Blank lines left where option lines were.
    text = re.sub(r"\n[ \t]*\n([ \t]*\n)+", "\n\n", text)
    for family in ("gogoproto", "google.api"):
        if family in text:
            raise ValueError("'%s' survived stripping" % family)
    return text


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    src_root, out_root = argv[1], argv[2]

    for rel in argv[3:]:
        with open(os.path.join(src_root, rel)) as f:
            text = f.read()
        try:
            text = strip(text)
        except ValueError as e:
            sys.exit("%s: %s" % (rel, e))
        dst = os.path.join(out_root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv)
