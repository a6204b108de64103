"""Integer and bool inputs of a rendered graph (token ids, masks, positions) cannot be drawn at
random like floats; they are captured from the real call. Replayed unchanged in every draw, a
candidate could treat them as constants. Draws vary them: shuffled, some elements replaced by
values the input holds, wherever the graph takes such an input."""
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from torch_cudal1.contracts import Candidate
from torch_cudal1.graph.render import render_task
from torch_cudal1.harness.calls import seed_all
from torch_cudal1.verify import evaluate


def _render(fn, inputs, name="g"):
    return render_task(make_fx(fn)(*inputs), list(inputs), name=name)


def _draws(task, seeds=(1, 2, 3)):
    mod = task.load()
    out = []
    for s in seeds:
        seed_all(s, "cpu")
        out.append(mod.get_inputs())
    return out


def _spec(task, name):
    mod = task.load()
    return next(s for s in mod.INPUT_SPECS if s["name"] == name)


def _embed_masked(w, ids, mask):
    return (F.embedding(ids, w) * mask.unsqueeze(-1)).sum(1)


def _embed_inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(50, 8, generator=g), torch.randint(0, 50, (4, 16), generator=g),
            torch.ones(4, 16, dtype=torch.int64)]


def test_ids_and_masks_vary_between_draws_within_their_values():
    w, ids, mask = _embed_inputs()
    task = _render(_embed_masked, [w, ids, mask])
    draws = _draws(task)
    held = set(ids.unique().tolist())
    for _, d_ids, d_mask in draws:
        assert not torch.equal(d_ids, ids) and set(d_ids.unique().tolist()) <= held
        # a mask of all ones becomes a mask with some positions off
        assert set(d_mask.unique().tolist()) == {0, 1}
        assert d_ids.dtype == ids.dtype and d_mask.shape == mask.shape
    assert not torch.equal(draws[0][1], draws[1][1])
    # the same seed draws the same values (the judge and the worker draw apart)
    again = _draws(task, seeds=(1,))[0]
    assert torch.equal(again[1], draws[0][1]) and torch.equal(again[2], draws[0][2])


def test_varied_indices_stay_in_the_range_they_index():
    # token type ids of all zeros into a table of one row (RoBERTa's): a 1 would be out of
    # range, which on a GPU is a device-side assert in the user's process
    def types(w, tt):
        return F.embedding(tt, w) * 2
    tt = torch.zeros(2, 8, dtype=torch.int64)
    task = _render(types, [torch.randn(1, 4), tt])
    assert _spec(task, "tt_1").get("vary") == [0]
    for _, d_tt in _draws(task):
        assert torch.equal(d_tt, tt)


def test_an_index_of_an_order_sensitive_write_is_only_shuffled():
    def write(buf, pos, x):
        return buf.index_copy(0, pos, x) * 2
    pos = torch.arange(12)
    task = _render(write, [torch.zeros(12, 3), pos, torch.randn(12, 3)])
    assert _spec(task, "pos_1")["vary"] == []
    for _, d_pos, _ in _draws(task):
        assert not torch.equal(d_pos, pos) and torch.equal(d_pos.sort().values, pos)


def test_inputs_the_graph_cannot_take_varied_stay_as_captured():
    def sorted_only(x, idx):
        torch._assert_async(torch.all(idx[1:] >= idx[:-1]))
        return x[idx] * 2
    idx = torch.tensor([0, 1, 1, 3, 5, 6])
    task = _render(sorted_only, [torch.randn(8), idx])
    assert "vary" not in _spec(task, "idx_1")
    for _, d_idx in _draws(task):
        assert torch.equal(d_idx, idx)

    def finite_only(x, mask):   # a mean over the positions on: NaN where a row has none
        return (x * mask).sum(1) / mask.sum(1)
    task = _render(finite_only, [torch.randn(3, 1), torch.ones(3, 1)])
    assert "vary" not in _spec(task, "mask_1")


_FIRST_IDS = """
import torch, torch.nn as nn, torch.nn.functional as F
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ids = None
    def forward(self, w, ids, mask):
        if self.ids is None:            # the token ids of the first call, taken as constants
            self.ids = ids.clone()
        return ((F.embedding(self.ids, w) * mask.unsqueeze(-1)).sum(1),)
"""

