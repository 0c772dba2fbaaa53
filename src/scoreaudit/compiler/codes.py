"""The diagnostics catalogue: every code, its cause, an example and the fix.

spec/diagnostics.md is generated from this table (`python -m
scoreaudit.compiler.docs`), and tests check that every code used anywhere in
src/ is here and that each compiler example really produces its code. E01xx
belong to the grammar, E07xx to the runtime; their owners describe them here
too, so users have one catalogue.

Examples of compiler codes (E02xx–E06xx, W) are appended to `PRELUDE` unless
they start with `audit` (then they are a whole file).
"""

from __future__ import annotations

from dataclasses import dataclass

PRELUDE = '''audit "Example" { version: 1  seed: 1 }
scorer laion = laion_aesthetic()
scorer pick  = pickscore(prompt: "a photo of a person")
arm real      = images("data/real", manifest: "data/real.csv", kind: real, strata: race)
arm synthetic = images("data/syn", manifest: "data/syn.csv", kind: synthetic, cluster: prompt_id)
arm wide      = pairs("data/pairs.csv", preferred: faithful, other: polished)
region face = face()
region skin = skin(within: face)
region rest = not skin
measure ita = ita(region: skin)
covariate clipping = gamut_clip()
operator light = lab_shift(channel: L, region: skin) doses -10, -5, 0, 5, 10
placebo light_rest = lab_shift(channel: L, region: rest) of light
'''


@dataclass(frozen=True)
class Code:
    code: str
    title: str
    cause: str
    fix: str
    example: str = ""  # spec text that produces the code ("" for run-time codes: see `cause`)
    stage: str = "compiler"  # grammar | compiler | runtime

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W") else "error"

    def example_source(self) -> str:
        if not self.example or self.stage != "compiler":
            return self.example
        return self.example if self.example.startswith("audit") else PRELUDE + self.example


def _g(code: str, title: str, cause: str, fix: str, example: str = "") -> Code:
    return Code(code, title, cause, fix, example, stage="grammar")


from scoreaudit.compiler.coverage import PRECOMPUTED_CODES  # noqa: E402  (light: ir + diagnostics only)


def _r(code: str, title: str, cause: str, fix: str) -> Code:
    return Code(code, title, cause, fix, "", stage="runtime")


