"""The contrastive prompt and the parsing of the answers.

Prompt layout (prefix caching): the system text, the task source and the device come first and
never change; the history is an append-only log in evaluation order, where whether an attempt's
code is shown is decided only from what was known when it was measured (so adding attempts never
rewrites earlier text); only the closing instruction after the log, which names the current best,
changes from round to round. Round r's prompt without its closing instruction is therefore a
byte-identical prefix of round r+1's, and the server's prefix cache reuses it.
"""
from __future__ import annotations

import hashlib
import json
import re

from ...contracts import Attempt

SYSTEM = (
    "You are an expert in GPU kernels and PyTorch performance. You rewrite a PyTorch reference "
    "model into a faster implementation with identical results. Allowed: plain PyTorch, Triton, "
    "or CUDA/C++ through torch.utils.cpp_extension.load_inline. Every answer is checked against "
    "the reference on fresh random inputs and timed; caching results across calls, skipping work, "
    "returning lazy tensors, leaving work on other streams or threads, or lowering precision is "
    "detected and rejected.")

# Limits that keep the prompt within a model's context: how many attempts show their code, and
# how much of each source is shown (a deterministic cut, so the text never changes later).
MAX_SHOWN_ACCEPTED = 3
MAX_SHOWN_FAILED = 3
MAX_CODE_CHARS = 6000
MAX_DETAIL_CHARS = 300

DEFAULT_COMPLETION_TEMPLATE = "{prompt}\n"


def describe_device(device: str, info: dict) -> str:
    props = ", ".join(f"{k}={v}" for k, v in sorted(info.items()))
    return f"{device}" + (f" ({props})" if props else "")


def _fence(code: str, limit: int | None = MAX_CODE_CHARS) -> str:
    code = code.rstrip()
    if limit is not None and len(code) > limit:
        code = code[:MAX_CODE_CHARS] + "\n# ... (truncated)"
    return f"```python\n{code}\n```"


def _status(a: Attempt) -> str:
    v = a.verdict
    if v.accepted:
        t = a.timing
        parts = [f"correct, {t.median_ms:.4f} ms (spread {t.spread_ms:.4f})" if t else "correct"]
        if a.speedup_vs_eager:
            parts.append(f"speedup x{a.speedup_vs_eager:.2f} over eager")
        if a.speedup_vs_inductor:
            parts.append(f"x{a.speedup_vs_inductor:.2f} over torch.compile")
        return ", ".join(parts)
    detail = " ".join((v.detail or "").split())[:MAX_DETAIL_CHARS]
    return f"REJECTED ({v.reason})" + (f": {detail}" if detail else "")


def _shown(history: list[Attempt]) -> set[int]:
    """Indices of the attempts whose code is shown. Decided in evaluation order using only the
    attempts before each one, so the decision for an attempt never changes in later rounds."""
    shown: set[int] = set()
    accepted_ms: list[float] = []
    failed_reasons: set[str] = set()
    n_acc = n_fail = 0
    for i, a in enumerate(history):
        if a.candidate.identity.is_baseline:
            continue
        if a.verdict.accepted and a.timing is not None:
            # Shown when it is among the best few measured so far.
            better = sum(1 for m in accepted_ms if m <= a.timing.median_ms)
            if better < MAX_SHOWN_ACCEPTED and n_acc < 2 * MAX_SHOWN_ACCEPTED:
                shown.add(i)
                n_acc += 1
            accepted_ms.append(a.timing.median_ms)
        elif a.candidate.source.strip():
            # Instructive failures: the first of each kind.
            if a.verdict.reason not in failed_reasons and n_fail < MAX_SHOWN_FAILED:
                shown.add(i)
                n_fail += 1
            failed_reasons.add(a.verdict.reason)
    return shown


def render_header(task_source: str, device: str, device_info: dict) -> str:
    """The fixed part of the user message: task and device."""
    return (
        "Optimise this PyTorch reference (KernelBench format) for speed.\n\n"
        f"## Reference\n{_fence(task_source, limit=None)}\n\n"
        f"## Target device\n{describe_device(device, device_info)}\n\n"
        "Write `class ModelNew(nn.Module)` with the same constructor arguments and the same "
        "forward signature as `Model`, returning the same outputs (values, shapes, dtypes).\n")


def render_history(history: list[Attempt]) -> str:
    """The append-only log of everything measured so far, in evaluation order."""
    if not history:
        return ""
    shown = _shown(history)
    out = ["\n## Measured so far (in order of evaluation)\n"]
    last_round = None
    for i, a in enumerate(history):
        c = a.candidate
        if c.round != last_round:
            out.append("\n### Baselines\n" if c.round == 0 else f"\n### Round {c.round}\n")
            last_round = c.round
        name = c.origin if c.identity.is_baseline else f"{c.origin} (round {c.round}, sample {c.sample})"
        out.append(f"- {name}: {_status(a)}\n")
        if i in shown:
            out.append(_fence(c.source) + "\n")
    return "".join(out)


