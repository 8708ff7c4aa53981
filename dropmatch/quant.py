"""A lean draft: weight-only int8 (or int4) for every linear layer of the draft model, and a pruned draft head (the
target stays exact); and, as an option, a 4-bit target body.

Per-output-channel symmetric scales (w ≈ scale[o] · q[o, i], q in [-127, 127]) and torch's int8 weight-only
matmul (`torch._weight_int8pack_mm`), which reads a quarter of the float32 bytes and half of bf16's. It pays where
the activations are bf16 (about 2x per matmul on this project's CPU); in float32 the kernel is slower than dense,
so use it with a bf16 pair. torch has the kernel on the CPU and, for the same packing, on CUDA (a plain kernel, one
thread per output, in float32: whether it beats the stock bf16 draft there is for `bench --draft-quant int8` to
say); on any other device the int8 draft is refused (`LEAN_DEVICES`).

int4 (CPU only): one scale and zero per group of 32 inputs, asymmetric (the group's minimum is code 0, its maximum
code 15), run by torch's packed int4 kernel (`torch._weight_int4pack_mm_for_cpu`): an eighth of float32's bytes, and
at one row, as a draft step is, about 3-4x a bf16 product on this project's CPU. The embedded draft's weights are
GGUF Q4_K blocks, 32 wide like these groups, so most groups land back on their own grid. torch's CUDA int4 kernel
reads another packing (`torch._convert_weight_to_int4pack`'s tiles), so off the CPU the int4 draft is refused.

The target's body can run in the same int4 format (`quantize_target_int4`, CPU only): never its head, whose
products are z and every dropout path; on the embedded pair only the layers its GGUF file stores in Q4_K
(`q4_layers`). It is another model (the kernel's scales and zeros are bf16), so it is an option, not the reference.

A lean draft is quantised from the weights in memory: a draft that accelerate offloaded (a `device_map` that puts
layers on "cpu" or "disk" beside a GPU leaves their weights on the meta device) is refused, not quantised from
empty weights.

Speculative decoding stays lossless with any draft: the target verifies every token, and q, the distribution
the tests read, is the one the quantised draft produced. The draft's acceptance can change (its argmax can move
at near-ties); `python -m dropmatch bench --draft-quant int8` measures by how much.

The pruned head (the idea of FR-Spec, Zhao et al., arXiv 2502.14856) scores only the N most frequent tokens;
the rest get probability 0 in q, so the draft never proposes them and the target's correction supplies them.
FR-Spec counts frequencies on a corpus; with no corpus at hand, the kept set here is the N lowest ids of a
byte-level BPE vocabulary, whose ids follow merge order (a merge learnt earlier was more frequent in the
tokenizer's training corpus), plus every special token (end tokens must stay reachable).
"""

from __future__ import annotations

import torch
from torch import nn

from dropmatch.config import DRAFT_QUANTS

# The devices where torch runs each lean draft's packing with a kernel of its own (every other device is refused).
LEAN_DEVICES = {"int8": ("cpu", "cuda"), "int4": ("cpu",)}
DEVICE_WORDS = {"cpu": "the CPU", "cuda": "CUDA"}
STOCK_DRAFT = "use the stock draft (draft_quant='none')"


def check_lean_device(kind: str, device: str | torch.device) -> None:
    """Refuse the lean draft `kind` (one of DRAFT_QUANTS) on a device where torch has no kernel for its packing:
    a clear ValueError that names the devices it runs on and says to use the stock draft there."""
    if kind == "none":
        return
    try:
        where = torch.device(device).type
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}; expected cpu, cuda or cuda:N") from None
    if where not in LEAN_DEVICES[kind]:
        runs = " or ".join(DEVICE_WORDS[d] for d in LEAN_DEVICES[kind])
        raise ValueError(
            f"the {kind} draft runs on {runs} only (torch's packed {kind} kernel); on {where}, {STOCK_DRAFT}"
        )


def check_target_device(kind: str, device: str | torch.device) -> None:
    """Refuse the 4-bit target off the CPU (torch's int4 kernel of this packing is a CPU one): a clear ValueError."""
    where = torch.device(device).type if kind != "none" else "cpu"
    if where != "cpu":
        raise ValueError(
            f"the {kind} target runs on the CPU only (torch's packed {kind} kernel); on {where}, use the bf16 target "
            "(target_quant='none')"
        )


def check_in_memory(model: nn.Module, kind: str) -> None:
    """Refuse to quantise a draft whose weights are not all in memory on one of the lean draft's devices: one that
    accelerate offloaded (weights on the meta device, layers mapped to "cpu" or "disk" beside a GPU), or one on
    a device without the kernel (`check_lean_device`)."""
    devices = {p.device.type for p in model.parameters()}
    if "meta" in devices:
        mapped = sorted({str(d) for d in (getattr(model, "hf_device_map", None) or {}).values()} & {"cpu", "disk"})
        how = f" (its device_map puts layers on {' and '.join(mapped)})" if mapped else ""
        raise ValueError(
            f"the {kind} draft is quantised from its weights in memory, and this draft is offloaded{how}: its "
            f"weights are on the meta device. Load it whole on one device (no device_map), or {STOCK_DRAFT}"
        )
    for where in sorted(devices):
        check_lean_device(kind, where)


