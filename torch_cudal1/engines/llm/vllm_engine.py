"""In-process vLLM (``pip install torch_cudal1[vllm]``): the model loads once per process, with
prefix caching on (the contrastive prompts share their prefix from round to round) and its GPU
memory share capped by ``gpu_memory_utilization`` so that candidates can still run beside it.
For a model shared by many processes, run a server instead (``cudal1 engine start``)."""
from __future__ import annotations

from ...origin import Origin
from . import prompts
from ..base import Engine, EngineError, SearchContext


class VLLMEngine(Engine):
    name = "vllm"

    def __init__(self, options):
        self.options = options
        self.mode = getattr(options, "completion_mode", "chat")
        self._llm = None
        self.last_request: dict | None = None

    def _load(self):
        if self._llm is not None:
            return self._llm
        try:
            import vllm
        except ImportError as e:
            raise EngineError(f"the vllm engine needs vLLM ({e}): pip install torch_cudal1[vllm]; "
                              "or use engine=openai with a running server") from None
        if not self.options.model:
            raise EngineError("the vllm engine needs a model: set model (CUDAL1_MODEL, --model)")
        try:
            self._llm = vllm.LLM(model=self.options.model, enable_prefix_caching=True,
                                 gpu_memory_utilization=float(self.options.gpu_memory_utilization))
        except Exception as e:  # noqa: BLE001 - any load failure means no engine
            raise EngineError(f"vLLM could not load {self.options.model!r}: {type(e).__name__}: {e}") from None
        return self._llm

    def propose(self, task, history, ctx: SearchContext):
        llm = self._load()
        from vllm import SamplingParams
        n = max(1, ctx.samples)
        params = SamplingParams(n=n, temperature=float(self.options.temperature),
                                max_tokens=int(self.options.max_tokens))
        messages, _ = prompts.build_prompt(task.source, history, ctx.device, ctx.device_info)
        try:
            if self.mode == "completion":
                prompt = prompts.to_completion_prompt(messages, self.options.prompt_template)
                outs = llm.generate([prompt], params, use_tqdm=False)
            else:
                prompt = messages
                outs = llm.chat(messages, params, use_tqdm=False)
        except Exception as e:  # noqa: BLE001
            raise EngineError(f"vLLM generation failed: {type(e).__name__}: {e}") from None
        digest = prompts.prompt_hash(prompt)
        self.last_request = {"prompt": prompt, "prompt_hash": digest, "mode": self.mode,
                             "model": self.options.model}
        cands = []
        for i, out in enumerate(outs[0].outputs[:n] if outs else []):
            c = prompts.make_candidate(out.text, Origin.sampled(self.name, ctx.round, i), prompt_digest=digest,
                                       extra={"engine": self.name, "model": self.options.model})
            c.round, c.sample = ctx.round, i
            cands.append(c)
        return cands

    def close(self) -> None:
        self._llm = None