def render_instruction(history: list[Attempt]) -> str:
    """The closing instruction; the only text that may change between rounds."""
    best = [a for a in history if a.verdict.accepted and a.timing is not None]
    lines = ["\n## Your answer\n"]
    if best:
        b = min(best, key=lambda a: a.timing.median_ms)
        lines.append(f"The fastest correct version so far is {b.candidate.origin} at "
                     f"{b.timing.median_ms:.4f} ms.\n")
    if any(not a.candidate.identity.is_baseline for a in history):
        lines.append("First write a short performance analysis: which variants were faster or "
                     "slower and why, and why the rejected ones failed. ")
    else:
        lines.append("First write a short performance analysis of the reference: where its time "
                     "goes and what can be fused or avoided. ")
    lines.append("Then give one new, complete implementation, different from those above, in a "
                 "single ```python block that defines `class ModelNew`.\n")
    return "".join(lines)


def build_prompt(task_source: str, history: list[Attempt], device: str,
                 device_info: dict) -> tuple[list[dict], str]:
    """Chat messages and the stable prefix (system + header + log) they start with."""
    prefix_user = render_header(task_source, device, device_info) + render_history(history)
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": prefix_user + render_instruction(history)}]
    return messages, prefix_user


def to_completion_prompt(messages: list[dict], template: str | None) -> str:
    """One raw prompt for ``/v1/completions``: the template's ``{prompt}`` (and ``{system}``)
    replaced; models such as KernelLLM expect their own raw format instead of a chat template."""
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    user = "\n".join(m["content"] for m in messages if m["role"] != "system")
    tpl = template or DEFAULT_COMPLETION_TEMPLATE
    # str.replace, not str.format: the template may contain literal braces (code examples).
    text = tpl.replace("{system}", system)
    if "{prompt}" in tpl:
        return text.replace("{prompt}", user if "{system}" in tpl else system + "\n\n" + user)
    return text + "\n" + system + "\n\n" + user


def prompt_hash(prompt) -> str:
    blob = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- parsing ---------------------------------------------------------------------------------
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)
_DEFINES_MODEL_NEW = re.compile(r"^\s*class\s+ModelNew\b", re.M)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>…</think>`` blocks (and an unterminated one's opening, which some servers
    emit when the opening tag is part of the template and only ``</think>`` is generated)."""
    text = _THINK.sub("", text or "")
    if "</think>" in text:
        text = text.split("</think>")[-1]
    if "<think>" in text:   # reasoning never finished: nothing after it is an answer
        text = text.split("<think>")[0]
    return text


def extract_code(text: str) -> str | None:
    """The last fenced block that defines ``ModelNew`` (python or unlabelled), or None."""
    blocks = [m.group(2) for m in _FENCE.finditer(text or "")
              if m.group(1).lower() in ("", "python", "py", "python3")]
    for code in reversed(blocks):
        if _DEFINES_MODEL_NEW.search(code):
            return code.strip("\n") + "\n"
    return None


def extract_analysis(text: str) -> str:
    """The prose before the chosen code block (the model's performance analysis)."""
    text = text or ""
    m = list(_FENCE.finditer(text))
    head = text[: m[0].start()] if m else text
    return head.strip()[:4000]


def parse_response(raw: str, reasoning: str | None = None) -> dict:
    """``{"code", "analysis", "reasoning"}`` from a raw answer; ``code`` None when the answer has
    no usable block (a failed sample, not an engine error)."""
    answer = strip_reasoning(raw)
    inline = "".join(_THINK.findall(raw or ""))
    return {"code": extract_code(answer), "analysis": extract_analysis(answer),
            "reasoning": (reasoning or inline or "").strip()[:4000] or None}


NO_CODE = "the answer has no fenced python block defining class ModelNew"


def make_candidate(raw: str, origin, *, reasoning: str | None = None,
                   prompt_digest: str = "", extra: dict | None = None):
    """A Candidate from one raw answer. An answer without code becomes a Candidate with empty
    source and ``meta["failed"]`` set: the search records it as a rejected sample without running
    the verifier, so the raw answer still lands in the cache entry's provenance."""
    from ...contracts import Candidate
    parsed = parse_response(raw, reasoning)
    meta = {"prompt_hash": prompt_digest, "raw_response": raw, "analysis": parsed["analysis"],
            "reasoning": parsed["reasoning"], **(extra or {})}
    if parsed["code"] is None:
        meta["failed"] = NO_CODE
        return Candidate(source="", origin=origin, meta=meta)
    return Candidate(source=parsed["code"], origin=origin, meta=meta)
