"""Graph capture of KernelBench-format tasks: each pattern the capture handles, traced, rendered
as ``ModelNew`` and run on real values, reproduces the model (outputs, and the state it leaves
for the next call); patterns it cannot handle raise TraceError, never anything else."""
import itertools
import json
from pathlib import Path

import pytest
import torch
import torch.utils._pytree as pytree

from torch_cudal1.graph.trace import TraceError, render_candidate_source, trace_task
from torch_cudal1.rewrites import apply_rewrites
from torch_cudal1.task import Task, load_source

HEAD = "import torch\nimport torch.nn as nn\n\n"
DATA = Path(__file__).resolve().parents[1] / ".carry" / "kernelbench" / "cudal1_h100_dev.jsonl"


def _candidate(task: Task) -> tuple[str, object]:
    traced = trace_task(task, "cpu")
    return render_candidate_source(task, traced, apply_rewrites(traced.gm).gm), traced


def _assert_reproduces(task: Task, calls: int = 3) -> object:
    """Model and ModelNew from one seed, the same inputs, several calls in a row: outputs, inputs
    the forward updates in place, and every state tensor must agree after each call."""
    source, traced = _candidate(task)
    mod = load_source(source, f"cudal1_test_cov_{task.name}")
    init = mod.get_init_inputs()
    torch.manual_seed(0)
    ref = mod.Model(*init).eval()
    torch.manual_seed(0)
    new = mod.ModelNew(*init).eval()
    for k in range(calls):
        torch.manual_seed(10 + k)
        inputs = mod.get_inputs()
        mine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            want, got = ref(*inputs), new(*mine)
        assert pytree.tree_structure(got) == pytree.tree_structure(want)
        for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
        for g, w in zip(mine, inputs):
            if isinstance(w, torch.Tensor):
                torch.testing.assert_close(g, w)
        for name in traced.state_names:
            a, b = ref, new
            for part in name.split("."):
                a, b = getattr(a, part), getattr(b, part)
            torch.testing.assert_close(b, a, msg=f"state {name} after call {k}")
    return traced


def _task(name: str, body: str) -> Task:
    return Task(HEAD + body, name=name)


PLAIN_ATTR = '''
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.h0 = torch.randn(2, n)            # plain tensor attributes: no register_buffer
        self.c0 = torch.randn(2, n)
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        self.h0 = self.h0.to(x.device)         # a no-op move (same device): not an update
        return self.lin(x + self.h0) * self.c0


def get_inputs():
    return [torch.randn(2, 8)]


def get_init_inputs():
    return [8]
'''

# A recurrent cell that keeps its hidden state between calls in a plain attribute.
STATEFUL = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(4, 6)
        self.i2h = nn.Linear(8 + 6, 6)
        self.h2o = nn.Linear(6, 3)

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''

NESTED_ATTR = '''
class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = torch.zeros(3, 5)

    def forward(self, x):
        self.h = torch.tanh(x + self.h)
        return self.h * 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = Cell()

    def forward(self, x):
        return self.cell(x) + 1


def get_inputs():
    return [torch.randn(3, 5)]


def get_init_inputs():
    return []
'''

BUFFERS = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.rand(8) + 0.5)
        self.register_buffer("count", torch.zeros(8))
        self.register_buffer("acc", torch.zeros(8))
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        self.count.add_(1)                     # in-place update of a buffer
        self.acc = self.acc + x.sum(0)         # a buffer reassigned
        return self.bn(x) * self.scale + self.count + self.acc


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''

SCALAR_INPUTS_MULTI_OUT = '''
class Model(nn.Module):
    def forward(self, x, dim: int, alpha: float):
        y = torch.cumsum(x, dim=dim) * alpha
        return {"y": y, "pair": (y.sum(0), x)}   # nested outputs, one of them an input


def get_inputs():
    return [torch.randn(4, 8), 1, 0.5]


def get_init_inputs():
    return []
'''

INPLACE_INPUT = '''
class Model(nn.Module):
    def forward(self, x, idx):
        x.mul_(2)
        x[:, 0] = 0
        return x.index_select(1, idx)


def get_inputs():
    return [torch.randn(4, 8), torch.tensor([3, 1, 1])]


def get_init_inputs():
    return []
'''

CASES = {"plain_attr": PLAIN_ATTR, "stateful": STATEFUL, "nested_attr": NESTED_ATTR,
         "buffers": BUFFERS, "scalar_inputs_multi_out": SCALAR_INPUTS_MULTI_OUT,
         "inplace_input": INPLACE_INPUT}


@pytest.mark.parametrize("name", list(CASES))
def test_pattern_reproduces_the_model(name):
    _assert_reproduces(_task(name, CASES[name]))


MHA_BATCH_FIRST = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]

def get_inputs():
    return [torch.randn(2, 10, 32)]

def get_init_inputs():
    return []
