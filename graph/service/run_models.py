"""The models and compiled graph a run of a design gets: a part of the run service.

Which settings a run uses (the design's own model, or the active profile's), which chat
model each role gets (recorded for a replay, live after a fork point, the caller's
factory in tests), and the design's graph on the service's lease-guarded checkpointer.
Read through the service each time: a test may swap its settings, store or factory.

A design's graph is compiled once and kept (``GRAPHS_KEPT``, the most recently used):
the Run page starts every run with a design, and compiling it took 15-56 ms a click
(issue 33.2). A compiled graph serves concurrent runs, each on its own thread id, as an
experiment's variant already did. A kept graph is used again only for the same design
(its JSON: agents, prompts, model choice, settings), the same run settings (compared
whole, a typed key included: a key typed again builds anew) and the same checkpointer;
with a model factory (tests, benchmarks), only while it gives the very models the graph
was built with (a factory making a new model per call builds anew each time); never for
a replay or a fork's recorded models, which are made per run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph

from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.chat import make_chat_model, model_label
from graph.models.recorded import live_model
from graph.prompts import PromptSet
from graph.service.disk_space import said_when_full
from graph.service.replays import recorded_model
from graph.service.run_host import RunHost
from graph.service.run_storage import store_location
from graph.service.runs import run_metadata
from graph.settings import Settings, get_settings

GRAPHS_KEPT = 8  # designs whose compiled graphs a service keeps (a few hundred kB each)
PROMPT_SETS_CHECKED = 64  # prompt sets a service remembers as sound

Built = tuple[CompiledStateGraph, BaseChatModel, BaseChatModel]


class RunModels:
    """A run service's models and graphs, by design."""

    def __init__(self, service: RunHost) -> None:
        self.service = service
        self._kept: OrderedDict[str, tuple[Settings, Any, Built]] = OrderedDict()
        self._kept_lock = threading.Lock()
        self._sound: OrderedDict[tuple, None] = OrderedDict()  # prompt sets that passed

    def run_settings(self, design: Design | None = None) -> Settings:
        """The settings a run of ``design`` uses: the service's, with the design's own model
        (an experiment's model variant) in place of the configured one."""
        if design is None or design.model is None:
            return self.service.settings
        return design.model.settings(self.service.settings)

    def model_settings(self) -> Settings:
        """The settings of the active model profile: what a new run, an experiment's
        "model in use" variant and the judge are made with."""
        return self.service.profiles.settings_of()

    def with_active_model(self, design: Design) -> Design:
        """``design`` on the active profile, recorded in it (so its resume, approvals and
        forks stay on that model), unless it names a model of its own already."""
        if design.model is not None:
            return design
        choice = self.service.profiles.choice()
        return design if choice is None else design.model_copy(update={"model": choice})

    def computes_without_pause(self, design: Design) -> bool:
        """Whether a run of ``design`` never waits: the offline scripted model answering at
        once, unpaced. Such runs are CPU-bound: on worker processes, one per worker."""
        settings = self.run_settings(design)
        return (
            settings.resolved_provider == "scripted"
            and not settings.scripted_delay_s
            and not settings.scripted_jitter_s
            and not design.pace_s
        )

    def label(self, planner: BaseChatModel, worker: BaseChatModel, design: Design) -> str:
        if design.model is not None and design.model.replay_of:
            return design.model.label
        if self.service.model_factory is None and design.model is not None and design.model.fork_of:
            return design.model.label
        if self.service.model_factory is None:
            return self.run_settings(design).model_label
        names = {model_label(planner), model_label(worker)}
        return (
            names.pop()
            if len(names) == 1
            else (f"planner/executor {model_label(planner)}, workers {model_label(worker)}")
        )

    def check_prompts(self, design: Design) -> None:
        """``PromptError`` naming the prompt and the problem when ``design``'s texts (its
        own over the shipped ones) cannot serve. A set that passed is not checked again
        (each check reads every prompt file and parses every template: ~0.5 ms a
        click); one that failed is checked each time. A run uses the texts its graph was
        built with, and building checks them too, so a shipped file changed meanwhile
        is read when a graph is next built."""
        key = (str(get_settings().prompts_dir), tuple(sorted(design.prompts.items())))
        with self._kept_lock:
            if key in self._sound:
                self._sound.move_to_end(key)
                return
        PromptSet(design.prompts)
        with self._kept_lock:
            self._sound[key] = None
            while len(self._sound) > PROMPT_SETS_CHECKED:
                self._sound.popitem(last=False)

    def recorded_versions(self, design: Design) -> dict[str, int]:
        """Which stored prompt versions this design's texts are (for comparing runs)."""
        return {
            name: version.id
            for name, version in self.service.store.active_prompts().items()
            if design.prompts.get(name) == version.text
        }

    def run_metadata(
        self, run_id: str, design: Design, versions: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """The run's id, system and prompt versions (``versions`` when known, else read
        from its record), for LangChain's tracers (LangSmith)."""
        if versions is None:
            record = self.service.store.run(run_id)
            versions = record.prompt_versions if record else {}
        return run_metadata(run_id, design.system, versions)

    def model(
        self, role: Literal["planner", "worker"], design: Design | None = None
    ) -> BaseChatModel:
        """The model a run of ``design`` gets for ``role``, learning into this service's modes."""
        choice = design.model if design is not None else None
        if choice is not None and choice.replay_of:
            return recorded_model(self.service.store, choice.replay_of)
        if self.service.model_factory is not None:
            model = self.service.model_factory(role)
        else:
            prompts = PromptSet(design.prompts) if design is not None else None
            model = make_chat_model(
                role, self.run_settings(design), modes=self.service.modes, prompts=prompts
            )
        return live_model(model) if choice is not None and choice.fork_of else model

    def graph(self, design: Design) -> Built:
        """The design's compiled graph and models, built once and kept for the next run
        of the same design (the module's docstring says when one is used again). Building
        it may write files of its own under the home (the tools' stock database on first
        use): a full disk there is said as the store's is."""
        if design.model is not None and (design.model.replay_of or design.model.fork_of):
            return self._build(design)  # its recorded models are made per run
        # A factory's models first (cheap): its graph is kept only for the same models.
        made = (
            (self.model("planner", design), self.model("worker", design))
            if self.service.model_factory is not None
            else None
        )
        key = design.model_dump_json()
        settings, checkpointer = self.run_settings(design), self.service.checkpointer
        with self._kept_lock:
            kept = self._kept.get(key)
            if (
                kept is not None
                and kept[0] == settings
                and kept[1] is checkpointer
                and (made is None or (kept[2][1] is made[0] and kept[2][2] is made[1]))
            ):
                self._kept.move_to_end(key)
                return kept[2]
        built = self._build(design, made)
        with self._kept_lock:
            self._kept[key] = (settings, checkpointer, built)
            self._kept.move_to_end(key)
            while len(self._kept) > GRAPHS_KEPT:
                self._kept.popitem(last=False)
        return built

    def _build(
        self, design: Design, made: tuple[BaseChatModel, BaseChatModel] | None = None
    ) -> Built:
        """The design's graph on ``made`` (planner, worker), or on models made now."""
        planner, worker = made or (self.model("planner", design), self.model("worker", design))
        system = get_system(design.system)
        with said_when_full(store_location(self.service.settings)):
            compiled = system.build_graph(
                design,
                settings=self.run_settings(design),
                checkpointer=self.service.checkpointer,
                planner_model=planner,
                worker_model=worker,
            )
        return compiled, planner, worker
