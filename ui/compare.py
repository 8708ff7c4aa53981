"""Rules side by side inside Explore: every rule at the clicked token, and both maps recoloured by any rule."""

from __future__ import annotations

import gradio as gr

from ui.common import Parts, UserError, bind, pick, updates
from viz import rules
from viz.rounds import reason_heatmap
from viz.summary import RUNS, run_names

OWN = "own"
# The recolour menu: each run's own decisions, then every rule the maps can be recoloured by (the lossless test first).
RULE_CHOICES = [("each run's own decisions", OWN), *((rule.label, name) for name, rule in rules.ENTRIES.items())]
SELECTED_NONE = None  # the clicked token: [run name, record index, round, position], or None


def panel() -> dict:
    """The inspector's rule panel (inside the inspector group)."""
    return {"rules": gr.HTML(rules.rules_html(None, None), elem_id="insp-rules"), "selected": gr.State(SELECTED_NONE)}


def controls() -> dict:
    """Which rule colours the maps, and its knob (inside the map tab)."""
    c = {}
    with gr.Row():
        c["recolour"] = gr.Dropdown(
            RULE_CHOICES,
            value=OWN,
            label="Colour the maps by",
            scale=3,
            elem_id="recolour",
            info="what another rule would decide on the same drafts",
        )
        c["rule_knob"] = gr.Textbox(  # empty = the rule's default (a gr.Number would send 0)
            "",
            label="its knob",
            placeholder="default",
            info="relatives only; empty = the default",
            scale=1,
            elem_id="rule-knob",
        )
    gr.Markdown(rules.CAVEAT, elem_classes="dm-note")
    return c


def knobs(rule: str, knob) -> dict[str, float]:
    """The knob the controls set, as {rule: value}; a bad value is a clear gr.Error."""
    entry = rules.ENTRIES.get(rule)
    if entry is None or entry.knob is None or knob in (None, ""):
        return {}
    try:
        return {rule: entry.knob.check(knob)}
    except ValueError as err:
        raise UserError(str(err)) from None


def selected_record(traces: dict, selected):
    """(trace, record) of the clicked token when it still belongs to the traces shown; else (None, None)."""
    if not selected:
        return None, None
    name, index, round_, pos = selected
    trace = (traces or {}).get(name)
    if trace is None or index >= len(trace.records):
        return None, None
    rec = trace.records[index]
    return (trace, rec) if (rec.round, rec.pos) == (round_, pos) else (None, None)


def maps(v: Parts, traces: dict, rule: str, knob) -> dict:
    """Both accept / reject maps: each run's own reasons, or recoloured by `rule` at `knob`."""
    chosen, names = knobs(rule, knob), run_names(traces)
    out = {}
    for name in RUNS:
        trace = (traces or {}).get(name)
        if rule == OWN:
            out[f"map_{name}"] = reason_heatmap(trace, f"{names[name]}: accept / reject per round")
        else:
            title = f"{names[name]}: what {shown_rule(rule, chosen)} decides<br>on these drafts, against the run"
            out[f"map_{name}"] = rules.rule_heatmap(trace, rule, chosen.get(rule), title)
    return updates(v, out)


def shown_rule(rule: str, chosen: dict[str, float]) -> str:
    """The rule a recoloured map shows, with the knob it is drawn at: "typical acceptance (Medusa) at epsilon 0.09
    (its default)"."""
    entry = rules.ENTRIES[rule]
    if entry.knob is None:
        return entry.label
    if rule in chosen:
        return f"{entry.title} at {entry.knob.said(chosen[rule])}"
    return f"{entry.title} at {entry.knob.said()} (its default)"


def recolour(v: Parts, traces: dict, rule: str, knob, selected) -> dict:
    """The maps and the rule panel after the rule or its knob changes."""
    trace, rec = selected_record(traces, selected)
    return {**maps(v, traces, rule, knob), v["rules"]: rules.rules_html(trace, rec, knobs(rule, knob))}


def check_knob(traces: dict, rule: str, knob, selected) -> list[dict]:
    """The recolouring's validator: a knob the rule cannot take is refused under the knob box, and the maps and the
    panel stay as they were (no error over valid figures)."""
    try:
        knobs(rule, knob)
    except UserError as err:
        return [gr.validate(True, ""), gr.validate(True, ""), gr.validate(False, err.message), gr.validate(True, "")]
    return [gr.validate(True, "")] * 4


def new_rule(v: Parts, traces: dict, rule: str, selected) -> dict:
    """Another rule picked: it colours the maps at its default knob, and the knob box empties (a value typed for one
    rule is no value of the next one's)."""
    return {**recolour(v, traces, rule, None, selected), v["rule_knob"]: ""}


def wire(v: Parts) -> None:
    """Recolour on a change of rule (at its default knob) or of the knob (checked first; the panel follows)."""
    outputs = pick(v, (*(f"map_{n}" for n in RUNS), "rules"))
    v["recolour"].change(
        bind(new_rule, v),
        pick(v, ("traces", "recolour", "selected")),
        [*outputs, v["rule_knob"]],
        api_visibility="private",
    )
    v["rule_knob"].change(
        bind(recolour, v),
        pick(v, ("traces", "recolour", "rule_knob", "selected")),
        outputs,
        api_visibility="private",
        validator=check_knob,
        show_progress_on=v["rule_knob"],  # a refused knob is said under its box; the maps are not marked
    )
