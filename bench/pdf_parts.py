"""The PDF in two parts laid out side by side and joined: what it would save, and whether the join is exact.

Issue 33 asks that a re-run after a hypothesis edit cost ≤ 10% of the first run. With the PDF, the layout
of report.html alone is ~1.6 s of the ~3.2 s such a re-run takes at 1,500 images. WeasyPrint lays a
document out on one core. This bench measures the design that would use the second core:
- cut the report's sections into parts at section boundaries;
- lay the parts out on two processes, this one and a forked one (both warm, as the run's PDF process is);
- join the PDFs with qpdf (pikepdf): pages, the PDF/UA structure tree and its parent tree, the outline,
  the named destinations, and the links from one part into another.
With `--reuse`, it also times what an edit would cost if the parts it leaves unchanged came from a cache:
after a hypothesis's threshold changes, the sections from "Fidelity curves" to "Exclusions" are byte-identical,
while the masthead, "At a glance", the hypotheses and the appendix (which prints the spec) change.

The oracle is the whole report laid out once with a page break forced before each cut section. Splitting
adds exactly those breaks, so the joined PDF must equal the oracle. This bench checks the equality directly:
- the same number of pages, the same text, and each page's "Page X of Y" footer;
- the same structure elements in reading order (with alt texts) and the same count of marked contents;
- the same outline and the same link targets.

Page numbers need each part's page count before the layout (the footers say "Page X of Y"). The bench
counts them first, untimed, as a run would from its previous render record, and re-lays a part out only
when a count changes.

pikepdf is not a dependency of scoreaudit: this bench measures a design before anyone adopts it. To run it:

    python -m venv /tmp/pk && /tmp/pk/bin/pip install pikepdf
    PYTHONPATH=/tmp/pk/lib/python3.11/site-packages python bench/pdf_parts.py REPORT_HTML \
        [--at placebo | --at curves,appendix --reuse B]

REPORT_HTML: e.g. out/report.html of `bench/rerun.py --cli --keep` (1,500 images), or out/demo/report.html of
`make demo`. `--at`: the ids of the sections that start parts B, C, ... (default: one cut, at the section
boundary nearest half the sections' elements).
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PLACEHOLDER = "https://part.invalid/#"  # a link into the other part, made a GoTo action by the join


def sections(html: str) -> list[tuple[str, int]]:
    """(id, offset) of each top-level section of the report's <main>."""
    return [(m.group(1), m.start()) for m in re.finditer(r'<section id="([^"]+)"', html)]


def split(html: str, cuts: list[str]) -> list[str]:
    """The report as one document per part: the first holds the head, masthead, contents and the sections before
    the first cut; each other part the head and the sections from its cut to the next; the last the colophon.
    Links to an anchor of another part become placeholders."""
    offsets = [html.index(f'<section id="{at}"') for at in cuts]
    body = html.index("<body")
    bounds = [0, *offsets, len(html)]
    docs = []
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = html[lo:hi]
        doc = (part if i == 0 else html[:body] + "<body>\n<main>\n" + part)
        if hi < len(html):
            doc += "</main>\n</body>\n</html>\n"
        ids = set(re.findall(r'id="([^"]+)"', part))
        docs.append(re.sub(r'href="#([^"]+)"',
                           lambda m, ids=ids: m.group(0) if m.group(1) in ids else f'href="{PLACEHOLDER}{m.group(1)}"',
                           doc))
    return docs


def css_string(text: str) -> str:
    """`text` as a CSS string literal (quotes, backslashes and line ends escaped)."""
    return "'" + "".join(f"\\{ord(c):x} " if c in "'\\\n\r\f" or ord(c) < 32 else c for c in text) + "'"


def numbered(doc: str, first: int, total: int, title: str | None = None) -> str:
    """`doc` whose pages are numbered from `first`, "of `total`"; `title` for the footer when the part has no h1."""
    css = (f"@page :first {{ counter-reset: page {first} }} "
           f"@page {{ @bottom-right {{ content: 'Page ' counter(page) ' of {total}'; }} }}")
    if title is not None:
        css += f" @page {{ @bottom-left {{ content: {css_string(title)}; }} }}"
    return doc.replace("</style>", css + "</style>", 1)


