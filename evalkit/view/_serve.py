"""Serving the viewer: bind, say where, open the browser, serve until interrupted."""

from __future__ import annotations

import asyncio
import os
import webbrowser
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from evalkit._defaults import DEFAULT_STORE
from evalkit._duckdb import store_too_new
from evalkit.errors import ConfigError, StoreError
from evalkit.store import is_lake, store_exists
from evalkit.view._app import create_app, is_loopback
from evalkit.view._port import DEFAULT_PORT

#: The port ``evalkit view`` listens on when none is given.


def _say(line: str) -> None:
    print(line, flush=True)


async def _serve(
    store: str, host: str, port: int, open_browser: bool, say: Callable[[str], None]
) -> None:
    runner = web.AppRunner(create_app(store, local_only=is_loopback(host)), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise StoreError(f"evalkit view: cannot listen on {host}:{port}: {exc}") from exc
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        url = f"http://{shown}:{bound_port}/"
        say(f"evalkit view: serving {store} at {url} (read-only; Ctrl+C stops)")
        if open_browser:
            await asyncio.to_thread(webbrowser.open, url)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def serve(
    store: str | os.PathLike[str] = DEFAULT_STORE,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    say: Callable[[str], None] = _say,
) -> None:
    """Serve the viewer over ``store`` until interrupted (``KeyboardInterrupt``).

    Args:
        store: The score store (a file, or a ``ducklake:`` attach string); opened
            read-only, for each request only, so a run can write it meanwhile.
        host: The interface to listen on (the loopback one by default: the viewer has no
            login).
        port: The port; 0 picks a free one.
        open_browser: Open the viewer's address in the user's browser.
        say: Where the line with the viewer's address goes (standard output).

    Raises:
        ConfigError: The port is not a number from 0 to 65535.
        StoreError: The store does not exist, is written in a storage format newer than the
            installed DuckDB reads, or the port cannot be bound.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port must be a number from 0 to 65535, got {port!r}")
    where = str(store)
    if not (store_exists(where) if is_lake(where) else Path(where).is_file()):
        raise StoreError(f"{where}: no such score store (run an experiment first, or --store)")
    if not is_lake(where) and (newer := store_too_new(where)) is not None:
        # Refused before serving, not as an error page for each request.
        raise StoreError(f"{where}: cannot open the score store: {newer}")
    asyncio.run(_serve(where, host, port, open_browser, say))
