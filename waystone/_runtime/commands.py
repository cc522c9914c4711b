"""What a person or a program asks of a run: start one, fork, cancel, signal, resume,
requeue, approve or reject. Each checks its input before it writes anything, and writes
with the run's current lease token, so a process that still drives the run is fenced."""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from waystone._db.database import FENCE_SQL
from waystone._hints import command
from waystone._identifiers import check_identifier
from waystone._runs.registry import PastRun, Run
from waystone._runs.signals import APPROVAL, RESUME
from waystone._runs.status import past_status, status_of
from waystone._runtime import options as run_options
from waystone._runtime import rollback
from waystone._runtime.multitask import Multitask
from waystone.errors import BadInput, TransitionNotAllowed

if TYPE_CHECKING:
    from waystone._runs.status import RunStatus
    from waystone._runtime.catalog import Catalog
    from waystone._runtime.options import RunOptions
    from waystone._runtime.parts import Parts

REQUEUABLE = ("failed", "needs-human")


class Commands:
    def __init__(self, parts: Parts, catalog: Catalog) -> None:
        self._parts = parts
        self._catalog = catalog

    def new(
        self,
        agent: str,
        input: Any,
        goal: str | None,
        thread_id: str | None,
        key: str | None,
        forks: bool = False,
    ) -> tuple[str, str, Any]:
        """A new run's thread id, goal and input, checked (before anything is written, the
        vault's values included) and redacted; a run that ``forks`` from a checkpoint may
        have none (it goes on from there)."""
        parts = self._parts
        self._catalog.known(check_identifier("agent name", agent))
        if thread_id is not None:
            check_identifier("thread id", thread_id)
        if key is not None:
            check_identifier("start key", key)
        parts.refuse_personal_data("thread id", thread_id)
        parts.refuse_personal_data("start key", key)
        entry = self._catalog.entry(agent)  # a source that is no graph is refused here
        given = input if forks and input is None else entry.check_input(input)
        clean = parts.vault.redact(given)
        return (
            thread_id or f"{agent}-{uuid.uuid4().hex[:12]}",
            parts.vault.redact(goal) if goal else entry.describe(clean),
            clean,
        )

    def start(
        self,
        agent: str,
        input: Any,
        goal: str | None,
        thread_id: str | None,
        key: str | None,
        options: RunOptions | None = None,
    ) -> RunStatus | str:
        """A queued run's status; its thread id when the key's run exists and is current
        (its status is read by the caller). ``options`` are kept with a new run, in the
        transaction creating it."""
        forks = options is not None and options.checkpoint_id is not None
        thread_id, goal, clean = self.new(agent, input, goal, thread_id, key, forks)
        entry = self._catalog.entry(agent)
        if options is not None:
            options.check(set(entry.graph.nodes))
        # with options, one transaction: no worker can claim the run before they are kept
        within = self._parts.db.transaction() if options is not None else nullcontext(None)
        with within as conn:
            run, created = self._parts.registry.create(
                thread_id=thread_id,
                agent=agent,
                goal=goal,
                input=clean,
                start_key=key,
                next_run=not entry.one_run,
                conn=conn,
            )
            if created and options is not None and conn is not None and isinstance(run, Run):
                assert run.run_number is not None  # a created run's number is known
                run_options.store(self._parts, conn, thread_id, run.run_number, options)
        if not created and (run.agent, run.input) != (agent, clean):
            raise TransitionNotAllowed(
                f"start key {key!r} was used by run {run.thread_id} with another agent or "
                "input; a key starts one run (choose another key)"
            )
        if isinstance(run, PastRun):  # a later run followed it on its thread
            return past_status(run)
        if created:  # nothing has run yet: no step, no approval, no signal to read
            return status_of(run, None, None)
        return run.thread_id

    def check(self, agent: str, input: Any, options: RunOptions | None) -> None:
        """What :meth:`start_behind` refuses of a new run's agent, input and options,
        checked with nothing written (the vault's values included)."""
        self._catalog.known(check_identifier("agent name", agent))
        entry = self._catalog.entry(agent)
        entry.check_input(input)
        if options is not None and not entry.one_run:
            options.check(set(entry.graph.nodes))

    def start_behind(
        self,
        agent: str,
        input: Any,
        thread_id: str,
        strategy: str,
        by: str,
        options: RunOptions | None = None,
    ) -> RunStatus | str | int:
        """A new run on a thread whose run may not have ended, as ``strategy`` says (see
        :mod:`waystone._runtime.multitask`): its number when it is queued behind the thread's
        run or began after stopping it; begun as :meth:`start` begins one otherwise."""
        by = self._parts.who(by)
        forks = options is not None and options.checkpoint_id is not None
        thread_id, goal, clean = self.new(agent, input, None, thread_id, None, forks)
        entry = self._catalog.entry(agent)
        if entry.one_run:  # the preset's: one run per thread, ever
            return self.start(agent, input, None, thread_id, None, options)
        if options is not None:
            options.check(set(entry.graph.nodes))
            self._check_fork(thread_id, options.checkpoint_id)
        multitask = Multitask(self._parts)
        number = multitask.add(thread_id, agent, goal, clean, strategy, by, options)
        if number is None:
            return self.start(agent, input, None, thread_id, None, options)
        return number

    def _check_fork(self, thread_id: str, at: str | None) -> None:
        """:class:`BadInput` unless the thread has checkpoint ``at`` (when given)."""
        if at is None:
            return
        if self._parts.db.fetch_one("has_graph_checkpoint", thread_id=thread_id, at=at) is None:
            raise BadInput(
                f"thread {thread_id} has no checkpoint {at!r}: its history "
                f"(GET /threads/{thread_id}/history) lists the ones a run may begin from"
            )

    def create_claimed(
        self,
        agent: str,
        input: Any,
        goal: str | None,
        thread_id: str | None,
        key: str | None,
    ) -> Run | None:
        """A new run, created claimed by this process; ``None`` when its start key or
        thread id is taken."""
        parts = self._parts
        new_id, text, clean = self.new(agent, input, goal, thread_id, key)
        return parts.registry.create_claimed(
            thread_id=new_id,
            agent=agent,
            goal=text,
            input=clean,
            start_key=key,
            owner=parts.owner,
            lease_seconds=parts.settings.lease_seconds,
            next_run=not self._catalog.entry(agent).one_run,
        )

    def current_run_id(self, thread_id: str) -> str | None:
        return self._parts.registry.get(thread_id).run_id

    def fork(self, thread_id: str, at: str | None, new_thread_id: str | None, by: str) -> str:
        """The thread id of a new queued run copied from ``thread_id`` (see
        :meth:`waystone.runtime.Runtime.fork`)."""
        parts = self._parts
        by = parts.who(by)
        parts.refuse_personal_data("thread id", new_thread_id)
        source = parts.registry.get(thread_id)
        self._catalog.known(source.agent)
        if new_thread_id is not None:
            check_identifier("thread id", new_thread_id)
        if at is not None and not parts.db.fetch_one("has_checkpoint", thread_id=thread_id, at=at):
            raise BadInput(
                f"run {thread_id} has no checkpoint {at!r} (see {command('history', thread_id)})"
            )
        target = new_thread_id or f"{source.agent}-{uuid.uuid4().hex[:12]}"
        # one transaction: the fork becomes runnable (and a worker is woken) only with its
        # checkpoints, so no worker can start it from the beginning
        with parts.db.transaction() as conn:
            run, created = parts.registry.create(
                thread_id=target,
                agent=source.agent,
                goal=source.goal,
                input=source.input,
                actor=by,
                forked_from=thread_id,
                key_namespace=source.key_namespace or source.thread_id,
                reason=f"forked from {thread_id}" + (f" at {at}" if at else ""),
                conn=conn,
            )
            if not created or not isinstance(run, Run):
                raise TransitionNotAllowed(f"a run with thread id {target!r} already exists")
            conn.execute(FENCE_SQL, {"lease_token": str(run.lease_token)})
            parts.saver.copy_thread(thread_id, target, until=at, conn=conn)
        parts.registry.event(
            thread_id,
            "forked",
            f"forked into {target} by {by}",
            {"fork": target, "at": at},
            actor=by,
        )
        return target

    def cancel(self, thread_id: str, by: str, reason: str, roll_back: bool = False) -> None:
        """``roll_back``: the thread's state goes back to before the run, as a
        ``rollback`` multitask strategy takes it back (its records stay, as evidence)."""
        by = self._parts.who(by)
        parts, registry = self._parts, self._parts.registry
        run = registry.get(thread_id)
        if run.state == "done":
            raise TransitionNotAllowed(f"run {thread_id} is done; a done run cannot be cancelled")
        point = None
        if roll_back:
            if self._catalog.entry(run.agent).one_run:
                raise BadInput(f"{run.agent} keeps one run a thread: cancel it without rollback")
            point = rollback.before(parts.saver, thread_id, run.run_id or "")
        evidence = {"cancelled": True, "by": by, "reason": reason}
        with parts.db.transaction() as conn:
            registry.transition(
                thread_id,
                "failed",
                reason=f"cancelled by {by}: {reason}",
                evidence={**evidence, "multitask": "rollback"} if roll_back else evidence,
                from_states=("queued", "running", "waiting", "needs-human"),
                actor=by,
                bump=True,
                conn=conn,
            )
            if roll_back:
                rollback.restore(parts.db, conn, thread_id, point)

    def signal(
        self,
        thread_id: str,
        name: str,
        payload: dict[str, Any] | None,
        key: str | None,
        actor: str,
    ) -> None:
        parts = self._parts
        if not name or name in (APPROVAL, RESUME):
            raise BadInput(
                "a signal needs a name other than 'approval' (use `approve`) or 'resume' "
                "(use `resume`)"
            )
        parts.refuse_personal_data("signal name", name)
        parts.refuse_personal_data("signal key", key)
        actor = parts.who(actor)
        run = parts.registry.get(thread_id)
        if run.state == "done":
            raise TransitionNotAllowed(f"run {thread_id} is done; it takes no more signals")
        sig, created = parts.signals.record(
            thread_id, name, key or uuid.uuid4().hex, payload or {}, actor=actor
        )
        parts.registry.event(
            thread_id,
            "signal" if created else "signal-repeated",
            f"signal {name!r} received",
            {"signal_id": sig.id, "payload": payload or {}},
            actor=actor,
        )

    def resume(self, thread_id: str, value: Any, interrupt_id: str | None, by: str) -> None:
        parts = self._parts
        by = parts.who(by)
        run = parts.registry.get(thread_id)
        pending = [i["id"] for i in run.evidence.get("interrupts") or []]
        if run.state != "waiting" or run.waiting_for != RESUME or not pending:
            raise TransitionNotAllowed(
                f"run {thread_id} is {run.state} and waits for no value "
                f"(see {command('status', thread_id)})"
            )
        if interrupt_id is None:
            if len(pending) > 1:
                raise BadInput(
                    f"run {thread_id} waits on {len(pending)} interrupts; choose one with "
                    f"--interrupt-id ({', '.join(pending)})"
                )
            interrupt_id = pending[0]
        elif interrupt_id not in pending:
            raise BadInput(
                f"run {thread_id} has no pending interrupt {interrupt_id!r} "
                f"(pending: {', '.join(pending)})"
            )
        record = {"value": value}
        sig, created = parts.signals.record(thread_id, RESUME, interrupt_id, record, actor=by)
        if not created and sig.payload != parts.vault.redact(record):
            raise TransitionNotAllowed(
                f"another value is already recorded for interrupt {interrupt_id}; "
                "it is used when the run goes on"
            )
        parts.registry.event(
            thread_id,
            "resume" if created else "resume-repeated",
            f"a value for interrupt {interrupt_id}, given by {by}",
            {"interrupt_id": interrupt_id, "signal_id": sig.id},
            actor=by,
        )

    def requeue(self, thread_id: str, by: str, reason: str) -> None:
        parts = self._parts
        if not reason.strip():
            raise BadInput("requeue needs a reason: what was checked or fixed")
        by = parts.who(by)
        run = parts.registry.get(thread_id)
        if run.pruned_at is not None:
            raise TransitionNotAllowed(
                f"run {thread_id}'s checkpoints were pruned; fork or start it anew instead"
            )
        if run.state not in REQUEUABLE:
            raise TransitionNotAllowed(
                f"run {thread_id} is {run.state}; only failed or needs-human runs are requeued"
            )
        reopen = self._catalog.entry(run.agent).reopen
        if reopen is not None:  # a graph without one resumes where it stopped
            reopen(run)
        # A person's action on a run nobody holds: it writes with the run's current token,
        # so a zombie that still thinks it holds the run stays fenced out.
        with parts.db.transaction(fence=run.lease_token) as conn:
            reset = parts.db.execute(
                "reset_effects_for_requeue",
                conn=conn,
                thread_id=thread_id,
                note=f"requeued by {by}",
            )
            parts.signals.reopen_settled(thread_id, conn)  # the stop's, for the run to use
            parts.registry.transition(
                thread_id,
                "queued",
                reason=f"requeued by {by}: {reason}",
                evidence={"by": by, "effects_reset": [r["key"] for r in reset]},
                from_states=REQUEUABLE,
                actor=by,
                conn=conn,
            )

    def decide(
        self,
        thread_id: str,
        choice: str,
        by: str,
        comment: str | None,
        args: dict[str, Any] | None,
    ) -> None:
        """A person's decision (``approve``, ``edit``, ``reject``) on the approval a run
        waits on, recorded by its entry."""
        run = self._parts.registry.get(thread_id)
        decide = self._catalog.entry(self._catalog.known(run.agent)).decide
        if decide is None:
            answer = command("resume", thread_id, "--value", '"your answer"')
            raise TransitionNotAllowed(
                f"run {thread_id} is a run of the graph {run.agent}, which asks no approval; "
                f"answer its interrupt with {answer}"
            )
        decide(thread_id, choice, self._parts.who(by), comment, args)
