"""Run the app with uvicorn: checks first (the index opens with its settings, keys are read,
a network-facing address has keys), then one or several worker processes."""

from __future__ import annotations

import ipaddress
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from neardup.errors import ConfigError
from neardup.server.config import ENV_CONFIG, ServerConfig

APP = "neardup.server.app:app_from_environment"


@dataclass(frozen=True)
class Listen:
    """Where and how the server listens; the TLS files go to uvicorn as they are."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_keyfile_password: str | None = None
    insecure_no_auth: bool = False
    log_level: str = "info"
    graceful_seconds: float = 30.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(config: ServerConfig, listen: Listen) -> dict[str, object]:
    """Refuse what cannot run safely, and return the index's figures: no keys on a network-facing
    address (unless ``insecure_no_auth``), a key file that does not read, an index that does not
    open, half a TLS pair, a worker count below one."""
    from neardup.jobs import open_index
    from neardup.server.auth import KeyRing

    for module in ("fastapi", "uvicorn", "prometheus_client"):
        try:
            __import__(module)
        except ImportError:
            raise ConfigError(f"neardup serve needs {module}: pip install 'neardup[server]'") from None
    if listen.workers < 1:
        raise ConfigError(f"workers must be at least 1, got {listen.workers}")
    if (listen.ssl_certfile is None) != (listen.ssl_keyfile is None):
        raise ConfigError("TLS needs both ssl_certfile and ssl_keyfile")
    if config.api_keys is None and not is_loopback(listen.host) and not listen.insecure_no_auth:
        raise ConfigError(
            f"refusing to listen on {listen.host} without API keys: anyone who can reach it could read "
            "and change the index; give api_keys, or insecure_no_auth to do it anyway"
        )
    if config.api_keys is not None:
        KeyRing.load(config.api_keys)
    with open_index(config.index) as index:
        return {"documents": len(index), "backend": index.stats()["backend"]}


def serve(config: ServerConfig, listen: Listen) -> None:
    """Check, then serve until SIGTERM or Ctrl-C: uvicorn stops taking connections, lets the
    requests in flight finish (up to ``graceful_seconds``) and each worker closes its index."""
    import uvicorn

    check(config, listen)
    os.environ[ENV_CONFIG] = config.to_json()
    metrics_dir = None
    if listen.workers > 1:  # every worker writes its metrics where /metrics can sum them
        metrics_dir = tempfile.mkdtemp(prefix="neardup-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        uvicorn.run(
            APP,
            factory=True,
            host=listen.host,
            port=listen.port,
            workers=listen.workers,
            ssl_certfile=None if listen.ssl_certfile is None else str(listen.ssl_certfile),
            ssl_keyfile=None if listen.ssl_keyfile is None else str(listen.ssl_keyfile),
            ssl_keyfile_password=listen.ssl_keyfile_password,
            log_level=listen.log_level,
            timeout_graceful_shutdown=int(listen.graceful_seconds),
            server_header=False,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
