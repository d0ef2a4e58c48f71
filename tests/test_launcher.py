"""The prepared launch path (runtime/launcher.py) without a GPU: argument
packing and the launch configuration it builds once."""
import numpy as np
import pytest

from sgemm.runtime import launcher


def test_pack_args_puts_each_argument_in_its_own_slot():
    slots = launcher.pack_args((np.int32(-3), np.float32(1.5), 2**40 + 8, -1, np.int64(7)))
    assert slots.itemsize == 8 and len(slots) == 5
    raw = np.frombuffer(slots, dtype=np.uint8).reshape(5, 8)
    assert raw[0, :4].view(np.int32)[0] == -3 and not raw[0, 4:].any()
    assert raw[1, :4].view(np.float32)[0] == 1.5 and not raw[1, 4:].any()
    assert int(slots[2]) == 2**40 + 8
    assert int(slots[3]) == 2**64 - 1          # -1 as a 64-bit two's complement
    assert int(slots[4]) == 7


@pytest.mark.parametrize("bad", [1.5, "x", None, np.complex64(1)])
def test_pack_args_rejects_what_it_cannot_type(bad):
    with pytest.raises(TypeError, match="kernel argument 1"):
        launcher.pack_args((np.int32(1), bad))


class _FakeKernel:
    handle = 0


@pytest.mark.parametrize("pdl", [False, True])
def test_prepared_launch_builds_its_configuration_once(pdl):
    k = _FakeKernel()
    if pdl:
        launcher._pdl.add(id(k))
    try:
        args = (np.int32(64), np.int32(32), np.int32(16), np.float32(2.0), 2**36, 64, 0)
        p = launcher.PreparedLaunch(k, (3, 2, 1), 256, 1024, args, relocs=((4, 0, 16),))
    finally:
        launcher._pdl.discard(id(k))
    cfg = p.config(0)
    assert p.config(0) is cfg                  # built once per stream
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ) == (3, 2, 1)
    assert (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ) == (256, 1, 1)
    assert cfg.sharedMemBytes == 1024
    assert cfg.numAttrs == (1 if pdl else 0)
    # the void** array points at the packed slots, one per argument, in order
    base = p._slots.buffer_info()[0]
    assert list(p._params) == [base + 8 * i for i in range(len(args))]
    assert p._params_addr == p._params.buffer_info()[0]
    assert p._slots[4] == 2**36 and p._slots[5] == 64
