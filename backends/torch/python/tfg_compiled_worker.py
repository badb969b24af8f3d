"""tfg's worker for the compiled execution configurations of PyTorch 2.x.

The C++ worker (tfg/torch/execute/compiled.hpp) starts this program with tfg::campaign::worker (fork +
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
  onnxruntime        the program exported to ONNX (torch.onnx.export(program, dynamo=True), the
                     exporter's own graph optimisation on, as it is by default) and run by ONNX
                     Runtime's CPU execution provider with its graph optimisations at their default
                     level (ORT_ENABLE_ALL)
  onnxruntime_noopt  the same ONNX model with ONNX Runtime's graph optimisations off (ORT_DISABLE_ALL)

Request: {"id", "op": "run"|"ping", "model": PROGRAM.pt2, "inputs": INPUTS.pt, "configs": [NAME],
  "threads", "warmup", "max_inputs", "outputs": DIR, "flags": {inductor config name: value}}
Reply: {"id", "ok", "error", "torch": version, "results": [{"config", "ok", "error", "wall_ms",
  "prepare_ms", "outputs": FILE, "skipped", "unsupported", "stage"}]} (aoti: "package": FILE and "out_paths": the
  output leaves' paths as tfg names them, "" for a bare tensor, "1.0" for element 0 of element 1,
  instead of "outputs")
`stage` says where a failure happened: "load" (the program does not load: tfg's own export, the
configuration is skipped, not judged), "compile" (the first call, which compiles) or "run";
for the ONNX configurations also "export" (torch.onnx.export failed on a program eager runs: an
exporter defect) and "session" (ONNX Runtime refused the exported model). What the exporter or
ONNX Runtime does not support (an operator without an ONNX translation, a kernel ONNX Runtime's
CPU provider lacks, bfloat16 tensors numpy cannot hold) is "skipped" and "unsupported", the error
"unsupported: " and the reason: never a finding. One export serves both ONNX configurations of a program (the second
reuses the first's model or its export failure, which is judged once, under `onnxruntime`).
Random numbers: the default generator is seeded as the C++ worker seeds it before every
configuration, and torch._inductor.config.fallback_random makes Inductor draw them as eager does.

Test-only faults (like tests/data/fault_ops): TFG_TEST_FAULT_ONNX=hardswish_rank2 adds 0.25 to the
output of the exported ONNX model's HardSwish nodes of rank 2 (install_onnx_fault);
TFG_TEST_FAULT_INDUCTOR=hardswish_rank2 makes
Inductor's decomposition of aten.hardswish wrong (+0.25) on rank-2 inputs, and right elsewhere.
aot_eager does not use Inductor's decompositions, so it stays right. Inductor's cache is a folder
of its own while it is set (the cache does not key on the decomposition table).
"""

import json
import os
import re
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
ONNX = ("onnxruntime", "onnxruntime_noopt")


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


def install_onnx_fault(path):
    """Test-only (TFG_TEST_FAULT_ONNX=hardswish_rank2): the exported model's HardSwish nodes with
    rank-2 outputs compute +0.25 (an Add after them), the others stay right: an ONNX model wrong
    at one node, as an exporter or runtime defect would make it."""
    fault = os.environ.get("TFG_TEST_FAULT_ONNX", "")
    if not fault:
        return
    if fault != "hardswish_rank2":
        raise SystemExit(f"TFG_TEST_FAULT_ONNX={fault}: unknown fault (known: hardswish_rank2)")
    import onnx
    from onnx import helper, numpy_helper
    import numpy as np

    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in
             list(model.graph.value_info) + list(model.graph.output) if v.type.tensor_type.HasField("shape")}
    nodes = []
    for n in model.graph.node:
        nodes.append(n)
        if n.op_type == "HardSwish" and ranks.get(n.output[0]) == 2:
            right = n.output[0] + "__tfg_right"
            bias = n.output[0] + "__tfg_fault"
            model.graph.initializer.append(numpy_helper.from_array(np.array(0.25, dtype=np.float32), bias))
            wrong = n.output[0]
            n.output[0] = right
            add = helper.make_node("Add", [right, bias], [wrong], name=n.name + "__tfg_fault")
            add.metadata_props.extend(n.metadata_props)  # exported from the same FX node
            nodes.append(add)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, path)


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


