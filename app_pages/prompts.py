"""Prompts: edit what each agent is told, preview it filled in, keep versions, pick the active one."""

import streamlit as st

import graph.kernel.guardrail  # noqa: F401  (registers the guardrail's classifier prompt)
from graph.kernel.design import Design
from graph.prompts import PromptError, default_text, prompt_names, template_errors
from ui import offline_note, playground_view, services, widgets
from ui import prompt_actions as actions
from ui import prompt_view as pv
from ui import user_agent_prompts as agent_prompts
from ui.run_view import run_label

st.title("Prompts")
st.markdown(
    "Each agent is sent a prompt made from a template. Words in braces, like "
    "`{user_query}`, are filled in at run time; write a literal brace doubled (`{{`). "
    "Runs use the **active** version of each prompt: save your edit as a version and make "
    "it active."
)

store = widgets.store_or_stop()
widgets.flash(actions.FLASH)

DESIGN = services.current_design()
SYSTEM = services.system_of(DESIGN)
names = SYSTEM.prompts.names() + prompt_names("guardrail") + prompt_names("models")
names += agent_prompts.names(store)
st.caption(
    f"The prompts of the system the saved design uses: **{SYSTEM.name}** (choose the "
    "system on the Design page), the guardrail's classifier, used by any system "
    "when the Design page switches the guardrail and its model classifier on, the "
    "two the model adapter adds for servers without json_schema or native tool calls, "
    "and the prompt of each agent you defined on the Design page (“Your agent”)."
)
if preset := playground_view.apply_preset(names):  # from a run's "Try this node…"
    st.session_state["prompts:chosen"] = preset
chosen = st.session_state.setdefault("prompts:chosen", names[0])


def preview_prompt(name: str, text: str, state: dict | None) -> str:
    if name.startswith("guardrail/"):
        return pv.guardrail_preview(name, text, state, DESIGN)
    if name.startswith("models/"):
        return pv.models_preview(name, text)
    if agent_prompts.is_agent_prompt(name):
        return agent_prompts.preview(name, text, store)
    return SYSTEM.prompts.preview_prompt(name, text, state, DESIGN)


name = st.selectbox(
    "Prompt",
    names,
    index=names.index(chosen) if chosen in names else 0,
    format_func=pv.prompt_title,
)
st.session_state["prompts:chosen"] = name
offline_note.show([name], services.model_settings().resolved_provider)
is_agent = agent_prompts.is_agent_prompt(name)
if is_agent:
    st.caption(agent_prompts.AFTER_IT)
default_words = pv.default_words(name)

active = store.active_prompts().get(name)
versions = store.prompt_versions(name)
active_text = active.text if active else default_text(name)
editor, draft = actions.editor_key(name), actions.draft_key(name)
if editor not in st.session_state:  # first visit, or back from another page: keep the draft
    st.session_state[editor] = st.session_state.get(draft, active_text)


# Callbacks and labels come from ui.prompt_actions and dicts: a function defined here
# would keep this page's namespace (the runs offered, their states) in each session.
height = (
    st.segmented_control(
        "Editor height",
        list(pv.EDITOR_HEIGHTS),
        default=pv.DEFAULT_HEIGHT,
        format_func=pv.EDITOR_HEIGHTS.__getitem__,
        key="prompts:height",
    )
    or pv.DEFAULT_HEIGHT
)
edit_col, preview_col = st.columns(2, gap="large")
with edit_col:
    st.subheader("Template")
    st.caption(pv.placeholders_help(name))
    if active:
        st.markdown(
            f"Active: version **{active.label}**, saved {pv.format_time(active.created_at)}"
        )
    else:
        st.markdown(f"Active: **{default_words}**")
    text = st.text_area("Template text", key=editor, height=height, label_visibility="collapsed")
    st.session_state[draft] = text
    errors = template_errors(name, text)
    for error in errors:
        st.error(error)
    if saved_state := pv.save_state(text, active_text, versions):
        st.caption(saved_state)
    st.text_input("Version name", key=f"prompts:label:{name}", placeholder="e.g. shorter plans")
    st.checkbox("Make it the active version", value=True, key=f"prompts:activate:{name}")
    st.button(
        "Save version",
        type="primary",
        disabled=bool(errors),
        on_click=actions.save,
        args=(name,),
        help="Fix the errors above first." if errors else None,
    )

