"""Recorded answers: the replay engine, and the recorder that writes its transcripts.

A transcript is a jsonl file, one answer a line::

    {"kind": "cudal1-transcript", "task_hash": ..., "round": 1, "sample": 0,
     "prompt_hash": ..., "response": "<raw answer>", "engine": "openai", "model": ...,
     "request": <prompt; on the first sample of a round only>}

Answers are matched to a task by ``task_hash``: the sha256 of the task source with whitespace
normalised (so re-indented or re-wrapped copies still match), and served for the round they were
recorded in. The replay engine also reads the KernelBench solution files (rows with ``ref_code``
and ``custom_code``) directly: each row is one round-1 answer for the task whose source is its
``ref_code``.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

from ..origin import Origin
from .llm import prompts
from .base import Engine, EngineError, SearchContext

KIND = "cudal1-transcript"


def task_hash(source: str) -> str:
    return hashlib.sha256(" ".join(source.split()).encode()).hexdigest()[:32]


def fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


def _records_from_line(row: dict) -> list[dict]:
    if row.get("kind") == KIND or ("task_hash" in row and "response" in row):
        return [row]
    if "ref_code" in row:   # a KernelBench / CUDA-L1 solutions row
        if not row.get("custom_code"):
            return []
        return [{"kind": KIND, "task_hash": task_hash(row["ref_code"]), "round": 1, "sample": 0,
                 "response": fenced(row["custom_code"]), "engine": "kernelbench",
                 "source_row": {k: row.get(k) for k in ("level_id", "task_id")}}]
    return []


def load_transcript(path) -> list[dict]:
    p = Path(path).expanduser()
    if not p.exists():
        raise EngineError(f"replay transcript {p} does not exist")
    out = []
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise EngineError(f"{p}:{n}: not JSON ({e})") from None
        out.extend(_records_from_line(row))
    return out


def kernelbench_to_transcript(src, dst) -> int:
    """Convert a KernelBench solutions jsonl into a transcript; returns the records written."""
    records = load_transcript(src)
    _write_jsonl(dst, records, mode="w")
    return len(records)


def _write_jsonl(path, records: list[dict], mode: str = "a") -> None:
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    # One write per batch with O_APPEND: concurrent recorders interleave whole lines.
    data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    with open(p, mode) as f:
        f.write(data)


class ReplayEngine(Engine):
    name = "replay"

    def __init__(self, options, path=None):
        self.path = path or getattr(options, "replay_file", None)
        self._by_task: dict[str, list[dict]] | None = None

    def _index(self) -> dict[str, list[dict]]:
        if self._by_task is None:
            if not self.path:   # raised here, not in __init__: the search turns it into a fallback
                raise EngineError("the replay engine needs a transcript: set replay_file "
                                  "(CUDAL1_REPLAY_FILE, --replay-file)")
            idx: dict[str, list[dict]] = {}
            for r in load_transcript(self.path):
                idx.setdefault(r["task_hash"], []).append(r)
            self._by_task = idx
        return self._by_task

    def propose(self, task, history, ctx: SearchContext):
        records = [r for r in self._index().get(task_hash(task.source), [])
                   if int(r.get("round", 1)) == ctx.round]
        records.sort(key=lambda r: int(r.get("sample", 0)))
        cands = []
        for i, r in enumerate(records[: max(1, ctx.samples)]):
            c = prompts.make_candidate(r.get("response") or "", Origin.sampled(self.name, ctx.round, i),
                                       reasoning=r.get("reasoning"),
                                       prompt_digest=r.get("prompt_hash", ""),
                                       extra={"engine": self.name, "recorded_by": r.get("engine"),
                                              "model": r.get("model")})
            c.round, c.sample = ctx.round, i
            cands.append(c)
        return cands


class RecordingEngine(Engine):
    """Wraps any engine and appends each round's request and answers to a transcript."""

    def __init__(self, inner: Engine, path):
        self.inner = inner
        self.path = path
        self.name = inner.name
        self.bounded_by_samples = inner.bounded_by_samples
        self._lock = threading.Lock()

    def propose(self, task, history, ctx: SearchContext):
        cands = self.inner.propose(task, history, ctx)
        req = getattr(self.inner, "last_request", None) or {}
        th = task_hash(task.source)
        records = []
        for i, c in enumerate(cands):
            # Engines without a raw answer (builtin) are recorded as a fenced block of their code.
            raw = c.meta.get("raw_response")
            if raw is None:
                raw = fenced(c.source) if c.source else ""
            rec = {"kind": KIND, "task_hash": th, "round": ctx.round, "sample": i,
                   "prompt_hash": c.meta.get("prompt_hash") or req.get("prompt_hash", ""),
                   "response": raw, "reasoning": c.meta.get("reasoning"),
                   "engine": self.inner.name, "model": c.meta.get("model") or req.get("model"),
                   "origin": c.origin, "time": time.time(), "pid": os.getpid()}
            if i == 0 and req.get("prompt") is not None:
                rec["request"] = req["prompt"]
            records.append(rec)
        if records:
            with self._lock:
                _write_jsonl(self.path, records)
        return cands

    def close(self) -> None:
        self.inner.close()
