"""Report sections: one data builder per section, registered in the `section` registry.

A builder takes the `ReportContext` and returns the template's data (a dict),
or None when the audit has nothing for that section (it is then left out and
listed under "not part of this audit"). Sections render in ascending `order`;
third-party sections register the same way and pick an order between ours.
`builtin.load()` imports ours (this package imports none of its sections, so
they can import `section` from it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scoreaudit.registry import sections as _registry

Builder = Callable[[Any], "dict | None"]


def section(name: str, *, order: int, title: str, first_screen: bool = False,
            listed: bool = True) -> Callable[[Builder], Builder]:
    """Register `fn` as the builder of section `name` (template `sections/NAME.html.j2`).

    `listed=False`: when the builder returns None the section is simply absent (not named under
    "not part of this audit"): for sections that only appear when there is something to say.
    """
    return _registry.register(name, version="1", order=order, title=title, first_screen=first_screen,
                              listed=listed, template=f"sections/{name}.html.j2")
