"""Tests for cuda_magic.config: defaults, snapshots, JSON, layering, presets, errors.

Pure data; no GPU or CUDA toolkit needed.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuda_magic
from cuda_magic import config as cfgmod
from cuda_magic.compile.compiler import resolve_layers
from cuda_magic.config import (
    DEFAULTS, KEYS, RESERVED, ConfigError, Resolved, canonical_json, from_json, get_preset,
    list_presets, parse_backend_config, register_preset, resolve, validate,
)

DEFAULT_FAST = ["--use_fast_math"]
DEFAULT_PTXAS = ["-v", "--warn-on-local-memory-usage", "--register-usage-level=10"]


# ---- defaults ---------------------------------------------------------------

def test_defaults_resolved():
    r = resolve()
    assert r.config == {
        "compiler": "nvrtc",
        "nvcc": DEFAULT_FAST,
        "nvrtc": DEFAULT_FAST,
        "ptxas": DEFAULT_PTXAS,
    }
    assert r.provenance == {"compiler": "default", "nvcc": "default", "nvrtc": "default",
                            "ptxas": "default"}
    assert "arch" not in r and "target_format" not in r
    assert r.get("arch") is None
    with pytest.raises(KeyError):
        r["arch"]


def test_defaults_overridden():
    r = resolve(("cell", {"compiler": "nvcc", "arch": "sm_90a", "ptxas": ["-v"],
                          "target_format": "fatbin"}))
    assert r["compiler"] == "nvcc"
    assert r["arch"] == "sm_90a"
    assert r["ptxas"] == ["-v"]
    assert r["target_format"] == "fatbin"
    assert r["nvrtc"] == DEFAULT_FAST  # untouched keys keep the default
    assert r.provenance == {"arch": "cell", "compiler": "cell", "nvcc": "default",
                            "nvrtc": "default", "ptxas": "cell", "target_format": "cell"}


def test_defaults_none_gives_empty_base():
    r = resolve(("cell", {"arch": "sm_80"}), defaults=None)
    assert r.config == {"arch": "sm_80"}
    assert r.provenance == {"arch": "cell"}


def test_resolve_does_not_mutate_module_defaults():
    before = json.dumps(DEFAULTS, sort_keys=True)
    r = resolve()
    r.config["nvrtc"].append("--ftz=true")
    r["ptxas"].clear()
    assert json.dumps(DEFAULTS, sort_keys=True) == before
    assert resolve()["ptxas"] == DEFAULT_PTXAS


# ---- snapshots ----------------------------------------------------------------

def test_validate_snapshots_input():
    flags = ["--use_fast_math", "--ftz=false"]
    cfg = {"arch": "sm_90a", "nvrtc": flags}
    out = validate(cfg)
    flags.append("--extra")
    cfg["arch"] = "sm_80"
    cfg["ptxas"] = ["-v"]
    assert out == {"arch": "sm_90a", "nvrtc": ["--use_fast_math", "--ftz=false"]}
    assert out["nvrtc"] is not flags


def test_validate_snapshots_nested_input():
    inner = {"nvcc": ["-O3"]}
    out = validate({"cuda": inner})
    inner["nvcc"].append("-lineinfo")
    inner["arch"] = "sm_80"
    assert out == {"nvcc": ["-O3"]}


def test_resolve_snapshots_layers():
    flags = ["-v"]
    session = {"arch": "sm_90a", "ptxas": flags}
    r = resolve(("session", session))
    flags.append("-O0")
    session["arch"] = "sm_80"
    session["compiler"] = "nvcc"
    assert r["ptxas"] == ["-v"]
    assert r["arch"] == "sm_90a"
    assert r["compiler"] == "nvrtc"
    assert r.provenance["compiler"] == "default"


def test_register_preset_snapshots(presets_restored):
    flags = ["--use_fast_math"]
    cfg = {"arch": "sm_90a", "nvrtc": flags}
    register_preset("t_snapshot_preset", cfg)
    flags.append("--ftz=true")
    cfg["arch"] = "sm_80"
    assert get_preset("t_snapshot_preset") == {"arch": "sm_90a", "nvrtc": ["--use_fast_math"]}
    r = resolve_layers(preset="t_snapshot_preset")
    assert r["nvrtc"] == ["--use_fast_math"] and r["arch"] == "sm_90a"


def test_resolved_properties_are_fresh_copies():
    r = resolve(("cell", {"arch": "sm_90a", "nvrtc": ["--ftz=false"]}))
    c = r.config
    c["arch"] = "sm_80"
    c["nvrtc"].append("--extra")
    c["ptxas"].clear()
    del c["compiler"]
    p = r.provenance
    p["arch"] = "session"
    p.clear()
    item = r["nvrtc"]
    item.append("--more")
    assert r.config == {"arch": "sm_90a", "compiler": "nvrtc", "nvcc": DEFAULT_FAST,
                        "nvrtc": ["--ftz=false"], "ptxas": DEFAULT_PTXAS}
    assert r.provenance["arch"] == "cell"
    assert r.config is not r.config
    assert r.provenance is not r.provenance
    assert r.config["nvrtc"] is not r.config["nvrtc"]


def test_resolved_is_hashable_and_equal_by_value():
    a = resolve(("cell", {"arch": "sm_90a", "nvrtc": ["-a", "-b"]}))
    b = resolve(("cell", {"nvrtc": ["-a", "-b"], "arch": "sm_90a"}))
    c = resolve(("session", {"nvrtc": ["-a", "-b"], "arch": "sm_90a"}))
    assert a == b and hash(a) == hash(b)
    assert a.json() == b.json() == c.json()
    assert a != c  # same values, different provenance


def test_with_value_returns_copy():
    r = resolve(("cell", {"arch": "sm_90a"}))
    r2 = r.with_value("target_format", "ptx", "default")
    assert "target_format" not in r
    assert r2["target_format"] == "ptx" and r2.provenance["target_format"] == "default"
    r3 = r2.with_value("arch", None, "cell")
    assert "arch" not in r3 and r2["arch"] == "sm_90a"
    with pytest.raises(ConfigError, match="arch"):
        r.with_value("arch", "compute_90", "cell")


# ---- JSON --------------------------------------------------------------------

def test_canonical_json_round_trip():
    cfg = {"arch": "sm_90a", "compiler": "nvcc", "target_format": "fatbin",
           "nvcc": ["-O3", "-lineinfo"], "ptxas": ["-v"], "nvrtc": []}
    text = canonical_json(cfg)
    assert from_json(text) == cfg
    assert canonical_json(from_json(text)) == text
    # compact and sorted
    assert " " not in text
    assert list(json.loads(text)) == sorted(cfg)


def test_canonical_json_ignores_key_order():
    a = {"arch": "sm_90a", "nvrtc": ["-a"], "compiler": "nvrtc"}
    b = {"compiler": "nvrtc", "nvrtc": ["-a"], "arch": "sm_90a"}
    assert canonical_json(a) == canonical_json(b)
    assert canonical_json({"cuda": b}) == canonical_json(a)


def test_canonical_json_keeps_argument_order():
    a = {"nvrtc": ["--use_fast_math", "--ftz=false"]}
    b = {"nvrtc": ["--ftz=false", "--use_fast_math"]}
    assert canonical_json(a) != canonical_json(b)
    assert from_json(canonical_json(b))["nvrtc"] == ["--ftz=false", "--use_fast_math"]


def test_canonical_json_drops_none_and_empty():
    assert canonical_json(None) == "{}"
    assert canonical_json({}) == "{}"
    assert canonical_json({"arch": None, "nvrtc": ["-a"]}) == '{"nvrtc":["-a"]}'
    assert canonical_json({"nvrtc": []}) == '{"nvrtc":[]}'  # [] is a value, not absence


def test_from_json_nested_form():
    assert from_json('{"cuda": {"arch": "sm_100a"}}') == {"arch": "sm_100a"}


def _not_reserved(flag: str) -> bool:
    s = flag.strip()
    head = s.split(None, 1)[0].split("=", 1)[0] if s else ""
    return bool(s) and head not in RESERVED \
        and cfgmod.bad_char(flag) is None   # a NUL or a lone surrogate is no flag


_flag = st.text(min_size=1, max_size=12).filter(_not_reserved)
_configs = st.fixed_dictionaries(
    {},
    optional={
        "arch": st.from_regex(r"\Asm_[0-9]{2,3}[af]?\Z"),
        "compiler": st.sampled_from(["nvrtc", "nvcc", "my.compiler-2"]),
        "target_format": st.sampled_from(["ptx", "cubin", "fatbin"]),
        "nvcc": st.lists(_flag, max_size=4),
        "nvrtc": st.lists(_flag, max_size=4),
        "ptxas": st.lists(_flag, max_size=4),
    },
).filter(lambda c: not (c.get("compiler") == "nvrtc" and c.get("target_format") == "fatbin"))


@settings(max_examples=150, deadline=None)
@given(cfg=_configs, data=st.data())
def test_json_round_trip_property(cfg, data):
    text = canonical_json(cfg)
    assert from_json(text) == cfg
    assert canonical_json(from_json(text)) == text
    assert canonical_json({"cuda": cfg}) == text
    # any permutation of the keys gives the same canonical JSON
    order = data.draw(st.permutations(list(cfg)))
    assert canonical_json({k: cfg[k] for k in order}) == text
    # validate is a snapshot that equals its (valid) input
    assert validate(cfg) == cfg
    # reversing a list with two distinct items changes the JSON
    for key in ("nvcc", "nvrtc", "ptxas"):
        items = cfg.get(key, [])
        if len(items) >= 2 and items != items[::-1]:
            assert canonical_json({**cfg, key: items[::-1]}) != text


# ---- precedence through the layers -------------------------------------------

def test_five_layers_precedence_and_provenance(presets_restored):
    register_preset("t_five_x", {"arch": "sm_80", "compiler": "nvcc", "target_format": "ptx",
                                 "nvcc": ["-O1"], "ptxas": ["-O1"]})
    layers = (
        ("preset:t_five_x", get_preset("t_five_x")),
        ("session", {"arch": "sm_89", "target_format": "cubin", "nvcc": ["-O2"]}),
        ("cell", {"arch": "sm_90a", "nvcc": ["-O3"]}),
        ("kernel:k", {"nvcc": ["-lineinfo"]}),
    )
    r = resolve(*layers)
    assert r.config == {
        "arch": "sm_90a",
        "compiler": "nvcc",
        "target_format": "cubin",
        "nvcc": ["-lineinfo"],
        "nvrtc": DEFAULT_FAST,
        "ptxas": ["-O1"],
    }
    assert r.provenance == {
        "arch": "cell",
        "compiler": "preset:t_five_x",
        "target_format": "session",
        "nvcc": "kernel:k",
        "nvrtc": "default",
        "ptxas": "preset:t_five_x",
    }


def test_each_layer_wins_over_the_one_below(presets_restored):
    register_preset("t_prec", {"arch": "sm_80"})
    names = ["preset:t_prec", "session", "cell", "kernel:k"]
    archs = ["sm_80", "sm_86", "sm_89", "sm_90a"]
    for top in range(len(names)):
        layers = [(names[i], {"arch": archs[i]}) for i in range(top + 1)]
        r = resolve(*layers)
        assert r["arch"] == archs[top]
        assert r.provenance["arch"] == names[top]
        assert r.provenance["compiler"] == "default"


def test_resolve_layers_all_five(presets_restored):
    register_preset("t_rl_preset", {"arch": "sm_80", "ptxas": ["-O2"], "compiler": "nvcc"})
    r = resolve_layers(
        backend_config={"cuda": {"arch": "sm_90a", "nvcc": ["-O3"]}},
        preset="t_rl_preset",
        session={"arch": "sm_89", "target_format": "fatbin", "nvrtc": ["--ftz=true"]},
        kernel=("k", {"nvcc": ["-lineinfo"], "ptxas": []}),
    )
    assert r.config == {"arch": "sm_90a", "compiler": "nvcc", "target_format": "fatbin",
                        "nvcc": ["-lineinfo"], "nvrtc": ["--ftz=true"], "ptxas": []}
    assert r.provenance == {"arch": "cell", "compiler": "preset:t_rl_preset",
                            "target_format": "session", "nvcc": "kernel:k",
                            "nvrtc": "session", "ptxas": "kernel:k"}


def test_resolve_layers_session_nested_and_json_cell():
    r = resolve_layers('{"cuda": {"ptxas": ["-v"]}}', session={"cuda": {"arch": "sm_90a"}})
    assert r["arch"] == "sm_90a" and r.provenance["arch"] == "session"
    assert r["ptxas"] == ["-v"] and r.provenance["ptxas"] == "cell"


def test_resolve_layers_defaults_only():
    r = resolve_layers()
    assert r == resolve(("session", None), ("cell", {}))
    assert set(r.provenance.values()) == {"default"}


def test_resolve_layers_unknown_preset_lists_known():
    with pytest.raises(ConfigError, match=r"unknown preset 'nope'.*hopper") as e:
        resolve_layers(preset="nope")
    for name in ("ampere", "blackwell", "precise"):
        assert name in str(e.value)


# ---- list replacement, clearing, None ----------------------------------------

def test_list_replaces_whole():
    r = resolve(("session", {"nvrtc": ["-a", "-b"]}), ("cell", {"nvrtc": ["-d"]}))
    assert r["nvrtc"] == ["-d"]
    assert r.provenance["nvrtc"] == "cell"
    r = resolve(("cell", {"ptxas": ["-O0"]}))
    assert r["ptxas"] == ["-O0"]  # not appended to the default list


def test_empty_list_clears():
    r = resolve(("session", {"nvrtc": ["-a"]}), ("cell", {"nvrtc": [], "ptxas": []}))
    assert r["nvrtc"] == [] and r.provenance["nvrtc"] == "cell"
    assert r["ptxas"] == [] and r.provenance["ptxas"] == "cell"
    assert r.config["nvrtc"] == []
    assert "nvrtc" in r


def test_none_and_empty_layers_add_nothing():
    base = resolve(("session", {"arch": "sm_90a"}))
    r = resolve(("session", {"arch": "sm_90a"}), ("cell", None), ("kernel:k", {}),
                ("kernel:j", {"cuda": {}}), ("kernel:m", {"cuda": None}))
    assert r == base
    assert r.provenance["arch"] == "session"


def test_none_value_sets_nothing():
    r = resolve(("session", {"arch": "sm_90a", "nvrtc": ["-a"]}),
                ("cell", {"arch": None, "nvrtc": None, "compiler": None, "ptxas": None}))
    assert r["arch"] == "sm_90a" and r.provenance["arch"] == "session"
    assert r["nvrtc"] == ["-a"] and r.provenance["nvrtc"] == "session"
    assert r["compiler"] == "nvrtc" and r.provenance["compiler"] == "default"
    assert r["ptxas"] == DEFAULT_PTXAS
    assert validate({"arch": None}) == {}


# ---- nested form -------------------------------------------------------------

def test_validate_accepts_nested_form():
    assert validate({"cuda": {"arch": "sm_90a", "nvrtc": ["-a"]}}) == {"arch": "sm_90a",
                                                                      "nvrtc": ["-a"]}
    assert validate({"cuda": {}}) == {}
    assert validate({"cuda": None}) == {}
    assert validate(None) == {}
    assert validate({}) == {}


def test_session_and_preset_accept_nested_form(presets_restored):
    register_preset("t_nested_preset", {"cuda": {"arch": "sm_100a"}})
    assert get_preset("t_nested_preset") == {"arch": "sm_100a"}
    # the flat spelling of the same declaration is identical
    register_preset("t_nested_preset", {"arch": "sm_100a"})
    r = resolve_layers(preset="t_nested_preset", session={"cuda": {"compiler": "nvcc"}})
    assert r["arch"] == "sm_100a" and r.provenance["arch"] == "preset:t_nested_preset"
    assert r["compiler"] == "nvcc" and r.provenance["compiler"] == "session"


def test_parse_backend_config_nested():
    assert parse_backend_config({"cuda": {"arch": "sm_90a"}}) == {"arch": "sm_90a"}
    assert parse_backend_config('{"cuda": {"nvcc": ["-O3"]}}') == {"nvcc": ["-O3"]}
    assert parse_backend_config(None) == {}
    assert parse_backend_config({}) == {}
    inner = {"nvrtc": ["-a"]}
    out = parse_backend_config({"cuda": inner})
    inner["nvrtc"].append("-b")
    assert out == {"nvrtc": ["-a"]}


def test_parse_backend_config_requires_nested_form():
    with pytest.raises(ConfigError, match=r"'compiler' is a config key, not a backend name") as e:
        parse_backend_config({"compiler": "nvcc"})
    assert '{"cuda": {"compiler": ...}}' in str(e.value)
    assert e.value.key == "compiler"
    with pytest.raises(ConfigError, match="'arch' is a config key"):
        parse_backend_config('{"arch": "sm_90a"}')


def test_compile_source_rejects_flat_backend_config():
    with pytest.raises(ConfigError, match="'compiler' is a config key, not a backend name"):
        cuda_magic.compile_source("__global__ void k() {}", {"compiler": "nvcc"})


def test_parse_backend_config_not_a_dict():
    with pytest.raises(ConfigError, match="must be a dict"):
        parse_backend_config(["cuda"])
    with pytest.raises(ConfigError, match="must be a dict"):
        parse_backend_config("[1, 2]")


# ---- presets -----------------------------------------------------------------

def test_builtin_presets():
    presets = list_presets()
    assert presets["hopper"] == {"arch": "sm_90a"}
    assert presets["blackwell"] == {"arch": "sm_100a"}
    assert presets["precise"] == {"nvrtc": [], "nvcc": []}
    assert get_preset("hopper") == {"arch": "sm_90a"}


def test_builtin_presets_resolve():
    r = resolve_layers(preset="hopper")
    assert r["arch"] == "sm_90a" and r.provenance["arch"] == "preset:hopper"
    r = resolve_layers(preset="blackwell")
    assert r["arch"] == "sm_100a" and r.provenance["arch"] == "preset:blackwell"
    r = resolve_layers(preset="precise")
    assert r["nvrtc"] == [] and r["nvcc"] == []
    assert r.provenance["nvrtc"] == r.provenance["nvcc"] == "preset:precise"
    assert r["ptxas"] == DEFAULT_PTXAS and r.provenance["ptxas"] == "default"
    # a session layer still wins over the preset
    r = resolve_layers(preset="precise", session={"nvrtc": ["--use_fast_math"]})
    assert r["nvrtc"] == ["--use_fast_math"] and r.provenance["nvrtc"] == "session"


def test_register_preset_idempotent(presets_restored):
    register_preset("t_idem", {"arch": "sm_90a", "nvrtc": ["-a", "-b"], "compiler": "nvrtc"})
    before = list_presets()
    register_preset("t_idem", {"compiler": "nvrtc", "nvrtc": ["-a", "-b"], "arch": "sm_90a"})
    register_preset("t_idem", {"cuda": {"nvrtc": ["-a", "-b"], "arch": "sm_90a",
                                        "compiler": "nvrtc"}})
    assert list_presets() == before
    # re-registering a built-in identically is fine too
    register_preset("hopper", {"arch": "sm_90a"})
    register_preset("precise", {"nvcc": [], "nvrtc": []})


def test_register_preset_different_declaration_rejected(presets_restored):
    register_preset("t_diff", {"arch": "sm_90a", "nvrtc": ["-a", "-b"]})
    with pytest.raises(ConfigError, match=r"preset 't_diff' is already registered with a "
                                          r"different declaration.*override=True"):
        register_preset("t_diff", {"arch": "sm_90a", "nvrtc": ["-b", "-a"]})  # order matters
    with pytest.raises(ConfigError, match="different declaration"):
        register_preset("t_diff", {"arch": "sm_90a"})
    with pytest.raises(ConfigError, match="different declaration"):
        register_preset("hopper", {"arch": "sm_90"})
    assert get_preset("t_diff") == {"arch": "sm_90a", "nvrtc": ["-a", "-b"]}
    assert get_preset("hopper") == {"arch": "sm_90a"}


def test_register_preset_override(presets_restored):
    register_preset("t_over", {"arch": "sm_90a"})
    register_preset("t_over", {"arch": "sm_100a"}, override=True)
    assert get_preset("t_over") == {"arch": "sm_100a"}
    r = resolve_layers(preset="t_over")
    assert r["arch"] == "sm_100a"


def test_register_preset_validates(presets_restored):
    with pytest.raises(ConfigError, match="arch"):
        register_preset("t_bad", {"arch": "compute_90"})
    with pytest.raises(ConfigError, match="preset name"):
        register_preset("bad name!", {"arch": "sm_90a"})
    with pytest.raises(ConfigError, match="preset name"):
        register_preset("", {})
    assert "t_bad" not in list_presets()


def test_presets_fixture_cleans_up(presets_restored):
    # (runs after the tests above in file order) no test preset leaked from earlier tests
    assert not [n for n in list_presets() if n.startswith("t_")]


def test_list_presets_returns_copy():
    presets = list_presets()
    presets["hopper"]["arch"] = "sm_80"
    presets["precise"]["nvrtc"].append("--use_fast_math")
    presets["mine"] = {"arch": "sm_70"}
    del presets["blackwell"]
    fresh = list_presets()
    assert fresh["hopper"] == {"arch": "sm_90a"}
    assert fresh["precise"] == {"nvrtc": [], "nvcc": []}
    assert "mine" not in fresh and "blackwell" in fresh
    got = get_preset("precise")
    got["nvcc"].append("-O3")
    assert get_preset("precise") == {"nvrtc": [], "nvcc": []}


def test_unknown_preset_error_lists_known_names():
    with pytest.raises(ConfigError, match="unknown preset 'nope'") as e:
        get_preset("nope")
    msg = str(e.value)
    for name in ("ada", "ampere", "blackwell", "hopper", "nvcc", "precise"):
        assert name in msg


# ---- bad input -----------------------------------------------------------------

def test_unknown_key():
    with pytest.raises(ConfigError, match=r"unknown config key 'unknown'.*arch, compiler") as e:
        validate({"cuda": {"unknown": []}})
    assert e.value.key == "unknown"
    with pytest.raises(ConfigError, match="unknown config key 'archh'"):
        validate({"archh": "sm_90a"})


def test_unknown_compiler_name_syntax_accepted_but_compile_rejects():
    assert validate({"compiler": "clang"}) == {"compiler": "clang"}
    with pytest.raises(ConfigError, match=r"unknown compiler 'clang'; known compilers: "
                                          r".*nvcc.*nvrtc") as e:
        cuda_magic.compile_source("__global__ void k() {}",
                                  {"cuda": {"compiler": "clang", "arch": "sm_90a"}})
    assert e.value.key == "compiler"


def test_bad_compiler_name():
    with pytest.raises(ConfigError, match="'compiler' must be a compiler name") as e:
        validate({"compiler": "nvcc -O3"})
    assert e.value.key == "compiler"
    with pytest.raises(ConfigError, match="'compiler' must be a string"):
        validate({"compiler": ["nvcc"]})


@pytest.mark.parametrize("arch", ["compute_100", "sm90", "sm_", "sm_90b", "SM_90", "sm_90a ",
                                  "sm_90\n", "", "sm_\u0669\u0660a", "sm_\uff19\uff10"])
def test_bad_arch(arch):
    with pytest.raises(ConfigError, match=r"'arch' must look like sm_90") as e:
        validate({"arch": arch})
    assert e.value.key == "arch"
    assert repr(arch) in str(e.value)


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a", "sm_100f", "sm_120a", "sm_75"])
def test_good_arch(arch):
    assert validate({"arch": arch}) == {"arch": arch}


@pytest.mark.parametrize("arch", [90, 9.0, True, {"sm_90a": 1}])
def test_non_string_arch(arch):
    with pytest.raises(ConfigError, match="'arch' must be a string") as e:
        validate({"arch": arch})
    assert e.value.key == "arch"


def test_bad_target_format():
    with pytest.raises(ConfigError, match="'target_format' must be one of ptx, cubin, fatbin") as e:
        validate({"target_format": "elf"})
    assert e.value.key == "target_format"


def test_list_key_given_string():
    with pytest.raises(ConfigError, match=r"'nvrtc' must be a list of flags") as e:
        validate({"nvrtc": "--use_fast_math"})
    assert e.value.key == "nvrtc"
    with pytest.raises(ConfigError, match=r"'ptxas' must be a list of flags"):
        validate({"ptxas": b"-v"})
    with pytest.raises(ConfigError, match=r"'nvcc' must be a list of flags"):
        validate({"nvcc": {"-O3": True}})


def test_list_holding_non_string():
    with pytest.raises(ConfigError, match=r"'nvcc'\[1\] must be a string flag") as e:
        validate({"nvcc": ["-O3", 3]})
    assert e.value.key == "nvcc"
    with pytest.raises(ConfigError, match=r"'ptxas'\[0\] must be a string flag"):
        validate({"ptxas": [None]})


def test_list_holding_empty_flag():
    with pytest.raises(ConfigError, match=r"'nvrtc'\[1\] is an empty flag") as e:
        validate({"nvrtc": ["-a", "  "]})
    assert e.value.key == "nvrtc"


def test_tuple_list_accepted_as_list():
    assert validate({"nvrtc": ("-a", "-b")}) == {"nvrtc": ["-a", "-b"]}


def test_nvrtc_fatbin_one_layer():
    with pytest.raises(ConfigError, match=r"NVRTC cannot produce 'fatbin'") as e:
        validate({"compiler": "nvrtc", "target_format": "fatbin"})
    assert e.value.key == "target_format"
    assert "nvcc" in str(e.value)
    # nvcc may make fatbin
    assert validate({"compiler": "nvcc", "target_format": "fatbin"})["target_format"] == "fatbin"


def test_nvrtc_fatbin_across_layers():
    # default compiler is nvrtc; fatbin set in the session layer
    with pytest.raises(ConfigError, match=r"NVRTC cannot produce 'fatbin' \(set by layer "
                                          r"'session'\)") as e:
        resolve(("session", {"target_format": "fatbin"}))
    assert e.value.key == "target_format"
    # nvcc in the session, nvrtc back in the cell
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin'"):
        resolve(("session", {"compiler": "nvcc", "target_format": "fatbin"}),
                ("cell", {"compiler": "nvrtc"}))
    # fine once the kernel layer switches the format
    r = resolve(("session", {"target_format": "fatbin"}, ), ("cell", {"compiler": "nvcc"}))
    assert r["target_format"] == "fatbin"
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin'"):
        resolve_layers(session={"target_format": "fatbin"})


def test_unknown_backend_name():
    with pytest.raises(ConfigError, match=r"unknown backend 'rocm': only 'cuda' is supported"):
        validate({"rocm": {}})
    with pytest.raises(ConfigError, match=r"unknown backend 'rocm'"):
        parse_backend_config({"rocm": {}})
    with pytest.raises(ConfigError, match=r"unknown backend 'rocm'"):
        parse_backend_config({"rocm": {"arch": "gfx90a"}})
    with pytest.raises(ConfigError, match=r"unknown config key 'rocm'"):
        resolve(("session", {"rocm": None}))  # not a config dict: read as a flat key
    with pytest.raises(ConfigError, match=r"unknown backend 'rocm'"):
        cuda_magic.compile_source("", {"rocm": {}})


def test_other_backend_beside_cuda_named():
    # regression: this used to say "unknown config key 'cuda'"
    with pytest.raises(ConfigError, match=r"unknown backend 'rocm': only 'cuda' is supported"):
        validate({"cuda": {"arch": "sm_90a"}, "rocm": {}})
    with pytest.raises(ConfigError, match=r"unknown backend 'rocm'"):
        resolve(("session", {"rocm": None, "cuda": {"arch": "sm_90a"}}))


def test_cuda_must_map_to_dict():
    with pytest.raises(ConfigError, match="'cuda' must map to a config dict"):
        validate({"cuda": "sm_90a"})


def test_mixed_nested_and_flat_rejected():
    with pytest.raises(ConfigError, match="unknown config key 'cuda'"):
        validate({"cuda": {"arch": "sm_90a"}, "compiler": "nvcc"})


def test_config_not_a_dict():
    with pytest.raises(ConfigError, match="a config must be a dict"):
        validate(["arch", "sm_90a"])
    with pytest.raises(ConfigError, match="a config must be a dict"):
        validate("sm_90a")


@pytest.mark.parametrize(
    "key, flag, manager",
    [
        ("nvrtc", "--gpu-architecture=sm_90", "'arch' key"),
        ("nvrtc", "-arch=sm_90a", "'arch' key"),
        ("nvrtc", "--gpu-architecture sm_90", "'arch' key"),
        ("nvcc", "-arch", "'arch' key"),
        ("nvcc", "-arch=sm_90", "'arch' key"),
        ("nvcc", "-gencode=arch=compute_90,code=sm_90", "'arch' key"),
        ("nvcc", "--generate-code=arch=compute_90,code=sm_90", "'arch' key"),
        ("nvcc", "-code=sm_90", "'arch' key"),
        ("nvcc", "--gpu-code=sm_90", "'arch' key"),
        ("nvrtc", "--gpu-code=sm_90", "'arch' key"),
        ("ptxas", "--gpu-name=sm_90", "'arch' key"),
        ("ptxas", "-arch=sm_90", "'arch' key"),
        ("nvcc", "--options-file=flags.txt", "one flag per list item"),
        ("nvcc", "-optf flags.txt", "one flag per list item"),
        ("nvcc", "--cubin", "'target_format'"),
        ("nvcc", "-ptx", "'target_format'"),
        ("nvcc", "--fatbin", "'target_format'"),
        ("nvcc", "-o", "'target_format'"),
        ("nvcc", "-o kernel.cubin", "'target_format'"),
        ("nvrtc", "--ptxas-options=-O1", "'ptxas' key"),
        ("nvcc", "-Xptxas=-v", "'ptxas' key"),
        ("nvcc", "-Xptxas", "'ptxas' key"),
        ("ptxas", "--output-file=kernel.cubin", "'target_format'"),
        ("ptxas", "-o", "'target_format'"),
        ("nvcc", "-c", "'target_format'"),
        ("nvcc", "-odir=/tmp", "'target_format'"),
        ("nvrtc", "-dlto", "'target_format'"),
        ("nvcc", "--device-link", "'target_format'"),
    ],
)
def test_reserved_flags(key, flag, manager):
    with pytest.raises(ConfigError) as e:
        validate({key: ["--use_fast_math" if key != "ptxas" else "-v", flag]})
    msg = str(e.value)
    assert f"{key!r}" in msg
    assert repr(flag) in msg
    assert "reserved" in msg
    assert manager in msg
    assert e.value.key == key


def test_reserved_flag_in_nested_and_resolve():
    with pytest.raises(ConfigError, match=r"'nvrtc': flag '--gpu-architecture=sm_90' is "
                                          r"reserved: the architecture is set by the 'arch' key"):
        parse_backend_config({"cuda": {"nvrtc": ["--gpu-architecture=sm_90"]}})
    with pytest.raises(ConfigError, match=r"'ptxas' key"):
        resolve(("kernel:k", {"nvrtc": ["--ptxas-options=-O1"]}))


@pytest.mark.parametrize("flag", ["--use_fast_math", "--ftz=false", "-O3", "-lineinfo",
                                  "--std=c++17", "-DARCH=90", "--maxrregcount=64", "-ccbin=g++",
                                  "-opt-info", "--ptxas-opts"])
def test_ordinary_flags_not_reserved(flag):
    assert validate({"nvcc": [flag]}) == {"nvcc": [flag]}


def test_invalid_json():
    with pytest.raises(ConfigError, match="config is not valid JSON"):
        from_json("{arch: sm_90a}")
    with pytest.raises(ConfigError, match="config is not valid JSON"):
        from_json("")
    with pytest.raises(ConfigError, match="backend config is not valid JSON"):
        parse_backend_config("{'cuda': {}}")
    with pytest.raises(ConfigError, match="backend config is not valid JSON"):
        cuda_magic.compile_source("", '{"cuda": ')


def test_from_json_validates():
    with pytest.raises(ConfigError, match="'arch' must look like"):
        from_json('{"arch": "compute_90"}')
    with pytest.raises(ConfigError, match="a config must be a dict"):
        from_json('["sm_90a"]')


def test_config_error_is_value_error_with_key():
    e = ConfigError("boom", "arch")
    assert isinstance(e, ValueError) and e.key == "arch" and str(e) == "boom"
    assert ConfigError("boom").key is None
    with pytest.raises(ConfigError) as exc:
        validate({"rocm": {}})
    assert exc.value.key is None  # not about one key


def test_keys_constant():
    assert KEYS == ("arch", "compiler", "target_format", "nvcc", "nvrtc", "ptxas")
    assert isinstance(resolve(), Resolved)
    assert re.search(r"compiler='nvrtc' \[default\]", repr(resolve()))


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                     | st.text(max_size=12),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.sampled_from([*KEYS, "cuda", "rocm", "x"]) | st.text(max_size=6),
                                       inner, max_size=4),
                     max_leaves=12)


@given(_json)
def test_any_input_is_accepted_or_a_config_error(obj):
    """Bad input never escapes as anything but a ConfigError (no deep tracebacks)."""
    for check in (validate, parse_backend_config):
        try:
            check(obj)
        except ConfigError:
            pass
