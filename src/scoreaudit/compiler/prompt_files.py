"""E0852 at check: a generated arm's or a probe's prompts file that the run could not read.

The run expands prompts before it generates anything (runtime/generation.py,
runtime/probe.py) and stopped with E0852 naming no place in the spec; the
same expansion (compiler.prompts.expand_prompts) runs here when the spec has
a folder, so the refusal comes from `check`, at the `prompts:` argument.
A file that does not exist yet passes, as a missing manifest does (the run
refuses it); prompts outside the spec's folder are containment's (E0707).
"""

from __future__ import annotations

from pathlib import Path

from scoreaudit import registry


def _prompts_node(decl):
    call = getattr(decl, "call", None)
    for a in getattr(call, "args", ()) or ():
        if a.name is not None and a.name.name == "prompts":
            return a
    return call


def prompt_files_pass(module, st) -> None:
    from scoreaudit.compiler.prompts import PromptsError, PromptsMissing, PromptsOutside, expand_prompts

    path = getattr(st, "path", "") or ""
    if st.sink.has_errors or not path or path.startswith("<"):
        return
    base = Path(path).resolve().parent
    calls = [(n, a.call.params, "arm") for n, a in st.arms.items() if registry.generated_arm(a.call.plugin)]
    calls += [(n, p.call.params, "probe") for n, p in st.probes.items()]
    for name, params, kind in calls:
        prompts = params.get("prompts")
        if prompts is None:
            continue
        try:
            expand_prompts(prompts, base)
        except (PromptsOutside, PromptsMissing):  # containment's E0707; a file that may arrive before the run
            continue
        except PromptsError as exc:
            decl = st.decls.table.get(name, (None, None))[1]
            st.sink.emit("E0852", _prompts_node(decl), f"{kind} `{name}`: {exc}",
                         "check the prompts file's path (relative to the spec's folder) and that it holds prompts")
