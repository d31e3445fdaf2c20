"""The admin app's events. Every handler goes through `AdminGuard.on` (the user is checked first) and is a
short call into the admin core (m3ui/admin/) plus a presenter that turns its result into component values.
One timer per browser session reads the supervisor's in-memory snapshot; nothing expensive runs per tick."""

from __future__ import annotations

from typing import Any

import gradio as gr

from launch.command import Engine
from launch.restart_policy import RestartPolicyError
from launch.settings import LaunchSettings
from launch.supervisor import LOG_FILE_NAME, EngineState, SupervisorSnapshot
from m3ui.admin.console import AdminConsole, Outcome, only_overridable_errors
from m3ui.admin.form import FormValue, form_values, read_engine, read_form
from m3ui.admin.log_view import export_log, filter_log
from m3ui.admin.presets import apply_choice, preset_choices
from m3ui.admin.restart_form import read_restart_form, restart_form_values
from m3ui.admin.review import Change, Review
from m3ui.admin.weights import WeightsDesk
from m3ui.ui.admin.command import command_text, render_checks
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.layout import AdminView
from m3ui.ui.admin.logs import LOG_LINES
from m3ui.ui.admin.markup import outcome_html
from m3ui.ui.admin.profiles import render_profiles
from m3ui.ui.admin.sizing import plan_for, render_advice, slider_update
from m3ui.ui.admin.status import Controls, control_updates, controls_for, render_status
from m3ui.ui.admin.summary import render_hardware, render_model, render_model_brief
from m3ui.ui.admin.weights import read_weights_form, render_plan_files, render_progress

LOG_SCAN = 5000  # ring-buffer lines the filter looks through
DOWNLOAD_JS = "() => setTimeout(() => document.querySelector('#m3-log-file a[download]')?.click(), 400)"
# A log filled while its tab was hidden opens at its top: show the tail, as a log view should.
LOG_TAIL_JS = "() => setTimeout(() => { const t = document.querySelector('#m3-log textarea'); " \
              "if (t) t.scrollTop = t.scrollHeight; }, 50)"


def state_change_outcome(previous: str | None, snap: SupervisorSnapshot) -> Outcome | None:
    """What replaces an outcome the engine's own progress made stale ("Starting… follow the phases", "ready"):
    how a start ended, or that the engine died. None when nothing such happened."""
    if snap.mode != "managed" or previous is None or previous == snap.state.value:
        return None  # a tick may miss a short "starting": a stopped engine can be failed at the next one
    if snap.state is EngineState.READY:
        return Outcome("ok", "The engine is ready.")
    if snap.state is EngineState.FAILED:
        what = "The engine died" if previous == EngineState.READY.value else "The start failed"
        title = snap.diagnosis.title if snap.diagnosis else "it stopped"
        return Outcome("error", f"{what}: {title}. The diagnosis below says why and what to change.")
    return None


