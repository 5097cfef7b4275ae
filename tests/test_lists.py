"""Flag lists: a plain list replaces the inherited one (and the view says what it dropped);
the append form (``nvrtc+``) adds to it, with provenance for each part."""

import re

import pytest

from conftest import ARCH, SAXPY
from cuda_magic import compile_source, view
from cuda_magic.cell import CellError
from cuda_magic.config import ConfigError, Replaced, canonical_json, resolve, validate

FAST = ["--use_fast_math"]


def shown(shell, obj) -> str:
    return shell.display_formatter.format(obj)[0]["text/plain"]


# ---- the rule ---------------------------------------------------------------------------------

def test_append_adds_to_the_inherited_list_with_a_part_per_layer():
    r = resolve(("session", {"nvrtc+": ["-lineinfo"]}), ("cell", {"nvrtc+": ["-G"]}))
    assert r["nvrtc"] == FAST + ["-lineinfo", "-G"]
    assert r.provenance["nvrtc"] == "default + session + cell"
    assert r.parts("nvrtc") == [("default", FAST), ("session", ["-lineinfo"]), ("cell", ["-G"])]
    assert r.replaced == ()
    assert r.parts("ptxas") == [("default", r["ptxas"])]     # one part: the layer that set it


def test_a_replace_records_what_it_dropped():
    r = resolve(("cell", {"nvrtc": ["-lineinfo"]}))
    assert r["nvrtc"] == ["-lineinfo"] and r.provenance["nvrtc"] == "cell"
    assert r.replaced == (Replaced("nvrtc", "cell", "default", tuple(FAST), tuple(FAST)),)
    assert str(r.replaced[0]) == 'nvrtc: replaces default ["--use_fast_math"]'
    # keeping every inherited flag drops nothing, so there is nothing to say
    assert resolve(("cell", {"nvrtc": FAST + ["-lineinfo"]})).replaced == ()
    # [] clears the list: that drops it all
    assert [str(x) for x in resolve(("session", {"nvrtc": []})).replaced] == \
        ['nvrtc: replaces default ["--use_fast_math"]']


def test_replace_then_append_and_append_then_replace():
    r = resolve(("session", {"nvrtc": ["-G"]}), ("cell", {"nvrtc+": ["-lineinfo"]}))
    assert r["nvrtc"] == ["-G", "-lineinfo"]
    assert r.parts("nvrtc") == [("session", ["-G"]), ("cell", ["-lineinfo"])]
    assert [x.layer for x in r.replaced] == ["session"]    # the session's drop still stands
    r = resolve(("session", {"nvrtc+": ["-G"]}), ("cell", {"nvrtc": ["-lineinfo"]}))
    assert r["nvrtc"] == ["-lineinfo"] and r.provenance["nvrtc"] == "cell"
    assert r.replaced[0].source == "default + session"
    assert r.replaced[0].inherited == ("--use_fast_math", "-G")


def test_the_resolved_value_and_cache_key_do_not_depend_on_the_spelling():
    a = resolve(("cell", {"nvrtc+": ["-lineinfo"]}))
    b = resolve(("cell", {"nvrtc": FAST + ["-lineinfo"]}))
    assert a.json() == b.json()
    assert "+" not in a.json()


def test_bad_append_layers_name_the_key():
    with pytest.raises(ConfigError, match=r"'nvrtc' and 'nvrtc\+' in one layer") as e:
        validate({"nvrtc": ["-G"], "nvrtc+": ["-lineinfo"]})
    assert e.value.key == "nvrtc+"
    with pytest.raises(ConfigError, match=r"'ptxas\+' must be a list of flags") as e:
        validate({"ptxas+": "-v"})
    assert e.value.key == "ptxas+"
    with pytest.raises(ConfigError, match=r"reserved") as e:
        validate({"nvcc+": ["-arch=sm_80"]})
    with pytest.raises(ConfigError, match=r"unknown config key 'arch\+'.*nvrtc\+"):
        validate({"arch+": "sm_90a"})
    # the nested form and canonical JSON carry the append keys
    assert validate({"cuda": {"nvrtc+": ["-G"]}}) == {"nvrtc+": ["-G"]}
    assert canonical_json({"nvrtc+": ["-G"], "arch": ARCH}) == '{"arch":"sm_90a","nvrtc+":["-G"]}'


def test_compile_source_takes_the_append_form():
    r = compile_source(SAXPY, {"cuda": {"arch": ARCH, "nvrtc+": ["-lineinfo"]}})
    assert r.argv[:3] == (f"--gpu-architecture={ARCH}", "--use_fast_math", "-lineinfo")
    assert r.config.provenance["nvrtc"] == "default + cell"


# ---- through the magics, as a user writes them ------------------------------------------------