with preview_col:
    st.subheader("Preview")
    started = [r for r in store.runs(limit=40) if r.started_at is not None]
    runs = {r.id: run_label(r) for r in pv.runs_for_prompt(name, started)}
    source = None
    if is_agent:  # filled in from its definition, not from a run's state
        st.caption(agent_prompts.NOT_ON_A_STATE)
    else:
        source = st.selectbox(
            "Filled in for",
            [None, *runs],
            format_func={
                None: "a sample state",
                **{r: f"a step of run {t}" for r, t in runs.items()},
            }.__getitem__,
        )
    state = None
    if source:
        record = store.run(source)
        states = pv.past_states(
            services.compiled_graph(Design.model_validate(record.design)), source
        )
        if states:
            at = st.selectbox(
                "State",
                range(len(states)),
                index=pv.fitting_state(states, SYSTEM.prompts.prompt_node(name)),
                format_func=[label for label, _ in states].__getitem__,
            )
            state = states[at][1]
        else:
            st.caption("This run kept no states to preview; showing the sample state.")
    if errors:
        st.info("The preview comes back when the template is valid.")
    else:
        try:
            preview = preview_prompt(name, text, state)
            if text != active_text:
                before = preview_prompt(name, active_text, state)
                with st.container(key="prompt-preview-changes"):
                    st.caption("What your edit changes in the prompt sent:")
                    if rows := pv.side_by_side(before, preview, context=0):
                        st.markdown(
                            pv.diff_html(rows, "active version", "your edit"),
                            unsafe_allow_html=True,
                        )
                    else:
                        st.caption("(no visible change)")
            with st.container(key="prompt-preview"):
                st.code(preview, language=None, wrap_lines=True, height=height)
        except PromptError as exc:
            st.error(str(exc))

st.subheader("Versions")
if versions:
    st.table(
        [
            {
                "Version": v.label,
                "Saved at": pv.format_time(v.created_at),
                "Active": "active" if active and v.id == active.id else "",
            }
            for v in versions
        ],
        hide_index=True,
    )
else:
    st.caption(f"No saved versions of this prompt yet: runs use {default_words}.")

if versions:
    by_id = {v.id: v for v in versions}
    picked = by_id[
        st.selectbox(
            "Version", list(by_id), format_func={i: v.label for i, v in by_id.items()}.__getitem__
        )
    ]
    invalid = template_errors(name, picked.text)
    is_active = bool(active and active.id == picked.id)
with st.container(horizontal=True):
    if versions:
        st.button(
            "Make active",
            disabled=bool(invalid) or is_active,
            on_click=actions.activate,
            args=(name, picked.id, picked.label, picked.text),
            help="; ".join(invalid) or ("It is the active version." if is_active else None),
        )
        st.button("Load into the editor", on_click=actions.set_editor, args=(name, picked.text))
    st.button(
        "Reset to its definition's prompt" if is_agent else "Reset to shipped default",
        on_click=actions.reset,
        args=(name,),
        help=f"Runs use {default_words} again; saved versions are kept.",
    )

st.subheader("Compare two texts")
texts = {"editor": ("the editor", text), "default": (default_words, default_text(name))}
texts.update({f"v{v.id}": (f"version {v.label}", v.text) for v in versions})
keys = list(texts)
a_col, b_col = st.columns(2)
titles = {k: title for k, (title, _) in texts.items()}
old = a_col.selectbox("From", keys, index=1, format_func=titles.__getitem__)
new = b_col.selectbox("To", keys, index=0, format_func=titles.__getitem__)
if texts[old][1] == texts[new][1]:
    st.caption("The two texts are identical.")
else:
    st.caption(
        "Each text as written, line against line: removed or changed lines red on the "
        "left, added or changed lines green on the right."
    )
    rows = pv.side_by_side(texts[old][1], texts[new][1])
    with st.container(key="prompt-compare"):
        st.markdown(pv.diff_html(rows, texts[old][0], texts[new][0]), unsafe_allow_html=True)

playground_view.show(name, text, versions, active_text)
