"""Run an exported torch package or kernel.py where cuda-magic is not: a script for a fresh
process (``python -I outside.py SPEC.json``), with cuda-magic, cuda-python (NVRTC, cuda.core,
the driver bindings), CuPy and NumPy's CUDA friends made unimportable before anything loads.

SPEC.json names the package (or the cubin export's directory), where it is importable from
(None: installed), the inputs and the notebook's own outputs (torch.save files), and the
calls to check.  It prints one JSON line of results: per op the bitwise comparison with the
notebook's launch, ``torch.library.opcheck``, the graph breaks ``torch._dynamo.explain`` counts
under ``fullgraph=True``, a ``torch.compile(fullgraph=True)`` run, a CUDA graph's replay; the
build each kernel picked; the errors bad inputs give; and which blocked modules were asked for.
"""

import importlib.abc
import json
import sys

BLOCKED = ("cuda_magic", "cuda", "cupy", "numba", "nvidia.cuda_nvrtc")
asked = []


class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            asked.append(name)
            raise ImportError(f"{name} is blocked here: an export must run without it")
        return None


sys.meta_path.insert(0, _Block())

import importlib  # noqa: E402

import torch  # noqa: E402


def bits_equal(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def run_op(pkg, call):
    args = [torch.load(a) if isinstance(a, str) and a.endswith(".pt") else a for a in call["args"]]
    args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in args]
    return getattr(pkg, call["op"]), args


def check_torch(spec) -> dict:
    if spec["path"]:
        sys.path.insert(0, spec["path"])
    pkg = importlib.import_module(spec["package"])
    out = {"file": pkg.__file__, "ops": {}}
    for call in spec["calls"]:
        op, args = run_op(pkg, call)
        r = {}
        mutated = call.get("mutated")          # the index of the argument the op writes
        fresh = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        result = op(*fresh)
        torch.cuda.synchronize()
        got = fresh[mutated] if mutated is not None else result
        want = torch.load(call["want"]).cuda()
        r["eager_bitwise"] = bits_equal(got, want)
        r["picked"] = getattr(pkg, f"_K_{call['op']}").build_for(0).arch
        r["opcheck"] = {k: v for k, v in torch.library.opcheck(
            op, [a.clone() if isinstance(a, torch.Tensor) else a for a in args]).items()}

        def f(*a):
            return op(*a)
        explained = torch._dynamo.explain(f)(*[a.clone() if isinstance(a, torch.Tensor) else a
                                               for a in args])
        r["graph_breaks"] = explained.graph_break_count
        r["graphs"] = explained.graph_count
        torch._dynamo.reset()
        compiled = torch.compile(f, fullgraph=True)
        again = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        res = compiled(*again)
        torch.cuda.synchronize()
        r["compiled_bitwise"] = bits_equal(again[mutated] if mutated is not None else res, want)
        # a CUDA graph: warm up on a side stream, capture, then replay on new inputs
        static = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            op(*static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        for i, a in enumerate(args):           # the graph must write what it captured afresh
            if isinstance(a, torch.Tensor):
                static[i].copy_(a)
        with torch.cuda.graph(g):
            captured = op(*static)
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                static[i].copy_(a)
        g.replay()
        torch.cuda.synchronize()
        r["graph_bitwise"] = bits_equal(static[mutated] if mutated is not None else captured, want)
        out["ops"][call["op"]] = r
    bad = spec.get("bad")
    if bad:
        op = getattr(pkg, bad["op"])
        args = [torch.load(a).cuda() if isinstance(a, str) else a for a in bad["args"]]
        errors = {}
        cpu = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
        wrong = [a.double() if isinstance(a, torch.Tensor) else a for a in args]
        strided = [a.repeat(2)[::2] if isinstance(a, torch.Tensor) else a for a in args]
        for what, a in (("cpu", cpu), ("dtype", wrong), ("strided", strided)):
            try:
                op(*a)
                errors[what] = None
            except Exception as e:
                errors[what] = f"{type(e).__name__}: {e}"
        out["errors"] = errors
    return out


def _arg(a):
    """A saved tensor (``x.pt``), a tensor of NaN shaped like one (``nan:x.pt``), or a number."""
    if isinstance(a, str) and a.startswith("nan:"):
        return torch.full_like(torch.load(a[4:]).cuda(), float("nan"))
    return torch.load(a).cuda() if isinstance(a, str) else a


def check_cubin(spec) -> dict:
    sys.path.insert(0, spec["path"])
    kernel = importlib.import_module("kernel")
    out = {"file": kernel.__file__, "kernels": {}}
    for call in spec["calls"]:
        k = getattr(kernel, call["kernel"])
        args = [_arg(a) for a in call["args"]]
        k[tuple(call["grid"]), tuple(call["block"])](*args)
        torch.cuda.synchronize()
        want = torch.load(call["want"]).cuda()
        out["kernels"][call["kernel"]] = {"bitwise": bits_equal(args[call["mutated"]], want),
                                          "picked": k.build_for(0).arch}
    return out


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    result = check_torch(spec) if spec["kind"] == "torch" else check_cubin(spec)
    result["blocked_asked"] = sorted(set(asked))
    result["loaded"] = sorted(m for m in sys.modules if any(
        m == b or m.startswith(b + ".") for b in BLOCKED))
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
