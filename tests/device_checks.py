"""Device mixing caught without a GPU: what code does that only works while everything lives on the CPU.

`torch.zeros(n)` (and every factory like it) without `device=` makes a CPU tensor whatever device the inputs
are on, and on CUDA the first op that mixes it with them raises; `t.numpy()` raises on a CUDA tensor that did not
come to the host through `.cpu()` first. On a CPU-only machine neither raises, so `DeviceMixing` records each
such call made from the code under test: run the code on CPU inputs inside it, and every call it records is
one that a CUDA run would trip over.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

# The torch functions that make a tensor from nothing, on the default device unless told `device=` (the
# `*_like` and `Tensor.new_*` forms follow their argument's device, so they are not here).
FACTORIES = frozenset(
    {
        torch.arange,
        torch.as_tensor,
        torch.empty,
        torch.eye,
        torch.full,
        torch.linspace,
        torch.ones,
        torch.rand,
        torch.randint,
        torch.randn,
        torch.randperm,
        torch.scalar_tensor,
        torch.tensor,
        torch.zeros,
    }
)
TORCH_DIR = str(Path(torch.__file__).parent)


@dataclass(frozen=True)
class Call:
    """One call that assumes the CPU: what it was, and where the code under test made it."""

    what: str
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.what} at {Path(self.file).name}:{self.line} in {self.function}"


def _caller() -> tuple[str, int, str, object]:
    """The first frame outside torch and this file: the code that made the call (its file, line, name, code)."""
    frame = sys._getframe(1)
    while frame.f_code.co_filename.startswith(TORCH_DIR) or frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, frame.f_code


def _to_host(func, args, kwargs) -> bool:
    """Whether a call copies a tensor to the host: `t.cpu()`, or `t.to(...)` naming the CPU."""
    if func is torch.Tensor.cpu:
        return True
    named = [*args[1:], kwargs.get("device")]
    return func is torch.Tensor.to and any(
        (isinstance(a, str) and a.startswith("cpu")) or (isinstance(a, torch.device) and a.type == "cpu") for a in named
    )


class DeviceMixing(TorchFunctionMode):
    """Records, as `Call`s in `calls`, each factory call without `device=` and each `t.numpy()` on a tensor that
    did not come through `.cpu()` (or `.to("cpu")`), made from the code in `where`: modules (any code in their
    file) and functions (their own body only, under any decorator)."""

    def __init__(self, *where):
        super().__init__()
        self.files = {w.__file__ for w in where if hasattr(w, "__file__")}
        self.codes = {inspect.unwrap(w).__code__ for w in where if callable(w)}  # under @torch.inference_mode()
        self.calls: list[Call] = []
        self._host: list[torch.Tensor] = []  # what came through .cpu(): held, so that `is` stays meaningful

    def _record(self, what: str) -> None:
        file, line, function, code = _caller()
        if file in self.files or code in self.codes:
            self.calls.append(Call(what, file, line, function))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        made = not (func is torch.as_tensor and isinstance(args[0], torch.Tensor))  # as_tensor(t) keeps t's device
        if func in FACTORIES and made and kwargs.get("device") is None:
            self._record(f"torch.{func.__name__} without device=")
        if func is torch.Tensor.numpy and not any(args[0] is t for t in self._host):
            self._record(".numpy() without .cpu()")
        out = func(*args, **kwargs)
        if _to_host(func, args, kwargs):
            self._host.append(out)
        return out
