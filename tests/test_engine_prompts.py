"""The contrastive prompt (prefix stability, what it shows) and the parsing of answers."""
from engine_helpers import FAST, SLOW, TASK_SRC, WRONG, answer

from torch_cudal1.engines.llm import prompts
from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict


def _acc(origin, ms, r, s=0, src=FAST, eager=10.0):
    c = Candidate(src, origin, round=r, sample=s)
    return Attempt(c, Verdict.ok(), Timing(ms, ms * 0.01, 10), speedup_vs_eager=eager / ms)


def _rej(origin, reason, r, s=0, src=WRONG, detail="output 0: relative error 0.5 > 0.0001"):
    return Attempt(Candidate(src, origin, round=r, sample=s), Verdict.reject(reason, detail))


def _history():
    base = [_acc("baseline:eager", 10.0, 0, src="class ModelNew(Model): pass"),
            _acc("baseline:inductor", 8.0, 0, src="class ModelNew(Model): pass")]
    r1 = [_acc("openai:r1s0", 12.0, 1, 0, SLOW), _rej("openai:r1s1", "mismatch", 1, 1),
          _acc("openai:r1s2", 2.0, 1, 2, FAST)]
    r2 = [_acc("openai:r2s0", 1.5, 2, 0, FAST.replace("2.0", "2.00")),
          _rej("openai:r2s1", "crash", 2, 1, detail="SyntaxError: expected ':'")]
    return base, r1, r2


def test_prefix_is_byte_identical_across_rounds():
    base, r1, r2 = _history()
    dev = {"name": "x86", "cores": 2}
    rounds = [base, base + r1, base + r1 + r2]
    msgs, prefixes = zip(*(prompts.build_prompt(TASK_SRC, h, "cpu", dev) for h in rounds))
    for i in range(len(rounds) - 1):
        assert msgs[i][0] == msgs[i + 1][0]                         # system message unchanged
        assert msgs[i + 1][1]["content"].startswith(prefixes[i])    # earlier text never rewritten
        assert len(prefixes[i + 1]) > len(prefixes[i])
    # The closing instruction (which names the current best) is the only part that changes.
    assert "openai:r2s0 at 1.5000 ms" in msgs[2][1]["content"]
    assert "openai:r2s0" not in msgs[1][1]["content"]


def test_prompt_shows_task_device_times_speedups_and_reasons():
    base, r1, _ = _history()
    msgs, _ = prompts.build_prompt(TASK_SRC, base + r1, "cuda:0", {"name": "NVIDIA H200", "sm_count": 132})
    text = msgs[1]["content"]
    assert TASK_SRC.strip() in text
    assert "NVIDIA H200" in text and "sm_count=132" in text
    assert "baseline:eager: correct, 10.0000 ms" in text
    assert "openai:r1s2 (round 1, sample 2): correct, 2.0000 ms" in text and "x5.00 over eager" in text
    assert "REJECTED (mismatch): output 0: relative error 0.5" in text
    # Code shown: the accepted ones and the first failure of its kind.
    assert SLOW.strip() in text and FAST.strip() in text and WRONG.strip() in text
    assert "performance analysis" in text and "```python" in text and "ModelNew" in text


def test_code_selection_is_decided_once():
    # Many accepted attempts: only the best few (as of their measurement) show code.
    hist = [_acc("baseline:eager", 10.0, 0, src="X")]
    for i in range(10):
        hist.append(_acc(f"e:r1s{i}", 5.0 + i, 1, i, src=f"class ModelNew: pass  # v{i}"))
    text = prompts.render_history(hist)
    assert "# v0" in text and "# v2" in text and "# v3" not in text
    # Failures: one per reason.
    hist2 = hist + [_rej("e:r2s0", "mismatch", 2, 0, src="# w1"), _rej("e:r2s1", "mismatch", 2, 1, src="# w2")]
    text2 = prompts.render_history(hist2)
    assert text2.startswith(text) and "# w1" in text2 and "# w2" not in text2


def test_extract_last_block_defining_model_new():
    raw = ("Analysis: fuse.\n```python\nimport torch\n```\n"
           "```python\nclass ModelNew(nn.Module):\n    v = 1\n```\n"
           "Better:\n```python\nclass ModelNew(nn.Module):\n    v = 2\n```\n"
           "```bash\npip install x\n```\n")
    p = prompts.parse_response(raw)
    assert "v = 2" in p["code"] and "v = 1" not in p["code"]
    assert p["analysis"] == "Analysis: fuse."
    assert prompts.extract_code("```\nclass ModelNew:\n  pass\n```") is not None   # unlabelled
    assert prompts.extract_code("no code at all") is None
    assert prompts.extract_code("```python\nclass Model(nn.Module):\n  pass\n```") is None


def test_reasoning_removed_before_extraction():
    fake = "```python\nclass ModelNew:  # draft inside thinking\n  pass\n```"
    raw = f"<think>Let me try {fake}</think>The real one:\n" + answer(FAST)
    p = prompts.parse_response(raw)
    assert "draft inside thinking" not in p["code"] and "torch.relu(x)" in p["code"]
    assert "draft" in p["reasoning"]
    # Only the closing tag generated (the opening one was in the template).
    assert "draft" not in prompts.parse_response("thinking " + fake + "</think>" + answer(FAST))["code"]
    # Unfinished reasoning: nothing is an answer.
    assert prompts.parse_response("<think>" + fake)["code"] is None
    # Separate reasoning field (reasoning_content) kept as reasoning.
    assert prompts.parse_response(answer(FAST), reasoning="why")["reasoning"] == "why"


def test_completion_template():
    msgs, _ = prompts.build_prompt(TASK_SRC, [], "cpu", {})
    tpl = "<|sys|>{system}<|user|>{prompt}<|assistant|>```python\n{not_a_field}"
    text = prompts.to_completion_prompt(msgs, tpl)
    assert text.startswith("<|sys|>" + prompts.SYSTEM + "<|user|>Optimise this")
    assert text.endswith("<|assistant|>```python\n{not_a_field}")
    plain = prompts.to_completion_prompt(msgs, None)
    assert prompts.SYSTEM in plain and TASK_SRC.strip() in plain


def test_no_code_answer_is_a_failed_candidate():
    c = prompts.make_candidate("just prose", "openai:r1s0", prompt_digest="abc")
    assert c.source == "" and c.meta["failed"] == prompts.NO_CODE
    assert c.meta["raw_response"] == "just prose" and c.meta["prompt_hash"] == "abc"
    ok = prompts.make_candidate(answer(FAST), "openai:r1s1")
    assert "failed" not in ok.meta and ok.meta["analysis"].startswith("The loop")
