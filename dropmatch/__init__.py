"""DropMatch: Monte Carlo dropout on the target's LM head to accept semantically valid draft tokens."""

from dropmatch.config import DecodeConfig
from dropmatch.criteria import CRITERIA
from dropmatch.trace import Trace

__all__ = ["CRITERIA", "DecodeConfig", "Trace"]
