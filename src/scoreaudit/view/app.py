"""The explorer's web app (starlette, served by uvicorn on 127.0.0.1): routes over `pages` and `compare`.

Safety in one place (spec/explorer.md): templates autoescape every value; a request names a bundle by
its position on the command line, a cell by its id in results.json, an image by (arm, id) in
images.parquet, a thumbnail by its number in thumbnails.json and a file by its exact key in
manifest.json, so no text from a request reaches the file system; the Host header must be the
loopback's (a page elsewhere that rebinds its name to 127.0.0.1 gets 400); every page carries a
Content-Security-Policy that allows only the app's own script and style, and files from the bundle
are served sandboxed.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from jinja2 import ChainableUndefined, Environment, PackageLoader
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from scoreaudit.numfmt import ci, num, plain, pval
from scoreaudit.view import pages
from scoreaudit.view.bundle import CONTENT_TYPES, Bundle, open_bundle
from scoreaudit.view.compare import compare, moved_estimate

PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
FILE_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"
STATIC = {"view.css": "text/css; charset=utf-8", "view.js": "text/javascript; charset=utf-8"}
HOSTS = ["127.0.0.1", "localhost"]


def _value(v) -> str:
    """A detail value as a reader wants it: whole numbers whole, other numbers to 3 digits, text as is."""
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}".replace("-", "\u2212")
    return num(v) if isinstance(v, float) else str(v)


def _env() -> Environment:
    env = Environment(loader=PackageLoader("scoreaudit.view", "templates"), autoescape=True,
                      undefined=ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=num, pval=pval, plain=plain, value=_value)
    env.globals.update(ci=ci)
    return env


def create_app(dirs: list[str | Path], verify: bool = True, hosts: list[str] | None = None) -> Starlette:
    """The app over the bundles in `dirs` (each verified in the background when `verify`)."""
    bundles: dict[str, Bundle] = {str(i): open_bundle(d, str(i), verify=verify) for i, d in enumerate(dirs)}
    env = _env()

    def page(name: str, status: int = 200, **ctx) -> HTMLResponse:
        html = env.get_template(name).render(bundles=list(bundles.values()), **ctx)
        return HTMLResponse(html, status_code=status, headers={"Content-Security-Policy": PAGE_CSP,
                                                               "X-Content-Type-Options": "nosniff"})

    def not_found(what: str) -> HTMLResponse:
        return page("missing.html", status=404, what=what, bundle=None)

    def bundle_of(request: Request) -> Bundle | None:
        return bundles.get(request.path_params.get("k", ""))

    async def index(request: Request):
        if len(bundles) == 1:
            return RedirectResponse("/b/0/", status_code=302)
        return page("index.html", bundle=None)

    async def cells(request: Request):
        b = bundle_of(request)
        if b is None:
            return not_found("no such bundle")
        if b.error:
            return page("broken.html", bundle=b)
        query = {k: v for k, v in request.query_params.items()}
        rows, choices = pages.cell_rows(b, query)
        return page("cells.html", bundle=b, rows=rows, choices=choices, query=query, total=len(b.cells))

    async def cell(request: Request):
        b = bundle_of(request)
        if b is None or b.error:
            return not_found("no such bundle")
        c = b.cell(request.query_params.get("id", ""))
        if c is None:
            return not_found("no cell with that id in this bundle")
        others = [o for o in bundles.values() if o is not b and not o.error and o.cell(str(c.get("id")))]
        return page("cell.html", bundle=b, others=others, **pages.cell_page(b, c))

    async def image(request: Request):
        b = bundle_of(request)
        if b is None or b.error:
            return not_found("no such bundle")
        arm, iid = request.query_params.get("arm", ""), request.query_params.get("id", "")
        row = b.image_row(arm, iid)
        if row is None:
            return not_found("no image with that arm and id in this bundle's images table")
        return page("image.html", bundle=b, **pages.image_page(b, arm, iid, row))

    async def thumb(request: Request):
        b = bundle_of(request)
        n = request.path_params["n"]
        if b is None or b.error or not 0 <= n < len(b.thumbs):
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(b.thumbs[n].jpeg, media_type="image/jpeg",
                        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})

    async def exclusions(request: Request):
        b = bundle_of(request)
        if b is None or b.error:
            return not_found("no such bundle")
        return page("exclusions.html", bundle=b, groups=pages.exclusions_page(b))

    async def prereg(request: Request):
        b = bundle_of(request)
        if b is None or b.error:
            return not_found("no such bundle")
        lock = b.results.get("lock") if isinstance(b.results.get("lock"), dict) else {}
        devs = [d for d in lock.get("deviations") or [] if isinstance(d, dict)]
        return page("prereg.html", bundle=b, lock=lock, deviations=devs)

    async def file(request: Request):
        b = bundle_of(request)
        name = request.query_params.get("name", "")
        data = None if b is None or b.error else b.read_file(name)
        if data is None:
            return not_found("no file of that name in this bundle's manifest.json (or it changed since the run)")
        kind = CONTENT_TYPES.get(Path(name).suffix.lower())
        headers = {"Content-Security-Policy": FILE_CSP, "X-Content-Type-Options": "nosniff"}
        if kind is None:
            kind = "application/octet-stream"
            safe = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name) or "file"
            headers["Content-Disposition"] = f'attachment; filename="{safe}"'
        return Response(data, media_type=kind, headers=headers)

    async def status(request: Request):
        b = bundle_of(request)
        if b is None:
            return JSONResponse({"state": "missing"}, status_code=404)
        if b.error:
            return JSONResponse({"state": "error", "mismatches": [b.error], "n_mismatches": 1, "unchecked": []})
        return JSONResponse(b.verification.as_json() if b.verification else {"state": "not run"})

    async def comparison(request: Request):
        a, b = bundles.get(request.query_params.get("a", "0")), bundles.get(request.query_params.get("b", "1"))
        if a is None or b is None or a.error or b.error or a is b:
            return not_found("compare needs two different bundles that open")
        cmp = compare(a, b)
        rows = sorted(cmp.cells, key=lambda c: (not c.changed, not moved_estimate(c), c.id))
        return page("compare.html", bundle=None, a=a, b=b, cmp=cmp, rows=rows, moved=moved_estimate)

    async def static(request: Request):
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        text = resources.files("scoreaudit.view").joinpath("static").joinpath(name).read_text(encoding="utf-8")
        return Response(text, media_type=STATIC[name], headers={"X-Content-Type-Options": "nosniff"})

    routes = [Route("/", index), Route("/b/{k}/", cells), Route("/b/{k}/cell", cell), Route("/b/{k}/image", image),
              Route("/b/{k}/thumb/{n:int}", thumb), Route("/b/{k}/exclusions", exclusions),
              Route("/b/{k}/prereg", prereg), Route("/b/{k}/file", file), Route("/b/{k}/status", status),
              Route("/compare", comparison), Route("/static/{name}", static)]
    app = Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts or HOSTS)])
    app.state.bundles = bundles
    return app


def serve(dirs: list[str | Path], port: int = 0, echo=print) -> None:
    """Serve `dirs` on 127.0.0.1:`port` (0: a free one) until Ctrl-C (or SIGTERM); prints the URL first."""
    import socket

    import uvicorn

    app = create_app(dirs)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"cannot listen on 127.0.0.1:{port} ({e.strerror}); choose another --port") from None
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    for b in app.state.bundles.values():
        echo(f"bundle {b.key}: {b.path}" + (f" (cannot be opened: {b.error})" if b.error else " (verifying)"))
    echo(f"serving on {url} (Ctrl-C stops)")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shut down cleanly, then re-raised the Ctrl-C it caught: that is the end
        pass
    finally:
        sock.close()
    echo("stopped")

