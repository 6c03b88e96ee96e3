"""The run layer: one function per command between `cli/` and the pipeline stages.

Each `run/<command>.py` takes an options dataclass and an input source and returns a typed result; it
prints nothing and exits nothing. `cli/` parses flags, calls the run, picks a renderer and exits.
"""
