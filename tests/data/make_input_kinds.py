"""Models whose forward takes something other than tensors: a dict, a tuple, Python scalars.
Each is saved with torch.jit.save as OUT/NAME.pt next to OUT/NAME.inputs.pt, written by
torch.save as Python writes it (one-element lists and dicts included: LibTorch 1.13's
unpickler lacks the opcodes Python uses for those). usage: make_input_kinds.py OUT"""
import sys
from typing import Dict, Tuple

import torch


class DictIn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: Dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.relu(self.lin(x["a"])) + x["b"] * 2


class TupleIn(torch.nn.Module):
    def forward(self, xs: Tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = xs
        return torch.matmul(a, b).sigmoid()


class ScalarIn(torch.nn.Module):
    def forward(self, x: torch.Tensor, k: int, s: float, flag: bool) -> torch.Tensor:
        # (no `if`: the importer supports straight-line graphs)
        return torch.relu(x * s).sum(dim=k) * int(flag)


class RandomOp(torch.nn.Module):
    """Not a usable seed: its op-by-op execution cannot reproduce its own forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + torch.rand_like(x)


def main(out):
    torch.manual_seed(0)
    x = lambda *s: torch.randn(*s)
    cases = {
        # a one-item dict in a one-element list: SETITEM and APPEND
        "dict_in": (DictIn(), [({"a": x(2, 4), "b": x(2, 4)},)], [({"a": x(2, 4)},)]),
        "tuple_in": (TupleIn(), [((x(3, 4), x(4, 2)),), ((x(3, 4), x(4, 2)),)], None),
        "scalar_in": (ScalarIn(), [(x(2, 3), 1, 0.5, True)], None),
    }
    for name, (module, inputs, _) in cases.items():
        scripted = torch.jit.script(module.eval())
        for args in inputs:
            scripted(*args)
        torch.jit.save(scripted, f"{out}/{name}.pt")
        torch.save(inputs, f"{out}/{name}.inputs.pt")
    torch.jit.save(torch.jit.trace(RandomOp(), torch.randn(2, 3), check_trace=False), f"{out}/random_op.pt")
    torch.save([(torch.randn(2, 3),)], f"{out}/random_op.inputs.pt")
    # a dict missing a key the model reads, for the error message
    torch.save(cases["dict_in"][2], f"{out}/dict_in.missing_key.pt")


if __name__ == "__main__":
    main(sys.argv[1])
