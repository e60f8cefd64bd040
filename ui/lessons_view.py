"""The hosted systems' teaching scenarios on the Run page (``SystemView.lesson``): the same
task done two ways, side by side, run on demand with no model and nothing stored."""

from __future__ import annotations

import streamlit as st

from graph.kernel.system import systems
from ui.view_models import Lesson
from ui.views import view_of


@st.cache_data(show_spinner="Running the task both ways…", max_entries=16)  # one per system
def _lesson(system: str) -> Lesson:
    return view_of(system).run_lesson()


def _block(kind: str, content) -> None:
    if kind == "table":
        st.table(content, hide_index=True)
    else:
        {"error": st.error, "success": st.success, "warning": st.warning}.get(kind, st.markdown)(
            content
        )


def expanders() -> None:
    """One expander per system that has a lesson."""
    for system in map(view_of, systems()):
        if not system.lesson:
            continue
        shown = f"lesson:{system.name}:shown"
        with st.expander(
            system.lesson, icon=":material/school:", expanded=st.session_state.get(shown, False)
        ):
            if st.button(
                "Run both versions",
                key=f"lesson:{system.name}:run",
                icon=":material/compare_arrows:",
            ):
                st.session_state[shown] = True
            if not st.session_state.get(shown):
                continue
            lesson = _lesson(system.name)
            st.caption(lesson.caption)
            st.markdown(lesson.intro)
            for (heading, blocks), column, side in zip(
                lesson.sides, st.columns(len(lesson.sides), gap="large"), range(9)
            ):
                with column, st.container(key=f"lesson-{system.name}-{side}"):
                    st.markdown(f"#### {heading}")
                    for block in blocks:
                        _block(block.kind, block.content)
            st.markdown("\n".join(f"- {t}" for t in lesson.takeaways))
