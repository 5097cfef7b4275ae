"""%%cuda_tune driven through an InteractiveShell, as a user types it.  Compile-only sweeps run
anywhere; a GPU runs the bench stage (marked gpu)."""

import importlib
import re

import numpy as np
import pytest
from IPython.core.error import UsageError

from conftest import ARCH, HEAVY
from cuda_magic import ConfigError, Kernel
from cuda_magic.variants.space import TuneError

tune_mod = importlib.import_module("cuda_magic.variants.tune")   # (.tune is also the function)

A = f"--arch {ARCH}"

GEMM = r'''template <int BM, int BN>
__global__ void gemm(const float* a, float* c, int n) {
    int i = blockIdx.x * BM + threadIdx.x;
    if (i < n) c[i] = a[i] * BN;
}
'''
HEADED = "//| tune: {BM: [64, 128], BN: [1, 2], block: [128, 256]}\n" + GEMM
SPACE = '--space "BM=[64,128] BN=[1,2] block=[128,256]"'


def tune(shell, line, cell=GEMM):
    return shell.run_cell_magic("cuda_tune", f"{A} {line}", cell)


def test_template_space_compiles_every_candidate(shell):
    t = tune(shell, f"{SPACE} --compile-only")
    assert type(t).__name__ == "Tuning" and len(t.candidates) == 8
    assert {c.status for c in t.candidates} == {"compiled"}
    assert [c.params for c in t.candidates[:2]] == [{"BM": 64, "BN": 1, "block": 128},
                                                   {"BM": 64, "BN": 1, "block": 256}]
    assert [p.kind for p in t.parameters] == ["template", "template", "launch"]
    # one build per template instance; the launch-only parameter shares it
    c0, c1 = t.candidates[:2]
    assert c0.module is c1.module and c0.recipe.instances == ("gemm<64, 1>",)
    assert all(c.registers and c.spill_bytes == 0 for c in t.candidates)
    assert t.winner is None and t.kernels == {} and t.cell is None
    assert repr(t).startswith("<Tuning 8 candidates: 8 compiled")


def test_space_from_the_cell_header(shell):
    t = tune(shell, "--compile-only", HEADED)
    assert len(t.candidates) == 8 and [p.name for p in t.parameters] == ["BM", "BN", "block"]
    # --space replaces the header's space
    t = tune(shell, '--compile-only --space "BM=[32] BN=[4]"', HEADED)
    assert [c.params for c in t.candidates] == [{"BM": 32, "BN": 4}]


def test_no_space_says_where_to_put_one(shell):
    with pytest.raises(TuneError, match=r"no space: give one \(--space .*//\| tune:"):
        tune(shell, "--compile-only")


@pytest.mark.parametrize("space,message", [
    ("BM=[]", r"tune parameter 'BM' has no values"),
    ("BM=[64", r"parameter 'BM' has an unclosed bracket"),
    ("BM=[64] BM=[128]", r"tune parameter 'BM' is given twice"),
    ("BM=[64] -DBM=[1]", r"tune parameter 'BM' is given twice"),
    ("BM", r"--space 'BM': write each parameter as NAME=\[v1, v2, ...\]"),
    ("BM=[[1]]", r"tune parameter 'BM': give a flat list"),
    ("maxrreg=[8]", r"tune parameter 'maxrreg': 8 is not none or a register count"),
])
def test_bad_space_is_one_short_error_naming_the_parameter(shell, space, message):
    with pytest.raises(ConfigError, match=message) as err:
        tune(shell, f'--space "{space}" --compile-only')
    # the caller's frame names this file: its length is where the checkout lives, not the error's
    text = "\n".join(err.value._render_traceback_()).replace(__file__, "test_tune_magic.py")
    assert len(text) < 300 and "__global__" not in text and "Traceback" not in text


def test_bad_space_in_the_header_names_the_header(shell):
    with pytest.raises(TuneError, match=r"^//\| tune: tune parameter 'BM' has no values"):
        tune(shell, "--compile-only", "//| tune: {BM: []}\n" + GEMM)


