"""The README and docs/*.md: every example that claims to run, runs; every relative link works.

The convention (docs/index.md says it too):

- Fences ```python and ```ipython claim to run. Per file, they run in order as the cells of
  one notebook, in a fresh `python3` kernel (nbclient) whose working directory is an empty
  temporary folder. Any other fence (```text, ```sh, ```console, ```cuda, ```yaml, ```json)
  is not run, and every fence names its language.
- `<!-- gpu -->` on a line before a fence: the block needs a GPU. Without one it is left
  out; `pytest -m gpu` runs every file with all of its blocks.
- `<!-- raises NAME -->` on a line before a fence (with `<!-- gpu -->` or without): the block must fail with the exception
  NAME (the example shows an error).
- A ```output fence right after a runnable block (blank lines between at most) is what that
  block prints: its stdout, then for a block that raises the line `NAME: message`. It is
  compared line by line (trailing spaces aside); `...` in a line stands for any text, and a
  line that is only `...` for any number of lines. An output fence anywhere else is an error.
- Without a GPU a `%%cuda` cell with no arch is an error (there is no GPU to detect one), so
  the CPU run gives its kernel an IPython profile whose ipython_config.py says
  `c.CudaMagics.defaults = {"arch": "sm_90a"}`: a session default, as a user would set it
  (it shows as layer `session`). The GPU run adds nothing: blocks run as pasted.

Also: README.md is at most 10 KiB, and names nothing outside the repository.
"""

