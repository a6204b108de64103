"""The LLM engines and the prompt they share: ``prompts`` (the contrastive prompt and the parsing
of answers), ``openai_engine`` (any OpenAI-compatible server), ``vllm_engine`` (vLLM in this
process), ``server`` (a managed local server for the openai engine)."""