def dequantised_product(x: torch.Tensor, weight: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """x @ (scales · weight).T computed as the int8 kernel does: the product with the int8 weights, then the
    per-channel scales (the kernel's reference; what a device without the kernel would run).  # [n, out]"""
    return torch.nn.functional.linear(x, weight.to(x.dtype)) * scales


class Int8Linear(nn.Module):
    """A linear layer with int8 weights [out, in] and per-output-channel scales [out] (in the activations' dtype)."""

    def __init__(self, weight: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("scales", scales)
        self.register_buffer("bias", bias)
        self.out_features, self.in_features = weight.shape

    @classmethod
    def of(cls, linear: nn.Linear) -> Int8Linear:
        """`linear` quantised: symmetric, per output channel (w ≈ scale[o] · q[o, i], q in [-127, 127])."""
        w = linear.weight.detach().float()
        scale = w.abs().amax(dim=1).clamp_min(1e-12) / 127.0  # [out]
        q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(q, scale.to(linear.weight.dtype), bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.scales.dtype).contiguous()  # [n, in]
        if flat.device.type in LEAN_DEVICES["int8"]:
            # the early CUDA kernel returns float32 whatever it was given: back to the activations' dtype
            y = torch._weight_int8pack_mm(flat, self.weight, self.scales).to(flat.dtype)
        else:  # a layer moved after loading to a device without the kernel (loading refuses those)
            y = dequantised_product(flat, self.weight, self.scales)
        y = y.reshape(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 weights"


INT4_GROUP = 32  # weights per scale and zero along the input dimension (a GGUF Q4_K sub-block is 32 wide too)


class Int4Linear(nn.Module):
    """A linear layer with 4-bit weights, one scale and zero per group of INT4_GROUP inputs, in torch's packed CPU
    format (w = (q - 8) * scale + zero, q in 0..15), run by `torch._weight_int4pack_mm_for_cpu`."""

    def __init__(self, packed: torch.Tensor, scales_zeros: torch.Tensor, shape: tuple[int, int], bias=None):
        super().__init__()
        self.register_buffer("packed", packed)
        self.register_buffer("scales_zeros", scales_zeros)  # [in / group, out, 2]
        self.register_buffer("bias", bias)
        self.out_features, self.in_features = shape

    @staticmethod
    def fits(linear: nn.Linear) -> bool:
        """Whether torch's kernel takes this shape: whole groups of inputs, outputs in multiples of 16."""
        out, inp = linear.weight.shape
        return inp % INT4_GROUP == 0 and out % 16 == 0

    @classmethod
    def of(cls, linear: nn.Linear) -> Int4Linear:
        """`linear` quantised per group of INT4_GROUP inputs, asymmetric: the group's minimum is code 0, its maximum
        code 15."""
        w = linear.weight.detach().float()
        out, inp = w.shape
        groups = w.reshape(out, inp // INT4_GROUP, INT4_GROUP)
        low, high = groups.amin(-1), groups.amax(-1)
        scale = ((high - low) / 15).clamp_min(1e-12)  # [out, groups]
        q = torch.round((groups - low[..., None]) / scale[..., None]).clamp(0, 15).reshape(out, inp)
        packed = torch._convert_weight_to_int4pack_for_cpu(q.to(torch.int32), 1)
        zero = low + 8 * scale  # torch's format: w = (q - 8) * scale + zero
        scales_zeros = torch.stack([scale, zero], -1).transpose(0, 1).contiguous().to(linear.weight.dtype)
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(packed, scales_zeros, (out, inp), bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.scales_zeros.dtype).contiguous()  # [n, in]
        y = torch._weight_int4pack_mm_for_cpu(flat, self.packed, INT4_GROUP, self.scales_zeros)
        y = y.reshape(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, int4 weights (groups of {INT4_GROUP})"
        )


def quantize_int4(model: nn.Module) -> int:
    """Replace every nn.Linear of `model` whose shape torch's int4 kernel takes (its LM head included) by an
    Int4Linear, in place; the count replaced. CPU only: torch has no int4 kernel of this format elsewhere."""
    check_lean_device("int4", next(model.parameters()).device)
    return _swap_linears(model, Int4Linear.of, Int4Linear.fits)


def _swap_linears(model: nn.Module, make, takes=lambda linear: True) -> int:
    """Replace each nn.Linear child that `takes` accepts by `make(linear)`, in place; the count replaced."""
    swaps = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if isinstance(child, nn.Linear) and takes(child)
    ]
    for parent, name, child in swaps:
        setattr(parent, name, make(child))
    return len(swaps)


# The linear layers a GGUF file names per block, and their modules in a transformers Qwen2 / Llama model.
GGUF_LINEARS = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def q4_layers(gguf_path: str) -> set[str]:
    """The modules ("model.layers.3.mlp.up_proj") whose weights the GGUF file holds in Q4_K blocks: those that come
    back to their own 4-bit grid in groups of 32 (a Q4_K_M file keeps some attn_v and ffn_down in Q6_K, which 4 bits
    would coarsen)."""
    import gguf

    out = set()
    for tensor in gguf.GGUFReader(gguf_path).tensors:
        parts = tensor.name.split(".")  # blk.<i>.<name>.weight
        if len(parts) == 4 and parts[0] == "blk" and parts[2] in GGUF_LINEARS and tensor.tensor_type.name == "Q4_K":
            out.add(f"model.layers.{parts[1]}.{GGUF_LINEARS[parts[2]]}")
    return out


def quantize_target_int4(model: nn.Module, only: set[str] | None = None) -> int:
    """Every linear layer of the target's body that torch's int4 kernel takes in 4 bits (Int4Linear), in place, where
    `only` (module names) allows; the count replaced. Never the head: the unmasked logits z and every dropout path are
    products with the dense head. CPU only."""
    check_target_device("int4", next(model.parameters()).device)
    head = model.get_output_embeddings()
    swaps = [
        (model.get_submodule(name.rpartition(".")[0]), name.rpartition(".")[2], module)
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear)
        and module is not head
        and Int4Linear.fits(module)
        and (only is None or name in only)
    ]
    for parent, name, module in swaps:
        setattr(parent, name, Int4Linear.of(module))
    return len(swaps)


def quantize_int8(model: nn.Module) -> int:
    """Replace every nn.Linear of `model` (its LM head included) by an Int8Linear, in place; the count replaced.
    A head tied to the input embeddings is untied: the embeddings keep their own weights."""
    return _swap_linears(model, Int8Linear.of)


def quantize(model: nn.Module, kind: str) -> nn.Module:
    """The model with its draft quantisation `kind` (one of DRAFT_QUANTS) applied in place; an offloaded draft, or
    one on a device without the kind's kernel, is refused (`check_in_memory`)."""
    if kind not in DRAFT_QUANTS:
        raise ValueError(f"draft quantisation must be one of {', '.join(DRAFT_QUANTS)}; got {kind!r}")
    if kind != "none":
        check_in_memory(model, kind)
    if kind == "int8":
        quantize_int8(model)
    elif kind == "int4":
        quantize_int4(model)
    return model


def frequent_ids(tokenizer, n: int) -> torch.Tensor:
    """The kept set of a pruned head: ids 0..n-1 (BPE merge order, the most frequent first) and every special
    token, sorted.  # [N]"""
    special = [i for i in tokenizer.added_tokens_decoder if i >= n]
    return torch.tensor(sorted(set(range(n)) | set(special)), dtype=torch.long)


class PrunedHead(nn.Module):
    """An LM head that scores only the `kept` rows of `head` (nn.Linear or Int8Linear); every other logit is -inf."""

    def __init__(self, head: nn.Module, kept: torch.Tensor):
        super().__init__()
        kept = kept.to(head.weight.device)
        bias = None if head.bias is None else head.bias.detach()[kept].clone()
        if isinstance(head, Int8Linear):
            self.sub = Int8Linear(head.weight[kept].clone(), head.scales[kept].clone(), bias)
        else:
            self.sub = nn.Linear(
                head.in_features, len(kept), bias=bias is not None, device=head.weight.device, dtype=head.weight.dtype
            )
            with torch.no_grad():
                self.sub.weight.copy_(head.weight.detach()[kept])
                if bias is not None:
                    self.sub.bias.copy_(bias)
        self.register_buffer("kept", kept)
        self.in_features, self.out_features = head.in_features, head.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.sub(x)  # [..., N]
        out = z.new_full((*z.shape[:-1], self.out_features), float("-inf"))
        out[..., self.kept] = z
        return out

    def extra_repr(self) -> str:
        return f"scores {len(self.kept)} of {self.out_features} tokens"


def prune_head(model: nn.Module, tokenizer, n: int) -> nn.Module:
    """The model with its LM head scoring only `frequent_ids(tokenizer, n)`, in place."""
    head = model.get_output_embeddings()
    if isinstance(head, Int4Linear):
        raise ValueError("a pruned draft head goes with the stock or the int8 draft, not int4")
    if not 1 <= n < head.out_features:
        raise ValueError(f"the draft vocabulary must be an integer in [1, {head.out_features - 1}]; got {n!r}")
    model.set_output_embeddings(PrunedHead(head, frequent_ids(tokenizer, n)))
    return model
