"""The reference documentation's custom ``Auth`` example ("resource authorization"): a
token table, an ``authenticate`` handler, a default handler that tags every resource
with its owner and filters by it, thread handlers of their own, assistants refused and a
store handler; and a chat graph that tells who asked. ``langgraph.json`` names them as
``"auth": {"path": "<this file>:auth"}`` and ``"graphs": {"agent": "<this file>:graph"}``,
the same on ``langgraph dev`` and on Waystone."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph_sdk import Auth

VALID_TOKENS = {
    "user1-token": {"id": "user1", "name": "Alice"},
    "user2-token": {"id": "user2", "name": "Bob"},
}

auth = Auth()


@auth.authenticate
async def get_current_user(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The caller, by the bearer token of its Authorization header."""
    if not authorization:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Missing token")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or token not in VALID_TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    user = VALID_TOKENS[token]
    return {"identity": user["id"], "display_name": user["name"], "permissions": ["chat"]}


@auth.on
async def add_owner(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    """Every resource not handled below: tagged with its owner, and seen by it only."""
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(filters)
    return filters


@auth.on.threads.create
async def on_thread_create(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    metadata = value.setdefault("metadata", {})
    metadata["owner"] = ctx.user.identity


@auth.on.threads.read
async def on_thread_read(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, Any]:
    return {"owner": {"$eq": ctx.user.identity}}


@auth.on.assistants.create
async def on_assistant_create(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    raise Auth.exceptions.HTTPException(
        status_code=403, detail="User lacks the required permissions."
    )


@auth.on.store()
async def authorize_store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    namespace = tuple(value["namespace"])
    assert namespace[:1] == (ctx.user.identity,), "Not authorized"


def reply(state: MessagesState, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
    """An echo that says whose run this is, as the server handed it to the graph: in
    ``runtime.server_info`` and in the config's ``configurable``."""
    configurable = config["configurable"]
    info = runtime.server_info
    who = info.user.identity if info is not None and info.user is not None else None
    name = configurable["langgraph_auth_user"]["display_name"]
    said = state["messages"][-1].content
    return {
        "messages": [
            AIMessage(f"{said} for {who} ({name}, {configurable['langgraph_auth_user_id']})")
        ]
    }


_builder = StateGraph(MessagesState)
_builder.add_node("reply", reply)
_builder.add_edge(START, "reply")
_builder.add_edge("reply", END)
graph = _builder.compile()