def test_where_keeps_the_combinations_that_meet_it(shell):
    t = tune(shell, f'{SPACE} --where "BM * BN >= 128 and block == 256" --compile-only')
    assert [c.params for c in t.candidates] == [{"BM": 64, "BN": 2, "block": 256},
                                               {"BM": 128, "BN": 1, "block": 256},
                                               {"BM": 128, "BN": 2, "block": 256}]
    assert any("3 of 8 combinations meet --where" in n for n in t.notes)
    # a condition that starts with '-' is the option's value, quoted or not
    t = tune(shell, f'{SPACE} --where -BM<-64 --compile-only')
    assert {c.params["BM"] for c in t.candidates} == {128}
    with pytest.raises(TuneError, match=r"--where 'BM > 1000' keeps none of the 8"):
        tune(shell, f'{SPACE} --where "BM > 1000" --compile-only')
    with pytest.raises(TuneError, match=r"--where 'BM >': not a Python expression"):
        tune(shell, f'{SPACE} --where "BM >" --compile-only')


def test_min_occupancy_prunes_with_the_reason(shell):
    t = tune(shell, '--space "block=[128]" --min-occupancy 0.99 --compile-only', HEAVY)
    (c,) = t.candidates
    assert c.occupancy is not None and c.occupancy < 0.99
    assert c.status == "pruned"
    assert re.fullmatch(r"occupancy \d+% < 99% \(.+\)", c.reason), c.reason
    with pytest.raises(UsageError, match="argument --min-occupancy: invalid float value: 'most'"):
        tune(shell, '--space "block=[128]" --min-occupancy most', HEAVY)
    with pytest.raises(TuneError, match=r"--min-occupancy .* 1.5: a fraction"):
        tune(shell, '--space "block=[128]" --min-occupancy 1.5', HEAVY)


def test_a_candidate_that_spills_is_pruned(shell):
    t = tune(shell, '--space "maxrreg=[none, 24]" --compile-only', HEAVY)
    free, capped = t.candidates
    assert free.status == "compiled" and free.spill_bytes == 0
    assert capped.status == "pruned" and capped.spill_bytes > 0
    assert re.fullmatch(r"spills \d+ B \(stores \+ loads\)", capped.reason)
    assert "--maxrregcount=24" in capped.module.result.argv
    t = tune(shell, '--space "maxrreg=[none, 24]" --compile-only --keep-spills', HEAVY)
    assert [c.status for c in t.candidates] == ["compiled", "compiled"]


def test_macros_and_failed_builds(shell):
    cell = ("#if TILE > 2\n#error too big\n#endif\n"
            "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = TILE; }\n")
    t = tune(shell, '--space "TILE=[1, 2, 4]" --compile-only', cell)
    assert [p.kind for p in t.parameters] == ["macro"]
    assert [c.status for c in t.candidates] == ["compiled", "compiled", "failed"]
    assert t.candidates[2].reason.startswith("compile error: ") and "too big" in t.candidates[2].reason
    assert "-DTILE=2" in t.candidates[1].module.result.argv
    # -DNAME makes a macro of a name the code does not mention; a value starting with - is fine
    t = tune(shell, '--space -DUNUSED=[1] --compile-only', cell.replace("TILE", "1"))
    assert [p.kind for p in t.parameters] == ["macro"]


def test_a_sweep_whose_every_candidate_fails_stops_the_cell_after_its_table(shell, capsys):
    """As a %%cuda cell that does not compile: "Run all" stops there; the table is shown first
    and the Tuning is bound (--name) to look at."""
    from cuda_magic.errors import TuneRunError
    cell = "#error never\nextern \"C\" __global__ void k(float* y) { y[0] = TILE; }\n"
    shell.user_ns.pop("t", None)
    with pytest.raises(TuneRunError, match=r"every candidate failed to compile \(2; the table "
                                           r"above says why; the first, TILE=1: compile "
                                           r"error: .*never") as err:
        tune(shell, '--space "TILE=[1, 2]" --compile-only --name t', cell)
    assert [c.status for c in shell.user_ns["t"].candidates] == ["failed", "failed"]
    shown = capsys.readouterr().out
    assert "2 candidates failed" in shown and "both candidates failed to compile the same way" in shown
    assert "Traceback" not in "\n".join(err.value._render_traceback_())


