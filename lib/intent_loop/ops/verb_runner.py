"""What each `intent:` verb does to a plan: one method per management verb, found through the
explicit MANAGE table; every other verb records a claim. ops/apply_commands.py runs them as one
locked mutation."""
import time

from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import continuity, private_mode, tasks
from intent_loop.intent.claim_text import build_claim
from intent_loop.intent.claim_verbs import CLAIM_VERBS, verb_for_claim
from intent_loop.intent.claims import short_id, split_prefix


class VerbRunner:
    """Applies commands to a Plan; each command either adds drafts or becomes a rejection."""

    def __init__(self, plan, paths, *, session_hash, source_ref, request_id, receipt):
        self.plan = plan
        self.paths = paths
        self.session_hash = session_hash
        self.source_ref = source_ref
        self.request_id = request_id
        self.receipt = receipt
        self.control = private_mode.read_control(paths, session_hash)
        self.control_change = None  # ("claim", task_id) | ("release", task_id)
        self.started = 0
        # Decided once, on the locked state the plan starts from: the compare-and-set of a join.
        self.place = continuity.Place(plan.state, paths, session_hash)

    @property
    def linked_id(self):
        return self.plan.state["sessions"].get(self.session_hash)

    @property
    def task_id(self):
        """The session's own task, else the current task it follows (joined by its first write)."""
        linked = self.linked_id
        return linked if linked is not None else self.place.task_id

    def _join(self, command):
        """An unlinked session's first writing command links it to the current task it follows."""
        if self.linked_id is not None or self.place.task_id is None:
            return
        task_id = self.place.task_id
        tasks.link_session(self.plan, task_id=task_id, session_hash=self.session_hash)
        task = self.plan.task(task_id)
        from intent_loop.intent.views import task_label

        self.receipt.add(command, "joined", [task_id], label=task_label(task),
                         ages=continuity.task_ages(task, self.now_epoch))

    @property
    def now_epoch(self):
        from intent_loop.base.timestamps import parse_epoch

        return parse_epoch(self.plan.now) or time.time()

    def _not_followed(self):
        """A claim typed in an unlinked session whose current task is private or off: not recorded."""
        code = ErrorCode.TASK_PRIVATE if self.place.current_standing == "private" else ErrorCode.TASK_OFF
        return IntentLoopError(code, continuity.not_followed_reason(self.plan.state, self.paths, self.place))

    def run(self, command):
        """One command, by the table of management verbs below; every other verb is a claim (the
        parser let through only the verbs of intent/claim_verbs.py, and a test pins that the table
        holds exactly MANAGE_VERBS, so a misspelt handler cannot quietly record a claim)."""
        handler = self.MANAGE.get(command.verb, VerbRunner._claim)
        try:
            handler(self, command)
        except IntentLoopError as exc:
            self.receipt.reject(command.line, command.verb, exc.code, exc.message)

    def _new_task_id(self):
        self.started += 1
        return tasks.derived_task_id(self.paths.project_id, f"{self.request_id}#{self.started}")

    def is_private(self):
        return private_mode.is_private_here(self.paths, self.session_hash, self.plan.state["tasks"].get(self.task_id))

    def run_all(self, commands):
        """Run the commands in order. A run of claim lines that starts this session's task goes into
        that one `task_started` (up to 12 initial claims, the rest as `claim_added` of the same
        request: tasks.start_task), the shape seed 000 gives a task started with several claims."""
        index = 0
        while index < len(commands):
            if commands[index].verb in CLAIM_VERBS and self.task_id is None and self.place.current is None \
                    and not self.is_private():
                index = self._start_with_claims(commands, index)
            else:
                self.run(commands[index])
                index += 1

    def _start_with_claims(self, commands, index):
        end = index
        while end < len(commands) and commands[end].verb in CLAIM_VERBS:
            end += 1
        started = []  # (command, claim) of every line whose claim could be built
        for command in commands[index:end]:
            try:
                started.append((command, tasks.user_claim(self.plan, statement=command.statement,
                                                          facets=[command.facet], scope=command.scope,
                                                          source_ref=self.source_ref)))
            except IntentLoopError as exc:
                self.receipt.reject(command.line, command.verb, exc.code, exc.message)
        if started:
            tasks.start_task(self.plan, task_id=self._new_task_id(), session_hash=self.session_hash,
                             initial_claims=[claim for _command, claim in started], spill=True)
            for command, claim in started:
                self._recorded(command, claim)
        return end

    def _claim(self, command):
        if self.is_private():
            self.receipt.add(command, "acknowledged")
            return
        if self.task_id is None and self.place.current is not None:
            raise self._not_followed()
        claim = tasks.user_claim(self.plan, statement=command.statement, facets=[command.facet],
                                 scope=command.scope, source_ref=self.source_ref)
        if self.task_id is None:
            tasks.start_task(self.plan, task_id=self._new_task_id(), session_hash=self.session_hash,
                             initial_claims=[claim])
        else:
            self._join(command)
            earlier_goals = continuity.goals(self.plan.task(self.task_id)) if command.verb == "goal" else []
            tasks.add_claim(self.plan, task_id=self.task_id, claim=claim)
            if earlier_goals:
                self._recorded(command, claim)
                first = earlier_goals[0]["claim"]["claim_id"]
                self.receipt.add(command, "goals", [first], count=len(earlier_goals) + 1)
                return
        self._recorded(command, claim)

    def _recorded(self, command, claim):
        from intent_loop.ops.enforcement_words import STRENGTH_VERBS, rule_strength

        strength = rule_strength(command.verb, claim["statement"], host=self.plan.host) \
            if command.verb in STRENGTH_VERBS else ""
        self.receipt.add(command, "recorded", [short_id(claim["claim_id"])], strength=strength)

    def _show(self, command):
        self.receipt.show_view = True

    def _help(self, command):
        self.receipt.help = True

    def _new(self, command):
        if self.control is not None:
            self.control_change = ("release", self.control["task_id"])
        task_id = tasks.start_task(self.plan, task_id=self._new_task_id(), label=command.arg,
                                   session_hash=self.session_hash)
        self.receipt.add(command, "started", [task_id])

    def _resume(self, command):
        """`intent: resume`: link to the current task; `intent: resume <id>`: to that task, which the
        link makes current (state.makes_current), so Guard publishes it in this same prompt."""
        state = self.plan.state
        if command.arg is None:
            target = continuity.current_task_id(state)
            if target is None:
                raise IntentLoopError(ErrorCode.NO_TASK, "this project has no task yet; `intent: goal ...` starts one")
        else:
            target = tasks.resolve_prefix(state["tasks"], command.arg, what="task", not_found=ErrorCode.TASK_NOT_FOUND,
                                          where="`intent-loop status`", min_length=4)
        own = self.control is not None and self.control.get("task_id") == target
        if not own and continuity.standing(state, self.paths, self.session_hash, target) == "private":
            earlier = continuity.newest_on_task(state, self.paths, besides=target)
            hint = f"`intent: resume {earlier[:8]}` continues task {earlier[:8]}, " if earlier else ""
            raise IntentLoopError(ErrorCode.TASK_PRIVATE, f"task {target[:8]} is private to another session and is "
                                                          f"never shown or joined here; {hint}`intent: new` starts one")
        if self.control is not None and not own:
            self.control_change = ("release", self.control["task_id"])
        was_current = continuity.current_task_id(state) == target
        tasks.link_session(self.plan, task_id=target, session_hash=self.session_hash, make_current=True)
        now = "" if was_current else ", now the workspace's current task"
        self.receipt.add(command, "continues", [target], now=now)

    def _linked_task(self):
        if self.task_id is None:
            raise IntentLoopError(ErrorCode.NO_TASK, "this session has no task yet; `intent: goal ...` starts one")
        return self.plan.task(self.task_id)

    def _drop(self, command):
        """A claim of this task, or an agent's open proposal: the user may drop either by its id."""
        self._refuse_in_private(command)
        claim_id, missing = None, None
        self._join(command)
        if self.task_id is not None:
            try:
                claim_id = tasks.resolve_claim(self.plan.task(self.task_id), command.arg, state=self.plan.state)
            except IntentLoopError as exc:
                if exc.code != ErrorCode.CLAIM_NOT_FOUND:
                    raise
                missing = exc
        proposal = self._open_proposal(command.arg)
        if proposal is not None and claim_id is not None:
            raise IntentLoopError(ErrorCode.AMBIGUOUS_ID, f"{command.arg} matches a claim and a proposal; "
                                                          "give more characters")
        if proposal is not None:
            return self._dismiss_one(command, proposal)
        if claim_id is None:
            raise missing or IntentLoopError(ErrorCode.NO_TASK, "this session has no task yet; "
                                                                "`intent: goal ...` starts one")
        tasks.invalidate_claim(self.plan, task_id=self.task_id, claim_id=claim_id)
        self.receipt.add(command, "dropped", [claim_id])

    def _open_proposal(self, prefix):
        proposals = {cid: c for cid, c in self.plan.state["candidates"].items()
                     if c["state"] == "open" and tasks.is_proposal(c)}
        if not any(cid.startswith(prefix) for cid in proposals):
            return None
        return tasks.resolve_candidate({"candidates": proposals}, prefix)

    def _candidates(self, command):
        """Every id of the line resolved first, so a bad one rejects the line before anything is planned."""
        if self.is_private():
            raise IntentLoopError(ErrorCode.TASK_PRIVATE, "this session is private; nothing is recorded until "
                                                          "`intent: on`")
        found = [tasks.resolve_candidate(self.plan.state, prefix) for prefix in command.arg.split()]
        return found

    def _confirm(self, command):
        """A confirmed claim joins this session's task, never the task the agent proposed it in: no
        sequence of MCP calls plus one confirmation moves what Guard enforces to another task."""
        self._refuse_in_private(command)
        found = self._candidates(command)
        if self.task_id is None:
            if self.place.current is not None:
                raise self._not_followed()
            raise IntentLoopError(ErrorCode.NO_TASK, "a confirmed claim joins this session's task, and it has none "
                                                     "yet; `intent: goal ...` starts one")
        self._join(command)
        ids = []
        for candidate in found:
            claim = tasks.confirm_candidate(self.plan, task_id=self.task_id, candidate_id=candidate["candidate_id"],
                                            source_ref=self.source_ref)
            ids += [candidate["candidate_id"], short_id(claim["claim_id"])]
        self.receipt.add(command, "confirmed", ids, task=self.task_id[:8])

    def _dismiss(self, command):
        self._refuse_in_private(command)
        for candidate in self._candidates(command):
            self._dismiss_one(command, candidate)

    def _dismiss_one(self, command, candidate):
        tasks.dismiss_candidate(self.plan, task_id=self.task_id, candidate_id=candidate["candidate_id"])
        what = "proposal" if tasks.is_proposal(candidate) else "candidate"
        self.receipt.add(command, "dismissed", [candidate["candidate_id"]], what=what)

    def _replace(self, command):
        self._refuse_in_private(command)
        self._join(command)
        task = self._linked_task()
        old_id = tasks.resolve_claim(task, command.arg, state=self.plan.state)
        old = task["claims"][old_id]["claim"]
        verb = verb_for_claim(old["statement"], old["facets"], old["scope"])
        facet, scope, statement = build_claim(verb, command.text)
        claim = tasks.user_claim(self.plan, statement=statement, facets=[facet], scope=scope,
                                 source_ref=self.source_ref)
        tasks.replace_claims(self.plan, task_id=task["task_id"], old_ids=[old_id], claim=claim)
        self.receipt.add(command, "replaced", [old_id, short_id(claim["claim_id"])])

    def _approve(self, command):
        """Grant a pending `ask:` rule: one replacement by an `allow:` claim of the same rule, in force for
        the rest of the task (Guard: requires_user -> allowed from the version this prompt publishes)."""
        self._refuse_in_private(command)
        self._join(command)
        task = self._linked_task()
        old_id = tasks.resolve_claim(task, command.arg, state=self.plan.state)
        prefix, rule = split_prefix(task["claims"][old_id]["claim"]["statement"])
        if prefix != "ask":
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"[{old_id[:8]}] is not an `ask:` claim; "
                                                              "`intent: approve` grants only a pending ask")
        facet, scope, statement = build_claim("allow", rule)
        claim = tasks.user_claim(self.plan, statement=statement, facets=[facet], scope=scope,
                                 source_ref=self.source_ref)
        tasks.replace_claims(self.plan, task_id=task["task_id"], old_ids=[old_id], claim=claim)
        self.receipt.add(command, "approved", [old_id, short_id(claim["claim_id"])], rule=rule)

    def _private(self, command):
        """Only this session goes private (issue 35 item 8): a private task of its own, never the
        workspace's current one (the reducer keeps it so), so the current task and what Guard
        enforces for every other session stay as they were."""
        if self.control is not None:  # private already: the same control, said again
            self.receipt.add(command, "private")
            return
        task_id = tasks.start_task(self.plan, task_id=self._new_task_id(), mode="private",
                                   session_hash=self.session_hash)
        self.control_change = ("claim", task_id)
        self.receipt.add(command, "private")

    def _refuse_in_private(self, command):
        """A verb aimed at the durable task, typed in a private session: nothing from it is recorded."""
        if self.control is not None:
            raise IntentLoopError(ErrorCode.TASK_PRIVATE, f"this session is private, so `intent: {command.verb}` "
                                                          "changes nothing; `intent: on` leaves private mode first")

    def _off(self, command):
        if self.control is not None:
            self.control_change = ("release", self.control["task_id"])
        if self.task_id is None and self.place.current_standing == "off":
            tasks.link_session(self.plan, task_id=self.place.current, session_hash=self.session_hash)
        self._join(command)
        if self.task_id is None:
            tasks.start_task(self.plan, task_id=self._new_task_id(), mode="off", session_hash=self.session_hash)
        else:
            tasks.set_mode(self.plan, task_id=self.task_id, mode="off")
        self.receipt.add(command, "off")

    def _on(self, command):
        if self.control is not None:  # leaving private mode: back to following the current task
            self.control_change = ("release", self.control["task_id"])
            private_task = self.plan.state["tasks"].get(self.control["task_id"])
            if private_task is not None and private_task["mode"] == "private" and self.place.current is not None \
                    and self.place.current != private_task["task_id"]:
                tasks.link_session(self.plan, task_id=self.place.current, session_hash=self.session_hash)
                self.receipt.add(command, "on")
                return
        if self.task_id is None and self.place.current_standing == "off":  # the current task, turned off
            tasks.link_session(self.plan, task_id=self.place.current, session_hash=self.session_hash)
        elif self.task_id is None and self.place.current is not None:
            raise self._not_followed()
        self._join(command)
        if self.task_id is None:
            raise IntentLoopError(ErrorCode.NO_TASK, "this session has no task to turn on")
        tasks.set_mode(self.plan, task_id=self.task_id, mode="on")
        self.receipt.add(command, "on")

    # {verb: handler} of every management verb (intent/claim_verbs.py MANAGE_VERBS)
    MANAGE = {"show": _show, "help": _help, "new": _new, "resume": _resume, "drop": _drop, "replace": _replace,
              "approve": _approve, "confirm": _confirm, "dismiss": _dismiss, "private": _private, "off": _off,
              "on": _on}

    def apply_control_change(self):
        """Private control CAS or removal, in the same locked transaction as the events."""
        if self.control_change is None:
            return
        action, task_id = self.control_change
        if action == "claim":
            private_mode.claim_control(self.paths, session_hash=self.session_hash, task_id=task_id)
        else:
            private_mode.release_control(self.paths, session_hash=self.session_hash, task_id=task_id)
