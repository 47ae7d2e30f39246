"""A model's engine (boundfit._core.Model) made within the host budget: the
engine lays out the weights, checks their bytes against what the process may
still use (runtime/budget.py: the cgroup's headroom, MemAvailable, less a
margin; or bf.set_memory_limit(host=...)) and only then maps and initialises
them, so a model too large for the machine raises MemoryBudgetError naming its
largest weight instead of bringing the OOM killer."""

from .. import _core
from ..errors import MemoryBudgetError
from ..runtime import budget
from ..sizes import format_bytes


def new_engine(name, specs, input_shapes, seed, outputs, weights_of=None):
    """The engine of a compiled graph (input_shapes: one per-sample shape per input); weights_of=(engine, its node
    per node): the weights are that engine's (nothing is allocated for them)."""
    host, src = budget.host_budget()
    try:
        return _core.Model(specs, input_shapes[0], seed, input_shapes=input_shapes if len(input_shapes) > 1 else None,
                           outputs=outputs, host_budget=max(int(host), 1),   # (0 would mean no limit)
                           weights_of=weights_of)
    except MemoryBudgetError as e:
        if not e.needed_bytes:   # the system refused the mapping: no numbers to add
            raise
        raise MemoryBudgetError(f"{name}: building the model needs {format_bytes(e.needed_bytes)} of weights on the "
                                f"host, {format_bytes(e.available_bytes)} available ({src}); nothing was allocated "
                                f"({e})", needed_bytes=e.needed_bytes, available_bytes=e.available_bytes,
                                where="host", max_batch_size=0) from None
