"""Lower `template("... {gender} {job}", gender: [...], job: column(job, "data/jobs.csv"))`.

A template is the `prompts:` value of a generated arm: its placeholders and
factor arguments must match one to one, each factor is a list of levels or a
`column(NAME, "file")` of a data file (read at run time). The result is the
plain dict the `generate` arm's parameter model validates; nothing is read here.
"""

from __future__ import annotations

import csv
import io
import itertools
import string
from pathlib import Path
from typing import Any

from scoreaudit.compiler.resolve import Sink
from scoreaudit.compiler.values import number, text
from scoreaudit.grammar import ast


class BadPrompts(Exception):
    """Reported already; the argument is left out of validation."""


def placeholders(template: str) -> list[str] | None:
    """The `{name}` fields of a template in order of first use; None when its braces are malformed."""
    try:
        fields = [f for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError:
        return None
    if any(not f.isidentifier() for f in fields):
        return None
    return list(dict.fromkeys(fields))


def check_score_prompt(text: str, factors: tuple[str, ...], node: Any, sink: Sink, owner: str) -> bool:
    """A generated arm's `score_prompt:` names only its template's factors (E0851 at the text otherwise)."""
    fields = placeholders(text)
    if fields is None:
        sink.emit("E0850", node, f"the braces of `score_prompt:` of {owner} are malformed: placeholders are `{{name}}`",
                  "write each placeholder as `{factor}` and double literal braces (`{{`)")
        return False
    unknown = [f for f in fields if f not in factors]
    if unknown:
        sink.emit("E0851", node, f"placeholder `{{{unknown[0]}}}` of `score_prompt:` of {owner} is not a factor "
                  "of its template", f"use the template's factors ({', '.join(factors) or 'none'}) or plain text")
        return False
    return True


def score_prompt_for(text: str | None, prompt: str, factors: dict) -> str:
    """The prompt an image is scored with: its generation prompt, or `score_prompt` with its levels filled in."""
    return prompt if text is None else text.format(**{k: str(v) for k, v in factors.items()})


def _level(v: Any) -> str | None:
    if isinstance(v, ast.String):
        return v.value
    if isinstance(v, (ast.Name, ast.Ident)):
        return v.name
    if isinstance(v, ast.Number):
        n = number(v)
        return str(int(n)) if float(n).is_integer() else str(n)
    return None


def _factor(arg: ast.Arg, sink: Sink) -> list[str] | dict[str, str]:
    v = arg.value
    if isinstance(v, ast.ListValue):
        levels = [_level(item) for item in v.items]
        if not levels or any(lv is None for lv in levels):
            sink.emit("E0851", v, f"factor `{arg.name.name}` of template(...) must list its levels as "
                                  "names, strings or numbers",
                      'write e.g. `gender: ["man", "woman"]`')
            raise BadPrompts
        if len(set(levels)) != len(levels):
            sink.emit("E0851", v, f"factor `{arg.name.name}` of template(...) repeats a level",
                      "list each level once")
            raise BadPrompts
        return levels
    if (isinstance(v, ast.Call) and v.func.name == "column" and len(v.args) == 2
            and all(a.name is None for a in v.args) and isinstance(v.args[0].value, (ast.Name, ast.Ident))
            and isinstance(v.args[1].value, ast.String)):
        return {"column": v.args[0].value.name, "file": v.args[1].value.value}
    sink.emit("E0851", v, f"factor `{arg.name.name}` of template(...) must be a list of levels or "
                          f"`column(NAME, \"file.csv\")`, not `{text(v)}`",
              'write e.g. `job: column(job, "data/jobs.csv")`')
    raise BadPrompts


def lower_template(call: ast.Call, sink: Sink) -> dict[str, Any]:
    """`template(...)` → {"template": str, "factors": {name: levels | {column, file}}} (E0850, E0851)."""
    if call.func.name != "template":
        sink.emit("E0850", call, f"`prompts:` takes a file name or `template(...)`, not `{call.func.name}(...)`",
                  'write `prompts: "prompts.txt"` or `prompts: template("a photo of a {job}", job: [...])`')
        raise BadPrompts
    pos = [a for a in call.args if a.name is None]
    named = [a for a in call.args if a.name is not None]
    if len(pos) != 1 or not isinstance(pos[0].value, ast.String):
        sink.emit("E0850", call, "template(...) takes the prompt text as its one positional argument (a string)",
                  'write e.g. `template("a portrait photo of a {gender} {job}", gender: [...], job: [...])`')
        raise BadPrompts
    tmpl = pos[0].value.value
    fields = placeholders(tmpl)
    if fields is None:
        sink.emit("E0850", pos[0].value, "the template's braces are malformed: placeholders are `{name}`",
                  "write each placeholder as `{factor}` and double literal braces (`{{`)")
        raise BadPrompts
    factors: dict[str, Any] = {}
    ok = True
    for a in named:
        if a.name.name in factors:
            sink.emit("E0851", a, f"factor `{a.name.name}` of template(...) is given twice", "keep one of them")
            ok = False
            continue
        if a.name.name not in fields:
            sink.emit("E0851", a.name, f"factor `{a.name.name}` does not appear in the template text",
                      f"add `{{{a.name.name}}}` to the text, or remove the factor")
            ok = False
            continue
        try:
            factors[a.name.name] = _factor(a, sink)
        except BadPrompts:
            ok = False
    missing = [f for f in fields if f not in factors and f not in {a.name.name for a in named}]
    for f in missing:
        sink.emit("E0851", pos[0].value, f"placeholder `{{{f}}}` of the template has no factor",
                  f"add `{f}: [...]` to template(...)")
        ok = False
    if not ok:
        raise BadPrompts
    return {"template": tmpl, "factors": factors}


# ---------------------------------------------------------------- expansion (plan and run)

class PromptsError(Exception):
    """A prompts file or a template's column file cannot be read; the message names it."""

    code = "E0852"
    help = "prompts files are relative to the spec's folder"


class PromptsMissing(PromptsError):
    """The file does not exist (yet): `check` passes, as for a missing manifest; the run refuses."""


class PromptsOutside(PromptsError):
    """The file lies outside the spec's folder (symlinks followed) and `--allow-outside` was not given."""

    code = "E0707"
    help = "keep prompts files under the spec's folder, or run with `--allow-outside`"


def _read_text(base: Path, name: str, root: Path | None) -> str:
    """A prompts or column file's text, through the one containment check and regular-file read (safeio)."""
    from scoreaudit.safeio import UnsafePath, inside, read_regular

    path = base / name
    if not inside(path, root):
        raise PromptsOutside(f"'{name}' is outside the spec's folder ({root}); prompts are read only from "
                             "under it")
    try:
        return read_regular(path, root=root).decode("utf-8-sig")  # the opened file itself contained
    except UnsafePath as exc:
        raise PromptsError(f"cannot read '{name}': it {exc.what}") from None
    except FileNotFoundError:
        raise PromptsMissing(f"cannot read '{name}': no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptsError(f"cannot read '{name}': {exc}") from None


def _column_values(base: Path, name: str, column: str, root: Path | None) -> list[str]:
    """Distinct non-empty values of `column` of a CSV/TSV file, in order of first appearance."""
    rows = _table_rows(base, name, root)
    if rows and column not in rows[0]:
        raise PromptsError(f"'{name}' has no column '{column}' (it has: {', '.join(rows[0])})")
    return list(dict.fromkeys(r[column].strip() for r in rows if (r.get(column) or "").strip()))


def _table_rows(base: Path, name: str, root: Path | None) -> list[dict[str, str]]:
    text_ = _read_text(base, name, root)
    delim = "\t" if Path(name).suffix.lower() == ".tsv" else ","
    return list(csv.DictReader(io.StringIO(text_), delimiter=delim))


def expand_prompts(prompts: Any, base: Path, allow_outside: bool = False) -> list[dict[str, Any]]:
    """The generated arm's prompts: [{"prompt", "set", "factors": {name: level}, "attributes"}] in a stable order.

    `attributes` are what `where` can select prompts by (a probe's readings): a template's factor
    levels, or a prompts table's other columns (none for a .txt file).

    A file gives one prompt per line (.txt) or per row of its `prompt` column
    (.csv/.tsv), each its own set; a template gives every combination of its
    factor levels (first factor slowest), all in set 0 (a counterfactual set).
    Files are relative to `base` (the spec's folder) and must lie under it unless
    `allow_outside` (`--allow-outside`), as every data file the spec names.
    """
    root = None if allow_outside else Path(base)
    if isinstance(prompts, str):
        if Path(prompts).suffix.lower() in (".csv", ".tsv"):
            rows = _table_rows(base, prompts, root)
            if rows and "prompt" not in rows[0]:
                raise PromptsError(f"prompts file '{prompts}' has no 'prompt' column")
            kept = [r for r in rows if (r.get("prompt") or "").strip()]
            return [{"prompt": r["prompt"].strip(), "set": i, "factors": {},
                     "attributes": {k: (v or "").strip() for k, v in r.items() if k and k != "prompt"}}
                    for i, r in enumerate(kept)]
        texts = [ln.strip() for ln in _read_text(base, prompts, root).splitlines() if ln.strip()]
        return [{"prompt": t, "set": i, "factors": {}, "attributes": {}} for i, t in enumerate(texts)]
    levels: dict[str, list[str]] = {}
    for name, spec in prompts["factors"].items():
        if isinstance(spec, dict):
            vals = _column_values(base, spec["file"], spec["column"], root)
            if not vals:
                raise PromptsError(f"column '{spec['column']}' of '{spec['file']}' has no values")
            levels[name] = vals
        else:
            levels[name] = [str(v) for v in spec]
    names = list(levels)
    out = []
    for combo in itertools.product(*(levels[n] for n in names)):
        f = dict(zip(names, combo))
        out.append({"prompt": prompts["template"].format(**f), "set": 0, "factors": f, "attributes": dict(f)})
    return out


def cluster_of(prompts: Any, row: dict[str, Any], seed: int) -> str:
    """A generated image's cluster: its seed for a template (the seed's counterfactual set of prompts),
    its prompt for a prompts file (each prompt is its own set, all seeds of it one cluster)."""
    return f"s{seed}" if not isinstance(prompts, str) else f"p{row['set']:04d}"


def generated_clusters(params: dict[str, Any], base: Path, allow_outside: bool = False) -> int:
    """How many clusters a generated arm's images form (`cluster_of` over every prompt and seed);
    raises PromptsError when the prompts cannot be read."""
    rows = expand_prompts(params["prompts"], base, allow_outside)
    return len({cluster_of(params["prompts"], row, seed) for row in rows
                for seed in seed_list(params.get("seeds", 1))})


def seed_list(seeds: Any) -> list[int]:
    """`seeds: 5` means 0..4; a list is taken as written."""
    return list(range(int(seeds))) if isinstance(seeds, int) else [int(s) for s in seeds]
