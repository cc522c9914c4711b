"""One sequence of official-client calls against a server that loads
:mod:`tests.support.auth_example` (``langgraph dev`` or ``waystone api``): two users and
callers with no token or a wrong one, on threads, runs, assistants and crons. Each answer
is what a client can rely on: a status code, or the threads it sees (named by who made
them, as ids differ between servers), or a run's reply."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.chat import say, texts
from waystone.web.shapes import assistant_id

TOKENS = {"alice": "user1-token", "bob": "user2-token", "mallory": "no-such-token"}
Seen = list[tuple[str, Any]]


@contextmanager
def clients(url: str) -> Iterator[dict[str, SyncLangGraphClient]]:
    """A client per caller: each user's bearer token, a wrong one, and none."""
    with ExitStack() as stack:
        made = {
            who: stack.enter_context(
                get_sync_client(url=url, api_key=None, headers={"Authorization": f"Bearer {t}"})
            )
            for who, t in TOKENS.items()
        }
        made["nobody"] = stack.enter_context(get_sync_client(url=url, api_key=None))
        yield made


def outcome(call: Callable[[], Any]) -> Any:
    """``call``'s answer, or its status code when refused."""
    try:
        return call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code


def calls(url: str) -> Seen:
    with clients(url) as c:
        return _calls(c)


def _calls(c: dict[str, SyncLangGraphClient]) -> Seen:
    alice, bob = c["alice"], c["bob"]
    seen: Seen = []
    names: dict[str, str] = {}

    def shown(found: Any) -> Any:
        if isinstance(found, int):
            return found
        return sorted(names.get(t["thread_id"], "other") for t in found)

    info = outcome(lambda: c["nobody"].http.get("/info"))
    seen.append(("no token: info", info if isinstance(info, int) else "answered"))
    seen.append(("no token: search", outcome(lambda: c["nobody"].threads.search())))
    seen.append(("wrong token: search", outcome(lambda: c["mallory"].threads.search())))
    seen.append(("wrong token: create", outcome(lambda: c["mallory"].threads.create())))
    mine = alice.threads.create(metadata={"team": "a"})
    names[mine["thread_id"]] = "alice's"
    seen.append(("alice creates: metadata", mine["metadata"]))
    theirs = bob.threads.create()
    names[theirs["thread_id"]] = "bob's"
    seen.append(("bob creates: metadata", theirs["metadata"]))
    a, b = mine["thread_id"], theirs["thread_id"]
    seen.append(("alice gets hers", outcome(lambda: alice.threads.get(a)["metadata"])))
    seen.append(("bob gets alice's", outcome(lambda: bob.threads.get(a))))
    seen.append(("alice searches", shown(outcome(lambda: alice.threads.search()))))
    seen.append(("bob searches", shown(outcome(lambda: bob.threads.search()))))
    by_team = outcome(lambda: bob.threads.search(metadata={"team": "a"}))
    seen.append(("bob searches alice's team", shown(by_team)))
    patched = outcome(lambda: bob.threads.update(a, metadata={"team": "b"}))
    seen.append(("bob updates alice's", patched if isinstance(patched, int) else "updated"))
    updated = outcome(lambda: alice.threads.update(a, metadata={"n": 1})["metadata"])
    seen.append(("alice updates hers", updated))
    seen.append(("alice's after updates", alice.threads.get(a)["metadata"]))
    seen.append(("bob copies alice's", outcome(lambda: bob.threads.copy(a))))
    copied = outcome(lambda: alice.threads.copy(a)["metadata"])
    seen.append(("alice copies hers: metadata", copied))
    for if_exists in ("raise", "do_nothing"):
        taken = outcome(lambda e=if_exists: bob.threads.create(thread_id=a, if_exists=e))
        seen.append((f"bob takes alice's id ({if_exists})", _status(taken)))
    seen += _runs(c, a, b)
    seen += _assistants_and_crons(c, a)
    seen.append(("bob deletes alice's", outcome(lambda: bob.threads.delete(a))))
    seen.append(("alice deletes hers", outcome(lambda: alice.threads.delete(a))))
    seen.append(("alice gets hers, deleted", outcome(lambda: alice.threads.get(a))))
    return [(what, _stable(answer)) for what, answer in seen]


