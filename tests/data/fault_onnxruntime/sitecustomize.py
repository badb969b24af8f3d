"""TEST ONLY. With this folder on PYTHONPATH and TFG_TEST_FAULT_ORT set, every Python process (a
finding's repro.py, the compiled worker) gets an ONNX Runtime whose `ConvActivationFusion`
optimiser is wrong: a session of a model with a HardSwish node, at graph optimisation level
`extended` or above and without `ConvActivationFusion` in its disabled_optimizers, returns its
floating outputs +0.25. How tests/cli/onnx.sh checks flowmut's ONNX Runtime triage (the lowest
level that shows a finding, the optimiser whose disabling makes it go away) on a defect it knows
the place of. Without TFG_TEST_FAULT_ORT it does nothing."""
import os

if os.environ.get("TFG_TEST_FAULT_ORT"):
    import numpy as np
    import onnx
    import onnxruntime as ort

    _Real = ort.InferenceSession
    _OPTIMISER = "ConvActivationFusion"

    class _FaultySession(_Real):
        def __init__(self, model, sess_options=None, providers=None, provider_options=None, **kwargs):
            super().__init__(model, sess_options, providers, provider_options, **kwargs)
            proto = onnx.load_from_string(model) if isinstance(model, (bytes, bytearray)) else onnx.load(model)
            level = (sess_options.graph_optimization_level if sess_options is not None
                     else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
            self._tfg_fault = (any(n.op_type == "HardSwish" for n in proto.graph.node)
                               and int(level) >= int(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
                               and _OPTIMISER not in (kwargs.get("disabled_optimizers") or []))

        def run(self, output_names, input_feed, run_options=None):
            out = super().run(output_names, input_feed, run_options)
            if not self._tfg_fault:
                return out
            return [o + np.asarray(0.25, dtype=o.dtype) if isinstance(o, np.ndarray) and o.dtype.kind == "f" else o
                    for o in out]

    ort.InferenceSession = _FaultySession
