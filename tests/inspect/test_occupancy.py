"""Theoretical occupancy (cuda_magic/occupancy.py) against hand-computed figures.

Register arithmetic used below (every arch: 64K registers per SM in 4 sub-partitions
of 16384, allocated per warp in units of 256):
  32 regs: 32*32 = 1024/warp -> 16384 // 1024 = 16 warps per sub-partition -> 64 warps/SM
  40 regs: 40*32 = 1280/warp -> 16384 // 1280 = 12                         -> 48 warps/SM
 128 regs: 128*32 = 4096/warp -> 16384 // 4096 = 4                         -> 16 warps/SM
 255 regs: 255*32 = 8160 -> 8192/warp -> 16384 // 8192 = 2                 ->  8 warps/SM
Blocks allowed by registers = warps/SM // warps per block, 0 when the block's
registers (per-warp allocation x warps) exceed 65536: 128 regs x 1024 threads =
4096 x 32 = 131072; 255 regs x 512 threads = 8192 x 16 = 131072 (256 threads:
8192 x 8 = 65536 fits).

Shared memory: 40 KB static + 1 KB reserved (8.0+) = 41984 B (a multiple of 128):
  sm_80 164 KB = 167936 // 41984 = 4;  sm_90 228 KB = 233472 // 41984 = 5;
  sm_86 / sm_120 100 KB = 102400 // 41984 = 2;  sm_75 (no reserve) 65536 // 40960 = 1.
No shared memory: 8.0+ still allocates the reserved 1 KB (sm_90: 228 blocks), 7.x nothing.
"""

import pytest

from cuda_magic import compile_source
from cuda_magic.inspect.occupancy import (ARCH_LIMITS, ArchLimits, Occupancy, OccupancyError,
                                  OccupancyTypeError, arch_limits, occupancy, occupancy_table)

KB = 1024

SHAPES = {
    "r32": dict(registers=32),
    "r128": dict(registers=128),
    "r40_s40k": dict(registers=40, static_shared=40 * KB),
    "r255": dict(registers=255),
}