def test_name_binds_the_tuning(shell):
    shell.user_ns.pop("t", None)
    t = tune(shell, f"{SPACE} --compile-only --name t")
    assert shell.user_ns["t"] is t
    with pytest.raises(UsageError, match="--name 'In': that name belongs to IPython"):
        tune(shell, f"{SPACE} --compile-only --name In")


def test_client_must_be_a_name_in_the_namespace(shell):
    shell.user_ns.pop("nope", None)
    with pytest.raises(UsageError, match=r"--client 'nope': no such name in your namespace"):
        tune(shell, f"{SPACE} --client nope")
    shell.user_ns["not_a_client"] = 3
    with pytest.raises(UsageError, match=r"--client not_a_client: .* not a dask.distributed.Client"):
        tune(shell, f"{SPACE} --client not_a_client")


@pytest.mark.parametrize("gpus", ["x", "0,x", "-1", "0,,1", ""])
def test_gpus_takes_a_comma_list_of_ordinals(shell, gpus):
    with pytest.raises(UsageError, match=r"--gpus .*: give GPU ordinals as a comma list"):
        tune(shell, f"{SPACE} --gpus '{gpus}' --compile-only")


def test_reference_is_evaluated_in_the_namespace(shell):
    shell.user_ns.pop("missing_ref", None)
    with pytest.raises(UsageError, match=r"--reference 'missing_ref': NameError"):
        tune(shell, f"{SPACE} --reference missing_ref --compile-only")
    shell.user_ns["ref"] = "text"
    with pytest.raises(TuneError, match=r"--reference .* takes"):
        tune(shell, f"{SPACE} --reference ref --compile-only")


def test_run_with_no_gpu_stops_after_pruning(shell, monkeypatch):
    monkeypatch.setattr(tune_mod, "gpu_archs", lambda: [])   # as on a machine with no GPU
    shell.user_ns.update(a=np.ones(1024, np.float32), c=np.zeros(1024, np.float32))
    shell.user_ns.pop("gemm", None)
    t = tune(shell, f'{SPACE} --run "gemm[cdiv(1024, BM), block](a, c, 1024)" --write')
    assert {c.status for c in t.candidates} == {"compiled"}
    assert any("no GPU here" in n for n in t.notes), t.notes
    assert t.candidates[0].launches and t.candidates[0].launches[0][2] == (16, 1, 1, 128, 1, 1)
    assert "gemm" not in shell.user_ns      # no winner: nothing bound
    # --compile-only says so once, in the header (no note repeating it)
    t = tune(shell, f'{SPACE} --run "gemm[cdiv(1024, BM), block](a, c, 1024)" --compile-only')
    from cuda_magic.display.tune import header
    assert "(compile-only: none benched)" in header(t)
    assert not any("compile-only" in n or "nothing ran" in n for n in t.notes), t.notes


def test_write_without_a_winner_says_so(shell, capsys, monkeypatch):
    monkeypatch.setattr(shell, "set_next_input", lambda *a, **k: pytest.fail("wrote a cell"))
    tune(shell, f"{SPACE} --compile-only --write")
    assert "%%cuda_tune: --write: no winner (nothing ran), so no cell to write" in \
        capsys.readouterr().err


@pytest.fixture
def fake_winner(monkeypatch):
    """Sweeps whose last candidate wins, as if it ran fastest (no GPU needed)."""
    real = tune_mod.tune

    def tune(*args, **kw):
        kw["compile_only"] = True
        t = real(*args, **kw)
        for c in t.candidates:
            if c.status == "compiled":
                c.status, c.time_ms = "ok", 1.0
        t.winner = t.candidates[-1]
        t.winner.status, t.winner.time_ms = "winner", 0.5
        return t
    monkeypatch.setattr(tune_mod, "tune", tune)


