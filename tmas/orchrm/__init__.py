"""Orchestration reward modelling: plans, plan pairs, the plan reward model, and choosing a
plan before running it."""