# (arch, shape, block) -> (blocks/SM, active warps, limiter).  Warps per block: 64 -> 2,
# 256 -> 8, 512 -> 16, 1024 -> 32.
EXPECTED = {
    # sm_90: 64 warps, 32 blocks.
    # r32: regs 64//wpb = warps 64//wpb; at 64 threads both 32 = max blocks 32.
    ("sm_90", "r32", 64): (32, 64, "registers and warps and blocks"),
    ("sm_90", "r32", 256): (8, 64, "registers and warps"),
    ("sm_90", "r32", 512): (4, 64, "registers and warps"),
    ("sm_90", "r32", 1024): (2, 64, "registers and warps"),
    # r128: regs 16//wpb = 8, 2, 1, 0 (1024 threads over the per-block register limit).
    ("sm_90", "r128", 64): (8, 16, "registers"),
    ("sm_90", "r128", 256): (2, 16, "registers"),
    ("sm_90", "r128", 512): (1, 16, "registers"),
    ("sm_90", "r128", 1024): (0, 0, "registers"),
    # r40_s40k: regs 48//wpb = 24, 6, 3, 1; smem 5; warps 32, 8, 4, 2.
    ("sm_90", "r40_s40k", 64): (5, 10, "shared memory"),
    ("sm_90", "r40_s40k", 256): (5, 40, "shared memory"),
    ("sm_90", "r40_s40k", 512): (3, 48, "registers"),
    ("sm_90", "r40_s40k", 1024): (1, 32, "registers"),
    # r255: regs 8//wpb = 4, 1, 0, 0.
    ("sm_90", "r255", 64): (4, 8, "registers"),
    ("sm_90", "r255", 256): (1, 8, "registers"),
    ("sm_90", "r255", 512): (0, 0, "registers"),
    ("sm_90", "r255", 1024): (0, 0, "registers"),

    # sm_80: 64 warps, 32 blocks, 164 KB: as sm_90 except smem 4 for r40_s40k.
    ("sm_80", "r32", 64): (32, 64, "registers and warps and blocks"),
    ("sm_80", "r32", 256): (8, 64, "registers and warps"),
    ("sm_80", "r32", 512): (4, 64, "registers and warps"),
    ("sm_80", "r32", 1024): (2, 64, "registers and warps"),
    ("sm_80", "r128", 64): (8, 16, "registers"),
    ("sm_80", "r128", 256): (2, 16, "registers"),
    ("sm_80", "r128", 512): (1, 16, "registers"),
    ("sm_80", "r128", 1024): (0, 0, "registers"),
    # regs 24, 6, 3, 1; smem 4; warps 32, 8, 4, 2: min 4, 4, 3, 1.
    ("sm_80", "r40_s40k", 64): (4, 8, "shared memory"),
    ("sm_80", "r40_s40k", 256): (4, 32, "shared memory"),
    ("sm_80", "r40_s40k", 512): (3, 48, "registers"),
    ("sm_80", "r40_s40k", 1024): (1, 32, "registers"),
    ("sm_80", "r255", 64): (4, 8, "registers"),
    ("sm_80", "r255", 256): (1, 8, "registers"),
    ("sm_80", "r255", 512): (0, 0, "registers"),
    ("sm_80", "r255", 1024): (0, 0, "registers"),

    # sm_120: 48 warps, 24 blocks, 100 KB.
    # r32: regs 32, 8, 4, 2; warps 48//wpb = 24, 6, 3, 1; blocks 24.
    ("sm_120", "r32", 64): (24, 48, "warps and blocks"),
    ("sm_120", "r32", 256): (6, 48, "warps"),
    ("sm_120", "r32", 512): (3, 48, "warps"),
    ("sm_120", "r32", 1024): (1, 32, "warps"),
    # r128: regs 8, 2, 1, 0 < warps 24, 6, 3, 1.
    ("sm_120", "r128", 64): (8, 16, "registers"),
    ("sm_120", "r128", 256): (2, 16, "registers"),
    ("sm_120", "r128", 512): (1, 16, "registers"),
    ("sm_120", "r128", 1024): (0, 0, "registers"),
    # r40_s40k: regs 24, 6, 3, 1; smem 2; warps 24, 6, 3, 1.
    ("sm_120", "r40_s40k", 64): (2, 4, "shared memory"),
    ("sm_120", "r40_s40k", 256): (2, 16, "shared memory"),
    ("sm_120", "r40_s40k", 512): (2, 32, "shared memory"),
    ("sm_120", "r40_s40k", 1024): (1, 32, "registers and warps"),
    ("sm_120", "r255", 64): (4, 8, "registers"),
    ("sm_120", "r255", 256): (1, 8, "registers"),
    ("sm_120", "r255", 512): (0, 0, "registers"),
    ("sm_120", "r255", 1024): (0, 0, "registers"),

    # sm_86: 48 warps, 16 blocks, 100 KB.
    # r32: regs 32, 8, 4, 2; warps 24, 6, 3, 1; blocks 16 binds at 64 threads.
    ("sm_86", "r32", 64): (16, 32, "blocks"),
    ("sm_86", "r32", 256): (6, 48, "warps"),
    ("sm_86", "r32", 512): (3, 48, "warps"),
    ("sm_86", "r32", 1024): (1, 32, "warps"),
    ("sm_86", "r128", 64): (8, 16, "registers"),
    ("sm_86", "r128", 1024): (0, 0, "registers"),
    ("sm_86", "r40_s40k", 256): (2, 16, "shared memory"),
    ("sm_86", "r40_s40k", 1024): (1, 32, "registers and warps"),

    # sm_75: 32 warps, 16 blocks, 64 KB, 256 B unit, nothing reserved.
    # r32: regs 32, 8, 4, 2; warps 32//wpb = 16, 4, 2, 1; blocks 16.
    ("sm_75", "r32", 64): (16, 32, "warps and blocks"),
    ("sm_75", "r32", 256): (4, 32, "warps"),
    ("sm_75", "r32", 512): (2, 32, "warps"),
    ("sm_75", "r32", 1024): (1, 32, "warps"),
    # r128: regs 8, 2, 1, 0 (warps 16, 4, 2, 1).
    ("sm_75", "r128", 64): (8, 16, "registers"),
    ("sm_75", "r128", 256): (2, 16, "registers"),
    ("sm_75", "r128", 512): (1, 16, "registers"),
    ("sm_75", "r128", 1024): (0, 0, "registers"),
    # r40_s40k: smem 1; regs 24, 6, 3, 1; warps 16, 4, 2, 1.
    ("sm_75", "r40_s40k", 64): (1, 2, "shared memory"),
    ("sm_75", "r40_s40k", 256): (1, 8, "shared memory"),
    ("sm_75", "r40_s40k", 512): (1, 16, "shared memory"),
    ("sm_75", "r40_s40k", 1024): (1, 32, "registers and shared memory and warps"),
    ("sm_75", "r255", 64): (4, 8, "registers"),
    ("sm_75", "r255", 256): (1, 8, "registers"),
    ("sm_75", "r255", 512): (0, 0, "registers"),
}


