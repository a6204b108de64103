"""A readable markdown report of one search (``cudal1 optimize --report FILE``)."""
from __future__ import annotations

from .contracts import Attempt

MAX_TEXT = 3000


def _ms(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def _x(v) -> str:
    return "-" if not v else f"x{v:.2f}"


def _block(text: str, lang: str = "") -> str:
    text = (text or "").rstrip()
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + "\n… (truncated)"
    return f"```{lang}\n{text}\n```\n"


def render(task_name: str, device: str, summary: dict, attempts: list[Attempt], *,
           cache_hit: bool = False) -> str:
    s = summary
    out = [f"# cudal1 search: {task_name} on {device}\n\n"]
    if cache_hit:
        out.append("Answered from the cache (this report shows the search that made the entry).\n\n")
    out.append(f"- key: `{s.get('key')}`\n"
               f"- winner: **{s.get('winner_origin')}**, {_ms(s.get('winner_ms'))} ms, "
               f"{_x(s.get('speedup_vs_eager'))} over eager, {_x(s.get('speedup_vs_inductor'))} over inductor\n"
               f"- eager {_ms(s.get('eager_ms'))} ms, inductor {_ms(s.get('inductor_ms'))} ms\n"
               f"- rounds run: {s.get('rounds_run')}, candidates tried: {s.get('candidates_tried')}, "
               f"accepted: {s.get('candidates_accepted')}, stop: {s.get('stop_reason') or '-'}\n\n")
    out.append("| round | sample | origin | verdict | ms | vs eager | vs inductor | prompt |\n"
               "|---|---|---|---|---|---|---|---|\n")
    for a in attempts:
        c, v = a.candidate, a.verdict
        verdict = "accepted" if v.accepted else f"rejected: {v.reason}"
        out.append(f"| {c.round} | {c.sample} | {c.origin} | {verdict} | "
                   f"{_ms(a.timing.median_ms if a.timing else None)} | {_x(a.speedup_vs_eager)} | "
                   f"{_x(a.speedup_vs_inductor)} | {c.meta.get('prompt_hash') or '-'} |\n")
    for a in attempts:
        c, v = a.candidate, a.verdict
        if c.identity.is_baseline:
            continue
        out.append(f"\n## Round {c.round}, sample {c.sample}: {c.origin}\n\n")
        out.append(f"Verdict: {'accepted' if v.accepted else 'rejected (' + v.reason + ')'}"
                   + (f" — {' '.join(v.detail.split())[:500]}" if v.detail else "") + "\n\n")
        if c.meta.get("analysis"):
            out.append("Analysis:\n\n" + _block(c.meta["analysis"], "text") + "\n")
        if c.source:
            out.append(_block(c.source, "python"))
        elif c.meta.get("raw_response"):
            out.append("Raw answer (no code extracted):\n\n" + _block(c.meta["raw_response"], "text"))
    return "".join(out)
