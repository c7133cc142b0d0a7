"""Agent roles: each module knows one role (its prompt, its call, its state update)."""