@pytest.mark.parametrize("arch,shape,block", list(EXPECTED))
def test_hand_computed(arch, shape, block):
    blocks, warps, limiter = EXPECTED[arch, shape, block]
    o = occupancy(arch, block, **SHAPES[shape])
    assert (o.blocks, o.warps, o.limiter) == (blocks, warps, limiter)
    assert o.max_warps == ARCH_LIMITS[arch].max_warps_per_sm
    assert o.occupancy == pytest.approx(warps / o.max_warps)
    assert o.block == block and o.arch == arch and o.base_arch == arch
    named = o.limiter.split(" and ")
    assert all(o.limits[n] == blocks for n in named)
    assert all(v is None or v >= blocks for v in o.limits.values())


def test_limits_dict():
    # sm_90, 40 regs, 40 KB static, 256 threads: regs 6, smem 5, warps 8, blocks 32.
    o = occupancy("sm_90", 256, registers=40, static_shared=40 * KB)
    assert dict(o.limits) == {"registers": 6, "shared memory": 5, "barriers": None, "warps": 8,
                              "blocks": 32, "block size": None}
    assert o.shared_allocated == 41984
    assert o.registers_allocated == 1280 * 8
    # No shared memory on 7.x: nothing allocated, so no limit; 8.0+ allocates the 1 KB reserve.
    assert occupancy("sm_75", 128, registers=32).limits["shared memory"] is None
    assert occupancy("sm_90", 128, registers=32).limits["shared memory"] == 228   # 228 KB / 1 KB
    assert occupancy("sm_90", 128, registers=0).limits["registers"] is None


def test_str():
    assert str(occupancy("sm_120", 256, registers=32)) == \
        "256 threads: 6 blocks/SM, 48/48 warps, 100% (warps)"
    # 10 / 64 warps = 15.625%.
    assert str(occupancy("sm_90", 64, registers=40, static_shared=40 * KB)) == \
        "64 threads: 5 blocks/SM, 10/64 warps, 15.6% (shared memory)"
    assert str(occupancy("sm_90", 1024, registers=128)) == \
        "1024 threads: 0 blocks/SM, 0/64 warps, 0% (registers)"


def test_full_block_register_boundary():
    # 64 regs x 1024 threads = 2048/warp x 32 warps = 65536: exactly the per-block limit, so it
    # launches: 16384 // 2048 = 8 warps per sub-partition -> 32 warps/SM -> 1 block (warps allow 2).
    o = occupancy("sm_90", 1024, registers=64)
    assert (o.blocks, o.warps, o.limiter) == (1, 32, "registers")
    assert o.limits["warps"] == 2
    # 65 regs: 2080 -> 2304/warp x 32 = 73728 > 65536: cannot launch.
    o = occupancy("sm_90", 1024, registers=65)
    assert (o.blocks, o.limiter) == (0, "registers")
    # More than 255 registers per thread never launches.
    assert occupancy("sm_90", 32, registers=256).limits["registers"] == 0


def test_dynamic_shared_opt_in():
    # sm_90: opt-in max 227 KB; 227 KB + 1 KB reserved = 228 KB = the whole SM: 1 block.
    o = occupancy("sm_90", 128, registers=32, dynamic_shared=227 * KB)
    assert (o.blocks, o.limiter) == (1, "shared memory")
    o = occupancy("sm_90", 128, registers=32, dynamic_shared=227 * KB + 1)
    assert (o.blocks, o.limiter, o.limits["shared memory"]) == (0, "shared memory", 0)
    # Static counts toward the same opt-in limit.
    assert occupancy("sm_90", 128, registers=32, static_shared=40 * KB,
                     dynamic_shared=187 * KB + 1).blocks == 0
    # 48 KB dynamic needs no opt-in: 48 + 1 = 49 KB/block, 228 // 49 = 4.
    assert occupancy("sm_90", 128, registers=32, dynamic_shared=48 * KB).limits["shared memory"] == 4
    # Per-arch opt-in maxima: 7.0 96 KB, 7.5 64 KB (nothing reserved), 8.6 99 KB, 12.0 99 KB.
    for arch, kb in (("sm_70", 96), ("sm_75", 64), ("sm_86", 99), ("sm_120", 99), ("sm_80", 163)):
        assert occupancy(arch, 128, registers=32, dynamic_shared=kb * KB).blocks == 1, arch
        o = occupancy(arch, 128, registers=32, dynamic_shared=kb * KB + 1)
        assert (o.blocks, o.limiter) == (0, "shared memory"), arch


