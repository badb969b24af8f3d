"""tfg's worker for the compiled execution configurations of PyTorch 2.x.

The C++ worker (tfg/torch/compiled.hpp) starts this program with tfg::campaign::worker (fork +
exec, its own process group, a timeout and an RSS limit) and speaks tfg's worker protocol with
it (tfg/campaign/protocol.hpp): one JSON request line on fd 3, one JSON reply line on fd 4, stdout
and stderr to the worker's log. It runs a mutant, written by tfg as a torch.export program
(.pt2), under torch.compile and its relatives, and writes each configuration's outputs with
torch.save; the C++ worker loads them and judges them like any other configuration (the oracle
lives in C++ only). A crash or a hang here is a crash or a hang of the configuration: the C++
worker ends the same way, so the campaign records it against the configuration that ran.

Configurations (the same names as `flowmut configs`):
  aot_eager          torch.compile(backend="aot_eager"): graph capture and AOTAutograd, no Inductor
  inductor           torch.compile() with its defaults (Inductor, CPU)
  inductor_freezing  torch.compile() with torch._inductor.config.freezing = True (weights as
                     constants: oneDNN weight prepacking, conv/linear + unary fusions)
  inductor_dynamic   torch.compile(dynamic=True)
  export_decomposed  the program after run_decompositions() (core ATen), run by ExportedProgram.module()
  inductor_autograd  gradients of sum(floating outputs) w.r.t. the floating inputs through torch.compile()
  aoti               AOTInductor: torch._inductor.aoti_compile_and_package(program) into a package that
                     the C++ worker loads and runs (torch::inductor::AOTIModelPackageLoader): here it
                     is only compiled; the reply names the package and the paths of its outputs

Request: {"id", "op": "run"|"ping", "model": PROGRAM.pt2, "inputs": INPUTS.pt, "configs": [NAME],
  "threads", "warmup", "max_inputs", "outputs": DIR, "flags": {inductor config name: value}}
Reply: {"id", "ok", "error", "torch": version, "results": [{"config", "ok", "error", "wall_ms",
  "prepare_ms", "outputs": FILE, "skipped", "stage"}]} (aoti: "package": FILE and "out_paths": the
  output leaves' paths as tfg names them, "" for a bare tensor, "1.0" for element 0 of element 1,
  instead of "outputs")
`stage` says where a failure happened: "load" (the program does not load: tfg's own export, the
configuration is skipped, not judged), "compile" (the first call, which compiles) or "run".
Random numbers: the default generator is seeded as the C++ worker seeds it before every
configuration, and torch._inductor.config.fallback_random makes Inductor draw them as eager does.

Test-only fault (like tests/data/fault_ops): TFG_TEST_FAULT_INDUCTOR=hardswish_rank2 makes
Inductor's decomposition of aten.hardswish wrong (+0.25) on rank-2 inputs, and right elsewhere.
aot_eager does not use Inductor's decompositions, so it stays right. Inductor's cache is a folder
of its own while it is set (the cache does not key on the decomposition table).
"""

import json
import os
import sys
import time
import traceback

import torch
import torch._dynamo
import torch._inductor.config as inductor_config

SEED = 0x7466676D75746174  # the C++ worker's reseed_cpu_generator()
FORWARD = ("aot_eager", "inductor", "inductor_freezing", "inductor_dynamic", "export_decomposed")
GRADIENT = ("inductor_autograd",)
PACKAGED = ("aoti",)


def install_test_fault():
    fault = os.environ.get("TFG_TEST_FAULT_INDUCTOR", "")
    if not fault:
        return
    if fault != "hardswish_rank2":
        raise SystemExit(f"TFG_TEST_FAULT_INDUCTOR={fault}: unknown fault (known: hardswish_rank2)")
    from torch._inductor import decomposition

    aten = torch.ops.aten

    def wrong_hardswish(x):
        right = x * torch.clamp(x + 3, 0, 6) / 6
        return right + 0.25 if x.dim() == 2 else right

    decomposition.decompositions[aten.hardswish.default] = wrong_hardswish
    # Inductor's caches key on the graph and the config, not on a patched decomposition table: a
    # graph compiled with the fault must never be served to a run without it. Its own cache
    # folder (read lazily by Inductor) keeps the faulty graphs apart and the reruns warm.
    import tempfile
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "torchinductor_tfg_test_fault")


