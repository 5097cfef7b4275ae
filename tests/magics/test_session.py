"""%cuda_config's transaction (cuda_magic.magics.session.apply) called directly, with no IPython
shell: the new session, the errors that name what was wrong, and all or nothing (CPU)."""

import json

import pytest
from IPython.core.error import UsageError

from conftest import ARCH
from cuda_magic.config import ConfigError, get_preset
from cuda_magic.magics.session import Line, Session, apply, resolved_json

LEAN = '{"cuda": {"ptxas": []}}'
NAME = "session_lean"      # a name no other test registers (the registry is the process's)


def test_flags_set_session_defaults_and_the_old_state_stays():
    old = Session({"compiler": "nvrtc"})
    out = apply(old, Line({"arch": ARCH, "nvrtc": "--use_fast_math --ftz=false"}))
    assert out.session == Session({"compiler": "nvrtc", "arch": ARCH,
                                   "nvrtc": ["--use_fast_math", "--ftz=false"]})
    assert out.edits and out.registered is None and out.note() is None
    assert old.defaults == {"compiler": "nvrtc"}       # a new state, not an edit of the old one


def test_a_list_is_set_one_way_replace_or_append():
    out = apply(Session({"arch": ARCH, "nvrtc+": ["-lineinfo"]}), Line({"nvrtc": "-G"}))
    assert out.session.defaults == {"arch": ARCH, "nvrtc": ["-G"]}
    out = apply(out.session, Line({"nvrtc_append": "-lineinfo"}))
    assert out.session.defaults == {"arch": ARCH, "nvrtc+": ["-lineinfo"]}


def test_unset_drops_both_spellings_and_reset_drops_all():
    start = Session({"arch": ARCH, "nvrtc+": ["-G"], "ptxas": ["-v"]}, "hopper")
    assert apply(start, Line(unset=("nvrtc",))).session == \
        Session({"arch": ARCH, "ptxas": ["-v"]}, "hopper")
    assert apply(start, Line(reset=True)).session == Session({}, None)
    assert apply(start, Line(reset=True, preset="ampere")).session == Session({}, "ampere")


def test_misused_flags_are_usage_errors_naming_the_flag():
    with pytest.raises(UsageError, match=r"--unset 'bogus': unknown key; the keys are arch"):
        apply(Session({"arch": ARCH}), Line(unset=("arch", "bogus")))
    with pytest.raises(UsageError, match=r"--override replaces a preset: use it with "
                                         r"--register-preset"):
        apply(Session(), Line(override=True))


def test_bad_values_are_config_errors_naming_the_key_or_flag():
    with pytest.raises(ConfigError, match=r"'arch' must look like sm_90") as err:
        apply(Session(), Line({"arch": "foo"}))
    assert err.value.key == "arch"
    with pytest.raises(ConfigError, match=r"--preset 'nope': unknown preset 'nope'"):
        apply(Session(), Line(preset="nope"))
    with pytest.raises(ConfigError, match=r"--register-preset 'hopper': preset 'hopper' is built"):
        apply(Session(), Line(register=("hopper", LEAN), override=True))


def test_a_session_no_cell_could_compile_with_is_refused_whole(presets_restored):
    old = Session({"arch": ARCH, "target_format": "fatbin"}, "nvcc")     # nvcc makes fatbin
    line = Line({"compiler": "nvrtc", "ptxas": "-v"}, register=(NAME, LEAN))
    with pytest.raises(ConfigError, match=r"NVRTC cannot produce 'fatbin'.*"
                                          r"\(nothing was changed\)$") as err:
        apply(old, line)
    assert err.value.key == "target_format"
    assert old == Session({"arch": ARCH, "target_format": "fatbin"}, "nvcc")
    with pytest.raises(ConfigError, match=f"unknown preset '{NAME}'"):
        get_preset(NAME)                  # the line's preset was not registered either


def test_a_missing_arch_is_fine_for_the_session():
    assert apply(Session(), Line({"compiler": "nvcc"})).session == Session({"compiler": "nvcc"})


def test_register_and_use_a_preset_in_one_line(presets_restored):
    out = apply(Session({"arch": ARCH}), Line(register=(NAME, LEAN), preset=NAME))
    assert out.session == Session({"arch": ARCH}, NAME)
    assert get_preset(NAME) == {"ptxas": []}
    assert out.note() == f"registered preset '{NAME}': {{'ptxas': []}}"
    again = apply(out.session, Line(register=(NAME, LEAN)))
    assert not again.edits and again.registered.old is None     # the identical declaration
    with pytest.raises(ConfigError, match=rf"--register-preset '{NAME}': .*add --override"):
        apply(out.session, Line(register=(NAME, '{"cuda": {"ptxas": ["-v"]}}')))
    replaced = apply(out.session, Line(register=(NAME, '{"cuda": {"ptxas": ["-v"]}}'),
                                       override=True))
    assert replaced.note() == \
        f"preset '{NAME}' overridden: ptxas [] -> ['-v'] (the session's preset)"
    assert get_preset(NAME) == {"ptxas": ["-v"]}


def test_overriding_a_preset_the_session_uses_is_checked_before_it_is_kept(presets_restored):
    apply(Session(), Line(register=(NAME, '{"cuda": {"compiler": "nvcc"}}')))
    session = Session({"target_format": "fatbin"}, NAME)
    with pytest.raises(ConfigError, match=r"cannot produce 'fatbin'.*\(nothing was changed\)$"):
        apply(session, Line(register=(NAME, '{"cuda": {"compiler": "nvrtc"}}'), override=True))
    assert get_preset(NAME) == {"compiler": "nvcc"}


def test_a_line_that_asks_nothing_shows_the_session_as_it_is():
    bad = Session({"target_format": "fatbin"}, "hopper")    # NVRTC: e.g. set with %config
    out = apply(bad, Line())
    assert out.session == bad and not out.edits


def test_resolved_json_is_canonical_with_the_layers_applied():
    text = resolved_json(Session({"arch": f"{ARCH},sm_80", "ptxas": ["-v"]}, "precise"))
    cfg = json.loads(text)["cuda"]
    assert text == json.dumps({"cuda": cfg}, sort_keys=True, separators=(",", ":"))
    assert cfg["arch"] == [ARCH, "sm_80"] and cfg["ptxas"] == ["-v"]
    assert cfg["nvrtc"] == get_preset("precise")["nvrtc"]