'''


def test_outputs_keep_the_layout_eager_gives_them():
    """Eager multi-head attention takes a fused fast path that returns batch-first contiguous;
    traced, the same values come out of a transpose. The rendered graph returns eager's layout
    (the verifier rejects a non-contiguous output where the reference's is contiguous)."""
    task = _task("mha", MHA_BATCH_FIRST)
    source, _ = _candidate(task)
    mod = load_source(source, "cudal1_test_cov_mha_layout")
    torch.manual_seed(0)
    ref = mod.Model().eval()
    new = mod.ModelNew().eval()
    new.load_state_dict(ref.state_dict())
    x = mod.get_inputs()[0]
    with torch.no_grad():
        want, got = ref(x), new(x)
    assert want.is_contiguous() and got.is_contiguous() and got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_plain_attributes_are_lifted_and_reassignments_written_back():
    traced = trace_task(_task("s", STATEFUL), "cpu")
    assert traced.state_names[-1] == "hidden" and traced.state_updates == ["hidden"]
    # Moving an attribute to the device it is on already is no update.
    assert trace_task(_task("p", PLAIN_ATTR), "cpu").state_updates == []
    assert trace_task(_task("n", NESTED_ATTR), "cpu").state_updates == ["cell.h"]


def test_stateful_candidate_through_inductor():
    task = _task("stateful_ind", STATEFUL)
    traced = trace_task(task, "cpu")
    source = render_candidate_source(task, traced, apply_rewrites(traced.gm).gm,
                                     compile_mode="default")
    mod = load_source(source, "cudal1_test_cov_stateful_ind")
    torch.manual_seed(0)
    ref = mod.Model().eval()
    torch.manual_seed(0)
    new = mod.ModelNew().eval()
    for _ in range(2):
        x = torch.randn(4, 8)
        with torch.no_grad():
            torch.testing.assert_close(new(x), ref(x), rtol=1e-4, atol=1e-5)


UNSUPPORTED = {
    # torch.return_types.max has no serialised pytree name: the candidate could not rebuild it.
    "structseq_output": "    def forward(self, x):\n        return torch.max(x, dim=1)\n",
    "python_output": "    def forward(self, x):\n        return x.sum(), x.shape[0]\n",
    # A real tensor the trace cannot lift (a module global): no candidate rather than a wrong one.
    "global_tensor": "    def forward(self, x):\n        return x @ W\n",
}


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_patterns_raise_trace_error(name):
    body = ("W = torch.randn(8, 8)\n\n\nclass Model(nn.Module):\n" + UNSUPPORTED[name]
            + "\n\ndef get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
            "def get_init_inputs():\n    return []\n")
    with pytest.raises(TraceError):
        trace_task(_task(name, body), "cpu")


def test_unrolled_forward_stops_at_the_op_budget(monkeypatch):
    """A forward unrolled into more ATen ops than the budget (a loop over time steps) is
    declined while tracing, not after minutes of tracing and rewriting."""
    import torch_cudal1.graph.trace as trace_mod
    monkeypatch.setattr(trace_mod, "MAX_TRACE_OPS", 50)
    body = ("class Model(nn.Module):\n    def forward(self, x):\n        for _ in range(40):\n"
            "            x = torch.tanh(x) + 1\n        return x\n\n\n"
            "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
            "def get_init_inputs():\n    return []\n")
    with pytest.raises(TraceError, match="too large"):
        trace_task(_task("unrolled", body), "cpu")
    monkeypatch.setattr(trace_mod, "MAX_TRACE_OPS", 1000)
    assert trace_task(_task("unrolled_ok", body), "cpu").gm is not None


def _rows():
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def _small(row) -> bool:
    """Loads here, traces, and is cheap enough for real values on a CPU: its graph's tensors
    (state, inputs, every intermediate) hold at most 4M elements together."""
    task = Task(row["ref_code"], name=f"kb_size_{row['level_id']}_{row['task_id']}")
    try:
        gm = trace_task(task, "cpu").gm
    except (ImportError, TraceError):   # a package the task needs (einops) is not installed
        return False
    vals = pytree.tree_leaves([n.meta.get("val") for n in gm.graph.nodes])
    return sum(v.numel() for v in vals if isinstance(v, torch.Tensor)) <= 4_000_000


@pytest.mark.skipif(not DATA.exists(), reason="KernelBench data file absent")
def test_kernelbench_tasks_capture_and_reproduce():
    """A handful of real tasks: the first two small ones of each level, and the small ones that
    keep state in plain tensor attributes (the pattern fixed here)."""
    rows = _rows()
    stateful = [r for r in rows if "self.h0 = torch.randn" in r["ref_code"]
                or "self.hidden = torch.randn" in r["ref_code"]]
    picked = []
    for group in [[r for r in rows if r["level_id"] == lv] for lv in (1, 2, 3)] + [stateful]:
        picked += list(itertools.islice((r for r in group if r not in picked and _small(r)), 2))
    assert len(picked) == 8
    for r in picked:
        task = Task(r["ref_code"], name=f"kb_{r['level_id']}_{r['task_id']}")
        try:
            _assert_reproduces(task, calls=2)
        except Exception as e:
            raise AssertionError(f"L{r['level_id']}_{r['task_id']}: {e}") from e


def test_tasks_traced_on_several_threads_at_once_all_get_their_graph():
    """Searches run on threads (the KernelBench runner's jobs, background searches): tasks traced
    at the same moment must each get their graph (make_fx's module-level patcher once made all
    but one fail with "CURRENT_PATCHER is None", and those searches lost their rewrites)."""
    import threading
    body = ("class Model(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.linear = nn.Linear(64, {n})\n"
            "    def forward(self, x):\n"
            "        return torch.nn.functional.gelu(torch.logsumexp(self.linear(x), 1, keepdim=True))\n"
            "def get_inputs():\n    return [torch.randn(8, 64)]\n"
            "def get_init_inputs():\n    return []\n")
    tasks = [Task(HEAD + body.format(n=16 * (k + 1)), name=f"threaded{k}") for k in range(6)]
    start, results = threading.Barrier(len(tasks)), {}

    def trace(task):
        start.wait()
        try:
            results[task.name] = trace_task(task, "cpu")
        except TraceError as e:
            results[task.name] = e
    threads = [threading.Thread(target=trace, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = {k: v for k, v in results.items() if isinstance(v, TraceError)}
    assert not failed and len(results) == len(tasks), failed
