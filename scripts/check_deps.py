#!/usr/bin/env python3
"""Checks the module graph against the table of allowed edges in docs/architecture.md.

A module is a folder under src/ (the longest folder named in the table that contains a file),
plus `include/kingfisher` (the public headers) and `proto` (generated code: kingfisher/v1/*,
opentelemetry/*, etcd/*). The table says which modules each module may use; tests and test
helpers (files in a testing/ folder, *_test.cc, fake_*, fuzz bodies, test_util.h) may also use
what the table's last column adds. Checked:
  1. every `#include "..."` under src/ and include/;
  2. every kf_* link of a library or executable in a CMakeLists.txt under src/;
  3. the public headers include only standard headers, Abseil's status types and each other;
  4. every source file under src/ belongs to a module of the table.
Exit status 1 with one line per violation, 0 when the graph holds.

  check_deps.py [--root DIR]   check the repository at DIR (default: this script's repository)
  check_deps.py --self-test    check that violations in a made-up tree are found
"""
import argparse
import fnmatch
import os
import re
import sys
import tempfile

BEGIN, END = "<!-- module-table:begin -->", "<!-- module-table:end -->"
PUBLIC = "include/kingfisher"
PROTO = "proto"
GENERATED_PREFIXES = ("kingfisher/v1/", "opentelemetry/", "etcd/")
PUBLIC_HEADER_ALLOWED_EXTERNAL = {"absl/status/status.h", "absl/status/statusor.h"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_INCLUDE_RE = re.compile(r"^\s*#\s*include\s+<([^>]+)>")
SOURCE_EXTENSIONS = (".h", ".cc")


def parse_table(architecture_md):
    """{module: (allowed patterns, test-only patterns)} from the table between the markers."""
    text = open(architecture_md, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        sys.exit(f"check_deps: no module table ({BEGIN} ... {END}) in {architecture_md}")
    table = {}
    for line in text[text.index(BEGIN) + len(BEGIN):text.index(END)].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue  # header, separator or prose
        names = lambda cell: re.findall(r"`([^`]+)`", cell)
        module = names(cells[0])[0]
        table[module] = (set(names(cells[1])), set(names(cells[2])))
    return table


def module_of(path, modules):
    """The longest module whose folder contains `path` (relative to src/ or the include dir)."""
    best = None
    for m in modules:
        if path == m or path.startswith(m + "/"):
            if best is None or len(m) > len(best):
                best = m
    return best


def module_of_include(include, modules):
    if include.startswith(GENERATED_PREFIXES):
        return PROTO
    if include.startswith("kingfisher/"):
        return PUBLIC
    return module_of(include, modules)  # None: not ours (a library's header)


def is_test_file(path):
    name = os.path.basename(path)
    return ("/testing/" in "/" + path or name.endswith("_test.cc") or name.startswith("fake_")
            or "_fuzz" in name or name in ("test_util.h", "test_messages.h")
            or "_testing." in name)


def allowed(module, target, test, table):
    if target == module:
        return True
    may, test_may = table[module]
    patterns = may | test_may if test else may
    return any(fnmatch.fnmatchcase(target, p) for p in patterns)


def check_includes(root, table):
    errors = []
    modules = [m for m in table if m not in (PUBLIC, PROTO)]
    for base, prefix in (("src", ""), ("include", "")):
        top = os.path.join(root, base)
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXTENSIONS):
                    continue
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, top)
                shown = os.path.relpath(full, root)
                if base == "include":
                    module = PUBLIC if rel.startswith("kingfisher/") else None
                else:
                    module = module_of(rel, modules)
                if module is None:
                    errors.append(f"{shown}: belongs to no module of docs/architecture.md")
                    continue
                test = is_test_file(rel)
                for n, line in enumerate(open(full, encoding="utf-8"), 1):
                    m = INCLUDE_RE.match(line)
                    if module == PUBLIC:
                        errors += check_public_include(shown, n, line, m)
                    if not m:
                        continue
                    target = module_of_include(m.group(1), modules)
                    if target is None or allowed(module, target, test, table):
                        continue
                    errors.append(f"{shown}:{n}: {module} includes {m.group(1)} ({target}), "
                                  f"which docs/architecture.md does not allow"
                                  f"{' (even for tests)' if test else ''}")
    return errors


def check_public_include(shown, n, line, quoted):
    if quoted:
        inc = quoted.group(1)
        ok = inc in PUBLIC_HEADER_ALLOWED_EXTERNAL or (
            re.fullmatch(r"kingfisher/[a-z_]+\.h", inc) is not None)
        return [] if ok else [f"{shown}:{n}: a public header includes \"{inc}\" (only the "
                              f"standard library, Abseil's status types and kingfisher/*.h)"]
    system = SYSTEM_INCLUDE_RE.match(line)
    if system and ("/" in system.group(1) or system.group(1).endswith(".h")):
        return [f"{shown}:{n}: a public header includes <{system.group(1)}> (not a standard "
                f"header)"]
    return []


