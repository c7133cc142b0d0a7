"""Evaluation: run a topology over a data set, one saved run per problem, and report."""