def test_shared_rounding():
    # 8.0+: 128 B unit.  1 B static + 1 KB reserved = 1025 -> 1152; 233472 // 1152 = 202.
    assert occupancy("sm_90", 32, registers=16, static_shared=1).shared_allocated == 1152
    assert occupancy("sm_90", 32, registers=16, static_shared=1).limits["shared memory"] == 202
    # 7.x: 256 B unit, no reserve.  1 B -> 256; 98304 // 256 = 384.
    o = occupancy("sm_70", 32, registers=16, static_shared=1)
    assert (o.shared_allocated, o.limits["shared memory"]) == (256, 384)


def test_barriers():
    # sm_90: 32 blocks x 2 = 64 barriers; 16 per block -> 4 blocks.
    o = occupancy("sm_90", 64, registers=32, barriers=16)
    assert (o.blocks, o.limiter, o.limits["barriers"]) == (4, "barriers", 4)
    # 1 barrier (any __syncthreads): 64, never binding.
    assert occupancy("sm_90", 64, registers=32, barriers=1).limits["barriers"] == 64
    # sm_120: factor 1: 24 // 16 = 1.
    assert occupancy("sm_120", 64, registers=32, barriers=16).limits["barriers"] == 1
    # Before 9.0 cuda_occupancy.h applies no barrier limit.
    assert occupancy("sm_80", 64, registers=32, barriers=16).limits["barriers"] is None
    # sm_90, 256 threads, 8 barriers: 64 // 8 = 8 = warps 8 = registers 8.
    assert occupancy("sm_90", 256, registers=32, barriers=8).limiter == "registers and barriers and warps"


def test_block_size():
    for block in (0, 1025, 2048):
        o = occupancy("sm_90", block, registers=32)
        assert (o.blocks, o.warps, o.occupancy, o.limiter) == (0, 0, 0.0, "block size")
        assert o.limits["block size"] == 0
    # Partial warps count as whole: 33 threads = 2 warps; 64 // 2 = 32 = blocks.
    o = occupancy("sm_90", 33, registers=32)
    assert (o.blocks, o.warps) == (32, 64)
    o = occupancy("sm_90", 1, registers=32)
    assert (o.blocks, o.warps, o.limiter) == (32, 32, "blocks")


def test_arch_suffixes():
    base = occupancy("sm_90", 256, registers=40, static_shared=40 * KB)
    for arch in ("sm_90a", "compute_90", "SM_90A"):
        o = occupancy(arch, 256, registers=40, static_shared=40 * KB)
        assert (o.blocks, o.limiter, o.base_arch, dict(o.limits)) == \
            (base.blocks, base.limiter, "sm_90", dict(base.limits))
        assert o.arch == arch
    assert arch_limits("sm_100f") is ARCH_LIMITS["sm_100"]
    assert arch_limits("sm_120a") is ARCH_LIMITS["sm_120"]


def test_unknown_arch():
    with pytest.raises(OccupancyError) as e:
        occupancy("sm_61", 128, registers=32)
    msg = str(e.value)
    assert "'sm_61'" in msg and "sm_70" in msg and "sm_121" in msg
    assert e.value.key == "arch" and isinstance(e.value, ValueError)
    for bad in ("sm_90b", "gfx90a", "", "sm_9"):
        with pytest.raises(OccupancyError, match="known"):
            arch_limits(bad)
    with pytest.raises(OccupancyTypeError, match="arch"):
        arch_limits(90)


@pytest.mark.parametrize("kw,key", [
    (dict(registers=-1), "registers"),
    (dict(registers=32, static_shared=-4), "static_shared"),
    (dict(registers=32, dynamic_shared=-1), "dynamic_shared"),
    (dict(registers=32, barriers=-1), "barriers"),
])
def test_negative_values(kw, key):
    with pytest.raises(OccupancyError, match=key) as e:
        occupancy("sm_90", 128, **kw)
    assert e.value.key == key and isinstance(e.value, ValueError)


@pytest.mark.parametrize("block,kw,key", [
    (128.0, dict(registers=32), "block"),
    ("128", dict(registers=32), "block"),
    (True, dict(registers=32), "block"),
    (None, dict(registers=32), "block"),
    (128, dict(registers=32.5), "registers"),
    (128, dict(registers=None), "registers"),
    (128, dict(registers=32, dynamic_shared=1.5), "dynamic_shared"),
])
def test_types(block, kw, key):
    with pytest.raises(OccupancyTypeError, match=key) as e:
        occupancy("sm_90", block, **kw)
    assert e.value.key == key and isinstance(e.value, TypeError)


