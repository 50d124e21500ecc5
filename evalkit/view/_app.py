"""The viewer's web application: aiohttp routes that read the store and render a page (or the
same data as JSON under ``/api``).

Each handler runs its queries in a worker thread (DuckDB blocks), on the store opened
read-only and shared by the requests for a bounded time (see ``_reader.py``). Responses
forbid every script but the viewer's own file and every remote resource
(``Content-Security-Policy``), so text from a model that slipped past escaping still could
not run; they carry the server time as ``Server-Timing``. Why aiohttp and Jinja2:
docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from yarl import URL

from evalkit.errors import StoreError
from evalkit.view import _charts, _compare, _items, _queries, _runs_page
from evalkit.view._reader import Reader
from evalkit.view._render import environment

_STATIC = Path(__file__).parent / "static"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1"}

STORE: web.AppKey[str] = web.AppKey("store", str)
_READER: web.AppKey[Reader] = web.AppKey("reader", Reader)
_ENV: web.AppKey[Any] = web.AppKey("env", object)
_LOCAL: web.AppKey[bool] = web.AppKey("local_only", bool)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    # Bound to the loopback interface, the viewer answers only requests addressed to it by a
    # local name: a web page elsewhere cannot reach it through a rebound DNS name.
    if request.app[_LOCAL]:
        try:
            host = URL(f"http://{request.host}").host
        except ValueError:  # e.g. "[::1" or a port past 65535: refused, not a 500
            return web.Response(status=400, text="evalkit view: malformed Host header")
        if host not in _LOCAL_NAMES:
            return web.Response(status=421, text=f"evalkit view: unknown host {request.host!r}")
    started = time.perf_counter()
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or request.path.startswith(("/api/", "/static/")):
            raise
        response = _page(request, "error.html", status=exc.status, message=exc.text or "")
        response.set_status(exc.status)
    response.headers["Content-Security-Policy"] = _CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
    return response


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _json(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda d: json.dumps(d, default=_json_default))


def _page(request: web.Request, template: str, **context: Any) -> web.Response:
    html = request.app[_ENV].get_template(template).render(store=request.app[STORE], **context)
    return web.Response(text=html, content_type="text/html")


async def _read(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return await asyncio.to_thread(function, *args, **kwargs)
    except StoreError as exc:
        raise web.HTTPNotFound(text=str(exc)) from exc


async def experiments(request: web.Request) -> web.Response:
    """``/``: the runs, a page at a time (``page``), filtered by ``name`` (a substring),
    ``status`` and ``failed=1`` (failed nights only), with the trends of the page's names."""
    name = request.query.get("name", "")
    status = request.query.get("status", "")
    failed = request.query.get("failed", "") == "1"
    data = await _read(
        _runs_page.experiments,
        request.app[_READER],
        name=name,
        status=status,
        failed=failed,
        page=_queries.page_number(request.query),
    )
    if request.path.startswith("/api/"):
        return _json(data)
    marked = set(data["failed_runs"])
    charts = {
        n: _charts.trend(series, failed=marked) for n, series in sorted(data["trends"].items())
    }
    return _page(
        request,
        "experiments.html",
        filters={"name": name, "status": status, "failed": failed},
        params={"name": name, "status": status, "failed": "1" if failed else ""},
        charts=charts,
        **data,
    )


async def experiment(request: web.Request) -> web.Response:
    """``/experiments/{id}``: one run's verdict, scorers and their gates, coverage,
    distributions, failure groups and its item table (searched, filtered, sorted and
    paginated on the server)."""
    params = _items.Params.from_query(request.query)
    data = await _read(_items.run_page, request.app[_READER], request.match_info["id"], params)
    if request.path.startswith("/api/"):
        data["items"] = {k: v for k, v in data["items"].items() if k != "filters"}
        return _json(data)
    for scorer in data["scorers"]:
        h = scorer["histogram"]
        scorer["chart"] = _charts.histogram(h["lo"], h["hi"], h["counts"]) if h else None
    return _page(request, "experiment.html", **data)


async def item(request: web.Request) -> web.Response:
    """``/experiments/{id}/item?id=ITEM[&baseline=ID]``: one item, its scores and judge calls."""
    item_id = request.query.get("id")
    if item_id is None:
        raise web.HTTPBadRequest(text="evalkit view: the item page needs ?id=ITEM")
    data = await _read(
        _queries.item,
        request.app[_READER],
        request.match_info["id"],
        item_id,
        baseline=request.query.get("baseline") or None,
    )
    if data["item"] is None:
        raise web.HTTPNotFound(
            text=f"evalkit view: run {data['run']['id']} has no item {item_id!r}"
        )
    if request.path.startswith("/api/"):
        return _json(data)
    return _page(request, "item.html", item_id=item_id, **data)


async def compare(request: web.Request) -> web.Response:
    """``/compare?baseline=ID&candidate=ID``: per scorer the change, and the item diff as a
    filterable, sortable grid, paginated on the server."""
    params = _compare.Params.from_query(request.query)
    data = await _read(_compare.page, request.app[_READER], params)
    if request.path.startswith("/api/"):
        return _json({k: v for k, v in data.items() if k != "filters"})
    return _page(request, "compare.html", **data)


async def _hold(app: web.Application) -> AsyncIterator[None]:
    """Close the store once idle, on a timer; close it for good at shutdown."""
    reader = app[_READER]

    async def watch() -> None:
        while True:
            await asyncio.sleep(0.1)
            await asyncio.to_thread(reader.close_if_idle)

    task = asyncio.create_task(watch())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await asyncio.to_thread(reader.close)


def create_app(store: str | os.PathLike[str], *, local_only: bool = True) -> web.Application:
    """The viewer as an aiohttp application over ``store`` (opened read-only per request).

    Args:
        store: The DuckDB score store.
        local_only: Answer only requests addressed to a loopback name (``localhost``,
            ``127.0.0.1``): set when the viewer listens on the loopback interface.
    """
    app = web.Application(middlewares=[_guard])
    app[STORE] = str(store)
    app[_READER] = Reader(store)
    app.cleanup_ctx.append(_hold)
    app[_ENV] = environment()
    app[_LOCAL] = local_only
    for prefix in ("", "/api"):
        app.router.add_get(f"{prefix}/", experiments)
        app.router.add_get(f"{prefix}/experiments/{{id}}", experiment)
        app.router.add_get(f"{prefix}/experiments/{{id}}/item", item)
        app.router.add_get(f"{prefix}/compare", compare)
    app.router.add_static("/static", _STATIC)
    return app


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) names the loopback interface only."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"
