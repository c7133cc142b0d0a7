"""transformers in-process: the ``hf`` backend (a chat model with an optional LoRA adapter)."""
