"""Device-to-host reads in one place: a round reads the values its device tensors hold through `fetch`, one copy each.

On a GPU every read of a device value (`int(t)`, `t.tolist()`, `t.cpu()`) waits for the device's queue to drain
(a host sync). A round of the decoder needs its decisions (the lossless test, the rule's verdicts, the target's
argmax) on the host once, to cut the output and the caches, and its records' scalars once, to write the trace:
`fetch` gathers any nesting of tensors into one flat float64 copy, so each of those reads is one sync whatever
it holds. float64 holds every float32 value, and every token id, exactly. On the CPU it is a plain `tolist`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree


def fetch(tree: Any) -> Any:
    """The same nesting (dicts, lists, tuples) with each tensor replaced by its values as Python numbers or lists:
    bool tensors give bools, integer tensors ints, float tensors floats. One device-to-host copy for the lot."""
    leaves, spec = pytree.tree_flatten(tree)
    tensors = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    devices = {leaves[i].device for i in tensors}
    if devices <= {torch.device("cpu")}:
        values = {i: leaves[i].tolist() for i in tensors}
    else:
        flat = torch.cat([leaves[i].detach().reshape(-1).to(torch.float64) for i in tensors]).cpu().tolist()
        values, start = {}, 0
        for i in tensors:
            t, n = leaves[i], leaves[i].numel()
            part = torch.tensor(flat[start : start + n], dtype=torch.float64).reshape(t.shape).to(t.dtype)
            values[i], start = part.tolist(), start + n
    out = [values.get(i, leaf) for i, leaf in enumerate(leaves)]
    return pytree.tree_unflatten(out, spec)


def to_device(t: torch.Tensor, device: torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Host data (drawn on the CPU: dropout masks, uniforms) onto the device without waiting for it: on CUDA copied
    from pinned memory asynchronously (the copy is queued behind the work already queued; nothing syncs), elsewhere
    the tensor itself."""
    if torch.device(device).type == "cuda":
        t = t.pin_memory()
    return t.to(device, dtype, non_blocking=True)


def index(positions: list[int]) -> slice | list[int]:
    """Positions of a tensor's first axis as a slice where they run in order, one by one (a slice is a view: a list
    index is copied to the device first, a blocking host-to-device copy on a GPU); the list otherwise."""
    if positions and positions == list(range(positions[0], positions[-1] + 1)):
        return slice(positions[0], positions[-1] + 1)
    return positions
