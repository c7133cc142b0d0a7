"""vLLM backends: the async engine in-process (:mod:`~tmas.llm.vllm.chat`, one shared engine
per model: :mod:`~tmas.llm.vllm.async_engine`) and a managed vLLM OpenAI server
(:mod:`~tmas.llm.vllm.server`). vLLM itself is imported only when an engine starts."""
