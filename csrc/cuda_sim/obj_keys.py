"""obj_keys.py - the content keys of build.sh's object cache: for each source,
a hash of its compile flags, its contents and those of every header it
includes, directly or through one another (quoted includes looked up in the
source's folder, then the -I folders, as the compiler does; headers found
nowhere, the system's, are not hashed). Two builds of one content share an
object: a mutant's or another tree's, a branch switched back, a copied
build folder. Usage: obj_keys.py FLAGS INCLUDE_DIRS SOURCE... (INCLUDE_DIRS
colon-separated); prints "KEY SOURCE" lines."""
import hashlib
import os
import re
import sys

INCLUDE = re.compile(rb'^\s*#\s*include\s+"([^"]+)"', re.M)


def headers(src, dirs, texts):
    """the local headers src includes, directly or through one another, in a fixed order"""
    seen, todo = [], [src]
    while todo:
        f = todo.pop()
        for name in INCLUDE.findall(texts(f)):
            name = name.decode()
            for d in [os.path.dirname(f)] + dirs:
                h = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(h):
                    if h not in seen:
                        seen.append(h)
                        todo.append(h)
                    break
    return sorted(seen, key=os.path.basename)


def main(flags, include_dirs, sources):
    dirs = [d for d in include_dirs.split(":") if d]
    cache = {}

    def texts(f):
        if f not in cache:
            with open(f, "rb") as fh:
                cache[f] = fh.read()
        return cache[f]

    for src in sources:
        h = hashlib.sha256(flags.encode() + b"\0" + os.path.basename(src).encode() + b"\0" + texts(src))
        for hdr in headers(src, dirs, texts):
            h.update(b"\0" + os.path.basename(hdr).encode() + b"\0" + texts(hdr))
        print(h.hexdigest()[:24], src)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