def parse_cmake(root):
    """[(file, line, target, dep, is_test)] for every kf_* link of a target under src/."""
    edges, owners = [], {}
    calls = re.compile(r"\b(add_library|add_executable|kf_test|kf_fuzz|target_link_libraries)"
                       r"\s*\(([^)]*)\)", re.S)
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, "src")):
        if "CMakeLists.txt" in names:
            files.append(os.path.join(dirpath, "CMakeLists.txt"))
    parsed = []
    for path in sorted(files):
        text = re.sub(r"#[^\n]*", "", open(path, encoding="utf-8").read())
        folder = os.path.relpath(os.path.dirname(path), os.path.join(root, "src"))
        for call in calls.finditer(text):
            kind, args = call.group(1), call.group(2).split()
            if not args:
                continue
            line = text.count("\n", 0, call.start()) + 1
            target = args[0]
            if kind in ("add_library", "add_executable", "kf_test", "kf_fuzz"):
                test = kind in ("kf_test", "kf_fuzz") or re.search(
                    r"test|fake|fuzz", target) is not None
                owners[target] = (folder, test)
                if kind in ("kf_test", "kf_fuzz") and "DEPS" in args:
                    for dep in args[args.index("DEPS") + 1:]:
                        if dep in ("LABELS",):
                            break
                        parsed.append((path, line, target, dep))
            else:
                for dep in args[1:]:
                    parsed.append((path, line, target, dep))
    for path, line, target, dep in parsed:
        if not dep.startswith("kf_") or target not in owners:
            continue
        edges.append((path, line, target, dep))
    return edges, owners


def check_links(root, table):
    errors = []
    modules = [m for m in table if m not in (PUBLIC, PROTO)]
    edges, owners = parse_cmake(root)
    for path, line, target, dep in edges:
        folder, test = owners[target]
        module = module_of(folder, modules)
        if dep not in owners:
            if dep.endswith("_proto"):
                dep_module = PROTO
            else:
                continue  # defined outside src/ (none today)
        else:
            dep_module = module_of(owners[dep][0], modules)
        if module is None or dep_module is None:
            errors.append(f"{os.path.relpath(path, root)}:{line}: {target} or {dep} belongs to "
                          f"no module of docs/architecture.md")
            continue
        if not allowed(module, dep_module, test, table):
            errors.append(f"{os.path.relpath(path, root)}:{line}: {target} ({module}) links {dep} "
                          f"({dep_module}), which docs/architecture.md does not allow"
                          f"{' (even for tests)' if test else ''}")
    return errors


def check(root):
    table = parse_table(os.path.join(root, "docs", "architecture.md"))
    unknown = sorted({p for may, test_may in table.values() for p in may | test_may
                      if not any(fnmatch.fnmatchcase(m, p) for m in table)})
    errors = [f"docs/architecture.md: `{p}` names no module of the table" for p in unknown]
    return errors + check_includes(root, table) + check_links(root, table)


def self_test():
    """Builds a small tree with one allowed and several forbidden edges; all must be found."""
    def write(root, rel, text):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    with tempfile.TemporaryDirectory() as root:
        write(root, "docs/architecture.md", f"""{BEGIN}
| module | may use | tests may also use | what |
|---|---|---|---|
| `include/kingfisher` | | | api |
| `proto` | | | generated |
| `low` | `include/kingfisher` | | low |
| `high` | `low`, `proto` | | high |
| `high/sub` | `low` | `high` | sub |
{END}
""")
        write(root, "include/kingfisher/api.h", '#include <string>\n#include "low/x.h"\n')
        write(root, "src/low/x.h", '#include "kingfisher/api.h"\n#include "high/y.h"\n')
        write(root, "src/high/y.h", '#include "low/x.h"\n#include "kingfisher/v1/m.pb.h"\n')
        write(root, "src/high/sub/z.cc", '#include "high/y.h"\n')
        write(root, "src/high/sub/z_test.cc", '#include "high/y.h"\n')
        write(root, "src/stray/w.cc", "\n")
        write(root, "src/low/CMakeLists.txt", "add_library(kf_low x.cc)\n"
              "target_link_libraries(kf_low PUBLIC kf_high)\n")
        write(root, "src/high/CMakeLists.txt", "add_library(kf_high y.cc)\n"
              "target_link_libraries(kf_high PUBLIC kf_low kf_proto)\n")
        got = check(root)
        expected = [
            "include/kingfisher/api.h:2: a public header",
            "include/kingfisher/api.h:2: include/kingfisher includes low/x.h (low)",
            "src/high/sub/z.cc:1: high/sub includes high/y.h (high)",
            "src/low/x.h:2: low includes high/y.h (high)",
            "src/stray/w.cc: belongs to no module",
            "src/low/CMakeLists.txt:2: kf_low (low) links kf_high (high)",
        ]
        missing = [e for e in expected if not any(g.startswith(e) for g in got)]
        extra = [g for g in got if not any(g.startswith(e) for e in expected)]
        if missing or extra:
            print("check_deps self-test FAILED", file=sys.stderr)
            for e in missing:
                print(f"  not reported: {e}", file=sys.stderr)
            for g in extra:
                print(f"  reported wrongly: {g}", file=sys.stderr)
            return 1
    print("check_deps self-test: every planted violation was reported, nothing else")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    errors = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"check_deps: {len(errors)} violation(s) of the module graph in "
              f"docs/architecture.md", file=sys.stderr)
        return 1
    print("check_deps: every #include and kf_* link follows docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
