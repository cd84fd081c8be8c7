"""``neardup serve`` and ``neardup check``: the service and its command-line client."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from neardup.cli import EXIT_INPUT, _errors, _fail, main
from neardup.redaction import redact_url

if TYPE_CHECKING:
    from neardup.index.checking import CheckResult
    from neardup.index.containment import ContainmentCheck


@main.command("serve")
@click.option(
    "--index", "index_url", required=True, metavar="PATH|URL", help="The index to serve (built beforehand)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 256), help="Worker processes."
)
@click.option(
    "--api-keys",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File of 'KEY SCOPE' lines (scopes: read, write, admin; '#' comments). Required off loopback.",
)
@click.option(
    "--insecure-no-auth", is_flag=True, help="Listen off loopback without keys: anyone may change the index."
)
@click.option("--ssl-certfile", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None)
@click.option("--ssl-keyfile", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None)
@click.option(
    "--max-texts", default=1000, show_default=True, type=click.IntRange(1), help="Texts per request."
)
@click.option(
    "--max-text-chars",
    default=200_000,
    show_default=True,
    type=click.IntRange(1),
    help="Characters per text.",
)
@click.option("--max-body", default="8MiB", show_default=True, metavar="SIZE", help="Bytes per request body.")
@click.option(
    "--timeout", default=30.0, show_default=True, type=click.FloatRange(0.1), help="Seconds per request."
)
def serve(
    index_url: str,
    host: str,
    port: int,
    workers: int,
    api_keys: Path | None,
    insecure_no_auth: bool,
    ssl_certfile: Path | None,
    ssl_keyfile: Path | None,
    max_texts: int,
    max_text_chars: int,
    max_body: str,
    timeout: float,
) -> None:
    """Serve an index over HTTP: check texts as they arrive, insert and remove documents.

    Needs the server extra (pip install 'neardup[server]'). Endpoints: POST /v1/check,
    POST /v1/documents, GET|DELETE /v1/documents/{id}, GET /v1/index, /healthz, /readyz,
    /metrics; the OpenAPI document is at /openapi.json, its pages at /docs. SIGTERM or
    Ctrl-C stops it gracefully: requests in flight finish, then the index is closed.
    """
    from neardup.server.config import Limits, ServerConfig
    from neardup.server.running import Listen, check
    from neardup.server.running import serve as run_server
    from neardup.sizes import parse_size

    with _errors():
        limits = Limits(
            max_body_bytes=parse_size(max_body),
            max_texts=max_texts,
            max_text_chars=max_text_chars,
            request_timeout_s=timeout,
        )
        config = ServerConfig(index=index_url, api_keys=api_keys, limits=limits)
        listen = Listen(
            host=host,
            port=port,
            workers=workers,
            ssl_certfile=ssl_certfile,
            ssl_keyfile=ssl_keyfile,
            insecure_no_auth=insecure_no_auth,
        )
        figures = check(config, listen)
    scheme = "https" if ssl_certfile is not None else "http"
    auth = f"API keys from {api_keys}" if api_keys is not None else "no authentication"
    if api_keys is None and insecure_no_auth:
        auth = "NO AUTHENTICATION (--insecure-no-auth): anyone who reaches it may change the index"
    click.echo(
        f"neardup: serving {redact_url(index_url)} "
        f"({figures['documents']:,} documents, {figures['backend']}) on "
        f"{scheme}://{host}:{port} with {workers} worker{'s' if workers != 1 else ''}, {auth}",
        err=True,
    )
    with _errors():
        run_server(config, listen)


@main.command("check")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--server", required=True, metavar="URL", help="A neardup serve address (http://host:port).")
@click.option(
    "--text", default=None, help="A text to check (else FILES, one text per file, or standard input)."
)
@click.option(
    "--api-key-file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="File holding the API key (or set NEARDUP_API_KEY).",
)
@click.option("--top-k", default=10, show_default=True, type=click.IntRange(1))
@click.option(
    "--containment",
    "min_containment",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    metavar="C",
    help="Check by containment (an index built with --containment): matches holding C of the text.",
)
@click.option(
    "--direction",
    type=click.Choice(["query_in_doc", "doc_in_query"]),
    default="query_in_doc",
    show_default=True,
    help="With --containment: the share of the text in a document, or of a document in the text.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per text.")
def check_command(
    files: tuple[Path, ...],
    server: str,
    text: str | None,
    api_key_file: Path | None,
    top_k: int,
    min_containment: float | None,
    direction: Literal["query_in_doc", "doc_in_query"],
    as_json: bool,
) -> None:
    """Check texts against a running neardup serve and print their matches.

    With --containment C the score is containment, not Jaccard ("containment"
    replaces "similarity" in --json).

    Exits 0 when no text is a duplicate, 3 when any is (for scripts), 1 when the server
    cannot be reached or refuses, 2 for usage errors.
    """
    import os

    from neardup.client import Client, ServerError

    if text is not None and files:
        _fail("give either --text or FILES, not both", 2)
    if text is not None:
        names, texts = ["text"], [text]
    elif files:
        names = [str(f) for f in files]
        try:
            texts = [f.read_text(encoding="utf-8") for f in files]
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"cannot read a text: {exc}", EXIT_INPUT)
    else:
        names, texts = ["stdin"], [sys.stdin.read()]
    key = (
        api_key_file.read_text(encoding="utf-8").strip()
        if api_key_file
        else os.environ.get("NEARDUP_API_KEY")
    )
    try:
        import httpx
    except ImportError:
        _fail("neardup check needs httpx: pip install 'neardup[client]'", 2)
    try:
        with Client(server, api_key=key or None) as client:
            results: Sequence[CheckResult | ContainmentCheck] = (
                client.check(texts, top_k=top_k)
                if min_containment is None
                else client.check_containment(
                    texts, min_containment=min_containment, direction=direction, top_k=top_k
                )
            )
    except ServerError as exc:
        _fail(f"{server}: {exc}", EXIT_INPUT)
    except httpx.HTTPError as exc:
        _fail(f"{server}: cannot reach the server: {exc}", EXIT_INPUT)
    score = "similarity" if min_containment is None else "containment"
    for name, result in zip(names, results, strict=True):
        if as_json:
            matches = [
                {"id": m.key, score: round(getattr(m, score), 6), "exact": m.exact} for m in result.matches
            ]
            click.echo(json.dumps({"query": name, "is_duplicate": result.is_duplicate, "matches": matches}))
        elif not result.matches:
            click.echo(f"{name}: no match")
        else:
            for m in result.matches:
                click.echo(f"{name}: {m.key} {getattr(m, score):.4f}{' exact' if m.exact else ''}")
    sys.exit(3 if any(r.is_duplicate for r in results) else 0)