def _runs(c: dict[str, SyncLangGraphClient], a: str, b: str) -> Seen:
    alice, bob = c["alice"], c["bob"]
    seen: Seen = []
    done = alice.runs.wait(a, "agent", input=say("hi"))
    seen.append(("alice runs on hers", texts(done)))
    seen.append(("bob runs on alice's", outcome(lambda: bob.runs.wait(a, "agent", input=say("x")))))
    seen.append(
        (
            "bob starts a run on alice's",
            outcome(lambda: bob.runs.create(a, "agent", input=say("x"))),
        )
    )
    streamed = outcome(lambda: list(bob.runs.stream(a, "agent", input=say("x"))))
    seen.append(("bob streams on alice's", streamed if isinstance(streamed, int) else "streamed"))
    [run] = alice.runs.list(a)
    seen.append(("alice lists her runs", len(alice.runs.list(a))))
    seen.append(("bob lists alice's runs", outcome(lambda: bob.runs.list(a))))
    seen.append(("bob gets alice's run", outcome(lambda: bob.runs.get(a, run["run_id"]))))
    seen.append(("bob joins alice's run", outcome(lambda: bob.runs.join(a, run["run_id"]))))
    joined = outcome(lambda: list(bob.runs.join_stream(a, run["run_id"])))
    seen.append(("bob joins alice's run's stream", _status(joined)))
    seen.append(("bob cancels alice's run", outcome(lambda: bob.runs.cancel(a, run["run_id"]))))
    seen.append(("bob reads alice's state", outcome(lambda: bob.threads.get_state(a))))
    seen.append(("bob reads alice's history", outcome(lambda: bob.threads.get_history(a))))
    state = outcome(lambda: bob.threads.update_state(a, say("x")))
    seen.append(("bob updates alice's state", state if isinstance(state, int) else "updated"))
    seen.append(("alice's state", texts(alice.threads.get_state(a)["values"])))
    new = "00000000-0000-4000-8000-0000000000b1"
    made = bob.runs.wait(new, "agent", input=say("yo"), if_not_exists="create")
    seen.append(("bob's run makes a thread", texts(made)))
    seen.append(("bob's run's thread: owner", bob.threads.get(new)["metadata"].get("owner")))
    seen.append(("alice gets bob's run's thread", outcome(lambda: alice.threads.get(new))))
    stateless = outcome(lambda: alice.runs.wait(None, "agent", input=say("solo")))
    seen.append(("alice runs without a thread", texts(stateless)))
    seen.append(("bob runs on his", texts(bob.runs.wait(b, "agent", input=say("mine")))))
    return seen


def _assistants_and_crons(c: dict[str, SyncLangGraphClient], a: str) -> Seen:
    alice, bob = c["alice"], c["bob"]
    seen: Seen = []
    found = outcome(lambda: alice.assistants.search())
    seen.append(("alice searches assistants", found if isinstance(found, int) else len(found)))
    got = outcome(lambda: alice.assistants.get(assistant_id("agent")))
    seen.append(("alice gets the assistant", got if isinstance(got, int) else got["graph_id"]))
    yearly = {"schedule": "0 0 1 1 *", "input": say("tick")}
    cron = outcome(lambda: alice.crons.create_for_thread(a, "agent", **yearly))
    seen.append(("alice makes a cron", cron if isinstance(cron, int) else "made"))
    seen.append(("alice searches crons", _count(outcome(lambda: alice.crons.search()))))
    seen.append(("bob searches crons", _count(outcome(lambda: bob.crons.search()))))
    if isinstance(cron, dict):
        cron_id = cron["cron_id"]
        seen.append(("bob deletes alice's cron", outcome(lambda: bob.crons.delete(cron_id))))
        seen.append(("alice deletes her cron", outcome(lambda: alice.crons.delete(cron_id))))
    return seen


def _status(answer: Any) -> Any:
    """A status code as it is, any answer as ``"answered"``."""
    return answer if isinstance(answer, int) else "answered"


def _count(found: Any) -> Any:
    return found if isinstance(found, int) else len(found)


def _stable(answer: Any) -> Any:
    """An answer without what differs by nature (times, ids): a dict's keys sorted."""
    if isinstance(answer, dict):
        return {k: _stable(answer[k]) for k in sorted(answer)}
    return answer