CATALOGUE: tuple[Code, ...] = (
    Code("E0001", "internal compiler error", "A bug in scoreaudit, not in the spec: the checker met a case it does not handle.",
         "Report it with the spec that triggers it.", stage="compiler"),
    # ------------------------------------------------------------ E01 syntax (grammar)
    _g("E0100", "internal parser failure", "The parser failed in a way it does not recognise.", "Report it with the spec."),
    _g("E0101", "unexpected token", "The text does not follow the grammar at this point.",
       "Read the expected tokens in the message; compare with spec/language.md.", 'scorer laion = laion_aesthetic(('),
    _g("E0102", "operator without doses", "An `operator` declaration has no `doses` clause.",
       "Add `doses -10, 0, 10` or `doses -20..20 step 10` after the call.", "operator light = lab_shift(channel: L)"),
    _g("E0103", "unclosed block", "A `{` block has no matching `}`.", "Close the block.", 'audit "t" { version: 1'),
    _g("E0104", "`=` in a settings block", "Settings are written `key: value`.", "Replace `=` by `:`.",
       'audit "t" { version = 1 }'),
    _g("E0105", "unquoted text", "Text with spaces (a prompt, a title) must be a double-quoted string.",
       'Quote it: `prompt: "a photo of a person"`.', "scorer s = pickscore(prompt: a photo of a person)"),
    _g("E0106", "unterminated string", "A string has no closing double quote on its line.", "Add the closing `\"`.",
       'audit "t { version: 1 }'),
    _g("E0107", "unexpected character", "A character that is not part of the language (e.g. `$`, `;`).",
       "Remove it.", 'audit "t" { version: 1; }'),
    _g("E0108", "no audit block", "The file has no `audit \"title\" { ... }` block.",
       "Start the file with an audit block.", "scorer laion = laion_aesthetic()"),
    _g("E0109", "nesting too deep", "Expressions nest deeper than the parser allows (a guard against hostile input).",
       "Simplify the expression."),
    _g("E0110", "positional after named argument (syntax)", "A positional argument follows a `name: value` one.",
       "Put positional arguments first.", 'arm a = images(manifest: "m.csv", "data")'),
    _g("E0120", "number out of range", "A number literal is too large for a 64-bit float (beyond ±1.8e308, e.g. "
       "an integer of more than 308 digits).", "Write a number a 64-bit float can hold.",
       'audit "x" { version: 1 seed: 1e400 }\n'),
    # ------------------------------------------------------------ E02 names and declarations
    Code("E0201", "duplicate name", "Two declarations share a name. Every declaration (scorer, arm, region, "
         "measure, covariate, operator, placebo, selection, hypothesis) lives in one namespace.",
         "Rename one of them.", "region face = face()\n"),
    Code("E0202", "unknown plugin", "The function of a scorer, arm, region, measure, covariate or operator is not "
         "registered (a misspelling, or a plugin of another kind).",
         "Use the suggested name, or see `scoreaudit describe NAME` and spec/language.md for the registered ones.",
         "operator warm = lab_shfit(channel: b) doses -5, 0, 5\n"),
    Code("E0203", "unknown name", "A reference (`region: X`, `on X`, `of X`, `under X`, `by X`, `for X`) names "
         "nothing declared.", "Declare it, or use the suggested name.",
         'hypothesis H1 "t" {\n  fidelity_index(light) > 0 on reel for each scorer\n}\n'),
    Code("E0204", "wrong kind of name", "A reference names a declaration of another kind (an operator where a "
         "region is expected).", "Name a declaration of the expected kind.",
         "measure lum = mean_lab(region: light)\n"),
    Code("E0205", "unknown statistic", "A hypothesis calls a statistic that is not registered.",
         "Use the suggested name; spec/language.md lists every statistic.",
         'hypothesis H1 "t" {\n  fidelty_index(light) > 0 on real for each scorer\n}\n'),
    Code("E0206", "reserved name", "`original` names the unaltered images in every table, so no operator may use it.",
         "Rename the operator.", "operator original = gaussian_blur(region: skin) doses 0, 1, 2\n"),
    Code("E0207", "no audit block", "The spec has no `audit \"title\" { ... }` block (it carries the title and settings).",
         "Add one at the top of the file."),
    Code("E0208", "repeated block", "More than one `audit` or `report` block.", "Merge them into one.",
         "report { formats: html }\nreport { formats: pdf }\n"),
    Code("E0209", "region refers to itself", "A region is defined in terms of itself, directly (`region a = not a`) "
         "or through other regions or a plugin argument (`skin(within: skin)`).",
         "Define it from other regions.", "region inner = skin(within: outer)\nregion outer = not inner\n"),
    Code("E0250", "column where a call belongs", "`column(x)` (a per-image manifest value) is written where a "
         "plugin or statistic call belongs, e.g. as a claim.", "Name a statistic or plugin; `column(...)` only "
         "gives a per-image value to a parameter such as `prompt:`.",
         'hypothesis H1 "h" { column(x) on real for each scorer }\n'),
    Code("E0252", "title with a line break", "A title (audit, hypothesis or report) or a declaration's `label:` holds a "
         "line break or another control character; it would start a new line in text files and terminals.",
         "Write the title or label on one line.", 'hypothesis H9 "two\\nlines" { fidelity_index(light) > 0 on real for each scorer }\n'),
    Code("E0251", "setting out of range", "A setting of the audit block is outside its range: `alpha` must be "
         "between 0 and 1, `bootstrap` at least 100, `batch_size`, `robustness`, `max_groups` and "
         "`min_real_clusters` at least 1, `max_leakage` between 0 and 1, `seed` a non-negative integer below "
         "2^64, `robustness` at most 1000. Settings are also checked against each other and this machine "
         "(compiler/limits.py): `alpha` at least 1/(bootstrap + 1), the smallest tail probability the "
         "bootstrap resolves, and `bootstrap` small enough that its count matrices (bootstrap × clusters of "
         "every arm, 8 bytes a count) fit in memory; the message states the estimate.",
         "Use a value in the range the message gives.",
         'audit "x" { version: 1 seed: 1 alpha: 2 bootstrap: 0 }\n'),
    Code("E0253", "number too large for a hypothesis", "A number in a hypothesis (a threshold, an equivalence "
         "bound, a margin, a dose) is beyond ±1e12. Statistics are differences of scores in SD or raw units; "
         "arithmetic on such a bound (interval widths, the report's chart axes) overflows double precision.",
         "Write a bound of the statistic's size (e.g. 0.5).",
         'hypothesis H9 "t" { placebo_ratio(light, light_rest) within [-1e308, 1e308] on real for each scorer }\n'),
    # ------------------------------------------------------------ E03 arguments and types
    Code("E0301", "unknown argument", "A call passes an argument its plugin does not take.",
         "Use the suggested name, or `scoreaudit describe PLUGIN` for its parameters.",
         "operator warm = lab_shift(chanel: b, region: skin) doses -5, 0, 5\n"),
    Code("E0302", "missing argument", "A required parameter of the plugin is not given.", "Add it.",
         "measure tone = ita()\n"),
    Code("E0303", "invalid argument value", "An argument has the wrong type or a value outside its choices "
         "(a string where a number is needed, `channel: X`, a call where a name is needed).",
         "Give a value of the type shown in the message; `scoreaudit describe PLUGIN` lists the types.",
         "operator warm = lab_shift(channel: X, region: skin) doses -5, 0, 5\n"),
    Code("E0304", "bad positional argument", "Too many positional arguments, or a positional one after a named one.",
         "Name the argument (`name: value`).", 'scorer s = pickscore("a photo")\n'),
    Code("E0305", "argument given twice", "The same parameter is given twice (by position and by name, or by name twice).",
         "Keep one.", "measure tone = ita(skin, region: face)\n"),
    Code("E0306", "unknown setting", "The audit or report block has a setting that does not exist.",
         "Use the suggested name; spec/language.md lists every setting.", 'audit "t" { version: 1  alpah: 0.05 }\n'),
    Code("E0307", "invalid setting value", "A setting has the wrong type or is not one of its choices "
         "(e.g. `alpha: \"x\"`, `correction: fdr`).", "Use a value of the type shown.",
         'audit "t" { version: 1  alpha: "x" }\n'),
    Code("E0308", "setting given twice", "A setting appears twice in one block.", "Keep one.",
         'audit "t" { version: 1  seed: 1  seed: 2 }\n'),
    Code("E0309", "unsupported language version", "`version:` names a language version this scoreaudit does not know.",
         "Write `version: 1`.", 'audit "t" { version: 2 }\n'),
    # ------------------------------------------------------------ E04 doses and operators
    Code("E0401", "dose out of range", "A dose lies outside the operator's declared dose range "
         "(e.g. blur sigma below 0, JPEG quality above 100).", "Use doses inside the range the message shows.",
         "operator blur = gaussian_blur(region: skin) doses -1, 0, 1, 2\n"),
    Code("E0402", "invalid dose range", "A range `a..b step s` whose step is not positive, that ends before it "
         "starts, or that has more than 1000 doses.", "Fix the bounds or the step.",
         "operator hue = hue_rotate(region: skin) doses 20..-20 step 10\n"),
    Code("E0403", "placebo of a placebo", "`placebo X = ... of Y` where Y is itself a placebo.",
         "Name the operator the placebo controls for.",
         "placebo again = lab_shift(channel: L, region: face) of light_rest\n"),
    Code("E0404", "operator without doses", "An operator has no doses (reported when the parser recovered).",
         "Add a `doses` clause."),
    Code("E0405", "only the identity dose", "Every dose equals the identity, so the operator changes nothing.",
         "Add doses on both sides of the identity.", "operator none = gaussian_blur(region: skin) doses 0\n"),
    Code("E0406", "unknown validation check", "A `validate` statement uses a check other than `r2` or `monotonic`.",
         "Use `r2 >= a` and/or `monotonic >= b`.", "validate ita under light: rsquared >= 0.5\n"),
    Code("E0407", "validation threshold outside [0, 1]", "`r2` and `monotonic` are shares, so thresholds lie in [0, 1].",
         "Use a threshold between 0 and 1.", "validate ita under light: r2 >= 50\n"),
    Code("E0408", "best_of n too small", "`best_of n` needs a whole n of at least 2 (one candidate is no selection).",
         "Use n >= 2.", "select best1 = best_of 1 under light by ita\n"),
    Code("E0409", "best_of n larger than the dose variants", "Under an operator the candidates are the dose variants "
         "of one image, so n cannot exceed the number of doses.", "Lower n or add doses.",
         "select best9 = best_of 9 under light by ita\n"),
    Code("E0410", "doses not symmetric", "`asymmetry` pairs each dose with its mirror around the identity; the "
         "operator lacks some mirrors.", "Add the mirrored doses the help lists.",
         "operator warm = lab_shift(channel: b, region: skin) doses 0, 5, 10\n"
         'hypothesis H1 "t" {\n  asymmetry(warm) > 0 on real for each scorer\n}\n'),
    Code("E0411", "not a placebo of the operator", "`placebo_ratio(o, p)` needs p declared as `placebo p = ... of o`.",
         "Name a placebo of the operator.",
         "operator blur = hue_rotate(region: skin) doses -2, -1, 0, 1, 2\n"
         'hypothesis H1 "t" {\n  placebo_ratio(blur, light_rest) within [0.5, 2] on real for each scorer\n}\n'),
    Code("E0412", "placebo identity differs", "A placebo shares its operator's doses, so its plugin must have the same "
         "identity dose.", "Use the same operator plugin on another region.",
         "placebo jp = jpeg(region: rest) of light\n"),
    # ------------------------------------------------------------ E046x comparisons between readings
    _g("E0472", "two readings compared with `<` or `>`", "A claim line compares two statistics directly "
       "(`pairwise_accuracy() on wide < pairwise_accuracy() on orig`); a claim compares one value with a number.",
       "Compare the readings with `difference(a, b) < 0` (or `ratio(a, b) < 1`).",
       'audit "t" { version: 1 }\nhypothesis S3 "t" {\n  pairwise_accuracy() on wide < pairwise_accuracy() on orig\n}\n'),
    Code("E0460", "a claim inside a comparison", "One side of `difference(a, b)` or `ratio(a, b)` is a statistic "
         "that decides a claim itself (`transfers`, `homogeneous`) or reads several arms.",
         "Compare statistics that return a number.",
         'hypothesis S1 "t" {\n  difference(homogeneous(fidelity_index(light), by: race), fidelity_index(light)) > 0 '
         'on real\n}\n'),
    Code("E0461", "a reading with two arms or scorers", "A reading names `on` (or `for`) twice; a reading is one "
         "statistic on one arm for one scorer.", "Keep one; compare two arms with `difference(...)` or `ratio(...)`.",
         'hypothesis S1 "t" {\n  difference(fidelity_index(light) on real on synthetic, fidelity_index(light) '
         'on real) > 0 for laion\n}\n'),
    Code("E0462", "a reading without an arm", "A reading names no arm and the claim has no `on ...` to fill it.",
         "Add `on ARM` to the reading or after the claim.",
         'hypothesis S1 "t" {\n  ratio(fidelity_index(light) for laion, fidelity_index(light) for pick) < 0.5\n}\n'),
    Code("E0463", "difference of different units", "`difference(a, b)` subtracts readings measured in different "
         "units (an SD-unit effect minus an accuracy, degrees of one measure minus another).",
         "Compare readings of the same kind, or take their `ratio(...)`.",
         'hypothesis S1 "t" {\n  difference(fidelity_index(light) on real, pairwise_accuracy() on wide) > 0 '
         'for each scorer\n}\n'),
    Code("E0464", "the same reading twice", "Both sides of a comparison resolve to the same statistic on the same arm, "
         "scorer and rows, so the difference is 0 (the ratio 1) by construction.",
         "Qualify one side with `on`, `for` or `where`.",
         'hypothesis S1 "t" {\n  difference(fidelity_index(light), fidelity_index(light)) > 0 on real '
         'for each scorer\n}\n'),
    Code("E0465", "`where` names no column of the arm", "`where COLUMN = VALUE` names a column the arm's manifest "
         "lacks (checked when the manifest exists at check time; otherwise at run time).",
         "Use a column of the manifest."),
    Code("E0466", "`where` value never occurs", "No row of the arm's manifest has that value in the column, so the "
         "reading would be empty (checked when the manifest exists at check time).",
         "Use a value the column holds (the help lists them)."),
    Code("E0467", "share of something other than a decomposition", "`share(..., part:)` takes a `decompose(...)`.",
         "Write `share(decompose(group_gap(...), via: attribute_effect(...)), part: confound)`.",
         'hypothesis S6 "t" {\n  share(fidelity_index(light), part: confound) > 0.5 on synthetic for each scorer\n}\n'),
    Code("E0468", "decompose needs a gap and an attribute effect",
         "`decompose` splits a `group_gap(...)` into the part an `attribute_effect(...)` (via:) explains and the rest.",
         "Write `decompose(group_gap(s, a, b), via: attribute_effect(o, measure: m))`.",
         'hypothesis S6 "t" {\n  decompose(fidelity_index(light), via: attribute_effect(light, measure: ita)) > 0 '
         'on synthetic for each scorer\n}\n'),
    Code("E0469", "group_gap column is not a stratum", "`group_gap(col, a, b)` compares two groups of a column the "
         "arm declares as `factors:` or `strata:` (or, when the manifest can be read, any column of it).",
         "Declare the column on the arm (`strata: col`).",
         'hypothesis G1 "t" {\n  group_gap(tone, "dark", "light") > 0 on synthetic for each scorer\n}\n'),
    Code("E0470", "agreement label column missing", "`agreement(label: COLUMN)` names a column the arm's manifest "
         "lacks (checked when the manifest exists at check time).", "Name the column that holds the judge's labels."),
    Code("E0471", "agreement metric needs a call", "accuracy, f1 and kappa compare the scorer's call with the "
         "label; on an images arm a score becomes a call only at a declared cut point (`threshold:`), and cut "
         "points must ascend (f1 and auroc take two classes).", "Add `threshold: t` (or ascending cut points "
         "`threshold: [t1, t2]` for classes 0..K−1), use `metric: auroc`, or run the agreement on a pairs arm.",
         'hypothesis S7 "t" {\n  agreement(label: judge, metric: f1) > 0.6 on real for each scorer\n}\n'),
    Code("E0477", "reading without bootstrap replicates", "Both sides of `difference(a, b)` and `ratio(a, b)` "
         "are resampled with the same cluster-bootstrap draws, but this reading's estimate has none: "
         "`group_gap` on one of the arm's `factors:` (a counterfactual regression contrast), `trend`, "
         "`attribute_effect` and `artifact_effect` under `scale: raw` (cluster-robust coefficients tested "
         "with t), `recall_best` and `filter_worst` (shares with exact intervals). Every such cell would be "
         "undefined at run time.", "Compare the two readings with separate claims; for `group_gap`, declare "
         "the column as a stratum (`strata:`); for the regression statistics, use `scale: sd`.",
         'audit "Example" { version: 1  seed: 1  scale: raw }\nscorer laion = laion_aesthetic()\n'
         'scorer pick = pickscore(prompt: "a photo of a person")\n'
         'arm real = images("data/real", manifest: "data/real.csv", kind: real)\n'
         'region skin = skin()\noperator light = lab_shift(channel: L, region: skin) doses -10, -5, 0, 5, 10\n'
         'hypothesis H1 "t" {\n  difference(trend(light) for laion, trend(light) for pick) < 0.1 on real\n}\n'),
    Code("E0420", "doses neither symmetric nor one-sided", "`fidelity_index` and `placebo_ratio` need doses "
         "symmetric around the identity (the fidelity index) or all on one side of it (the penalty index of a "
         "degradation such as blur).", "Add the mirrored doses, or keep every dose on one side of the identity.",
         "operator warm = lab_shift(channel: b, region: skin) doses -5, 0, 5, 10\n"
         'hypothesis H1 "t" {\n  fidelity_index(warm) > 0 on real for each scorer\n}\n'),
    Code("E0421", "dose not among the operator's doses", "`curve(o, d)` (and every statistic that names a dose) "
         "reads the score change at a dose the operator applies; any other dose would be an undefined cell.",
         "Name one of the operator's doses, or add the dose to its list.",
         'hypothesis H1 "t" {\n  curve(light, 3) < 0 on real for each scorer\n}\n'),
    Code("E0422", "directional drift without doses", "`directional_drift` compares the picked dose with its mirror, "
         "so its selection must pick among the dose variants of one image (`best_of n under OPERATOR`).",
         "Select under an operator, or use `net_drift`.",
         "select pick2 = best_of 2 by ita\n"
         'hypothesis H1 "t" {\n  abs(directional_drift(pick2)) < 1 on synthetic for each scorer\n}\n'),
    Code("E0423", "directional drift needs symmetric doses", "`directional_drift` needs every dose's mirror "
         "2·d0 − d among the operator's doses.", "Add the mirrored doses, or use `net_drift`.",
         "operator warm = lab_shift(channel: b, region: skin) doses 0, 5, 10\n"
         "select best2 = best_of 2 under warm by ita\n"
         'hypothesis H1 "t" {\n  abs(directional_drift(best2)) < 1 on real for each scorer\n}\n'),
    Code("E0424", "claim against the wrong null value", "Every statistic declares its no-effect value (0 for effects, "
         "0.5 for accuracies, 1 for ratios). `θ > 0`, `θ < 0` and `abs(θ) < δ` test θ against 0, which is "
         "trivially true or meaningless for a statistic whose null value is not 0 (e.g. an accuracy is never "
         "below 0).", "Compare with the statistic's null value (`pairwise_accuracy() > 0.5`), or use "
         "`within [a, b]`.", 'hypothesis W1 "t" {\n  pairwise_accuracy() > 0 on wide for each scorer\n}\n'),
    Code("E0426", "ratio claimed above 0", "A `ratio(a, b)` has null value 1 (the two readings are equal), so "
         "`ratio(a, b) > 0` tests it against the wrong value: above 0 only says the two readings share a "
         "sign, which is not what a comparison of sizes claims. (`ratio(a, b) < 0` is allowed: it claims a "
         "reversal, the two readings having opposite signs.)",
         "Compare with 1 (`ratio(a, b) > 1`: a exceeds b), bound its size (`abs(ratio(a, b)) < 0.5`), or, to "
         "claim both readings have one sign, test each reading (`θ > 0` on both).",
         'hypothesis S1 "t" {\n  ratio(fidelity_index(light) for pick, fidelity_index(light) for laion) > 0 on real\n}\n'),
    Code("E0425", "transfer of a statistic without a null value", "`transfers(θ)` forms the ratio of the two arms' "
         "readings centred on θ's null value; a statistic whose no-effect value depends on the data (a mean rank, "
         "a recall at k) has none.", "Transfer a statistic with a null value.",
         'hypothesis H1 "t" {\n  transfers(recall_best(1), from: synthetic, to: real) for each scorer\n}\n'),
    # ------------------------------------------------------------ E05 arm requirements
    Code("E0501", "needs an images arm", "The statistic works on images (operators, factors, clusters), but the arm "
         "is a pairs arm.", "Run it on an `images(...)` arm.",
         'hypothesis H1 "t" {\n  fidelity_index(light) > 0 on wide for each scorer\n}\n'),
    Code("E0502", "needs a pairs arm", "`pairwise_accuracy()`/`mean_gap()` compare the two images of a pair.",
         "Run it on a `pairs(...)` arm.", 'hypothesis W1 "t" {\n  pairwise_accuracy() > 0.5 on real for each scorer\n}\n'),
    Code("E0503", "needs a cluster column", "Factor, rank and ranked-set statistics compare images within clusters "
         "(counterfactual sets, prompts), but the arm declares no `cluster`.", "Add `cluster: COLUMN` to the arm.",
         'hypothesis C2 "t" {\n  recall_best(1) > 0.5 on real for each scorer\n}\n'),
    Code("E0504", "factor not declared", "A factor (`factor_effect(race)`, `model: race * gender`) is not in the "
         "arm's `factors: [...]`.", "Declare it on the arm, or use the suggested factor.",
         'hypothesis C1 "t" {\n  factor_effect(race) < 0.1 on synthetic for each scorer\n}\n'),
    Code("E0505", "transfer between arms of the same kind", "`transfers` asks whether a synthetic finding holds on "
         "real data; both arms have the same kind.", "Transfer from a synthetic arm to a real one.",
         "arm real2 = images(\"data/r2\", manifest: \"data/r2.csv\", kind: real)\n"
         'hypothesis H4 "t" {\n  transfers(asymmetry(light), from: real2, to: real) for each scorer\n}\n'),
    Code("E0506", "selection needs clusters", "`best_of n by m` without `under` draws n images of one cluster; "
         "the arm has no `cluster` column.", "Add `cluster:` to the arm, or select among dose variants with `under`.",
         "select best2 = best_of 2 by ita\n"
         'hypothesis H5 "t" {\n  abs(net_drift(best2)) < 1 on real for each scorer\n}\n'),
    Code("E0507", "scorer needs a prompt", "A text-conditioned scorer (PickScore, ImageReward, HPSv2, CLIP score) has "
         "no `prompt:` and the arm declares no `prompt` column.",
         'Add `prompt: "..."` or `prompt: column(COLUMN)` to the scorer, or `prompt: COLUMN` to the arm.',
         "scorer ir = image_reward()\n"
         'hypothesis H1 "t" {\n  fidelity_index(light) > 0 on real for ir\n}\n'),
    # ------------------------------------------------------------ E053x scopes (`on ARM, ARM` after a declaration)
    Code("E0530", "pairs arm in an images scope", "A region, measure, covariate, operator or placebo is scoped "
         "`on` a pairs arm; they cut, alter or measure pixels, so they run only on images arms.",
         "Scope it to images arms; a pairs arm is scored as it is.",
         "operator blur = gaussian_blur(region: skin) doses 0, 1, 2 on wide\n"),
    Code("E0531", "region scoped narrower than its user", "An operator, placebo, measure, covariate or region "
         "uses a region that is scoped to fewer arms than it runs on (its own scope, or every images arm "
         "when it has none), so on some arm the region does not exist.",
         "Scope the user to the region's arms, or widen the region's scope.",
         "region torso = mask(column: torso_mask) on synthetic\nmeasure width = width_ratio(region: torso)\n"),
    Code("E0532", "validation across disjoint scopes", "`validate M under O` where M and O are scoped to arms "
         "they do not share: the measure is never computed on the operator's variants.",
         "Give the measure and the operator an arm in common.",
         "operator blur = gaussian_blur(region: skin) doses 0, 1, 2 on synthetic\n"
         "measure tone = ita(region: skin) on real\nvalidate tone under blur: r2 >= 0.5\n"),
    Code("E0533", "selection across disjoint scopes", "`best_of n under O by M` where M and O are scoped to "
         "arms they do not share: no arm has the dose variants and the measure to pick them by.",
         "Give the measure and the operator an arm in common.",
         "operator blur = gaussian_blur(region: skin) doses 0, 1, 2 on synthetic\n"
         "measure tone = ita(region: skin) on real\nselect best2 = best_of 2 under blur by tone\n"),
    Code("E0534", "no scorer in scope on an arm", "`for each scorer` (or a claim without `for`) expands, on "
         "each arm, to the scorers in scope there; on one of the claim's arms every scorer is scoped elsewhere, "
         "so the claim would have no cell there.",
         "Add the arm to a scorer's scope, or remove the arm from the claim.",
         'audit "t" { version: 1 }\nscorer sharp = sharpness() on syn\n'
         'arm real = images("data/real", manifest: "data/real.csv", kind: real)\n'
         'arm syn = images("data/syn", manifest: "data/syn.csv", kind: synthetic)\n'
         "region face = face()\noperator blur = gaussian_blur(region: face) doses 0, 1, 2\n"
         'hypothesis H1 "t" {\n  fidelity_index(blur) > 0 on real, syn for each scorer\n}\n'),
    Code("E0535", "scorer outside its scope", "A claim (or a reading) names a scorer with `for` on an arm "
         "outside the scorer's scope: the scorer scores nothing there.",
         "Claim it on the scorer's arms, or add the arm to the scorer's scope.",
         "scorer sharp = sharpness() on synthetic\n"
         'hypothesis H1 "t" {\n  fidelity_index(light) > 0 on real for sharp\n}\n'),
    Code("E0536", "statistic reads outside a scope", "A statistic on an arm reads an operator, placebo, "
         "measure or covariate (named, through a selection, or as the cell's axis) that is scoped to other "
         "arms, so it has no values there.",
         "Claim it on the declaration's arms, or add the arm to its scope.",
         "operator blur = gaussian_blur(region: skin) doses 0, 1, 2 on synthetic\n"
         'hypothesis H1 "t" {\n  fidelity_index(blur) > 0 on real for each scorer\n}\n'),
    # ------------------------------------------------------------ E06 hypotheses
    Code("E0601", "number without a threshold", "A statistic that returns a number stands alone as a claim.",
         "Compare it: `θ > t`, `θ < t`, `abs(θ) < δ` or `θ within [a, b]`.",
         'hypothesis H1 "t" {\n  fidelity_index(light) on real for each scorer\n}\n'),
    Code("E0602", "claim compared with a number", "`transfers`/`homogeneous` decide their claim themselves; "
         "they cannot be compared with a threshold.", "Write the claim on its own.",
         'hypothesis H6 "t" {\n  homogeneous(fidelity_index(light), by: race) > 0 on real for each scorer\n}\n'),
    Code("E0603", "empty interval", "`within [a, b]` needs a < b.", "Swap or widen the bounds.",
         'hypothesis H3 "t" {\n  placebo_ratio(light, light_rest) within [2, 0.5] on real for each scorer\n}\n'),
    Code("E0604", "abs() with a lower bound", "`abs(θ) > t` (or `abs(θ) within ...`) is a two-sided claim that "
         "cannot be pre-registered as one test.",
         "Test one direction (`θ > t` or `θ < -t`), or claim equivalence with `abs(θ) < δ` or `θ within [a, b]`.",
         'hypothesis H2 "t" {\n  abs(asymmetry(light)) > 0.05 on real for each scorer\n}\n'),
    Code("E0605", "no arm", "The statistic is computed on an arm, but the claim has no `on ARM`.",
         "Add `on ARM`.", 'hypothesis H1 "t" {\n  fidelity_index(light) > 0 for each scorer\n}\n'),
    Code("E0606", "`on` with a cross-arm statistic", "`transfers` reads its arms from `from:` and `to:`.",
         "Remove the `on` clause.",
         'hypothesis H4 "t" {\n  transfers(asymmetry(light), from: synthetic, to: real) on real for each scorer\n}\n'),
    Code("E0607", "validation check in a hypothesis", "`r2` and `monotonic` check a measure; they belong in `validate`.",
         "Write `validate MEASURE under OPERATOR: r2 >= a`.",
         'hypothesis V "t" {\n  r2() > 0.5 on real for each scorer\n}\n'),
    Code("E0608", "bad nested statistic", "`transfers`/`homogeneous` need a nested statistic that returns a number "
         "(not a claim, not missing); only statistics take a nested call.",
         "Nest a number statistic, e.g. `transfers(asymmetry(light), from: synthetic, to: real)`.",
         'hypothesis H4 "t" {\n  transfers(homogeneous(fidelity_index(light), by: race), from: synthetic, to: real)'
         ' for each scorer\n}\n'),
    Code("E0609", "non-positive equivalence margin", "`abs(θ) < δ` with δ <= 0 can never hold.",
         "Use a positive margin.", 'hypothesis H2 "t" {\n  abs(asymmetry(light)) < 0 on real for each scorer\n}\n'),
    Code("E0610", "no scorer", "A claim runs `for each scorer` but the spec declares no scorer.", "Declare a scorer.",
         'audit "t" { version: 1 }\narm real = images("data/real", manifest: "data/real.csv", kind: real)\n'
         'hypothesis W1 "t" {\n  spearman(score, column: rating) > 0.5 on real for each scorer\n}\n'),
    Code("E0611", "empty hypothesis", "A hypothesis has no claim.", "Add a claim."),
    # ------------------------------------------------------------ E07 run time (runtime)
    _r("E0701", "manifest or folder not found", "An arm's manifest or image folder does not exist or cannot be read.",
       "Fix the path (relative to the spec's folder)."),
    _r("E0702", "missing manifest column", "A column the spec names (cluster, strata, factors, prompt, masks, "
       "ratings, pair sides) is not in the arm's manifest; checked before any image is decoded or scored.",
       "Add the column to the manifest, or fix its name in the spec."),
    _r("E0703", "duplicate image id", "Two rows (or files) have the same image id.", "Make ids unique."),
    _r("E0704", "image file not found", "A manifest row points to a file that does not exist.",
       "Fix the path, or let `on_error: skip` exclude it (listed in the report)."),
    _r("E0705", "empty arm", "An arm has no rows, or every row was excluded.", "Check the manifest and the exclusions."),
    _r("E0706", "image unreadable or refused", "An image cannot be decoded, or is larger than `max_pixels` "
       "(with `on_error: fail`).", "Fix or remove the image, or use `on_error: skip`."),
    _r("E0707", "path outside the project", "A path the spec, a manifest or a table names (a manifest, an "
       "image folder, an image, a `mask(column:)` file, a `correlate(..., table:)` table, a generated arm's or "
       "probe's prompts file) leaves the spec's folder, after symbolic links are followed; or a model path "
       "(a scorer's `weights:` or `local-dir:` folder, a generated arm's or probe's pipeline folder, a local CLIP "
       "model) lies outside the model roots: the spec's folder, the Hugging Face cache and the folders named in "
       "the environment variable `SCOREAUDIT_MODELS` (spec/containment.md).",
       "Keep data under the spec's folder and models under a model root (e.g. `export SCOREAUDIT_MODELS=~/models`), "
       "or run with `--allow-outside`."),
    _r("E0708", "empty id or path", "A manifest row has no id or no path.", "Fill in the value or drop the row."),
    _r("E0730", "data path is not a regular file", "A table a statistic reads (`correlate(..., table:)`) is a "
       "folder, FIFO, device or cannot be read; only regular files are opened.",
       "Name a regular table file."),
    _r("E0720", "cache file unusable", "The cache file is not a scoreaudit SQLite cache (another file, another "
       "schema).", "Move the file away or pass another `--cache PATH`."),
    _r("E0740", "bad simulate truth", "The JSON of `scoreaudit simulate --truth FILE` names a scorer, probe, arm or "
       "planted parameter the spec or the planted model does not have (it would be ignored without a word), gives "
       "a value of the wrong type (a parameter that is not a finite number, a negative noise or step), or is not "
       "a JSON object.", "Use the names the message lists (the closest one is suggested)."),
    # E08xx: precomputed score and measure tables (spec/precomputed.md)
    *(_r(c, t, cause, fix) for c, t, cause, fix, _ in PRECOMPUTED_CODES if c.startswith("E")),
    Code("E0807", "precomputed columns on the wrong kind of arm", "A claim reads `precomputed(column: C)` on "
         "a pairs arm (a pair row holds two images: it needs one score column per side) or "
         "`precomputed(preferred: A, other: B)` on an images arm (one image per row); every image would be "
         "excluded at run time.", "Use `precomputed(preferred: A, other: B)` on pairs arms and "
         "`precomputed(column: C)` on images arms; an audit with both kinds declares one scorer per kind, "
         "each scoped to its arms (`on ARM`).",
         "scorer human = precomputed(column: rating)\n"
         'hypothesis H1 "t" {\n  pairwise_accuracy() > 0.5 on wide for human\n}\n'),
    # generated arms and probes (spec/generation.md): codes from 850 to 899
    Code("E0850", "bad template", "`prompts:` of a generated arm is a call other than `template(...)`, or the "
         "template's text is missing, not a string, or has malformed braces.",
         'Write `prompts: "prompts.txt"` or `prompts: template("a photo of a {job}", job: [...])`.',
         'arm gen = generate("pipe", prompts: template(job: ["nurse"]), seeds: 2)\n'),
    Code("E0851", "template factors do not match", "A template placeholder has no factor, a factor does not "
         "appear in the text, is given twice, repeats a level, or is neither a list of levels nor "
         '`column(NAME, "file.csv")`; or a `{placeholder}` of the arm\'s `score_prompt:` is not a factor of its '
         "template.", "Give every `{placeholder}` exactly one factor argument.",
         'arm gen = generate("pipe", prompts: template("a photo of a {gender} {job}", gender: ["man", "woman"]))\n'),
    _r("E0852", "prompts unreadable", "A generated arm's prompts file (or a template's `column(NAME, \"file\")`) "
       "is missing, unreadable, lacks the column, or has no prompts.",
       "Fix the path (relative to the spec's folder) or the column name."),
    _r("E0853", "unknown scheduler", "`scheduler:` of a generated arm names no diffusers scheduler class (checked "
       "by `check` when diffusers is installed, from its list of schedulers without importing it; else at run time).",
       "Name a class such as `DDIMScheduler` or `EulerDiscreteScheduler`, or leave it out."),
    _r("E0882", "pipeline has no one-step path", "A probe's `pipeline:` is not a Stable Diffusion UNet pipeline "
       "(SD 1.x/2.x, SD-Turbo, SDXL, SDXL-Turbo) or PixArt-α, or its scheduler cannot start at `timestep:`.",
       "Use a one-step model such as SD-Turbo, SDXL-Turbo or PixArt-α DMD, or leave `timestep:` out."),
    Code("E0854", "bad range value", "A range value `a..b` (e.g. `seeds: 0..4`) has an end that is not a whole "
         "number, runs backwards, or holds more than 100,000 numbers.",
         "Write whole numbers, the smaller first: `seeds: 0..4` (both ends included).",
         'arm gen = generate("pipe", prompts: "prompts.txt", seeds: 4..0)\n'),
    Code("E0855", "probe scorer has no gradient", "A probe optimises against its scorer's gradient, but the "
         "scorer is planted, precomputed or a classical scorer other than incompressibility: it has no "
         "differentiable path.",
         "Use a model scorer (laion_aesthetic, pickscore, image_reward, hpsv2, clip_score) or incompressibility "
         "(the distribution-free baseline).",
         'scorer sharp = sharpness()\nprobe p = reno(scorer: sharp, pipeline: "turbo", prompts: "p.txt", '
         'measures: [ita])\n'),
    Code("E0856", "unknown probe measure", "An entry of a probe's `measures:` is not a probe measure (or is listed "
         "twice, or its arguments are wrong).", "Use `ita`, `skin_exposure`, `clip_attribute(labels: [...])`, `nsfw` "
         "or `anchor(manifest: ..., label: ...)`.",
         'probe p = reno(scorer: pick, pipeline: "turbo", prompts: "p.txt", measures: [itta])\n'),
    _r("W0859", "probe measure cannot run here", "A probe measure needs a package this machine lacks (e.g. "
       "`nsfw`'s detector: NudeNet and onnxruntime, the `nsfw` extra); reported by `check` at the measure. "
       "`run` stops at the probe with the same message.", "Install the extra the message names "
       "(`pip install 'scoreaudit[nsfw]'`), or choose another detector."),
    Code("E0857", "probe does not record the measure", "A probe statistic names a measure the probe does not "
         "record, or (`probe_shift`) a label that is not among the measure's labels.",
         "Name one of the probe's measures (or `score`), and one of its labels.",
         'probe p = reno(scorer: pick, pipeline: "turbo", prompts: "p.txt", measures: [ita])\n'
         'hypothesis P1 "t" {\n  abs(probe_drift(p, measure: skin_exposure)) < 2 for pick\n}\n'),
    Code("E0858", "probe claim with an arm or another scorer", "A claim on a probe statistic is read from the "
         "probe, for the scorer the probe optimises against: it takes no `on ARM`, and `for` names only that "
         "scorer.", "Remove `on ...`; write `for` with the probe's scorer (or leave `for` off).",
         'probe p = reno(scorer: pick, pipeline: "turbo", prompts: "p.txt", measures: [ita])\n'
         'hypothesis P1 "t" {\n  abs(probe_drift(p, measure: ita)) < 2 for laion\n}\n'),
    Code("E0880", "probe reading compared with an arm reading", "One side of `difference(...)`/`ratio(...)` is a "
         "probe statistic (its clusters are the probe's prompts) and the other a statistic on an arm: they share "
         "no clusters and no scale.", "Compare two probe readings (e.g. `probe_drift` under two probes), or two "
         "arm readings.",
         'probe p = reno(scorer: pick, pipeline: "turbo", prompts: "p.txt", measures: [ita])\n'
         'hypothesis P1 "t" {\n  difference(probe_drift(p, measure: ita), fidelity_index(light) on real) > 0\n}\n'),
    Code("E0881", "difference of two scorers' score changes", "`difference(probe_drift(a, measure: score), "
         "probe_drift(b, measure: score))` with probes optimising against different scorers subtracts score "
         "changes in two scorers' units.", "Compare a measure both probes record, or take the `ratio(...)`.",
         'probe a = reno(scorer: pick, pipeline: "turbo", prompts: "p.txt", measures: [ita])\n'
         'probe b = reno(scorer: laion, pipeline: "turbo", prompts: "p.txt", measures: [ita])\n'
         'hypothesis P1 "t" {\n  difference(probe_drift(a, measure: score), probe_drift(b, measure: score)) > 0\n}\n'),
    # ------------------------------------------------------------ warnings
    Code("W0250", "few bootstrap resamples", "`bootstrap` is at least 100 but below 1000: confidence limits and "
         "p-values move from run to run.", "Use `bootstrap: 2000` for the final run.",
         'audit "x" { version: 1 seed: 1 bootstrap: 200 }\n'),
    Code("W0401", "identity dose added", "The doses omit the operator's identity; it is added because the "
         "unaltered image is always scored.", "Add the identity dose to the list.",
         "operator blur = gaussian_blur(region: skin) doses 1, 2, 4\n"),
    Code("W0402", "repeated dose", "A dose is listed twice; it is scored once.", "Remove the repeat.",
         "operator blur = gaussian_blur(region: skin) doses 0, 1, 1, 2\n"),
    Code("W0403", "repeated validation check", "A `validate` checks the same statistic twice; both must hold.",
         "Keep one threshold.", "validate ita under light: r2 >= 0.5, r2 >= 0.6\n"),
    Code("W0404", "placebo uses another operator", "A placebo's plugin differs from its operator's, so the placebo "
         "ratio compares different manipulations, not regions.", "Use the same plugin on another region.",
         "placebo fuzz = hue_rotate(region: rest) of light\n"),
    Code("W0460", "`for` after a comparison expands nothing", "Both readings of the comparison name their scorer, "
         "so the claim's `for ...` is not used.", "Remove it, or leave `for` off one reading.",
         'hypothesis S1 "t" {\n  abs(ratio(fidelity_index(light) for laion, fidelity_index(light) for pick)) < 0.5 '
         'on real for each scorer\n}\n'),
    Code("W0461", "`on` after a comparison fills nothing", "Both readings of the comparison name their arm, so the "
         "claim's `on ...` is not used.", "Remove it, or leave `on` off one reading.",
         'hypothesis S2 "t" {\n  abs(ratio(asymmetry(light) on real, asymmetry(light) on synthetic)) < 0.33 '
         'on real for each scorer\n}\n'),
    Code("W0462", "ratio of signed effects tested one-sided", "Both readings can be negative, so `ratio(a, b) < t` "
         "(t > 0) is also satisfied when the effects point in opposite directions.",
         "Compare magnitudes with `abs(ratio(a, b)) < t`, or also claim that each reading is positive.",
         'hypothesis S1 "t" {\n  ratio(fidelity_index(light) for laion, fidelity_index(light) for pick) < 0.05 '
         'on real\n}\n'),
    Code("W0420", "homogeneity without a margin", "`homogeneous(θ, by: s)` is refuted when the omnibus test is "
         "significant, but a non-significant test is absence of evidence, so without `margin:` it is never "
         "supported.", "Add `margin: δ` (in θ's units): supported when every pairwise stratum difference's "
         "(1 − 2α) CI lies inside [−δ, δ].",
         'hypothesis H1 "t" {\n  homogeneous(fidelity_index(light), by: race) on real for each scorer\n}\n'),
    _r("W0421", "few clusters for scale: sd", "Statistics in SD units divide by an SD estimated from the arm's "
       "own images; below the smallest cluster count of the calibration grid their intervals are not vouched "
       "for (spec/methods.md, measured calibration). Reported by `check` when the arm's manifest is readable "
       "at check time, and written to results.json `warnings` by `run`.",
       "Add clusters, read the SD-unit verdicts with care, or use `scale: raw`."),
    _r("W0422", "many tied rankings", "More than 20% of a ranking cell's clusters (`recall_best`, "
       "`filter_worst`, `mean_rank`, `rank_spread`) have tied scores or tied human ranks. Ties count at their "
       "expected value over random tie orders (never by file name or row order), so the estimate is "
       "reproducible, but on coarse scores (e.g. in quarters) it is a rate over tie orders, not one ranking. "
       "Written to results.json `warnings` by `run`; the share is the cell's `tie_share`.",
       "Score at a finer resolution if the scorer allows it, or report the tie share with the estimate."),
    _r("W0423", "a level the test cannot reach", "A discrete test (the exact binomial test of "
       "`pairwise_accuracy`, the sign-flip test of a difference of accuracies, McNemar's when nothing is tied) "
       "has a smallest attainable p set by how many pairs (clusters) can carry evidence: k informative pairs "
       "give no p below 2^-k against ½. When that p exceeds alpha the claim cannot be supported whatever the "
       "data say. `check` warns at the claim when the numbers are already on disk (precomputed scores tables "
       "or manifest columns: the same tables, estimators and smallest p as the run); `run` writes it to "
       "results.json `warnings` (and the terminal and the report), with the smallest p in the message and "
       "in the cell's detail (`smallest_p`).",
       "Add pairs, or clusters that the readings judge differently (with alpha 0.05 the sign-flip test needs "
       "at least 5 informative ones), raise alpha if the design is pre-registered that way, or report the "
       "cell as descriptive."),
    Code("W0530", "repeated arm in a scope", "An arm is listed twice after `on` in a declaration's scope; it "
         "counts once.", "List it once.", "operator blur = gaussian_blur(region: skin) doses 0, 1, 2 on real, real\n"),
    Code("W0540", "declared but never needed", "The plan runs only what the hypotheses, validations, probes and "
         "report read (spec/language.md, What runs): this scorer, operator, placebo, region, measure, selection "
         "or arm is needed by none of them, so it never runs. A spec without hypotheses runs everything.",
         "Use it in a hypothesis (or scope it with `on` to the arm a claim reads), or remove the declaration.",
         'audit "t" { version: 1 }\nscorer a = sharpness()\nscorer b = colourfulness()\n'
         'arm x = images("d", manifest: "d.csv")\n'
         'hypothesis H "t" {\n  spearman(score, column: r) > 0.5 on x for a\n}\n'),
    Code("W0601", "repeated arm or scorer in a claim", "An arm (after `on`) or a scorer (after `for`) is listed "
         "twice; the cell is made once.", "List it once.",
         'hypothesis H1 "t" {\n  fidelity_index(light) > 0 on real, real for each scorer\n}\n'),
    *(_r(c, t, cause, fix) for c, t, cause, fix, _ in PRECOMPUTED_CODES if c.startswith("W")),
    _r("W0620", "manifest without an id column", "An arm's manifest has no `id` column (or the column `id:` "
       "names): image ids are the files' names (images arms) or row numbers (pairs arms), which change when "
       "the data is renamed or reordered; reported by `scoreaudit check`.",
       "Add an id column, or name one with `id: column_name`."),
    _r("W0621", "data file not found", "`scoreaudit check` found that a data file the spec names does not exist "
       "(yet): an arm's manifest or image folder, a generated arm's or a probe's prompts file (or the file a "
       "template's `column(...)` reads), or a table a statistic reads. What `check` reads from that file "
       "(its columns, row count and ids; the prompts; the table's rows) was therefore not checked, and the "
       "message says which. The exit code stays 0 (a warning); `run` stops while a manifest, image folder or prompts file is "
       "missing, and cannot compute the cells that read a missing table.",
       "Create the file, or fix the path (relative to the spec's folder), and run `scoreaudit check` again."),
    _r("W0810", "scorer cannot run here", "`check` found a declared scorer that cannot run on this machine: "
       "its extra is not installed, or weight files are missing or not valid checkpoints (every missing "
       "file is named). `run` would stop with exit code 3 when it reaches the scorer.",
       "`scoreaudit weights --download SCORER` fetches the files into the Hugging Face cache; or give "
       "`weights:` a local path (relative to the spec's folder); or install the extra the message names."),
)

BY_CODE: dict[str, Code] = {c.code: c for c in CATALOGUE}
