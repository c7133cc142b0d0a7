"""Running the application on uvicorn, telling the service first when a signal stops the
server: the runs it then stops are saved as interrupted by the server, and a restart with
``--resume-interrupted`` continues them."""

from __future__ import annotations

from typing import Any

import uvicorn

from tmas.serve.service import ChatService

GRACEFUL_SHUTDOWN_S = 5  # open streams get this long before the runs behind them stop


class ServiceServer(uvicorn.Server):
    """uvicorn's server for one :class:`ChatService`."""

    def __init__(self, config: uvicorn.Config, service: ChatService) -> None:
        super().__init__(config)
        self.service = service

    def handle_exit(self, sig: int, frame: Any) -> None:
        """Refuse new requests and mark later stops as the server's, then stop as uvicorn does."""
        self.service.begin_shutdown()
        super().handle_exit(sig, frame)


def run_server(app: Any, service: ChatService, host: str, port: int, log_level: str) -> None:
    """Serve ``app`` until SIGINT or SIGTERM."""
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )  # fmt: skip
    ServiceServer(config, service).run()
