"""Why a vLLM engine or server did not start, as one line that names the cause and the option
to change. vLLM reports start failures as long stack traces from its worker processes; the
full text is kept in a log file and only its meaning is shown."""

from __future__ import annotations

import re
from dataclasses import dataclass


class VLLMStartError(ValueError):
    """A vLLM engine or server did not start with the settings given; the message is one
    line with the cause, the option to change and where the full log is."""


@dataclass(frozen=True)
class KnownFailure:
    """A pattern of vLLM's log and what to tell the user about it."""

    pattern: str
    cause: str
    hint: str


KNOWN_FAILURES: tuple[KnownFailure, ...] = (
    KnownFailure(
        r"less than desired CPU memory utilization|Free memory on device .* is less than desired",
        "the memory fraction asks for more memory than is free",
        "lower it with --engine-arg gpu_memory_utilization=0.3",
    ),
    KnownFailure(
        r"max seq len \(\d+\) is larger than the maximum number of tokens that can be stored"
        r"|No available memory for the cache blocks|KV cache is needed, which is larger than",
        "the KV cache cannot hold one request of the full context length",
        "lower --n-ctx (or --engine-arg max_model_len=N) or raise "
        "--engine-arg gpu_memory_utilization",
    ),
    KnownFailure(
        r"(?:User-specified|the) max_model_len .* is greater than|max_model_len.*exceeds",
        "the context length is longer than the model supports",
        "lower --n-ctx (or --engine-arg max_model_len=N)",
    ),
    KnownFailure(
        r"CUDA out of memory|torch\.OutOfMemoryError|OutOfMemoryError",
        "the accelerator ran out of memory",
        "lower --engine-arg gpu_memory_utilization or --n-ctx, or raise tensor_parallel_size",
    ),
    KnownFailure(
        r"operator torchvision::nms does not exist|libtorchcodec|torchaudio.*undefined symbol",
        "torchvision/torchaudio/torchcodec were built for another torch",
        "pip uninstall -y torchvision torchaudio torchcodec (text models do not need them)",
    ),
    KnownFailure(
        r"is not a local folder and is not a valid model identifier|Repository Not Found"
        r"|Can't load the configuration of|No such file or directory: .*config\.json",
        "the model is neither a local Hugging Face checkpoint nor a reachable hub id",
        "pass --model DIR (a folder with config.json) or smollm2",
    ),
    KnownFailure(
        r"tensor parallel size .* greater than|World size \(\d+\) is larger than the number"
        r"|requires \d+ GPUs",
        "the parallel sizes ask for more devices than the machine has",
        "lower --engine-arg tensor_parallel_size / pipeline_parallel_size",
    ),
)

_ERROR_LINE = re.compile(r"^\s*(?:\w+\.)*\w*(?:Error|Exception): .+$")


def explain_start_failure(what: str, log_text: str, log_path: str | None) -> str:
    """One line: what failed, the cause (known from the log, else vLLM's first error line),
    the option to change and where the full log is.

    Example:
        >>> explain_start_failure("vLLM engine for m",
        ...     "ValueError: Available memory 7 GiB is less than desired CPU memory "
        ...     "utilization 0.9", "/tmp/v.log")  # doctest: +NORMALIZE_WHITESPACE
        'vLLM engine for m did not start: the memory fraction asks for more memory than is
        free; lower it with --engine-arg gpu_memory_utilization=0.3 (log: /tmp/v.log)'
    """
    where = f" (log: {log_path})" if log_path else ""
    for failure in KNOWN_FAILURES:
        if re.search(failure.pattern, log_text):
            return f"{what} did not start: {failure.cause}; {failure.hint}{where}"
    errors = [line.strip() for line in log_text.splitlines() if _ERROR_LINE.match(line)]
    # The root cause is the first error that is not vLLM's own "see above" summary.
    causes = [e for e in errors if "see root cause above" not in e.lower()]
    cause = causes[0] if causes else (errors[0] if errors else "no error was logged")
    return f"{what} did not start: {' '.join(cause.split())[:300]}{where}"