class AdminEvents:
    def __init__(self, view: AdminView, console: AdminConsole, desk: WeightsDesk, guard: AdminGuard) -> None:
        self.v, self.console, self.desk, self.guard = view, console, desk, guard
        self.services = console.services

    # Output groups used by many events.
    @property
    def review_outputs(self) -> list[Any]:
        v = self.v
        return [*v.form.finding_outputs, v.form.model_summary, v.command.checks, v.command.command,
                v.command.preflight_result, v.sizing.advice, v.sizing.experts, v.sizing.plan]

    @property
    def fill_outputs(self) -> list[Any]:
        return [*self.v.form.inputs, *self.review_outputs]

    @property
    def choice_outputs(self) -> list[Any]:
        return [self.v.preset, self.v.profiles.chosen, self.v.profiles.table]

    # Presenters: core results → component values.
    def present(self, review: Review) -> list[Any]:
        reading = self.console.shapes.read(review.settings)
        # A preflight result is about the settings it ran on: any edit makes it stale, so it is cleared.
        return [*self.v.form.finding_updates(review.findings), render_model_brief(reading), render_checks(review),
                command_text(review), "", render_advice(review), slider_update(review), plan_for(review, None)]

    def fill(self, settings: LaunchSettings, engine: Engine) -> list[Any]:
        review = self.console.review(form_values(settings), engine.kind, engine.python)
        return [*self.v.form.values(settings, engine), *self.present(review)]

    def fill_or_keep(self, outcome: Outcome) -> list[Any]:
        if outcome.settings is None or outcome.engine is None:
            return [gr.skip()] * len(self.fill_outputs)
        return self.fill(outcome.settings, outcome.engine)

    def choices(self) -> list[Any]:
        store = self.services.profiles
        presets = [(c.label, c.key) for c in preset_choices(store)]
        return [gr.Dropdown(choices=presets), gr.Dropdown(choices=store.names()),
                render_profiles(store, self.console.last_good.load())]

    def status(self) -> str:
        return render_status(self.console.snapshot(), self.services.link.status())

    def review_of(self, kind: str, python: str, fields: tuple[FormValue, ...]) -> Review:
        return self.console.review(fields, kind, python)

    def changed(self, kind: str, python: str, fields: tuple[FormValue, ...], changes: tuple[Change, ...]) -> list[Any]:
        """The form with `changes` applied (suggested fixes, advice, the what-if value)."""
        review = self.review_of(kind, python, fields)
        return self.fill(review.settings.replace(**dict(changes)), review.engine)

    def wire(self, demo: gr.Blocks) -> None:
        for part in (self._wire_form, self._wire_control, self._wire_timer, self._wire_diagnosis, self._wire_logs,
                     self._wire_summary, self._wire_profiles, self._wire_weights, self._wire_attach):
            part()
        self.guard.on(demo.load, self.on_load, [], [*self.fill_outputs, *self.choice_outputs, self.v.strip.status,
                                                    *self.v.profiles.restart.inputs, *self.v.strip.controls], "load",
                      show_progress="hidden")

    def on_load(self) -> list[Any]:
        return [*self.fill(*self.console.initial()), *self.choices(), self.status(),
                *restart_form_values(self.services.supervisor.restart_policy), *control_updates(self.controls())]

    def controls(self, snap: SupervisorSnapshot | None = None) -> Controls:
        fleet = self.services.fleet
        return controls_for(snap or self.console.snapshot(), self.services.link.status(),
                            fleet.fleet.router.url if fleet is not None else None)

    # --- the form, checks, sizing, command --------------------------------------------------------------

    def _wire_form(self) -> None:
        v, g = self.v, self.guard
        form = v.form
        edits = [c.input for c in form.inputs]
        g.on(edits, lambda kind, py, *fields: self.present(self.review_of(kind, py, fields)), form.inputs,
             self.review_outputs, "review", trigger_mode="always_last", show_progress="hidden")
        g.on(v.load_preset.click, self.on_preset, [v.preset, *form.inputs], [v.strip.outcome, *self.fill_outputs],
             "preset")
        g.on(v.command.apply_fixes.click,
             lambda kind, py, *fields: self.changed(kind, py, fields, self.review_of(kind, py, fields).fixes),
             form.inputs, self.fill_outputs, "apply_fixes")
        g.on(v.sizing.apply_advice.click,
             lambda kind, py, *fields: self.changed(kind, py, fields, self.review_of(kind, py, fields).advice_changes),
             form.inputs, self.fill_outputs, "apply_advice")
        g.on([v.sizing.experts.input, v.sizing.experts.release],
             lambda n, kind, py, *fields: plan_for(self.review_of(kind, py, fields), n),
             [v.sizing.experts, *form.inputs], v.sizing.plan, "what_if", trigger_mode="always_last",
             show_progress="hidden")
        g.on(v.sizing.use_experts.click,
             lambda n, kind, py, *fields: self.changed(kind, py, fields, (("kt_num_gpu_experts", int(n or 0)),
                                                                           ("kt_gpu_experts_ratio", None))),
             [v.sizing.experts, *form.inputs], self.fill_outputs, "use_what_if")
        g.on(v.command.preflight.click, lambda kind, py, *fields: outcome_html(self.preflight(kind, py, fields)),
             form.inputs, v.command.preflight_result, "preflight")

    def on_preset(self, key: str | None, kind: str, python: str, *fields: FormValue) -> list[Any]:
        if not key:
            return [outcome_html(Outcome("error", "Pick a preset or a profile first.")),
                    *[gr.skip()] * len(self.fill_outputs)]
        current = self.review_of(kind, python, fields)
        try:
            settings, engine = apply_choice(key, current.settings, current.engine, self.services.profiles)
        except ValueError as exc:  # ProfileError is a ValueError
            return [outcome_html(Outcome("error", f"Not loaded: {exc}")), *[gr.skip()] * len(self.fill_outputs)]
        note = Outcome("info", "Loaded into the form (model path, address, API key and monitoring kept). "
                               "Nothing runs until you press Start or Restart.")
        return [outcome_html(note), *self.fill(settings, engine)]

    def preflight(self, kind: str, python: str, fields: tuple[FormValue, ...]) -> Outcome:
        reading = read_form(fields)
        if not reading.ok:
            return Outcome("error", "Some fields cannot be read; fix them first", reading.errors)
        return self.console.preflight(reading.settings, read_engine(kind, python))

    # --- start / stop / restart -------------------------------------------------------------------------

    def _wire_control(self) -> None:
        v, g, s = self.v, self.guard, self.v.strip
        outputs = [s.outcome, s.start_anyway, s.status, *s.controls]
        g.on(s.start.click, lambda *a: self.launch("start", *a), v.form.inputs, outputs, "start")
        g.on(s.start_anyway.click, lambda *a: self.launch("start_anyway", *a), v.form.inputs, outputs,
             "start_anyway")
        g.on(s.restart.click, lambda *a: self.launch("restart", *a), v.form.inputs, outputs, "restart")
        g.on(s.stop.click, lambda: self.after(self.console.stop()), [], outputs, "stop")

    def launch(self, how: str, kind: str, python: str, *fields: FormValue) -> list[Any]:
        reading = read_form(fields)
        if not reading.ok:
            return self.after(Outcome("error", "Not started: some fields cannot be read", reading.errors))
        engine = read_engine(kind, python)
        if how == "restart":
            return self.after(self.console.restart(reading.settings, engine))
        return self.after(self.console.start(reading.settings, engine, override_estimate=how == "start_anyway"))

    def after(self, outcome: Outcome) -> list[Any]:
        """Outcome, whether 'Start anyway' applies to it, and the status right away (not at the next tick)."""
        return [outcome_html(outcome), gr.Button(visible=only_overridable_errors(outcome.findings)), self.status(),
                *control_updates(self.controls())]

    # --- the one timer ----------------------------------------------------------------------------------

    def _wire_timer(self) -> None:
        v = self.v
        self.guard.on(v.timer.tick, self.tick, [v.seen, v.logs.contains, v.logs.problems_only, v.logs.polling],
                      [v.strip.status, v.strip.outcome, *v.diagnosis.outputs, v.logs.tail,
                       v.weights.progress, *v.strip.controls, v.seen], "tick", show_progress="hidden", queue=False)

    def tick(self, seen: dict[str, Any], contains: str, problems_only: bool, polling: bool) -> list[Any]:
        snap = self.console.snapshot()
        diagnosis = snap.diagnosis if snap.state is EngineState.FAILED else None
        log = self.log_text(contains, problems_only, polling)
        link = self.services.link.status()
        controls = self.controls(snap)
        now = {"status": render_status(snap, link),
               "diagnosis": (str(snap.run_dir), diagnosis.cause.value) if diagnosis else None,
               "log": log, "weights": render_progress(self.desk.progress()), "state": snap.state.value,
               "controls": controls}
        fresh = {k: now[k] != seen.get(k) for k in now}
        diag = (self.v.diagnosis.updates(diagnosis, self.console.last_good.load(), link.simulated)
                if fresh["diagnosis"]
                else [gr.skip()] * len(self.v.diagnosis.outputs))
        # "Starting… follow the phases" is stale once the start has ended: say how it ended.
        ended = state_change_outcome(seen.get("state"), snap)
        return [now["status"] if fresh["status"] else gr.skip(), outcome_html(ended) if ended else gr.skip(),
                *diag, log if fresh["log"] else gr.skip(), now["weights"] if fresh["weights"] else gr.skip(),
                *(control_updates(controls) if fresh["controls"] else [gr.skip()] * 4), now]

    # --- after a failure --------------------------------------------------------------------------------

    def _wire_diagnosis(self) -> None:
        v, g = self.v, self.guard
        outputs = [v.strip.outcome, v.strip.status, *self.fill_outputs]
        g.on(v.diagnosis.apply.click, self.apply_diagnosis, [v.diagnosis.changes], outputs, "apply_and_relaunch")
        g.on(v.diagnosis.roll_back.click, lambda: self.relaunched(self.console.roll_back()), [], outputs, "roll_back")

    def apply_diagnosis(self, choice: str | None) -> list[Any]:
        diagnosis = self.console.diagnosis()
        if diagnosis is None or not diagnosis.changes:
            return self.relaunched(Outcome("error", "There is no failure with a suggested change to apply."))
        index = int(choice) if choice and choice.isdigit() and int(choice) < len(diagnosis.changes) else 0
        return self.relaunched(self.console.apply_and_relaunch(diagnosis.changes[index]))

    def relaunched(self, outcome: Outcome) -> list[Any]:
        return [outcome_html(outcome), self.status(), *self.fill_or_keep(outcome)]

    # --- logs ---------------------------------------------------------------------------------------------

    def log_text(self, contains: str | None, problems_only: bool, polling: bool = False) -> str:
        lines = filter_log(self.services.supervisor.log_tail(LOG_SCAN, polling=bool(polling)), contains or "",
                           bool(problems_only), LOG_LINES)
        if lines:
            return "\n".join(lines)
        return "(no matching lines)" if contains or problems_only else "(no engine log yet)"

    def _wire_logs(self) -> None:
        v, g = self.v, self.guard
        g.on([v.logs.contains.input, v.logs.problems_only.input, v.logs.polling.input], self.log_text,
             [v.logs.contains, v.logs.problems_only, v.logs.polling], v.logs.tail, "log", trigger_mode="always_last",
             show_progress="hidden")
        g.on(v.logs.download.click, self.download_log, [], [v.logs.file, v.strip.outcome],
             "download_log").then(None, js=DOWNLOAD_JS)
        v.log_tab.select(None, js=LOG_TAIL_JS)  # browser-only: no handler on the server

    def download_log(self) -> list[Any]:
        run_dir = self.console.snapshot().run_dir
        if run_dir is None or not (run_dir / LOG_FILE_NAME).is_file():
            return [gr.skip(), outcome_html(Outcome("info", "No engine log yet: nothing was launched from here."))]
        copy = export_log(run_dir / LOG_FILE_NAME, run_dir.name, secrets=(self.services.link.api_key or "",))
        return [gr.File(value=str(copy), visible=True), ""]

    # --- hardware and model -------------------------------------------------------------------------------

    def _wire_summary(self) -> None:
        v, g = self.v, self.guard
        outputs = [v.summary.hardware, v.summary.model]
        g.on(v.hardware_tab.select, lambda *a: self.summary(False, *a), v.form.inputs, outputs, "hardware",
             show_progress="minimal")
        g.on(v.summary.redetect.click, lambda *a: self.summary(True, *a), v.form.inputs, outputs, "redetect")

    def summary(self, refresh: bool, kind: str, python: str, *fields: FormValue) -> list[Any]:
        review = self.review_of(kind, python, fields)
        report = self.console.survey.report(review.engine.python, refresh=refresh)
        return [render_hardware(report), render_model(self.console.shapes.read(review.settings))]

    # --- profiles -----------------------------------------------------------------------------------------

    def _wire_profiles(self) -> None:
        v, g, p = self.v, self.guard, self.v.profiles
        listed = [p.outcome, *self.choice_outputs]
        g.on(p.save.click, self.save_profile, [p.name, p.start_with_app, *p.restart.inputs, *v.form.inputs], listed,
             "profile_save")
        g.on(p.delete.click, lambda name: self.listed(self.console.delete_profile(name or "")), [p.chosen], listed,
             "profile_delete")
        g.on(p.make_startup.click, lambda name: self.listed(self.console.set_startup_profile(name or "")),
             [p.chosen], listed, "profile_startup")
        g.on(p.no_startup.click, lambda: self.listed(self.console.set_startup_profile(None)), [], listed,
             "profile_no_startup")
        g.on(p.load.click, lambda name: self.loaded(self.console.load_profile(name or "")), [p.chosen],
             [p.outcome, *self.fill_outputs, *p.restart.inputs], "profile_load")
        g.on(p.restart.apply.click, self.apply_restart_policy, p.restart.inputs, [p.outcome, v.strip.status],
             "restart_policy")

    def save_profile(self, name: str, start_with_app: bool, enabled: bool, attempts: float, window_min: float,
                     delay_s: float, kind: str, python: str, *fields: FormValue) -> list[Any]:
        reading = read_form(fields)
        if not reading.ok:
            return self.listed(Outcome("error", "Not saved: some fields cannot be read", reading.errors))
        try:
            restart = read_restart_form(enabled, attempts, window_min, delay_s)
        except RestartPolicyError as exc:
            return self.listed(Outcome("error", f"Not saved: {exc}"))
        return self.listed(self.console.save_profile(name or "", reading.settings, read_engine(kind, python),
                                                     bool(start_with_app), restart))

    def apply_restart_policy(self, enabled: bool, attempts: float, window_min: float, delay_s: float) -> list[Any]:
        try:
            outcome = self.console.set_restart_policy(read_restart_form(enabled, attempts, window_min, delay_s))
        except RestartPolicyError as exc:
            outcome = Outcome("error", f"Not applied: {exc}")
        return [outcome_html(outcome), self.status()]

    def listed(self, outcome: Outcome) -> list[Any]:
        return [outcome_html(outcome), *self.choices()]

    def loaded(self, outcome: Outcome) -> list[Any]:
        restart = restart_form_values(outcome.restart) if outcome.restart else [gr.skip()] * 4
        return [outcome_html(outcome), *self.fill_or_keep(outcome), *restart]

    # --- model weights ------------------------------------------------------------------------------------

    def _wire_weights(self) -> None:
        v, g, w = self.v, self.guard, self.v.weights
        g.on(w.fetch_config.click, self.fetch_config, [*w.inputs, *v.form.inputs],
             [w.outcome, *self.fill_outputs], "weights_config")
        g.on(w.plan.click, self.plan_weights, w.inputs, w.outcome, "weights_plan")
        g.on(w.download.click, lambda *a: outcome_html(self.desk.start(read_weights_form(*a))), w.inputs, w.outcome,
             "weights_download")
        g.on(w.cancel.click, lambda: outcome_html(self.desk.cancel()), [], w.outcome, "weights_cancel")
        g.on(w.verify.click, lambda dest: outcome_html(self.desk.verify(dest or "")), [w.dest_dir], w.outcome,
             "weights_verify")

    def fetch_config(self, repo: str, dest: str, rev: str, endpoint: str, token: str, kind: str, python: str,
                     *fields: FormValue) -> list[Any]:
        outcome, folder = self.desk.fetch_config(read_weights_form(repo, dest, rev, endpoint, token))
        if folder is None:
            return [outcome_html(outcome), *[gr.skip()] * len(self.fill_outputs)]
        current = self.review_of(kind, python, fields)
        path = str(folder)
        return [outcome_html(outcome), *self.fill(current.settings.replace(model_path=path, kt_weight_path=path),
                                                  current.engine)]

    def plan_weights(self, *values: str) -> str:
        outcome, plan = self.desk.plan(read_weights_form(*values))
        return outcome_html(outcome) + (render_plan_files(plan) if plan is not None else "")

    # --- attach -------------------------------------------------------------------------------------------

    def _wire_attach(self) -> None:
        a = self.v.attach
        self.guard.on(a.attach.click, lambda url, key: [outcome_html(self.console.attach(url or "", key or "")),
                                                        self.status()],
                      [a.url, a.api_key], [a.outcome, self.v.strip.status], "attach")