def test_negative_block():
    with pytest.raises(OccupancyError, match="block") as e:
        occupancy("sm_90", -32, registers=32)
    assert e.value.key == "block"


def test_table():
    rows = occupancy_table("sm_90", registers=40, static_shared=40 * KB)
    assert [r.block for r in rows] == [32, 64, 128, 256, 512, 1024]
    assert all(isinstance(r, Occupancy) for r in rows)
    # 32 threads: regs 48, smem 5, warps 64, blocks 32 -> 5.
    assert [(r.blocks, r.limiter) for r in rows] == [
        (5, "shared memory"), (5, "shared memory"), (5, "shared memory"),
        (5, "shared memory"), (3, "registers"), (1, "registers")]
    assert [r.block for r in occupancy_table("sm_80", registers=32, blocks=[96, 192])] == [96, 192]
    with pytest.raises(OccupancyTypeError, match="blocks"):
        occupancy_table("sm_90", registers=32, blocks=256)


def test_table_rows():
    # The figures of the task brief / Programming Guide / cuda_occupancy.h, row by row.
    warps = {"sm_70": 64, "sm_72": 64, "sm_75": 32, "sm_80": 64, "sm_86": 48, "sm_87": 48,
             "sm_89": 48, "sm_90": 64, "sm_100": 64, "sm_103": 64, "sm_120": 48, "sm_121": 48}
    blocks = {"sm_70": 32, "sm_72": 32, "sm_75": 16, "sm_80": 32, "sm_86": 16, "sm_87": 16,
              "sm_89": 24, "sm_90": 32, "sm_100": 32, "sm_103": 32, "sm_120": 24, "sm_121": 24}
    smem_kb = {"sm_70": 96, "sm_72": 96, "sm_75": 64, "sm_80": 164, "sm_86": 100, "sm_87": 164,
               "sm_89": 100, "sm_90": 228, "sm_100": 228, "sm_103": 228, "sm_120": 100, "sm_121": 100}
    assert list(ARCH_LIMITS) == list(warps)
    for name, row in ARCH_LIMITS.items():
        assert isinstance(row, ArchLimits) and row.name == name
        assert row.max_warps_per_sm == warps[name]
        assert row.max_blocks_per_sm == blocks[name]
        assert row.shared_per_sm == smem_kb[name] * KB
        assert row.shared_configs_kb[-1] == smem_kb[name]       # default carveout = max
        ampere = row.compute_capability >= (8, 0)
        assert row.shared_per_block_optin == (smem_kb[name] - (1 if ampere else 0)) * KB
        assert row.shared_unit == (128 if ampere else 256)
        assert row.shared_reserved == (KB if ampere else 0)
        assert (row.registers_per_sm, row.registers_per_block, row.max_registers_per_thread,
                row.register_unit, row.sub_partitions) == (65536, 65536, 255, 256, 4)
    with pytest.raises(Exception):
        ARCH_LIMITS["sm_90"].max_warps_per_sm = 1


TILE = r'''
extern "C" __global__ void tile(const float* x, float* y, int n) {
    __shared__ float buf[10240];                       // 40 KB static
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = threadIdx.x; k < 10240; k += blockDim.x) buf[k] = i < n ? x[i] + k : 0.f;
    __syncthreads();
    if (i < n) y[i] = buf[(threadIdx.x * 7) % 10240];
}
'''


def test_from_ptxas_figures():
    res = compile_source(TILE, {"cuda": {"arch": "sm_90a"}}).resources["tile"]
    assert res.shared == 40 * KB and res.barriers >= 1 and 0 < res.registers <= 40
    o = occupancy(res.arch, 256, registers=res.registers, static_shared=res.shared,
                  barriers=res.barriers)
    assert o.base_arch == "sm_90" and o.registers == res.registers
    # 40 KB + 1 KB = 41984 B -> 233472 // 41984 = 5 blocks; registers (<= 40) allow >= 6 of 8
    # warps each; warps allow 8; 32 x 2 // barriers >= 5 for up to 12 barriers.
    assert o.shared_allocated == 41984
    assert (o.blocks, o.warps, o.limiter) == (5, 40, "shared memory")
    per_warp = -(-res.registers * 32 // 256) * 256
    assert o.limits["registers"] == (16384 // per_warp) * 4 // 8
    assert o.limits["barriers"] == 64 // res.barriers