def test_winner_kernels_are_bound_and_named(shell, capsys, fake_winner):
    for n in ("gemm", "gemm_128_2", "t"):
        shell.user_ns.pop(n, None)
    t = tune(shell, f"{SPACE} --name t")
    assert t.winner.params == {"BM": 128, "BN": 2, "block": 256}
    assert shell.user_ns["t"] is t
    gemm = shell.user_ns["gemm"]
    assert isinstance(gemm, Kernel) and gemm is t.kernels["gemm"]
    assert t.module["gemm<128, 2>"] is gemm
    bound = [n for n, k in t.kernels.items() if k is gemm]
    assert "gemm" in bound and len(bound) >= 2 and all(shell.user_ns[n] is gemm for n in bound)
    err = capsys.readouterr().err
    m = re.search(r"^%%cuda_tune: winner #7 \(BM=128 BN=2 block=256\): bound (.+)$", err, re.M)
    assert m and set(m.group(1).split(", ")) == set(bound), err


def test_winner_binding_follows_the_cuda_rules(shell, capsys, fake_winner):
    shell.user_ns["gemm"] = 42
    cell = GEMM + "extern \"C\" __global__ void In(float* y) { y[0] = 1.0f; }\n"
    t = tune(shell, '--space "BM=[64] BN=[1]" --name gemm', cell)
    err = capsys.readouterr().err
    assert shell.user_ns["gemm"] is t        # --name wins over the kernel of that name
    assert "%%cuda_tune: --name gemm binds the tuning, not kernel 'gemm'; use gemm.kernels['gemm']" in err
    assert "%%cuda_tune: kernel 'In' is not bound: that name belongs to IPython; use " \
           "gemm.kernels['In']" in err
    assert shell.user_ns["In"] is not t.kernels["In"]
    shell.user_ns["gemm"] = 42
    tune(shell, '--space "BM=[64] BN=[1]"')
    err = capsys.readouterr().err
    assert "%%cuda_tune: kernel 'gemm' replaces your variable gemm (int)" in err
    assert isinstance(shell.user_ns["gemm"], Kernel)


def test_write_puts_the_winners_cell_next(shell, fake_winner, monkeypatch):
    written = []
    monkeypatch.setattr(shell, "set_next_input", lambda text, replace=False: written.append((text, replace)))
    t = tune(shell, "--write", HEADED)
    ((text, replace),) = written
    assert replace is False and text == t.cell
    assert text.startswith(f"%%cuda --arch {ARCH} --instantiate 'gemm<128, 2>'\n")
    assert "tune:" not in text and "// tuned launch: block=256" in text and GEMM in text


def test_help_shows_the_usage_and_the_space_syntax(shell, capsys):
    shell.run_cell("%%cuda_tune?")
    out = capsys.readouterr().out
    assert re.search(r"^\s*%%cuda_tune \[--arch ARCH\]", out, re.M), out[:500]
    assert not re.search(r"^\s*%cuda_tune \[", out, re.M)
    doc = " ".join(shell.find_cell_magic("cuda_tune").__doc__.split())
    for words in ("Examples::", "cdiv(a, b)", "``maxrreg``", "``-DNAME``", "--client NAME",
                  "one per GPU", "``--write``", "--min-occupancy", "pruned",
                  "--write put the %%cuda cell"):
        assert words in doc, words
    with pytest.raises(UsageError) as err:
        shell.run_cell_magic("cuda_tune", "--no-such-option", "x")
    assert "\nusage: %%cuda_tune [--arch ARCH]" in str(err.value)


