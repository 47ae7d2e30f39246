"""bf.memory: the machine's memory ledger, seen from Python.

    bf.memory.ledger()     # the runs on this machine that reserved memory (or wait for it)

(`python -m boundfit memory` prints the same table.) Each record names the
process (pid, script), its run (fit / evaluate / predict), and by location
(host, a device) the bytes it reserved and how much of them it already holds;
runtime/ledger.py describes the ledger itself."""

from .runtime.ledger import Ledger, Record, ledger

__all__ = ["ledger", "Ledger", "Record"]