import ast
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNS = {"python", "ipython"}
FENCE = re.compile(r"^( {0,3})(`{3,})(.*)$")
MARK = re.compile(r"^<!--\s*(gpu|raises\s+(\w+))\s*-->$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CPU_CONFIG = 'c.CudaMagics.defaults = {"arch": "sm_90a"}\n'


@dataclass
class Block:
    lang: str
    line: int            # 1-based line of the opening fence
    source: str
    gpu: bool = False
    raises: str | None = None
    end: int = 0         # 1-based line of the closing fence
    output: str | None = None   # the ```output block right after it: what it prints


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the marks on the line before each."""
    out, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, lang = len(m.group(1)), m.group(2), m.group(3).strip()
        start, body = i, []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,3}}{ticks}\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        assert i < len(lines), f"{path.name}:{start + 1}: fence never closed"
        i += 1
        block = Block(lang, start + 1, "\n".join(body), end=i)
        j = start - 1
        while j >= 0 and (not lines[j].strip() or MARK.match(lines[j].strip())):
            mark = MARK.match(lines[j].strip())
            if mark and mark.group(1) == "gpu":
                block.gpu = True
            elif mark:
                block.raises = mark.group(2)
            j -= 1
        out.append(block)
    for code, shown in zip(out, out[1:]):
        if (shown.lang == "output" and code.lang in RUNS
                and not any(line.strip() for line in lines[code.end:shown.line - 1])):
            code.output = shown.source
    return out


def orphan_outputs(path: Path) -> list[int]:
    """Lines of ```output fences that follow no runnable block directly."""
    bs = blocks(path)
    owned = {b.end for b in bs if b.output is not None}
    return [b.line for i, b in enumerate(bs) if b.lang == "output"
            and (i == 0 or bs[i - 1].end not in owned)]


def output_pattern(shown: str) -> re.Pattern:
    """``shown`` as a pattern of whole lines: ``...`` is any text in a line, a line of
    ``...`` alone any number of lines."""
    parts = []
    for line in shown.rstrip("\n").split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.rstrip().split("...")) + "\n")
    return re.compile("".join(parts))


def printed(cell) -> str:
    """What a run cell printed: its stdout, then ``NAME: message`` of its error."""
    text = "".join(o["text"] for o in cell.outputs
                   if o["output_type"] == "stream" and o["name"] == "stdout")
    for o in cell.outputs:
        if o["output_type"] == "error":
            text += f"{o['ename']}: {ANSI.sub('', o['evalue'])}\n"
    return "\n".join(line.rstrip() for line in text.split("\n"))


def ids(files):
    return [str(f.relative_to(ROOT)) for f in files]


RUNNABLE = [f for f in FILES if any(b.lang in RUNS for b in blocks(f))]


def test_readme_is_small():
    size = (ROOT / "README.md").stat().st_size
    assert size <= 10 * 1024, f"README.md is {size} bytes; keep it <= 10240 (move detail to docs/)"


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_fences_name_their_language(path):
    unnamed = [b.line for b in blocks(path) if not b.lang]
    assert not unnamed, f"{path.name}: fences without a language at lines {unnamed}"
    marked = [b.line for b in blocks(path) if (b.gpu or b.raises) and b.lang not in RUNS]
    assert not marked, f"{path.name}: <!-- gpu/raises --> on blocks that do not run, lines {marked}"
    orphans = orphan_outputs(path)
    assert not orphans, f"{path.name}: ```output fences after no runnable block, lines {orphans}"


def _without_fences(text: str) -> str:
    return re.sub(r"(?ms)^ {0,3}(`{3,}).*?^ {0,3}\1\s*$", "", text)


def _without_code(text: str) -> str:
    return re.sub(r"(`+)[^`\n]*?\1", "", _without_fences(text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _without_fences(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_relative_links(path):
    text = path.read_text(encoding="utf-8")
    assert "DESIGN.md" not in text and "../shared" not in text, \
        f"{path.name} names a file outside the repository"
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", _without_code(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):          # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.is_relative_to(ROOT):
            bad.append(f"{target} (outside the repository)")
        elif not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target} (no heading #{anchor} in {dest.name})")
    assert not bad, f"{path.name}: broken links: {bad}"


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_tables_keep_their_columns(path):
    """A `|` inside a table cell (even in backticks, as in `//|`) must be written `\\|`."""
    bad, cols = [], None
    for i, line in enumerate(_without_fences(path.read_text(encoding="utf-8")).splitlines(), 1):
        if not line.startswith("|"):
            cols = None
            continue
        n = len(re.split(r"(?<!\\)\|", line.strip().strip("|")))
        cols = n if cols is None else cols
        if n != cols:
            bad.append(line[:60])
    assert not bad, f"{path.name}: table rows with a different number of columns: {bad}"


def test_an_output_fence_is_what_the_block_before_it_prints(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1)\n```\n\n```output\n1\n```\n\ntext\n\n"
                    "```python\nprint(2)\n```\n\nprose between\n\n```output\n2\n```\n")
    first, shown, second, orphan = blocks(page)
    assert first.output == "1" and second.output is None and orphan_outputs(page) == [orphan.line]
    pattern = output_pattern("a ... c\n...\nz")
    assert pattern.fullmatch("a b c\nz\n") and pattern.fullmatch("a  c\nx\ny\nz\n")
    assert not pattern.fullmatch("a b c\nz\nextra\n") and not pattern.fullmatch("a b\nz\n")
    assert not output_pattern("1").fullmatch("12\n")


# what a GPU-less reader is told before a page's first example, where its examples compile with
# no arch (the README says it before its first example in its own words)
NO_GPU = "No GPU here? Run `%cuda_config --arch sm_90a` once after `%load_ext cuda_magic`"
_COMPILES = re.compile(r"%%cuda|cuda_magic\.(?:build|compile_source|compare|tune)\(")


@pytest.mark.parametrize("path", FILES[1:], ids=ids(FILES[1:]))
def test_a_page_whose_examples_name_no_arch_says_what_to_run_without_a_gpu(path):
    runnable = [b for b in blocks(path) if b.lang in RUNS]
    no_arch = [b.line for b in runnable if _COMPILES.search(b.source) and "arch" not in b.source]
    text = " ".join(path.read_text().splitlines()[:runnable[0].line - 1]) if runnable else ""
    if no_arch:
        assert NO_GPU in text, (f"{path.name}: examples at lines {no_arch} name no arch; say "
                                f"before the first example: {NO_GPU}...")


MODULES = {"cuda_magic", "np", "numpy", "cp", "cupy", "torch", "os"}


def _python(block: Block) -> str:
    """A block's Python: line magics and shell lines blanked (``x = %magic`` is ``x = None``);
    "" for a cell magic's block."""
    if block.source.lstrip().startswith("%%"):
        return ""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else
                     re.sub(r"=\s*[%!].*", "= None", line) for line in block.source.splitlines())


@pytest.mark.parametrize("path", RUNNABLE, ids=ids(RUNNABLE))
def test_a_block_uses_a_module_only_after_a_block_imports_it(path):
    """Checked without running, so it holds for `<!-- gpu -->` blocks too, which only the GPU
    run executes (a GPU block once used `cuda_magic.view` on a page importing it later)."""
    imported, late = set(), []
    for block in (b for b in blocks(path) if b.lang in RUNS):
        tree = ast.parse(_python(block))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        used = {n.value.id for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        late += [f"line {block.line}: {name}" for name in sorted((used & MODULES) - imported)]
    assert not late, f"{path.name}: a module used before any block imports it: {late}"


def test_readme_says_where_precompiled_headers_go_and_their_cap(monkeypatch):
    from cuda_magic import settings
    text = " ".join((ROOT / "README.md").read_text().split())
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    home = settings.TABLE["pch_dir"].default_value().replace(os.path.expanduser("~"), "~")
    cap = settings.TABLE["pch_limit"].default_value()
    assert f"in `{home}`, at most {cap >> 30} GiB" in text
    for env in ("CUDA_MAGIC_PCH_DIR", "CUDA_MAGIC_PCH_LIMIT", "CUDA_MAGIC_PCH=0"):
        assert f"`{env}`" in text or f"`{env} " in text, env


def test_readme_example_is_the_notebooks():
    """The README's first %%cuda cell is the quickstart notebook's."""
    readme = next(b.source for b in blocks(ROOT / "README.md") if b.source.startswith("%%cuda"))
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    cell = next(c.source for c in nb.cells if c.source.startswith("%%cuda"))
    assert readme.strip() == cell.strip()


def run_file(path: Path, tmp_path: Path, monkeypatch, gpu: bool):
    chosen = [b for b in blocks(path) if b.lang in RUNS and (gpu or not b.gpu)]
    if not chosen:
        pytest.skip("no block runs here")
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    if not gpu:
        (profile / "ipython_config.py").write_text(CPU_CONFIG)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))     # ~/.cache/... in an example stays here
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("CUDA_MAGIC_CACHE_DIR", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *sys.path]))
    cells = []
    for b in chosen:
        cell = nbformat.v4.new_code_cell(b.source)
        if b.raises:
            cell.metadata["tags"] = ["raises-exception"]
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    name = path.relative_to(ROOT)
    try:
        client.execute()
    except CellExecutionError as exc:
        done = [i for i, c in enumerate(nb.cells) if c.get("execution_count")]
        b = chosen[done[-1]] if done else chosen[0]
        pytest.fail(f"{name}:{b.line}: the ```{b.lang} block failed:\n{b.source[:500]}\n---\n"
                    f"{ANSI.sub('', str(exc))[-3000:]}", pytrace=False)
    for b, cell in zip(chosen, nb.cells):
        errors = [o for o in cell.outputs if o["output_type"] == "error"]
        if b.raises:
            names = [o["ename"] for o in errors]
            assert names == [b.raises], \
                f"{name}:{b.line}: expected {b.raises}, got {names or 'no error'}"
            text = ANSI.sub("", "\n".join(errors[0]["traceback"]))
            assert "cuda_magic/" not in text, f"{name}:{b.line}: frames from inside:\n{text}"
        if b.output is not None:
            got = printed(cell)
            assert output_pattern(b.output).fullmatch(got if got.endswith("\n") else got + "\n"), \
                f"{name}:{b.end + 1}: the ```output block is not what the block prints:\n" \
                f"--- shown\n{b.output}\n--- printed\n{got}"
    return nb