def lay_out_side_by_side(here: list[str], forked: list[str]) -> tuple[list[bytes], list[bytes]]:
    """The PDFs of `here` laid out in this process and those of `forked` in a forked one, at the same time."""
    from scoreaudit.reports.pdf import convert

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its PDFs down the pipe, each after its length
        os.close(r)
        try:
            with os.fdopen(w, "wb") as out:
                for doc in forked:
                    data = convert(doc)
                    out.write(len(data).to_bytes(8, "big") + data)
        finally:
            os._exit(0)
    os.close(w)
    mine = [convert(doc) for doc in here]
    theirs = []
    with os.fdopen(r, "rb") as inp:
        for _ in forked:
            theirs.append(inp.read(int.from_bytes(inp.read(8), "big")))
    os.waitpid(pid, 0)
    return mine, theirs


def join(pdf_a: bytes, pdf_b: bytes) -> bytes:
    """B appended to A: pages, structure tree, parent tree, role map, outline, named destinations, links."""
    import pikepdf
    from pikepdf import Array, Dictionary, Name, String

    a, b = pikepdf.open(io.BytesIO(pdf_a)), pikepdf.open(io.BytesIO(pdf_b))

    def copy(v):
        if isinstance(v, pikepdf.Object) and v.is_indirect:
            return a.copy_foreign(v)  # one copier per source: B's pages and elements are copied once
        if isinstance(v, Array):
            return Array([copy(x) for x in v])
        if isinstance(v, Dictionary):
            return Dictionary({k: copy(x) for k, x in v.items()})
        return v

    def number_tree(node, key="/Nums"):
        out = []
        if key in node:
            arr = node[key]
            out += [(arr[i], arr[i + 1]) for i in range(0, len(arr), 2)]
        for kid in node.get("/Kids", []):
            out += number_tree(kid, key)
        return out

    def kids(e):
        return e.K if isinstance(e.K, Array) else Array([e.K])

    first_b = len(a.pages)
    sa, sb = a.Root.StructTreeRoot, b.Root.StructTreeRoot
    nums_a, nums_b = number_tree(sa.ParentTree), number_tree(sb.ParentTree)
    offset = max([int(k) for k, _ in nums_a] + [-1]) + 1
    a.pages.extend(b.pages)
    for page in a.pages[first_b:]:
        if "/StructParents" in page.obj:
            page.obj.StructParents = int(page.obj.StructParents) + offset
        for annot in page.obj.get("/Annots", []):
            if "/StructParent" in annot:
                annot.StructParent = int(annot.StructParent) + offset
    doc_a = kids(sa)[0]
    doc_b = copy(kids(sb)[0])
    merged = kids(doc_a)
    for kid in kids(doc_b):  # WeasyPrint tags a page's share of <main> as a Part under the Document
        if isinstance(kid, Dictionary) and "/P" in kid:
            kid.P = doc_a
        merged.append(kid)
    doc_a.K = merged
    flat = Array()
    for k, v in nums_a:
        flat.extend([k, v])
    for k, v in nums_b:
        flat.extend([int(k) + offset, copy(v)])
    sa.ParentTree = a.make_indirect(Dictionary(Nums=flat))
    sa.ParentTreeNextKey = offset + max([int(k) for k, _ in nums_b] + [-1]) + 1
    if "/RoleMap" in sb:
        roles = sa.get("/RoleMap", Dictionary())
        for key, val in sb.RoleMap.items():
            if key not in roles:
                roles[key] = val
        sa.RoleMap = roles
    if "/Outlines" in b.Root and "/First" in b.Root.Outlines:  # B's sections go under A's title (the h1)
        ob, oa = copy(b.Root.Outlines), a.Root.Outlines
        host, item = oa.Last, ob.First
        while True:
            item.Parent = host
            if "/Next" not in item:
                break
            item = item.Next
        host.Last.Next, ob.First.Prev, host.Last = ob.First, host.Last, ob.Last
        for o in (host, oa):
            o.Count = abs(int(o.get("/Count", 0))) + abs(int(ob.get("/Count", 0)))
    def named(pdf):
        return number_tree(pdf.Root.Names.Dests, "/Names") if "/Names" in pdf.Root and "/Dests" in pdf.Root.Names else []

    if "/Names" not in a.Root:
        a.Root.Names = Dictionary()
    dests = {bytes(k): v for k, v in named(a)}
    for k, v in named(b):
        dests.setdefault(bytes(k), copy(v))
    names = Array()
    for k in sorted(dests):
        names.extend([String(k), dests[k]])
    a.Root.Names.Dests = a.make_indirect(Dictionary(Names=names))
    for page in a.pages:
        for annot in page.obj.get("/Annots", []):
            action = annot.get("/A")
            if action is not None and action.get("/S") == Name.URI and str(action.URI).startswith(PLACEHOLDER):
                annot.A = Dictionary(S=Name.GoTo, D=String(str(action.URI)[len(PLACEHOLDER):]))
    out = io.BytesIO()
    a.save(out, deterministic_id=True)
    return out.getvalue()


