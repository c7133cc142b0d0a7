"""Every bad request gets an OpenAI-style JSON error with the right status (never a
traceback) and saves nothing; ``--api-key`` is enforced and the key is never stored; a full
server answers 429; a client that leaves a plain (non-streamed) request cancels its run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import AuthenticationError, OpenAI
from serve_helpers import SMALL_TMAS, scripted_service, serving, user

from tmas.serve import ServeLimits
from tmas.storage import open_storage
from tmas.testing.fake_openai_server import FakeOpenAIServer

OK = {"model": "majority_vote", "messages": user()}
LIMITS = ServeLimits(max_request_bytes=4096, max_calls_per_request=100, max_n=4)
IMAGE = [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]

BAD_REQUESTS: list[tuple[str, Any, int, str | None]] = [
    ("not JSON", b"{model: tmas", 400, None),
    ("not an object", [1, 2], 400, None),
    ("no model", {"messages": user()}, 400, "model"),
    ("unknown model", {**OK, "model": "gpt-9"}, 404, "model"),
    ("no messages", {"model": "tmas"}, 400, "messages"),
    ("empty messages", {**OK, "messages": []}, 400, "messages"),
    ("no user message", {**OK, "messages": [{"role": "system", "content": "hi"}]}, 400,
     "messages"),
    ("empty problem", {**OK, "messages": user("   ")}, 400, "messages[0].content"),
    ("image content", {**OK, "messages": [{"role": "user", "content": IMAGE}]}, 400,
     "messages[0].content"),
    ("message not an object", {**OK, "messages": ["hi"]}, 400, "messages[0]"),
    ("unknown setting", {**OK, "n_candidatez": 3}, 400, "n_candidatez"),
    ("setting out of range", {**OK, "n_candidates": 0}, 400, None),
    ("setting of the wrong type", {**OK, "max_iterations": "many"}, 400, None),
    ("unknown selection rule", {**OK, "selection": "best_guess"}, 400, None),
    ("roles from a request", {**OK, "roles": {"solver": {"base_url": "http://evil/v1"}}}, 400,
     "roles"),
    ("tools", {**OK, "tools": [{"type": "function", "function": {"name": "f"}}]}, 400, "tools"),
    ("n of zero", {**OK, "n": 0}, 400, "n"),
    ("n over the limit", {**OK, "n": 5}, 400, "n"),
    ("stream not a flag", {**OK, "stream": "yes"}, 400, "stream"),
    ("over the call budget", {**OK, "model": "tmas", "n_candidates": 64}, 400, None),
    ("over the size limit", {**OK, "messages": user("x" * 5000)}, 413, None),
]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = tmp_path_factory.mktemp("refusals") / "runs.sqlite"
    with FakeOpenAIServer() as endpoint:
        with serving(scripted_service(endpoint, db, limits=LIMITS)) as base_url:
            yield base_url, endpoint, db


@pytest.mark.parametrize(("what", "body", "status", "param"), BAD_REQUESTS,
                         ids=[case[0] for case in BAD_REQUESTS])  # fmt: skip
def test_a_bad_request_is_refused_with_an_openai_error(
    served: Any, what: str, body: Any, status: int, param: str | None
) -> None:
    base_url, endpoint, db = served
    before = endpoint.request_count
    options = {"content": body} if isinstance(body, bytes) else {"json": body}
    response = httpx.post(f"{base_url}/chat/completions", **options)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"] and error["param"] == param
    assert error["type"] == ("invalid_request_error" if status < 500 else "server_error")
    assert "Traceback" not in response.text and 'File "' not in response.text
    assert endpoint.request_count == before  # no model was called
    storage = open_storage(db)
    try:
        assert storage.registry.all() == []  # and no run was saved
    finally:
        storage.close()


def test_unknown_paths_and_methods_get_json_errors(served: Any) -> None:
    base_url = served[0]
    missing = httpx.get(f"{base_url}/completions")
    wrong_method = httpx.get(f"{base_url}/chat/completions")
    no_run = httpx.get(f"{base_url}/runs/0123456789ab")
    assert (missing.status_code, wrong_method.status_code, no_run.status_code) == (404, 405, 404)
    assert all("error" in r.json() for r in (missing, wrong_method, no_run))


def test_the_api_key_is_required_and_never_stored(tmp_path: Path) -> None:
    key = "sk-serve-test-5b1f0c"
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer() as endpoint:
        with serving(scripted_service(endpoint, db), api_key=key) as base_url:
            for wrong in ("", "Bearer nope", f"Basic {key}", f"Bearer {key}x"):
                headers = {"Authorization": wrong} if wrong else {}
                response = httpx.post(f"{base_url}/chat/completions", json=OK, headers=headers)
                assert response.status_code == 401
                assert key not in response.text
                assert response.json()["error"]["code"] == "invalid_api_key"
                assert httpx.get(f"{base_url}/models", headers=headers).status_code == 401
            assert endpoint.request_count == 0
            with pytest.raises(AuthenticationError):
                OpenAI(base_url=base_url, api_key="wrong").models.list()
            reply = OpenAI(base_url=base_url, api_key=key).chat.completions.create(
                model="majority_vote", messages=user(), extra_body={"n_candidates": 2}
            )
            run_id = reply.model_extra["tmas"]["run_ids"][0]
            assert httpx.get(f"{base_url}/runs/{run_id}").status_code == 401
    assert endpoint.request_count == 2
    for path in tmp_path.iterdir():  # the database and its journal files
        assert key.encode() not in path.read_bytes()


def test_a_full_server_answers_429_and_serves_again_once_a_run_ends(tmp_path: Path) -> None:
    release = threading.Event()
    with FakeOpenAIServer(latency_of=lambda body: 0.0 if release.wait(30) else 0.0) as endpoint:
        service = scripted_service(
            endpoint, tmp_path / "runs.sqlite", limits=ServeLimits(max_concurrent_runs=1)
        )
        with serving(service) as base_url:
            body = {**OK, "n_candidates": 1}
            first: list[httpx.Response] = []
            worker = threading.Thread(
                target=lambda: first.append(
                    httpx.post(f"{base_url}/chat/completions", json=body, timeout=60)
                )
            )
            worker.start()
            while endpoint.in_flight == 0:  # the first run is calling the model
                time.sleep(0.01)
            refused = httpx.post(f"{base_url}/chat/completions", json=body)
            release.set()
            worker.join(timeout=60)
            again = httpx.post(f"{base_url}/chat/completions", json=body)
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
    assert first[0].status_code == 200 and again.status_code == 200


def test_a_client_that_leaves_a_plain_request_cancels_its_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    # Five model calls one after another (5 s): far longer than the client waits (0.5 s) plus
    # the interval at which a waiting request looks for its client (0.5 s).
    with FakeOpenAIServer(latency_s=1.0) as endpoint:
        with serving(scripted_service(endpoint, db)) as base_url:
            body = {"model": "tmas", "messages": user(), **SMALL_TMAS}
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(f"{base_url}/chat/completions", json=body, timeout=0.5)
            deadline = time.monotonic() + 30
            statuses: list[str] = []
            while time.monotonic() < deadline:
                storage = open_storage(db)
                try:
                    statuses = [r.status for r in storage.registry.all()]
                finally:
                    storage.close()
                if statuses and statuses[0] != "running":
                    break
                time.sleep(0.1)
    assert statuses == ["cancelled"]


def test_a_run_whose_backend_fails_is_a_502_and_stays_saved(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(max_requests=0) as endpoint:  # every model call gets HTTP 503
        with serving(scripted_service(endpoint, db)) as base_url:
            body = {**OK, "max_retries": 0}
            response = httpx.post(f"{base_url}/chat/completions", json=body)
            streamed = httpx.post(f"{base_url}/chat/completions", json={**body, "stream": True})
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "run_failed" and "every solver call" in error["message"]
    assert "tmas resume" in error["message"] and "Traceback" not in response.text
    events = [line for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert '"run_failed"' in events[-2] and events[-1] == "data: [DONE]"
    storage = open_storage(db)
    try:
        assert [r.status for r in storage.registry.all()] == ["failed", "failed"]
    finally:
        storage.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--graph", "no_such.yaml"], "no_such.yaml"),
        (["--no-bundled"], "no topology to offer"),
        (["--on-disconnect", "linger"], "--on-disconnect must be cancel or finish"),
        (["--base-url", "http://127.0.0.1:1/v1", "--model", "m"], "cannot reach the model server"),
    ],
)
def test_tmas_serve_refuses_bad_options_before_listening(
    tmp_path: Path, args: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from tmas.cli import app

    result = CliRunner().invoke(
        app, ["serve", "--db", str(tmp_path / "runs.sqlite"), "--base-url",
              "http://127.0.0.1:9/v1", "--model", "m", *args],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output
