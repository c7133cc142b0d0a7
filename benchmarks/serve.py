"""What the HTTP server costs, and the same majority vote through OptiLLM.

Part 1: one TMAS request (N=4, M=2, T=1: 24 model calls) against a loopback scripted
OpenAI-compatible model answering after ``--latency`` seconds, sent by 1, 8 and 32 concurrent
clients, two ways side by side: through ``tmas serve`` (its own process, the openai wire
format) and in-process through the same :class:`~tmas.serve.ChatService` without HTTP.
Prints requests per second, mean latency per request, and the ratios (server / in-process).

Part 2: a majority vote of 4 samples in front of the same scripted model with
``--vote-latency`` seconds per call: ``tmas serve``'s ``majority_vote`` topology (N=4) and
OptiLLM's ``majority_voting`` plugin (k=4: one backend request asking for n=4 samples) and
``self_consistency`` approach (5 samples), if ``optillm`` is installed (``--optillm`` names its
executable; it is not a dependency of this project). OptiLLM does not pass on the request's
extra fields, so the scripted model cannot tell its calls' role: their answers are not
compared, only their timing, calls and reported usage. Prints wall time, backend calls, the
calls in flight on average (calls x latency / wall time), the usage each reports, and when
the first streamed chunk came.

    python benchmarks/serve.py [--latency 0.05] [--vote-latency 0.5] [--optillm PATH] [--toy]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from openai import OpenAI

from tmas.llm.backend import BackendSpec
from tmas.serve import ChatService, ServeLimits

TMAS_BODY = {
    "model": "tmas",
    "messages": [{"role": "user", "content": "What is 9 + 9?"}],
    "n_candidates": 4,
    "n_verifications": 2,
    "max_iterations": 1,
}
CLIENTS = (1, 8, 32)
REQUESTS = 16  # per level: 16 in turn from one client, 2 each from 8, 2 each from 32


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(url: str, process: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing answered at {url}")


@contextmanager
def scripted_model(latency: float, count_file: Path) -> Iterator[str]:
    """The base URL of a scripted model in its own process, counting its requests."""
    command = [
        sys.executable, "-m", "tmas.testing.fake_openai_main", "--port", "0",
        "--latency", str(latency), "--count-file", str(count_file), "--answers", "18",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        yield process.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def api_process(command: list[str], port: int, **options: Any) -> Iterator[str]:
    """``command`` in its own process, serving on ``port``: its API URL once ``/health``
    answers; stopped on exit."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               **options)  # fmt: skip
    try:
        wait_until_up(f"http://127.0.0.1:{port}/health", process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=60)


@contextmanager
def tmas_server(base_url: str, db: Path, max_runs: int) -> Iterator[str]:
    """``tmas serve`` in its own process in front of ``base_url``; yields its API URL."""
    port = free_port()
    command = [
        sys.executable, "-m", "tmas.cli", "serve", "--no-bundled", "--graph", "tmas", "--graph",
        "majority_vote", "--base-url", base_url, "--model", "scripted", "--db", str(db),
        "--port", str(port), "--max-concurrent-runs", str(max_runs),
    ]  # fmt: skip
    with api_process(command, port) as api:
        yield api


def backend_calls(count_file: Path) -> int:
    return int(count_file.read_text().strip() or 0)


