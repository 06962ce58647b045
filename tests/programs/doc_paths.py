#!/usr/bin/env python3
"""Every path a document names exists: doc_paths.py ROOT DOCUMENT[:rooted]...

A path is a `backticked` word that ends in .hpp, .cpp, .md, .sh, .py or / and has a / in it, such
as `include/nvmekit/core/io_context.hpp`, `examples/serve.cpp` or `pci/function.hpp` (a path under
include/nvmekit/), or an include such as `<nvmekit/controller.hpp>`. In a DOCUMENT:rooted only the
paths that start at one of the repository's own top-level directories are checked (its other
paths may name another project's files, or a folder relative to the text around it). Exits 1 and
names each path that does not exist, 2 on a usage error.
"""
import os
import re
import sys

TOKEN = re.compile(r"`([^`\s]+)`")
PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$")
INCLUDE = re.compile(r"^<(nvmekit/[A-Za-z0-9_./-]+\.hpp)>$")


TOP_LEVEL = ("include/", "examples/", "tests/", "bench/", "cmake/")


def candidates(root, word, rooted):
    """The places `word` may name, or None when it is not a path to check."""
    include = INCLUDE.match(word)
    if include:
        name = include.group(1)
        return [os.path.join(root, "include", name), os.path.join(root, "include", "nvmekit-compat", name)]
    if "/" not in word or not PATH.match(word):
        return None
    if not (word.endswith("/") or word.endswith((".hpp", ".cpp", ".md", ".sh", ".py"))):
        return None
    if rooted and not word.startswith(TOP_LEVEL):
        return None
    return [os.path.join(root, word), os.path.join(root, "include", "nvmekit", word)]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    missing = []
    checked = 0
    for argument in argv[2:]:
        document, _, mode = argument.partition(":")
        rooted = mode == "rooted"
        with open(document, encoding="utf-8") as text:
            for number, line in enumerate(text, 1):
                for word in TOKEN.findall(line):
                    places = candidates(root, word, rooted)
                    if places is None:
                        continue
                    checked += 1
                    if not any(os.path.exists(place) for place in places):
                        missing.append(f"{document}:{number}: {word}")
    for entry in missing:
        print(f"names a path that does not exist: {entry}")
    print(f"{checked} paths checked, {len(missing)} missing")
    if checked == 0:
        print("no path found: the documents or this check changed")
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