@pytest.mark.parametrize("path", RUNNABLE, ids=ids(RUNNABLE))
def test_blocks_run_without_gpu(path, tmp_path, monkeypatch):
    """The blocks not marked `<!-- gpu -->`, with the session default arch sm_90a."""
    run_file(path, tmp_path, monkeypatch, gpu=False)


@pytest.mark.gpu
@pytest.mark.parametrize("path", RUNNABLE, ids=ids(RUNNABLE))
def test_blocks_run_on_gpu(path, tmp_path, monkeypatch):
    """Every block, as pasted: the arch is the GPU's."""
    run_file(path, tmp_path, monkeypatch, gpu=True)


def test_ci_runs_exactly_the_readmes_two_commands():
    """``.ci/run`` checks the README has each of its commands as a line, then runs those: the
    check itself is tested here (with a README lacking one, it exits before installing)."""
    import re
    import subprocess
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"^(?:MAIN|TESTS)='(.*)'$", ci, re.M)
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(commands) == 2 and all(c in lines for c in commands)
    assert ci.count('eval "$MAIN"') == 1 and ci.count('eval "$TESTS"') == 1
    check = ci[ci.index("MAIN="):ci.index("done\n") + 5]
    ok = subprocess.run(["bash", "-c", check], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(["bash", "-c", check.replace("README.md", "/dev/null")], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "has no line: pip install -e . && python3" in bad.stderr
