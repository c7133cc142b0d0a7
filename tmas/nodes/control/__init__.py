"""Control nodes: opening an iteration (planners), closing it (votes, selection, stop rules),
updating the banks."""
