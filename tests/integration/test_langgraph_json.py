"""A langgraph.json (the file ``langgraph dev`` reads) names the graphs a process drives,
as WAYSTONE_GRAPHS does: from the current directory, or the file WAYSTONE_LANGGRAPH_JSON
names; a graph given by a file path is loaded from beside the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli
from waystone import BadInput, Runtime, Settings
from waystone._runtime.graphs import graphs_from_env

GRAPH_FILE = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from helper import shout  # a module beside the file: the project's own


class State(TypedDict, total=False):
    text: str


def loud(state: State) -> dict:
    return {"text": shout(state["text"])}


builder = StateGraph(State)
builder.add_node("loud", loud)
builder.add_edge(START, "loud")
builder.add_edge("loud", END)
"""


def project(root: Path) -> Path:
    (root / "agent").mkdir()
    (root / "agent" / "graph.py").write_text(GRAPH_FILE)
    (root / "helper.py").write_text("def shout(text):\n    return text.upper() + '!'\n")
    config = root / "langgraph.json"
    config.write_text(
        json.dumps({"dependencies": ["."], "graphs": {"loud": "./agent/graph.py:builder"}})
    )
    return config


def test_a_langgraph_json_in_the_current_directory_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WAYSTONE_GRAPHS", raising=False)
    assert list(graphs_from_env()) == ["loud"]
    with Runtime(Settings(database_url=database_url)) as rt:
        assert "loud" in rt.names()
        done = rt.invoke("loud", {"text": "hi"})
        assert done.state == "done"
        assert rt.graph("loud").get_state(rt.config(done.thread_id)).values == {"text": "HI!"}


def test_the_cli_and_a_worker_drive_a_langgraph_json_graph(cli: Cli, tmp_path: Path) -> None:
    env = {"WAYSTONE_LANGGRAPH_JSON": str(project(tmp_path))}
    started = cli("start", "--graph", "loud", "--input", '{"text": "hey"}', "--json", env=env)
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    worker = cli("worker", "--until-idle", env=env)
    assert worker.returncode == 0, worker.stderr
    status = cli("status", thread_id, "--json", env=env)
    assert json.loads(status.stdout)["state"] == "done"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json", "cannot read it as JSON"),
        ('{"graphs": ["a"]}', '"graphs"'),
        ('{"graphs": {"g": "./nowhere.py:graph"}}', "no Python file"),
        ('{"graphs": {"g": "no-colon"}}', "path/to/file.py:attribute"),
    ],
)
def test_a_bad_langgraph_json_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, said: str
) -> None:
    (tmp_path / "langgraph.json").write_text(content)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput, match=said.replace('"', ".").replace("(", ".")):
        graphs_from_env()


def test_a_name_in_both_places_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = project(tmp_path)
    monkeypatch.setenv("WAYSTONE_LANGGRAPH_JSON", str(config))
    monkeypatch.setenv("WAYSTONE_GRAPHS", "loud=tests.support.graphs:chat_graph")
    with pytest.raises(BadInput, match="one name"):
        graphs_from_env()