def fingerprint(pdf: bytes) -> dict:
    """What a reader and a screen reader meet: pages, text and footers, tags in reading order, outline, links."""
    import pikepdf
    from pikepdf import Array, Dictionary, Name

    doc = pikepdf.open(io.BytesIO(pdf))
    tags: list[str] = []
    marked = 0
    stack = [doc.Root.StructTreeRoot]
    while stack:
        e = stack.pop()
        if isinstance(e, Dictionary):
            if "/S" in e:
                tags.append(str(e.S) + (f" alt={e.Alt}" if "/Alt" in e else ""))
            k = e.get("/K")
            if k is not None:
                stack.extend(reversed(list(k)) if isinstance(k, Array) else [k])
        elif isinstance(e, int) or (isinstance(e, pikepdf.Object) and e._type_code == pikepdf.ObjectType.integer):
            marked += 1
    outline: list[str] = []
    with doc.open_outline() as o:
        todo = [(item, 0) for item in reversed(o.root)]
        while todo:
            item, depth = todo.pop()
            outline.append("  " * depth + item.title)
            todo.extend((c, depth + 1) for c in reversed(item.children))
    def target(annot) -> str:
        action = annot.get("/A")
        if action is not None:
            return str(action.get("/D", action.get("/URI", "")))
        return str(annot.get("/Dest", ""))

    links = sorted(target(a) for p in doc.pages for a in p.obj.get("/Annots", []) if a.get("/Subtype") == Name.Link)
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".pdf") as f:
        f.write(pdf)
        f.flush()
        text = subprocess.run(["pdftotext", f.name, "-"], capture_output=True, check=True).stdout.decode()
    return {"pages": len(doc.pages), "text": text, "footers": re.findall(r"Page \d+ of \d+", text), "tags": tags,
            "marked contents": marked, "outline": outline, "links": links}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html", type=Path, help="a report.html")
    ap.add_argument("--at", default=None, help="the ids of the sections that start parts B, C, ... (comma-separated)")
    ap.add_argument("--reuse", default=None, help="parts an edit leaves unchanged (e.g. B): also time laying out "
                                                 "only the others and joining all")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds (best counts)")
    args = ap.parse_args(argv)
    try:
        import pikepdf  # noqa: F401
    except ImportError:
        print("pikepdf is not installed (not a dependency of scoreaudit); see this file's docstring", file=sys.stderr)
        return 2
    from scoreaudit.reports.pdf import convert, lay_out

    html = args.html.read_text(encoding="utf-8")
    secs = sections(html)
    if len(secs) < 2 and not args.at:
        print("the report has fewer than two sections: nothing to split", file=sys.stderr)
        return 2
    # by default one cut: the boundary nearest half the sections' elements (bytes would count the thumbnails)
    elements = [len(re.findall(r"<[a-zA-Z]", html[:off])) for _, off in secs] + [len(re.findall(r"<[a-zA-Z]", html))]
    half = (elements[0] + elements[-1]) / 2
    cuts = args.at.split(",") if args.at else [min(zip(secs[1:], elements[1:-1]), key=lambda se: abs(se[1] - half))[0][0]]
    convert("<html><body><p>warm</p></body></html>")  # warm, as the run's PDF process is when the HTML comes
    docs = split(html, cuts)
    counts = [len(lay_out(d).pages) for d in docs]  # a run would take these from its last render
    title = re.search(r"<h1>(.*?)</h1>", html, re.S)
    import html as html_lib

    plain = html_lib.unescape(re.sub(r"<[^>]+>", "", title.group(1))) if title else None
    total = sum(counts)
    docs = [numbered(d, 1 + sum(counts[:i]), total, plain if i else None) for i, d in enumerate(docs)]
    oracle_html = html
    for at in cuts:
        oracle_html = oracle_html.replace(f'<section id="{at}"', f'<section style="break-before: page" id="{at}"', 1)
    weights = [len(re.findall(r"<[a-zA-Z]", d)) for d in docs]

    def schedule(parts: list[int]) -> tuple[list[int], list[int]]:
        """The parts on two processes, the heaviest first onto the lighter one."""
        here: list[int] = []
        forked: list[int] = []
        for i in sorted(parts, key=lambda j: -weights[j]):
            (here if sum(weights[j] for j in here) <= sum(weights[j] for j in forked) else forked).append(i)
        return sorted(here), sorted(forked)

    def best(fn):
        times, value = [], None
        for _ in range(max(1, args.rounds)):
            t = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - t)
        return min(times), value

    def lay_out_parts(parts: list[int]) -> dict[int, bytes]:
        here, forked = schedule(parts)
        mine, theirs = lay_out_side_by_side([docs[i] for i in here], [docs[i] for i in forked])
        return dict(zip(here + forked, mine + theirs))

    def join_all(pdfs: dict[int, bytes]) -> bytes:
        out = pdfs[0]
        for i in range(1, len(docs)):
            out = join(out, pdfs[i])
        return out

    whole_s, _ = best(lambda: convert(html))
    oracle_s, oracle = best(lambda: convert(oracle_html))
    parts_s, pdfs = best(lambda: lay_out_parts(list(range(len(docs)))))
    join_s, joined = best(lambda: join_all(pdfs))
    want, got = fingerprint(oracle), fingerprint(joined)
    names = "ABCDEFGH"
    print(f"cut before {', '.join('#' + c for c in cuts)}: "
          + ", ".join(f"part {names[i]} {n} pages" for i, n in enumerate(counts))
          + f"; best of {args.rounds}, load {os.getloadavg()[0]:.1f}")
    print(f"  the whole report, one layout                       {whole_s:6.2f} s")
    print(f"  the whole with the page breaks, one layout (oracle) {oracle_s:5.2f} s")
    print(f"  every part, on two processes (fork)                {parts_s:6.2f} s")
    print(f"  join (qpdf: pages, tags, outline, links)           {join_s:6.3f} s")
    spent = parts_s + join_s
    print(f"  in parts: {spent:.2f} s = {spent / whole_s:.0%} of one layout ({whole_s - spent:+.2f} s saved)")
    if args.reuse:  # the parts an edit left unchanged come from a cache: only the others are laid out
        reused = {names.index(p.upper()) for p in args.reuse.split(",")}
        redo = [i for i in range(len(docs)) if i not in reused]
        redo_s, fresh = best(lambda: lay_out_parts(redo))
        edit_s, _ = best(lambda: join_all({**pdfs, **fresh}))
        spent = redo_s + edit_s
        print(f"  {', '.join(names[i] for i in sorted(reused))} reused, the rest laid out and all joined: {spent:.2f} s = "
              f"{spent / whole_s:.0%} of one layout ({whole_s - spent:+.2f} s saved)")
    ok = True
    for key in want:
        same = want[key] == got[key]
        ok &= same
        size = len(want[key]) if isinstance(want[key], (list, str)) else want[key]
        print(f"  joined == oracle: {key:<16} {'yes' if same else 'NO'} ({size})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
