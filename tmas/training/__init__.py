"""Training the solver for the TMAS loop: saved runs as training rows, the hybrid reward, and
GRPO with LoRA (``pip install 'tmas[train]'``; nothing here imports torch until training)."""
