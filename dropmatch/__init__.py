"""DropMatch: Monte Carlo dropout on the target's LM head to accept semantically valid draft tokens.

The core decoder lives here (config, heads, the acceptance rules and their registry, records, trace, metrics,
models, decode); the lab (suites, sweeps, benches, reports) in `dropmatch.lab`; the command line in `dropmatch.cli`.
Importing the package (or `dropmatch.config`) loads no torch; the registry (`dropmatch.criteria`) and the trace do.
"""

from dropmatch.config import DecodeConfig

__all__ = ["DecodeConfig"]
