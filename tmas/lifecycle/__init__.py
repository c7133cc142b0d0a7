"""The run lifecycle: start, resume, fork and review runs; failed calls, live events,
iteration history and progress."""