def test_append_on_the_line_and_in_the_header(shell):
    m = shell.run_cell_magic("cuda", f'--arch {ARCH} --nvrtc+ "-lineinfo -DTILE=4"', SAXPY)
    assert m.result.argv[1:4] == ("--use_fast_math", "-lineinfo", "-DTILE=4")
    text = shown(shell, m)
    assert re.search(r'^  nvrtc\s+\["--use_fast_math", "-lineinfo", "-DTILE=4"\]\s+\[default \+ cell\]$',
                     text, re.M)
    assert '  nvrtc: default ["--use_fast_math"] + cell ["-lineinfo", "-DTILE=4"]' in text
    assert "replaces" not in text
    m = shell.run_cell_magic("cuda", f"--arch {ARCH}", "//| nvrtc+: [-lineinfo]\n" + SAXPY)
    assert m.result.argv[1:3] == ("--use_fast_math", "-lineinfo")
    # a kernel's own block appends to the cell's list
    src = "//| nvrtc+: [-DA=1]\n\n//| nvrtc+: [-DB=2]\n" + SAXPY.lstrip()
    m = shell.run_cell_magic("cuda", f"--arch {ARCH}", src)
    assert m.result.argv[1:4] == ("--use_fast_math", "-DA=1", "-DB=2")
    assert m.result.config.provenance["nvrtc"] == "default + cell + kernel:scale"


def test_a_replacing_list_says_what_it_dropped_in_header_and_config(shell):
    m = shell.run_cell_magic("cuda", f"--arch {ARCH}", "//| nvrtc: [-lineinfo]\n" + SAXPY)
    text = shown(shell, m)
    lines = text.splitlines()
    config_at = next(i for i, ln in enumerate(lines) if ln.startswith("  key"))
    # under the config table, and among the notes under the header line
    assert lines.count('  nvrtc: replaces default ["--use_fast_math"]') == 1
    assert 'nvrtc: replaces default ["--use_fast_math"]' in lines[config_at + 7:]
    html = view(m).html()
    assert "nvrtc: replaces default [&quot;--use_fast_math&quot;]" in html
    # the nvcc list of an NVRTC build is not what ran: the header says nothing of it
    m = shell.run_cell_magic("cuda", f'--arch {ARCH} --nvcc "-G"', SAXPY)
    header_notes = view(m).content.notes
    assert not any("replaces" in n for n in header_notes)
    text = shown(shell, m)                       # the Config tab does, in the fold of what did not run
    folded = text.index("  not used (compiled with nvrtc): nvcc")
    assert text.index('    nvcc: replaces default ["--use_fast_math"]') > folded


def test_line_and_header_cannot_both_set_a_list(shell):
    with pytest.raises(CellError, match=r"'nvrtc' is set on the %%cuda line and 'nvrtc\+' in the "
                                        r"//\| header") as e:
        shell.run_cell_magic("cuda", f'--arch {ARCH} --nvrtc "-G"', "//| nvrtc+: [-lineinfo]\n" + SAXPY)
    assert e.value.line == 1
    with pytest.raises(CellError, match=r"'nvrtc\+' is a list of flags: write it as a YAML list, "
                                        r"e.g. '//\| nvrtc\+: \[-lineinfo\]'"):
        shell.run_cell_magic("cuda", f"--arch {ARCH}", "//| nvrtc+: -lineinfo\n" + SAXPY)
    with pytest.raises(ConfigError, match=r"'nvrtc\+' is given both as --nvrtc and in --backend-config"):
        shell.run_cell_magic("cuda", f"""--arch {ARCH} --nvrtc "-G" --backend-config '{{"cuda": {{"nvrtc+": ["-G"]}}}}'""", SAXPY)


def test_session_append_is_idempotent_and_unset_drops_both(shell):
    magics = shell.find_magic("cuda_config").__self__
    shell.run_line_magic("cuda_config", f'--arch {ARCH} --nvrtc+ "-lineinfo"')
    shell.run_line_magic("cuda_config", '--nvrtc+ "-lineinfo"')      # re-running a cell
    assert magics.defaults == {"arch": ARCH, "nvrtc+": ["-lineinfo"]}
    m = shell.run_cell_magic("cuda", "", SAXPY)
    assert m.result.argv[1:3] == ("--use_fast_math", "-lineinfo")
    assert m.result.config.provenance["nvrtc"] == "default + session"
    # a cell's append goes on top of the session's
    m = shell.run_cell_magic("cuda", '--nvrtc+ "-G"', SAXPY)
    assert m.result.config.parts("nvrtc") == [("default", FAST), ("session", ["-lineinfo"]),
                                              ("cell", ["-G"])]
    # the session sets a list one way: a plain --nvrtc replaces its append form
    shell.run_line_magic("cuda_config", '--nvrtc "-G"')
    assert magics.defaults == {"arch": ARCH, "nvrtc": ["-G"]}
    shell.run_line_magic("cuda_config", '--nvrtc+ "-lineinfo"')
    assert magics.defaults == {"arch": ARCH, "nvrtc+": ["-lineinfo"]}
    shell.run_line_magic("cuda_config", "--unset nvrtc")
    assert magics.defaults == {"arch": ARCH}


def test_the_magic_help_documents_both_forms(shell):
    doc = " ".join(shell.find_cell_magic("cuda").__doc__.split())
    assert "--nvrtc+" in doc and "appended to the inherited list" in doc
    assert "replace the inherited list" in doc