def short_error(e):
    """The exception's type and first lines, without dynamo's advice tail."""
    text = f"{type(e).__name__}: {e}"
    keep = []
    for line in text.splitlines():
        if line.startswith(("Set TORCHDYNAMO_VERBOSE", "You can suppress this exception", "from user code:",
                            "For more information", "Set TORCH_LOGS")):
            break
        keep.append(line)
        if len(keep) >= 6:
            break
    return "\n".join(keep).strip()[:2000]


def detached(value):
    """Detached CPU copies of what forward returned, keeping tuples and lists."""
    if isinstance(value, tuple):
        return tuple(detached(v) for v in value)
    if isinstance(value, list):
        return [detached(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    return value


def load_inputs(path):
    data = torch.load(path, weights_only=False)
    out = []
    for x in data:
        out.append(tuple(x) if isinstance(x, (tuple, list)) else (x,))
    return out


def clone_args(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def make_callable(config, ep, flags):
    """The configuration's callable (compiles lazily, on the first call)."""
    torch._dynamo.reset()
    if config == "export_decomposed":
        return ep.run_decompositions().module()
    gm = ep.module()
    for p in gm.parameters():
        p.requires_grad_(False)
    if config == "aot_eager":
        return torch.compile(gm, backend="aot_eager")
    options = dict(flags or {})
    if config == "inductor_freezing":
        options["freezing"] = True
    dynamic = True if config == "inductor_dynamic" else None
    compiled = torch.compile(gm, dynamic=dynamic)
    if not options:
        return compiled

    def run(*args):
        with inductor_config.patch(options):
            return compiled(*args)

    return run


def gradients(fn, args):
    leaves, positions, call = [], [], []
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            leaf = a.clone().detach().requires_grad_(True)
            leaves.append(leaf)
            positions.append(k)
            call.append(leaf.clone())
        else:
            call.append(a.clone() if isinstance(a, torch.Tensor) else a)
    if not leaves:
        raise RuntimeError("no floating input tensor to differentiate with respect to")
    out = fn(*call)
    flat, _ = torch.utils._pytree.tree_flatten(out)
    loss = None
    for t in flat:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad:
            s = t.sum().to(torch.float64)
            loss = s if loss is None else loss + s
    if loss is None:
        raise RuntimeError("no floating output depends on a floating input (nothing to differentiate)")
    grads = torch.autograd.grad([loss], leaves, allow_unused=True)
    return tuple((g if g is not None else torch.zeros_like(l)).detach().cpu() for g, l in zip(grads, leaves))


def run_config(config, ep, inputs, req):
    result = {"config": config, "ok": False, "error": "", "wall_ms": 0.0, "prepare_ms": 0.0, "skipped": False,
              "stage": "compile"}
    warmup = int(req.get("warmup", 2))
    torch.manual_seed(SEED)
    grad = config in GRADIENT
    try:
        t0 = time.perf_counter()
        fn = make_callable("inductor" if grad else config, ep, req.get("flags"))
        if grad:
            call = lambda args: gradients(fn, args)
        else:
            def call(args):
                with torch.no_grad():
                    return detached(fn(*args))
        for _ in range(max(1, warmup)):  # the first call compiles: always one, timed as preparation
            call(clone_args(inputs[0]))
            result["stage"] = "run"
        result["prepare_ms"] = (time.perf_counter() - t0) * 1e3
        args = [clone_args(x) for x in inputs]
        torch.manual_seed(SEED)  # the timed runs draw what eager draws
        t1 = time.perf_counter()
        outs = [call(a) for a in args]
        result["wall_ms"] = (time.perf_counter() - t1) * 1e3
        path = os.path.join(req["outputs"], f"{config}.outputs.pt")
        torch.save(outs, path)
        result["outputs"] = path
        result["ok"] = True
        result["stage"] = ""
    except Exception as e:  # noqa: BLE001 - every failure of the framework is a result
        result["error"] = short_error(e)
        print(f"tfg_compiled_worker: {config}: {result['stage']}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    finally:
        torch._dynamo.reset()
    return result


def leaf_paths(spec):
    """The paths of a pytree spec's leaves, named as tfg's ivalue::flatten names them."""
    structure = torch.utils._pytree.tree_unflatten(list(range(spec.num_leaves)), spec)
    paths = []

    def walk(v, path):
        child = (lambda i: str(i) if not path else path + "." + str(i))
        if isinstance(v, (tuple, list)):
            for i, e in enumerate(v):
                walk(e, child(i))
        elif isinstance(v, dict):
            for i, (k, e) in enumerate(v.items()):
                walk(e, ((path + ".") if path else "") + k if isinstance(k, str) else child(i))
        else:
            paths.append(path)

    walk(structure, "")
    return paths


def compile_aoti(ep, inputs, req):
    """AOTInductor: the program compiled into a package the C++ worker runs."""
    result = {"config": "aoti", "ok": False, "error": "", "wall_ms": 0.0, "prepare_ms": 0.0, "skipped": False,
              "stage": "compile"}
    if any(not isinstance(a, torch.Tensor) for a in inputs[0]):
        result.update(skipped=True, stage="load",
                      error="aoti: the program takes non-tensor inputs, which an AOTInductor package's C++ runner "
                            "cannot be given")
        return result
    torch.manual_seed(SEED)
    try:
        t0 = time.perf_counter()
        path = os.path.join(req["outputs"], "aoti.pt2")
        from torch._inductor import aoti_compile_and_package
        options = dict(req.get("flags") or {})
        aoti_compile_and_package(ep, package_path=path, inductor_configs=options or None)
        result["prepare_ms"] = (time.perf_counter() - t0) * 1e3
        result["package"] = path
        result["out_paths"] = leaf_paths(ep.call_spec.out_spec)
        result["ok"] = True
        result["stage"] = ""
    except Exception as e:  # noqa: BLE001 - every failure of the framework is a result
        result["error"] = short_error(e)
        print("tfg_compiled_worker: aoti: compile:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    finally:
        torch._dynamo.reset()
    return result


def handle(req):
    reply = {"id": req.get("id", -1), "ok": False, "torch": torch.__version__}
    if req.get("op") == "ping":
        reply.update(ok=True, pid=os.getpid())
        return reply
    torch.set_num_threads(max(1, int(req.get("threads", 1))))
    configs = req.get("configs") or list(FORWARD)
    try:
        inputs = load_inputs(req["inputs"])
    except Exception as e:  # noqa: BLE001
        reply["error"] = f"{req.get('inputs')}: cannot load the inputs: {short_error(e)}"
        return reply
    limit = int(req.get("max_inputs", 0))
    if limit > 0:
        inputs = inputs[:limit]
    results = []
    try:
        ep = torch.export.load(req["model"])
    except Exception as e:  # noqa: BLE001 - tfg wrote the program: its defect, not the framework's
        for c in configs:
            results.append({"config": c, "ok": False, "skipped": True, "stage": "load", "wall_ms": 0.0, "prepare_ms": 0.0,
                            "error": f"{req['model']}: torch.export.load: {short_error(e)}"})
        reply.update(ok=True, results=results)
        return reply
    for c in configs:
        if c in PACKAGED:
            results.append(compile_aoti(ep, inputs, req))
            continue
        if c not in FORWARD and c not in GRADIENT:
            results.append({"config": c, "ok": False, "skipped": True, "stage": "load", "wall_ms": 0.0,
                            "prepare_ms": 0.0, "error": f"unknown compiled configuration `{c}`"})
            continue
        results.append(run_config(c, ep, inputs, req))
    reply.update(ok=True, results=results)
    return reply


def main():
    inductor_config.fallback_random = True  # random operators draw eager's numbers
    inductor_config.compile_threads = 1  # no compile pool: the machine's cores run the configurations
    install_test_fault()
    try:
        requests = os.fdopen(3, "r", encoding="utf-8")
        replies = os.fdopen(4, "w", encoding="utf-8")
    except OSError:
        print("tfg_compiled_worker: fds 3 and 4 are not open: start me with tfg::campaign::worker", file=sys.stderr)
        return 2
    for line in requests:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            reply = handle(req)
        except Exception as e:  # noqa: BLE001 - a malformed request is answered, never fatal
            reply = {"id": -1, "ok": False, "error": f"bad request: {short_error(e)}"}
        sys.stdout.flush()
        sys.stderr.flush()
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
