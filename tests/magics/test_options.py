"""The options of the magic lines, each declared once (cuda_magic.magics.options): the shared
decorators keep source order, and every magic's ? help lists its options (CPU)."""

from IPython.core.magic_arguments import argument, magic_arguments

from cuda_magic.magics import options


def test_options_applies_arguments_in_the_order_given():
    @magic_arguments()
    @options.options(argument("--one"), options.force(), argument("--two"))
    @argument("--three")
    def f(line):
        """Doc."""
    usage = f.parser.format_usage()
    assert usage.index("--one") < usage.index("--force") < usage.index("--two") < \
        usage.index("--three")


def _help(shell, magic: str) -> str:
    return " ".join(shell.find_cell_magic(magic).__doc__.split())


def test_each_magic_lists_the_shared_options_in_its_own_words(shell):
    cuda, compare, tune = (_help(shell, m) for m in ("cuda", "cuda_compare", "cuda_tune"))
    for text in (cuda, compare, tune):
        for flag in ("--arch ARCH", "--nvrtc+ \"ARGS\"", "--preset NAME",
                     "--instantiate \"NAME<T>\"", "--name NAME", "--force"):
            assert flag in text, (flag, text[:200])
    assert "--name NAME also bind the compiled module under this Python name" in cuda
    assert "--name NAME also bind the comparison under" in compare
    assert "--name NAME also bind the Tuning under" in tune
    assert "instantiate a template kernel in every candidate" in tune
    assert "--force recompile even if the cache has this build" in cuda
    assert "--force recompile even if the cache has these builds" in compare
    assert "--compile-only compile and show; bind no kernels" in cuda
    assert "--compile-only compile and prune" in tune
    assert "--run <\"EXPR\"> Python launching the kernels, run once per variant" in compare
    config = " ".join(shell.find_line_magic("cuda_config").__doc__.split())
    assert "--arch ARCH" in config and "--name" not in config and "--force" not in config