async def load(send, clients: int, requests: int = REQUESTS) -> tuple[float, float]:  # noqa: ANN001
    """Requests per second and mean seconds per request of ``clients`` concurrent clients,
    each sending its share of ``requests`` (at least 2) in turn, after one request to warm
    up."""
    latencies: list[float] = []
    await send()

    async def client() -> None:
        for _ in range(max(2, requests // clients)):
            began = time.perf_counter()
            body = await send()
            assert body["tmas"]["final_answers"] == ["18"], body
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - began
    return len(latencies) / wall, sum(latencies) / len(latencies)


async def side_by_side(
    api: str, service: ChatService, clients: int, body: dict, requests: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The same load through the server and through the service in this process."""
    async with httpx.AsyncClient(timeout=600) as http:

        async def over_http() -> dict:
            response = await http.post(f"{api}/chat/completions", json=body)
            return response.json()

        served = await load(over_http, clients, requests)
    inproc = await load(lambda: service.complete(body), clients, requests)
    return served, inproc


def part_one(
    latency: float,
    work: Path,
    body: dict = TMAS_BODY,
    levels: tuple[int, ...] = CLIENTS,
    requests: int = REQUESTS,
) -> None:
    n, m = body["n_candidates"], body["n_verifications"]
    print(f"Part 1: TMAS N={n} M={m} T=1 ({n + n * m + 3 * n} calls), scripted model latency "
          f"{latency} s")  # fmt: skip
    print(f"{'clients':>7} {'server req/s':>13} {'in-proc req/s':>14} {'ratio':>6} "
          f"{'server s/req':>13} {'in-proc s/req':>14} {'added s':>8}")  # fmt: skip
    with scripted_model(latency, work / "count-1.txt") as model_url:
        backend = BackendSpec(kind="openai", model="scripted", base_url=model_url)
        with tmas_server(model_url, work / "server.sqlite", max(levels)) as api:
            for clients in levels:
                service = ChatService(
                    backend, db=work / f"inproc-{clients}.sqlite",
                    limits=ServeLimits(max_concurrent_runs=max(levels)),
                )  # fmt: skip
                (s_rps, s_lat), (i_rps, i_lat) = asyncio.run(
                    side_by_side(api, service, clients, body, requests)
                )
                service.close()
                print(f"{clients:>7} {s_rps:>13.2f} {i_rps:>14.2f} {s_rps / i_rps:>6.2f} "
                      f"{s_lat:>13.3f} {i_lat:>14.3f} {s_lat - i_lat:>8.3f}")  # fmt: skip


def timed_vote(client: OpenAI, model: str, count_file: Path, **options: object) -> dict:
    """Wall time, backend calls, usage and first-chunk time of one streamed vote request."""
    before = backend_calls(count_file)
    began = time.perf_counter()
    first, usage, chunks = None, None, 0
    for chunk in client.chat.completions.create(
        model=model, messages=TMAS_BODY["messages"], stream=True,  # type: ignore[arg-type]
        stream_options={"include_usage": True}, **options,  # type: ignore[arg-type]
    ):  # fmt: skip
        chunks += 1
        if first is None:
            first = time.perf_counter() - began
        usage = chunk.usage or usage
    wall = time.perf_counter() - began
    return {"wall": wall, "first": first, "chunks": chunks, "usage": usage,
            "calls": backend_calls(count_file) - before}  # fmt: skip


@contextmanager
def optillm_proxy(executable: str, base_url: str, work: Path) -> Iterator[str]:
    """OptiLLM in its own process in front of ``base_url``; yields its API URL. It needs
    ``OPENAI_API_KEY`` set (any value) to call an OpenAI-compatible backend."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "OPTILLM_API_KEY"}
    env["OPENAI_API_KEY"] = "sk-unused"
    command = [executable, "--base-url", base_url, "--port", str(port)]
    with api_process(command, port, env=env, cwd=work) as api:
        yield api


def show_vote(name: str, result: dict, latency: float) -> None:
    usage = result["usage"]
    parallel = result["calls"] * latency / result["wall"]
    shown = (f"prompt {usage.prompt_tokens}, completion {usage.completion_tokens}"
             if usage else "none")  # fmt: skip
    print(f"{name:<32} {result['wall']:>5.2f} s  {result['calls']:>2} calls  {parallel:.1f} "
          f"in flight  first chunk "
          f"{result['first']:.2f} s of {result['chunks']} chunks  usage: {shown}")  # fmt: skip


def part_two(latency: float, work: Path, optillm: str | None, toy: bool = False) -> None:
    print(f"\nPart 2: majority vote of 4 samples, scripted model latency {latency} s")
    count_file = work / "count-2.txt"
    with scripted_model(latency, count_file) as model_url:
        with tmas_server(model_url, work / "vote.sqlite", 4) as api:
            ours = timed_vote(OpenAI(base_url=api, api_key="unused"), "majority_vote",
                              count_file, extra_body={"n_candidates": 4})  # fmt: skip
        show_vote("tmas serve majority_vote (N=4)", ours, latency)
        if toy:
            print("OptiLLM majority_voting and self_consistency: not measured (--toy runs only "
                  "what the test install has, and OptiLLM is not in it)")  # fmt: skip
            return
        if optillm is None:
            print("OptiLLM: not installed here (pass --optillm PATH): not measured")
            return
        with optillm_proxy(optillm, model_url, work) as proxy:
            client = OpenAI(base_url=proxy, api_key="sk-unused")
            voting = timed_vote(client, "majority_voting-scripted", count_file,
                                extra_body={"k": 4})  # fmt: skip
            consistency = timed_vote(client, "self_consistency-scripted", count_file)
        show_vote("OptiLLM majority_voting (k=4)", voting, latency)
        show_vote("OptiLLM self_consistency (5)", consistency, latency)
        print(
            f"wall time over tmas serve's: majority_voting {voting['wall'] / ours['wall']:.2f}, "
            f"self_consistency {consistency['wall'] / ours['wall']:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--vote-latency", type=float, default=0.5)
    parser.add_argument("--optillm", default=shutil.which("optillm"),
                        help="the optillm executable (default: on PATH)")  # fmt: skip
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: TMAS N=2 M=1, 1 and 2 clients of 2 requests each, latencies "
        "0.01 s and 0.05 s; OptiLLM is not run",
    )
    args = parser.parse_args()
    body, levels, requests = TMAS_BODY, CLIENTS, REQUESTS
    if args.toy:
        args.latency, args.vote_latency = 0.01, 0.05
        body, levels, requests = {**TMAS_BODY, "n_candidates": 2, "n_verifications": 1}, (1, 2), 2
    with tempfile.TemporaryDirectory() as work:
        os.environ["TMAS_HOME"] = work
        part_one(args.latency, Path(work), body, levels, requests)
        part_two(args.vote_latency, Path(work), args.optillm, toy=args.toy)


if __name__ == "__main__":
    main()
