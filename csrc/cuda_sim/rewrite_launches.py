"""rewrite_launches.py - the one preprocessing step of the device-emulation
build: copy csrc/cuda's sources into a build directory with every kernel
launch `k<<<grid, block[, shmem[, stream]]>>>(args)` turned into
`bf_sim_launcher(k, grid, block[, shmem[, stream]])(args)` (sim_device.h),
which g++ can parse. Nothing else changes, line numbers included, and a
`#line` directive names the original file (LINE_DIR/name, default
csrc/cuda/name, relative to the repository root where the compiler runs), so
compiler messages and gcov point at csrc/cuda, also for a patched copy of it.
Usage: rewrite_launches.py SRC_DIR OUT_DIR [LINE_DIR]"""
import os
import re
import sys

LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*<<<(.*?)>>>(\s*)\(", re.S)


def rewrite(text):
    def sub(m):
        # keep the newlines of the whitespace between >>> and (
        return "bf_sim_launcher(%s, %s)%s(" % (m.group(1), m.group(2), "\n" * m.group(3).count("\n"))
    return LAUNCH.sub(sub, text)


def main(src, out, line_dir="csrc/cuda"):
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if not name.endswith((".cu", ".cuh", ".h", ".c")):
            continue
        with open(os.path.join(src, name)) as f:
            text = f.read()
        new = '#line 1 "%s/%s"\n%s' % (line_dir, name, rewrite(text))
        dst = os.path.join(out, name)
        old = None
        if os.path.exists(dst):
            with open(dst) as f:
                old = f.read()
        if old != new:  # untouched files keep their time stamps (make-style caching)
            with open(dst, "w") as f:
                f.write(new)


if __name__ == "__main__":
    main(*sys.argv[1:4])