class Unsupported(Exception):
    """Something the exporter or ONNX Runtime does not support: not run, not a finding."""


class ExportFailed(Exception):
    """torch.onnx.export failed on the program (its message is the exporter's error)."""


# Messages of what is not supported, not broken: the exporter has no translation of an
# operator; ONNX Runtime's CPU provider has no kernel for a type.
UNSUPPORTED_EXPORT = ("No ONNX function found", "No decompositions registered", "Unsupported FX nodes")
UNSUPPORTED_SESSION = ("NOT_IMPLEMENTED", "Could not find an implementation")

_onnx_cache = {}  # (program bytes' digest, input shapes) -> (ONNX model bytes, export error, unsupported, ONNXProgram)


def random_nodes(ep):
    """The program's operators that draw random numbers (ONNX Runtime draws its own)."""
    out = []
    for n in ep.graph.nodes:
        tags = getattr(n.target, "tags", ()) if n.op == "call_function" else ()
        if torch.Tag.nondeterministic_seeded not in tags:
            continue
        # The arguments by name (the schema's defaults filled in): a dropout in eval mode or with
        # probability 0 (dropout(x, p, train), scaled_dot_product_attention's dropout_p) draws nothing.
        args = {}
        schema = getattr(n.target, "_schema", None)
        for i, a in enumerate(schema.arguments if schema is not None else ()):
            if i < len(n.args):
                args[a.name] = n.args[i]
            elif a.name in n.kwargs:
                args[a.name] = n.kwargs[a.name]
            elif a.has_default_value():
                args[a.name] = a.default_value
        if args.get("train") is False or args.get("p") == 0 or args.get("dropout_p") == 0:
            continue
        out.append(str(n.target))
    return out


def tensor_args(args):
    flat, _ = torch.utils._pytree.tree_flatten(list(args))
    return [a for a in flat if isinstance(a, torch.Tensor)]


def onnx_ready(ep):
    """The program as torch.export writes it for the exporter: tfg writes TorchScript's
    `aten._convolution` (its import of traced models keeps it), which torch.export never emits and
    the ONNX exporter does not translate; it becomes `aten.convolution` (the same computation:
    the four flags it drops are backend hints). In place."""
    aten = torch.ops.aten
    changed = False
    for n in ep.graph.nodes:
        if n.op == "call_function" and n.target is aten._convolution.default:
            n.target = aten.convolution.default
            n.args = tuple(n.args[:9])
            changed = True
    if changed:
        ep.graph_module.recompile()
    return ep


ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the exporter colours its messages


def onnx_error(e):
    """The exporter's error: its headline and the first cause of its "Exception summary"."""
    text = ANSI.sub("", str(e))
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    head = f"{type(e).__name__}: {lines[0] if lines else ''}"
    if "## Exception summary" in text:
        tail = text.split("## Exception summary", 1)[1]
        cause = next((l.strip() for l in tail.splitlines() if l.strip().startswith("<class")), "")
        if cause:
            head += " " + cause.replace("<class 'torch.onnx._internal.exporter._errors.", "<class '")
    return head[:2000]


