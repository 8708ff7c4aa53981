"""DropMatch: Monte Carlo dropout on the target's LM head to accept semantically valid draft tokens.

The core decoder lives here (config, heads, criteria, records, trace, metrics, models, decode); the lab
(suites, sweeps, benches, reports) in `dropmatch.lab`; the command line in `dropmatch.cli`. Importing
the package (or building a config) loads no torch.
"""

from dropmatch.config import CRITERION_NAMES, DecodeConfig
from dropmatch.trace import Trace

__all__ = ["CRITERION_NAMES", "DecodeConfig", "Trace"]
