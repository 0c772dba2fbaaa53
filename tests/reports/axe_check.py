"""Run axe-core (the copy the `axe-core-python` test dependency ships, injected into the page) in Chromium.

Nothing is fetched: the script is read from the installed package and evaluated in the page; the result
is the list of violations as short lines (rule id, impact, the first offending nodes' selectors and why).
"""

from __future__ import annotations

import json
from pathlib import Path


def axe_source() -> str | None:
    """axe.min.js from the installed axe-core-python package, or None when it is not installed."""
    try:
        import axe_core_python
    except ImportError:
        return None
    path = Path(axe_core_python.__file__).resolve().parent / "axe.min.js"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def violations(browser, session: str, source: str) -> list[str]:
    """axe's violations on the open page (WCAG 2.x A/AA and best practices), one line per rule."""
    browser.send("Runtime.evaluate", {"expression": source}, session=session)
    run = ("axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations.map(v => "
           "({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 4).map(n => "
           "({target: n.target.join(' '), why: n.failureSummary}))}))))")
    old = browser.timeout
    browser.timeout = max(old, 180.0)
    try:
        r = browser.send("Runtime.evaluate", {"expression": run, "awaitPromise": True, "returnByValue": True},
                         session=session)
    finally:
        browser.timeout = old
    if "exceptionDetails" in r:
        raise RuntimeError(f"axe failed: {r['exceptionDetails']}")
    out = []
    for v in json.loads(r["result"]["value"]):
        nodes = "; ".join(f"{n['target']} ({(n['why'] or '').splitlines()[-1].strip()})" for n in v["nodes"])
        out.append(f"{v['id']} [{v['impact']}] {v['help']}: {nodes}")
    return out
