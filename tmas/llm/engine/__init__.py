"""The embedded llama.cpp engine: one context per model, continuous batching, shared prefixes.

- :mod:`.binding`: llama.cpp's C API over either Python binding (CFFI or ctypes).
- :mod:`.loaded_model`: the model, its context, tokens and chat template.
- :mod:`.scheduler`: the decode loop that admits, batches, samples and stops requests.
- :mod:`.slots`: which tokens each sequence's KV cache holds (the prefix cache).
- :mod:`.engine`: the engine a chat model talks to, one per loaded model.
"""

from tmas.llm.engine.engine import LlamaEngine, close_engines, shared_engine
from tmas.llm.engine.loaded_model import EngineSettings
from tmas.llm.engine.request import Outcome, Sampling

__all__ = ["EngineSettings", "LlamaEngine", "Outcome", "Sampling", "close_engines", "shared_engine"]
