"""Any OpenAI-compatible server (vllm serve, SGLang, llama.cpp server, Ollama) through httpx.

One round = one prompt (prompts.build_prompt) sampled ``ctx.samples`` times: a single request with
``n`` when the server accepts it, otherwise ``n`` separate requests at most ``concurrency`` at a
time. Connection errors, 429 and 5xx are retried with exponential backoff; other 4xx are not. A
round in which no request got an answer at all raises EngineError (server gone or hopelessly
slow: the search stops and the backend falls back); a single failed sample, or an answer without
code, is a failed candidate instead.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from ...log import logger
from ...origin import Origin
from ..base import Engine, EngineError, SearchContext
from . import prompts, server

BACKOFF_S = 0.5
BACKOFF_MAX_S = 8.0
_RETRYABLE = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError,
              httpx.WriteError, httpx.PoolTimeout)


class RequestFailed(Exception):
    """One request got no usable answer after its retries."""

    def __init__(self, reason: str, detail: str, status: int | None = None):
        super().__init__(detail)
        self.reason, self.detail, self.status = reason, detail, status


def normalize_url(url: str) -> str:
    """``http://h:8000``, ``http://h:8000/`` and ``http://h:8000/v1`` all mean ``.../v1``."""
    url = url.rstrip("/")
    for suffix in ("/chat/completions", "/completions", "/models"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIEngine(Engine):
    name = "openai"

    def __init__(self, options):
        self.options = options
        self.mode = getattr(options, "completion_mode", "chat")
        self.model = options.model
        self.base: str | None = None
        self._ready = False
        self._n_supported = True
        self._lock = threading.Lock()
        self.last_request: dict | None = None
        headers = {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}
        conc = max(1, int(options.concurrency))
        self.client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(options.request_timeout_s, connect=options.connect_timeout_s),
            limits=httpx.Limits(max_connections=conc + 1, max_keepalive_connections=conc + 1))

    # -- readiness -------------------------------------------------------------------------
    def ensure_ready(self) -> None:
        """Resolve the URL, check ``/models`` and pick the model (first served by default)."""
        if self._ready:
            return
        url = self.options.engine_url or server.recorded_url(self.options.cache_dir)
        if not url:
            raise EngineError("no OpenAI-compatible server: set engine_url (CUDAL1_ENGINE_URL, "
                              "--url) or start a managed one with `cudal1 engine start --model M`")
        self.base = normalize_url(url)
        try:
            data = self._request("GET", "/models")
        except RequestFailed as e:
            raise EngineError(f"cannot reach the OpenAI-compatible server at {self.base}: "
                              f"{e.detail}") from None
        served = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
        if not self.model:
            if not served:
                raise EngineError(f"the server at {self.base} serves no model; pass --model")
            self.model = served[0]
        elif served and self.model not in served:
            logger.warning("model %r is not among those served at %s (%s); asking anyway",
                           self.model, self.base, ", ".join(served))
        self._ready = True

    # -- HTTP ------------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: dict | None = None) -> dict:
        retries = max(0, int(self.options.retries))
        last = "no attempt"
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(min(BACKOFF_MAX_S, BACKOFF_S * 2 ** (attempt - 1)))
            try:
                resp = self.client.request(method, self.base + path, json=payload)
            except httpx.ReadTimeout:
                # The server is up but did not answer in time: retrying would only wait again.
                raise RequestFailed("timeout", f"no answer within {self.options.request_timeout_s:g} s "
                                               f"(request_timeout_s)") from None
            except _RETRYABLE as e:
                last = f"{type(e).__name__}: {e}"
                continue
            except httpx.HTTPError as e:
                raise RequestFailed("error", f"{type(e).__name__}: {e}") from None
            if resp.status_code == 429 or resp.status_code >= 500:
                last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                continue
            if resp.status_code >= 400:
                raise RequestFailed("error", f"HTTP {resp.status_code}: {resp.text[:500]}",
                                    status=resp.status_code)
            try:
                return resp.json()
            except ValueError:
                raise RequestFailed("error", f"HTTP {resp.status_code} with a body that is not "
                                             f"JSON: {resp.text[:200]}") from None
        raise RequestFailed("error", f"{last} (after {retries} retries)")

    def _payload(self, prompt, n: int) -> tuple[str, dict]:
        o = self.options
        body = {"model": self.model, "max_tokens": int(o.max_tokens),
                "temperature": float(o.temperature), "n": n}
        if self.mode == "completion":
            return "/completions", dict(body, prompt=prompt)
        return "/chat/completions", dict(body, messages=prompt)

    def _answers(self, data: dict) -> list[tuple[str, str | None]]:
        out = []
        for ch in sorted(data.get("choices") or [], key=lambda c: c.get("index", 0)):
            if self.mode == "completion":
                out.append((ch.get("text") or "", None))
            else:
                msg = ch.get("message") or {}
                reasoning = msg.get("reasoning_content") or msg.get("reasoning")
                out.append((msg.get("content") or "", reasoning))
        return out

    def sample(self, prompt, n: int) -> list:
        """``n`` answers (``(text, reasoning)``) or RequestFailed objects, in sample order."""
        results: list = []
        if n > 1 and self._n_supported:
            path, body = self._payload(prompt, n)
            try:
                results = self._answers(self._request("POST", path, body))[:n]
            except RequestFailed as e:
                if e.status is None or e.status >= 500:
                    raise
                # 4xx with n > 1: the server refuses n (llama.cpp, some proxies) -> one by one.
                logger.info("server refused n=%d (%s); sending separate requests", n, e.detail[:120])
                with self._lock:
                    self._n_supported = False
        missing = n - len(results)
        if missing <= 0:
            return results

        def one(_i):
            path, body = self._payload(prompt, 1)
            try:
                got = self._answers(self._request("POST", path, body))
            except RequestFailed as e:
                return e
            return got[0] if got else RequestFailed("error", "the server returned no choices")

        workers = min(missing, max(1, int(self.options.concurrency)))
        if workers == 1:
            return results + [one(i) for i in range(missing)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cudal1-openai") as pool:
            return results + list(pool.map(one, range(missing)))

    # -- Engine ----------------------------------------------------------------------------
    def propose(self, task, history, ctx: SearchContext):
        self.ensure_ready()
        messages, _prefix = prompts.build_prompt(task.source, history, ctx.device, ctx.device_info)
        prompt = (prompts.to_completion_prompt(messages, self.options.prompt_template)
                  if self.mode == "completion" else messages)
        digest = prompts.prompt_hash(prompt)
        # The recorder (replay.RecordingEngine) saves the request beside the answers.
        self.last_request = {"prompt": prompt, "prompt_hash": digest, "mode": self.mode,
                             "model": self.model}
        try:
            answers = self.sample(prompt, max(1, ctx.samples))
        except RequestFailed as e:
            raise EngineError(f"server at {self.base}: {e.detail}") from None
        if answers and all(isinstance(a, RequestFailed) for a in answers):
            first = answers[0]
            if first.status is not None and 400 <= first.status < 500:
                raise EngineError(f"server at {self.base} refused the request: {first.detail}")
            raise EngineError(f"no answer from the server at {self.base}: {first.detail}")
        cands = []
        for i, a in enumerate(answers):
            origin = Origin.sampled(self.name, ctx.round, i)
            extra = {"model": self.model, "engine": self.name}
            if isinstance(a, RequestFailed):
                c = prompts.make_candidate("", origin, prompt_digest=digest, extra=extra)
                c.meta.update(failed=f"request failed: {a.detail}", failed_reason=a.reason)
            else:
                c = prompts.make_candidate(a[0], origin, reasoning=a[1], prompt_digest=digest,
                                           extra=extra)
            c.round, c.sample = ctx.round, i
            cands.append(c)
        return cands

    def close(self) -> None:
        self.client.close()