def test_tuning_shows_every_candidate_as_text_and_html(shell):
    """What the notebook shows after a compile-only %%cuda_tune: the header, then one row per
    candidate in index order with its parameter values (each parameter's kind under its
    name), its registers and its status; the HTML has the same rows."""
    t = tune(shell, f"{SPACE} --compile-only")
    shown = shell.display_formatter.format(t)[0]
    text, html = shown["text/plain"], shown["text/html"]
    lines = text.splitlines()
    assert lines[0].startswith("8 candidates compiled (compile-only: none benched) · compile ")
    assert lines[1] == "" and len(lines) == 12          # the table, no winner, no notes
    head = lines[2].split()
    assert head[:4] == ["#", "BM", "BN", "block"] and head[-2:] == ["status", "reason"]
    assert lines[3].split() == ["template", "template", "launch"]
    registers = head.index("registers")
    expected = [[str(c.index), str(c.params["BM"]), str(c.params["BN"]), str(c.params["block"]),
                 str(c.registers), "compiled"] for c in t.candidates]
    assert [c.index for c in t.candidates] == list(range(8))
    assert [c.params for c in t.candidates[-1:]] == [{"BM": 128, "BN": 2, "block": 256}]
    got = [row[:4] + [row[registers], row[-1]] for row in (ln.split() for ln in lines[4:])]
    assert got == expected, text
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("</tr>")[:-1]]
    assert [row[:4] + [row[registers], row[-2]] for row in cells] == expected
    assert html.count("<span style=\"opacity: 0.65; font-weight: normal\">template</span>") == 2


def test_compile_only_without_a_block_shows_occupancy_and_what_was_done(shell):
    t = tune(shell, '--space "BM=[64,128] BN=[1,2]" --compile-only')
    assert all(c.occupancy is not None and c.occupancy_block == 256 for c in t.candidates)
    text = shell.display_formatter.format(t)[0]["text/plain"]
    lines = text.splitlines()
    assert lines[0].startswith("4 candidates compiled (compile-only: none benched) · ")
    assert lines[1] == "occupancy at block 256 (no block in the space)"
    assert "0 candidates benched" not in text and "no winner" not in text
    assert re.search(r"^  0 +64 +1 +\d+ +0 +\d+% +- +compiled", text, re.M), text


def test_one_compile_error_of_every_candidate_shows_once(shell):
    broken = GEMM.replace("threadIdx.x;", "threadIdx.x")
    from cuda_magic.errors import TuneRunError
    with pytest.raises(TuneRunError, match="every candidate failed to compile"):
        tune(shell, f"{SPACE} --compile-only --name t", broken)   # the cell stops; t is bound
    t = shell.user_ns["t"]
    assert t.counts == {"failed": 8} and all(c.log and c.error is not None for c in t.candidates)
    shown = shell.display_formatter.format(t)[0]
    text, html = shown["text/plain"], shown["text/html"]
    assert "all 8 candidates failed to compile the same way (#0 BM=64 BN=1 block=128 shown):" in text
    assert text.count('cell.cu(4): error: expected a ";"') == 2    # the error, and its log
    assert text.count("     4 |     if (i < n)") == 1 and "\nlog:\n" in text
    assert "compile error:" not in text and "<table" not in html
    assert html.count("nvrtc failed to compile cell.cu") == 1 and ">Log</summary>" in html


def test_tune_and_tuning_are_exported():
    import cuda_magic
    assert cuda_magic.tune is tune_mod.tune and cuda_magic.Tuning is tune_mod.Tuning
    assert {"tune", "Tuning"} <= set(cuda_magic.__all__)


@pytest.mark.gpu
def test_sweep_on_the_gpu_binds_the_winner(shell, capsys):
    n = 1 << 16
    shell.user_ns.update(a=np.arange(n, dtype=np.float32), c=np.zeros(n, np.float32), n=n)
    for k in ("gemm", "tg"):
        shell.user_ns.pop(k, None)
    t = shell.run_cell_magic(
        "cuda_tune", f'{SPACE} --run "gemm[cdiv(n, BM), BM](a, c, n)" --where "BN == 2" '
                     f'--repeat 5 --name tg --nbytes "8 * n"', GEMM)
    assert t.winner is not None and t.winner.time_ms > 0, (t.notes, [c.row() for c in t.candidates])
    assert {c.status for c in t.candidates} <= {"ok", "winner"}
    assert shell.user_ns["gemm"] is t.kernels["gemm"] and shell.user_ns["tg"] is t
    assert "%%cuda_tune: winner #" in capsys.readouterr().err
    assert t.winner.gbps and t.winner.gbps > 0
    assert np.all(shell.user_ns["c"] == 0)         # the sweep ran on copies
