"""`python -m boundfit.distribute script.py args...` (see launch.py)."""
import sys

from .launch import _launch_main

sys.exit(_launch_main(sys.argv[1:]))
