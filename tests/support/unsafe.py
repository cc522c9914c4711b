"""A tool with neither key deduplication nor a lookup: its unknown outcome must end in
``needs-human``. Loaded by the real CLI through ``WAYSTONE_AGENTS=tests.support.unsafe:build``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from waystone import AgentSpec, Check, CheckResult, Rule, RulePolicy, Tool
from waystone.effects import http
from waystone.examples.refund import payments_url
from waystone.preset.proposers import Proposal, ScriptedProposer


class FaxArgs(BaseModel):
    to: str
    body: str


def _send(args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
    # The tool does not pass its key: the provider cannot deduplicate it, nor can it be
    # looked up afterwards.
    receipt: dict[str, Any] = http.request(
        "POST",
        f"{payments_url()}/notifications",
        json={**args, "client_ref": "unsafe"},
        timeout=timeout,
    )
    return receipt


FAX = Tool(
    name="fax",
    description="send a fax",
    args_model=FaxArgs,
    apply=_send,
    confirm=lambda args, key, receipt, timeout: receipt,
)


def build() -> AgentSpec:
    return AgentSpec(
        name="unsafe",
        tools={"fax": FAX},
        policy=RulePolicy([Rule("allow", "faxes are allowed")]),
        proposer=ScriptedProposer(lambda i: [Proposal("fax", {"to": i["to"], "body": "hi"})]),
        checks=[Check("sent", lambda i, done: CheckResult(bool(done), "sent"))],
    )