_HONEST = """
import torch, torch.nn as nn, torch.nn.functional as F
class ModelNew(nn.Module):
    def forward(self, w, ids, mask):
        return (torch.einsum("bsd,bs->bd", F.embedding(ids, w), mask.to(w.dtype)),)
"""


def test_a_candidate_that_keeps_the_first_calls_ids_is_rejected():
    task = _render(_embed_masked, _embed_inputs())
    kw = dict(device="cpu", trials=2, timeout_s=120, time_budget_s=0.2)
    verdict, _ = evaluate(task, Candidate(_FIRST_IDS, "test:first_ids"), **kw)
    assert not verdict.accepted and verdict.reason in ("mismatch", "stale_output"), verdict
    verdict, _ = evaluate(task, Candidate(_HONEST, "test:honest"), **kw)
    assert verdict.accepted, verdict


# A library operator whose inputs mix quantities by column, as torchvision's roi_align takes
# (batch index, x1, y1, x2, y2) rows: its kernel trusts the batch index (torchvision's reads out
# of bounds; this one raises instead of crashing the test's process).
@torch.library.custom_op("cudal1_testrows::pool_rows", mutates_args=())
def pool_rows(feats: torch.Tensor, rois: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    b = rois[:, 0].long()
    if bool((b < 0).any()) or bool((b >= feats.shape[0]).any()):
        raise IndexError("batch index out of range")
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise IndexError("offsets out of order")
    return feats[b].mean(-1) * (rois[:, 3] - rois[:, 1]).unsqueeze(-1) + offsets.sum()


@pool_rows.register_fake
def _(feats, rois, offsets):
    return feats.new_empty(rois.shape[0], feats.shape[1])


def _pool(feats, rois, offsets):
    return pool_rows(feats, rois.view(-1, 5), offsets) * 2


def _pool_inputs():
    g = torch.Generator().manual_seed(0)
    rois = torch.cat([torch.zeros(30, 1), torch.rand(30, 4, generator=g) * 320], 1)
    return [torch.randn(1, 8, 6, generator=g), rois, torch.tensor([0, 4, 9, 30])]


def test_library_operator_inputs_are_drawn_by_column_and_never_shuffled():
    feats, rois, offsets = _pool_inputs()
    task = _render(_pool, [feats, rois, offsets])
    assert len(_spec(task, "rois_1")["columns"]) == 5
    assert "vary" not in _spec(task, "offsets_1")     # its order is the operator's to know
    for d_feats, d_rois, d_offsets in _draws(task):
        assert not torch.equal(d_rois, rois)            # still fresh values every draw
        assert (d_rois[:, 0].long() == 0).all()         # the batch index stays one of a batch of 1
        assert (d_rois[:, 1:] >= 0).all() and (d_rois[:, 1:] <= 320).all()
        assert torch.equal(d_offsets, offsets)
        assert not torch.equal(d_feats, feats)


def test_a_graph_with_a_library_operator_is_verified():
    # drawn over the whole tensor's range, the batch index reached 320 and the reference itself
    # failed: every baseline was rejected and the graph fell back in every process
    from torch_cudal1.engines.baselines import baseline_candidate
    task = _render(_pool, _pool_inputs())
    verdict, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2,
                          timeout_s=120, time_it=False)
    assert verdict.accepted, verdict


def _masked_by_views(x, rows, cols):
    return x * rows * cols


def test_inputs_that_are_views_of_one_mask_are_written_and_verified(tmp_path):
    """BigBird's block-sparse attention hands its graph two views of one attention mask:
    safetensors refused to write tensors that share memory, the task was never written and the
    graph fell back. Each is now written as a copy of its own, and read back equal."""
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.task import Task
    mask = (torch.arange(16) < torch.tensor([[12], [7]])).long()       # (2, 16)
    rows, cols = mask[:, None, :, None], mask[:, None, None, :]         # views of its memory
    x = torch.randn(2, 1, 16, 16)
    task = _render(_masked_by_views, [x, rows, cols])
    assert rows.untyped_storage().data_ptr() == cols.untyped_storage().data_ptr()
    back = Task.from_file(task.write(tmp_path / "task"))
    assert set(back.tensors) == set(task.tensors) and len(back.tensors) == 2
    for name, t in task.tensors.items():
        assert torch.equal(back.tensors[name], t)
    verdict, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2,
                          timeout_s=120, time_it=False)
    assert verdict.accepted, verdict
