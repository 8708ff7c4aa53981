"""headbench on a tiny random head: the rows it times, on one device (the meta device and a check of every tensor
made inside stand in for a GPU)."""

import pytest
import torch
from device_checks import DeviceMixing

from dropmatch.heads import sparse_complement_logits
from dropmatch.lab import headbench

SHAPE = {"hidden": 16, "vocab": 64, "K": 3, "positions": 2}
DENSE = ("plain head, all positions", "K=3 paths, dense, all positions", "K=3 paths, dense, 1 position (lazy)")


def test_the_inputs_lie_on_the_device_asked_for():
    x = headbench.head_inputs(**SHAPE, device="meta", dtype=torch.bfloat16, p_drop=0.3)
    assert {t.device.type for t in vars(x).values()} == {"meta"}
    assert x.W.dtype == x.h.dtype == torch.bfloat16 and x.masks.shape == (2, 3, 16)


def test_the_shape_only_rows_run_on_the_inputs_device():
    """On meta inputs a CPU tensor mixed in would raise; the products' results stay on meta."""
    rows = headbench.timed_rows(headbench.head_inputs(**SHAPE, device="meta", dtype=torch.float32, p_drop=0.3), 0.3)
    for name in DENSE:
        assert rows[name]().device.type == "meta", name


def test_the_timed_rows_make_no_tensor_off_the_inputs_device():
    """Every row once on CPU inputs: nothing headbench (or the sparse-complement product) times makes a tensor on
    the default device, which on CUDA would mix with the inputs."""
    rows = headbench.timed_rows(headbench.head_inputs(**SHAPE, device="cpu", dtype=torch.float32, p_drop=0.3), 0.3)
    with DeviceMixing(headbench, sparse_complement_logits) as mixing:
        for fn in rows.values():
            fn()
    assert [str(c) for c in mixing.calls] == []


def test_the_table_times_every_row_against_the_plain_head():
    table = headbench.run_headbench(**SHAPE, device="cpu", dtype=torch.float32, repeat=1)
    assert list(table.columns) == ["ms", "x plain"] and (table["ms"] > 0).all()
    assert table.loc["plain head, all positions", "x plain"] == pytest.approx(1.0)
    assert "K=3 paths, sparse-complement, all positions" in table.index
