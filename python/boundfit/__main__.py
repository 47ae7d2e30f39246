"""python -m boundfit diagnose | demo | memory"""

import sys

from .demo import main as demo
from .diagnose import diagnose
from .memory import ledger


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else "diagnose"
    if cmd == "diagnose":
        diagnose()
        return 0
    if cmd == "demo":
        return demo(argv[1:])
    if cmd == "memory":   # the runs on this machine's memory ledger
        print(ledger())
        return 0
    print(f"usage: python -m boundfit [diagnose|demo|memory]  (unknown command {cmd!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
