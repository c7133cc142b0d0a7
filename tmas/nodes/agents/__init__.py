"""Agent roles: the nodes that call a model, each with its prompt templates in
``templates/<role>/``."""
