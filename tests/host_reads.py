"""Counting a decode's host reads on the CPU: what would be a host sync on a GPU.

On a GPU, reading a device value on the host (`int(t)`, `t.tolist()`, `t.cpu()`) waits for the device. On the CPU
nothing waits, so the count is made by taint: every tensor a model body returns is marked as device-resident, and
every tensor computed from a marked one is marked too (a `TorchFunctionMode`); a read of a marked tensor is counted,
with its bytes. Reads inside the model bodies (transformers' own) are left out: a GPU check counts those there. One
`dropmatch.host.fetch` is one read, whatever it holds. `t.to(device)` is not counted as a read: on the CPU the device
and the host are one, so a move to the run's device cannot be told from a move to the host (write `.cpu()` for the
latter).

Host-to-device copies of host data block too (from pageable memory the host waits for the copy, and the copy for
the queue): each is counted per round as a copy. A copy is `torch.tensor(data, device=...)`, a `.to(device)` or
`.cuda()` of a tensor made on the host without `non_blocking=True` (from pinned memory a copy does not wait), and a
device tensor indexed with a Python list or a host tensor (the index is copied first). Tensors made on the device
(`torch.arange(..., device=...)`, `torch.full(..., device=...)`: fills, no copy) count as device values.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from dropmatch import decode, host

READS = {
    torch.Tensor.tolist,
    torch.Tensor.item,
    torch.Tensor.__bool__,
    torch.Tensor.__int__,
    torch.Tensor.__float__,
    torch.Tensor.__index__,
    torch.Tensor.cpu,
    torch.Tensor.numpy,
}


@dataclass
class Tally:
    """Reads of device values and their bytes, per round."""

    reads: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)  # host-to-device copies of host data

    def copy(self) -> None:
        if self.copies:
            self.copies[-1] += 1

    def add(self, tensors: list[torch.Tensor]) -> None:
        if self.reads:
            self.reads[-1] += 1
            self.bytes[-1] += sum(t.numel() * t.element_size() for t in tensors)


class _Taint(TorchFunctionMode):
    def __init__(self, tally: Tally):
        super().__init__()
        self.tally, self.marked, self.quiet = tally, {}, 0

    def mark(self, tree) -> None:
        for t in pytree.tree_leaves(tree):
            if isinstance(t, torch.Tensor):
                self.marked[id(t)] = t  # held, so its id is not reused

    def is_marked(self, tree) -> list[torch.Tensor]:
        return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor) and id(t) in self.marked]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = self.is_marked((args, kwargs))
        if inputs and not self.quiet and func in READS:
            self.tally.add(inputs[:1])
        moved = self._copies_in(func, args, kwargs)
        if moved == "blocking" and not self.quiet:
            self.tally.copy()
        out = func(*args, **kwargs)
        if moved or (func in FACTORIES and kwargs.get("device") is not None):
            self.mark(out)  # on the device now
            return out
        if func in (torch.Tensor.cpu, torch.Tensor.numpy):  # a host copy (on the CPU, the tensor itself)
            self.marked.pop(id(out), None)
        elif inputs:
            self.mark(out)
            if getattr(func, "__name__", "").endswith("_") or func is torch.Tensor.__setitem__:
                self.mark(args[0])  # in place: the target now holds device values
        return out

    def _copies_in(self, func, args, kwargs) -> str | None:
        """ "blocking" for a host-to-device copy that waits, "queued" for one from pinned memory, else None."""
        if func in (torch.tensor, torch.as_tensor):
            return "blocking" if kwargs.get("device") is not None else None
        if func in (torch.Tensor.to, torch.Tensor.cuda) and args and not self.is_marked(args[0]):
            to_device = func is torch.Tensor.cuda or "device" in kwargs
            to_device = to_device or any(isinstance(a, (torch.device, str)) for a in args[1:])
            if to_device:
                return "queued" if kwargs.get("non_blocking") else "blocking"
            return None
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and args and self.is_marked(args[0]):
            keys = args[1] if isinstance(args[1], tuple) else (args[1],)
            host = [
                k
                for k in keys
                if isinstance(k, list) or (isinstance(k, torch.Tensor) and k.dim() and not self.is_marked(k))
            ]
            return "blocking" if host else None
        return None


FACTORIES = {torch.arange, torch.full, torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn, torch.full_like}


@contextlib.contextmanager
def counting(monkeypatch):
    """Within the block, every round's host reads are tallied (`Tally.reads[t]` for round t), a batch's round as one."""
    tally = _Taint(Tally())
    hidden, batched, fetch, round_ = decode._Stage.hidden, decode._batched_hidden, host.fetch, decode.run_round

    def marked_hidden(self, ids):
        tally.quiet += 1
        try:
            out = hidden(self, ids)
        finally:
            tally.quiet -= 1
        tally.mark(out)
        return out

    def marked_batched(stages, feeds):
        tally.quiet += 1
        try:
            out = batched(stages, feeds)
        finally:
            tally.quiet -= 1
        tally.mark(out)
        return out

    def one_read(tree):
        inputs = tally.is_marked(tree)
        if inputs and not tally.quiet:
            tally.tally.add(inputs)
        tally.quiet += 1
        try:
            return fetch(tree)
        finally:
            tally.quiet -= 1

    def counted_round(decoders):
        tally.tally.reads.append(0)
        tally.tally.bytes.append(0)
        tally.tally.copies.append(0)
        return round_(decoders)

    monkeypatch.setattr(decode._Stage, "hidden", marked_hidden)
    monkeypatch.setattr(decode, "_batched_hidden", marked_batched)
    monkeypatch.setattr(decode, "fetch", one_read)
    monkeypatch.setattr(decode, "run_round", counted_round)  # a round of one sequence or of a batch
    with tally:
        yield tally.tally