def export_onnx(ep, args, req):
    """The program as an ONNX file (cached per program and input shapes), or raises: Unsupported, or
    the exporter's own exception (an exporter defect)."""
    import hashlib

    with open(req["model"], "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    key = (digest, tuple((tuple(t.shape), str(t.dtype)) for t in tensor_args(args)))
    path = os.path.join(req["outputs"], "model.onnx")
    if key in _onnx_cache:
        model, error, unsupported, _ = _onnx_cache[key]
        if model:
            with open(path, "wb") as f:
                f.write(model)
    else:
        model, error, unsupported, program = b"", "", False, None
        try:
            if any(t.dtype in (torch.bfloat16, torch.complex64, torch.complex128) for t in tensor_args(args)):
                raise Unsupported("bfloat16 and complex inputs: numpy, through which ONNX Runtime's Python API "
                                  "takes its inputs, has no such type")
            drawn = random_nodes(ep)
            if drawn:
                raise Unsupported("the program draws random numbers (" + ", ".join(sorted(set(drawn))[:3]) +
                                  "), which ONNX Runtime draws its own way: not compared")
            program = torch.onnx.export(onnx_ready(ep), tuple(args), dynamo=True, verbose=False, report=False)
            program.save(path)
            # A model the ONNX checker refuses (types an operator's schema does not allow, attributes
            # that fail shape inference) is the exporter's defect, not the runtime's.
            import onnx
            try:
                onnx.checker.check_model(path, full_check=True)
            except Exception as e:  # noqa: BLE001
                raise ExportFailed("the exporter wrote an invalid ONNX model: " + short_error(e)) from e
            install_onnx_fault(path)
            with open(path, "rb") as f:
                model = f.read()
        except Unsupported as e:
            error, unsupported = str(e), True
        except ExportFailed as e:
            error = str(e)
        except Exception as e:  # noqa: BLE001 - the exporter's failure is a result
            error = onnx_error(e)
            unsupported = any(m in ANSI.sub("", str(e)) for m in UNSUPPORTED_EXPORT)
            print("tfg_compiled_worker: onnx export:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
        _onnx_cache.clear()  # one program at a time: its two configurations ask in turn
        _onnx_cache[key] = (model, error, unsupported, program)
    if unsupported:
        raise Unsupported(error)
    if error:
        raise ExportFailed(error)
    return path


def ort_session(model, config, req):
    """An ONNX Runtime session of `model` (a path or the serialised model) as `config` runs it: the
    CPU provider, graph optimisations at their default level (ALL) or off, the request's threads."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if config == "onnxruntime_noopt"
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    so.intra_op_num_threads = max(1, int(req.get("threads", 1)))
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ort_feeds(session, tensors):
    """The session's inputs, in order, from the call's tensors."""
    return {i.name: t.detach().contiguous().numpy() for i, t in zip(session.get_inputs(), tensors)}


def run_onnx(config, ep, inputs, req):
    result = {"config": config, "ok": False, "error": "", "wall_ms": 0.0, "prepare_ms": 0.0, "skipped": False,
              "stage": "export"}
    warmup = int(req.get("warmup", 2))
    try:
        t0 = time.perf_counter()
        try:
            path = export_onnx(ep, inputs[0], req)
        except ExportFailed as e:
            if config != "onnxruntime":  # judged once, under onnxruntime
                result.update(skipped=True, error=f"the export failed (judged under onnxruntime): {e}")
            else:
                result["error"] = str(e)
            return result
        result["stage"] = "session"
        try:
            session = ort_session(path, config, req)
        except Exception as e:  # noqa: BLE001
            if any(m in str(e) for m in UNSUPPORTED_SESSION):
                raise Unsupported("ONNX Runtime's CPU provider: " + short_error(e)) from e
            raise
        names = [i.name for i in session.get_inputs()]
        spec = ep.call_spec.out_spec
        if any(o.type == "tensor(bfloat16)" for o in session.get_outputs()):
            raise Unsupported("bfloat16 outputs: numpy, through which ONNX Runtime's Python API returns them, has "
                              "no such type")

        def call(args):
            ts = tensor_args(args)
            if len(ts) != len(names):
                raise Unsupported(f"the ONNX model takes {len(names)} inputs, the program's call {len(ts)} tensors")
            outs = session.run(None, ort_feeds(session, ts))
            outs = [torch.from_numpy(o.copy()) if hasattr(o, "dtype") else torch.tensor(o) for o in outs]
            if spec is not None and spec.num_leaves == len(outs):
                return torch.utils._pytree.tree_unflatten(outs, spec)
            if spec is not None and spec.num_leaves != len(outs):
                raise Unsupported(f"the ONNX model returns {len(outs)} values, the program {spec.num_leaves} "
                                  "(non-tensor outputs)")
            return tuple(outs)

        result["stage"] = "run"
        for _ in range(max(1, warmup)):
            call(clone_args(inputs[0]))
        result["prepare_ms"] = (time.perf_counter() - t0) * 1e3
        args = [clone_args(x) for x in inputs]
        t1 = time.perf_counter()
        outs = [call(a) for a in args]
        result["wall_ms"] = (time.perf_counter() - t1) * 1e3
        out_path = os.path.join(req["outputs"], f"{config}.outputs.pt")
        torch.save(outs, out_path)
        result.update(outputs=out_path, ok=True, stage="")
    except Unsupported as e:
        result.update(skipped=True, unsupported=True, stage="", error="unsupported: " + str(e))
    except Exception as e:  # noqa: BLE001 - every failure of the framework is a result
        result["error"] = short_error(e)
        print(f"tfg_compiled_worker: {config}: {result['stage']}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    return result


def onnx_localise(ep, inputs, req):
    """Where in the ONNX model a configuration's values first leave eager's: every value of the
    exported model that carries the name of a node of the program (the exporter names values
    after FX nodes) is made a graph output and compared with that node's eager value, in the
    ONNX graph's order. The answer names the first ONNX node whose output diverges while its
    mapped inputs agree, and the FX node it came from (its pkg.torch.onnx.fx_node metadata)."""
    import onnx

    config = req.get("config", "onnxruntime")
    args = inputs[0]
    path = export_onnx(ep, args, req)
    # Eager values of the nodes of the program the exporter translated (after its decompositions:
    # functional, named as the ONNX values are), by name.
    program = next(iter(_onnx_cache.values()))[3]
    eager = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if isinstance(out, torch.Tensor):
                eager[n.name] = out.detach().clone()
            return out

    with torch.no_grad():
        Recorder((program.exported_program if program is not None else ep).module()).run(*clone_args(args))
    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    typed = {v.name: v for v in model.graph.value_info}
    final = [o.name for o in model.graph.output]
    mapped = [name for name in typed if name in eager]
    for name in mapped:
        model.graph.output.append(typed[name])
    session = ort_session(model.SerializeToString(), config, req)
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, ort_feeds(session, tensor_args(args)))))

    def diverges(name):
        ref, mine = eager.get(name), got.get(name)
        if ref is None or mine is None or not ref.is_floating_point() or tuple(ref.shape) != tuple(mine.shape):
            return None  # not comparable
        r, m = ref.double(), torch.from_numpy(mine.copy()).double()
        if not bool(torch.isfinite(r).all()):
            return None
        scale = float(r.abs().max()) if r.numel() else 0.0
        return bool((r - m).abs().max() > 1e-4 + 1e-3 * scale) or not bool(torch.isfinite(m).all())

    fx_of = lambda n: next((p.value.split(" : ")[0].lstrip("%") for p in n.metadata_props
                            if p.key == "pkg.torch.onnx.fx_node"), "")
    target_of = lambda n: next((p.value.split("target=")[-1].split("]")[0] for p in n.metadata_props
                                if p.key == "pkg.torch.onnx.fx_node" and "target=" in p.value), "")
    for node in model.graph.node:
        outs = [diverges(o) for o in node.output]
        if not any(outs):
            continue
        ins = [diverges(i) for i in node.input]
        if any(ins):
            continue  # an input diverges already: not where it starts
        fx = fx_of(node)
        return {"onnx_node": node.name, "op_type": node.op_type, "fx_node": fx, "target": target_of(node),
                "text": f"first diverging ONNX node: {node.op_type} `{node.name}`" +
                        (f", exported from FX node `{fx}` ({target_of(node)})" if fx else ", no FX node recorded on it") +
                        f" ({len(mapped)} of {len(typed)} ONNX values mapped to program nodes)"}
    shown = any(diverges(o) for o in final if o in eager)
    return {"text": ("no mapped ONNX value diverges, the outputs do" if shown else
                     "with its intermediate values made outputs the ONNX model agrees with eager: the divergence needs "
                     "a fusion or rewrite ONNX Runtime makes only where they stay internal") +
                    f" ({len(mapped)} of {len(typed)} ONNX values mapped to program nodes; mapping lost)"}


def handle(req):
    reply = {"id": req.get("id", -1), "ok": False, "torch": torch.__version__}
    if req.get("op") == "ping":
        reply.update(ok=True, pid=os.getpid())
        return reply
    if req.get("op") == "onnx_localise":
        try:
            ep = torch.export.load(req["model"])
            reply.update(ok=True, **onnx_localise(ep, load_inputs(req["inputs"]), req))
        except Exception as e:  # noqa: BLE001 - a localisation that fails says why
            reply.update(ok=False, error=short_error(e))
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
        if c in ONNX:
            results.append(run_onnx(c, ep, inputs, req))
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
