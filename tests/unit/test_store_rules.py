"""The store's pure rules: an owner's namespaces, filters on opened values, the
``store`` section of ``langgraph.json``, a custom auth's filter on a search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from waystone._store.configured import read_config, ttl_config
from waystone._store.owned import owned, owned_op, owner_label, shown
from waystone._store.sealed import matches
from waystone.errors import BadInput
from waystone.web.replies import HttpError
from waystone.web.store import with_auth


def test_an_owners_namespace_gets_its_label_and_loses_it_when_shown() -> None:
    label = owner_label("ana@example.com")
    assert label.startswith("owner:") and label[6:].isalpha() and "ana" not in label
    assert owned(("memories",), "ana@example.com") == (label, "memories")
    assert shown((label, "memories"), "ana@example.com") == ("memories",)
    assert owned(("memories",), None) == ("memories",) == shown(("memories",), None)
    assert owner_label("ana") != owner_label("bob")


def test_every_op_of_an_owner_is_confined_to_its_namespaces() -> None:
    label = owner_label("ana")
    assert owned_op(GetOp(("m",), "k"), "ana") == GetOp((label, "m"), "k")
    assert owned_op(PutOp(("m",), "k", {"a": 1}), "ana") == PutOp((label, "m"), "k", {"a": 1})
    assert owned_op(SearchOp((), limit=3), "ana") == SearchOp((label,), limit=3)
    listed = owned_op(
        ListNamespacesOp(
            (MatchCondition("prefix", ("m",)), MatchCondition("suffix", ("x",))), max_depth=2
        ),
        "ana",
    )
    assert listed == ListNamespacesOp(
        (MatchCondition("prefix", (label, "m")), MatchCondition("suffix", ("x",))), max_depth=3
    )
    unfiltered = owned_op(ListNamespacesOp(None), "ana")
    assert unfiltered == ListNamespacesOp((MatchCondition("prefix", (label,)),))
    assert owned_op(GetOp(("m",), "k"), None) == GetOp(("m",), "k")


def test_a_filter_holds_as_postgres_store_filters_in_sql() -> None:
    value = {"tag": "x", "n": 7, "nested": {"a": 1}}
    assert matches(value, {"tag": "x"})
    assert not matches(value, {"tag": "y"})
    assert matches(value, {"nested": {"a": 1}})  # an object is compared whole
    assert matches(value, {"n": {"$gt": 3, "$lte": 7}})
    assert not matches(value, {"n": {"$lt": 7}})
    assert matches(value, {"n": {"$ne": 8}, "tag": {"$eq": "x"}})
    assert not matches(value, {"missing": {"$gt": 1}})
    with pytest.raises(ValueError, match="Unsupported operator"):
        matches(value, {"n": {"$in": [7]}})


def test_the_store_section_of_langgraph_json_is_read_or_refused(tmp_path: Path) -> None:
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {}}))
    assert read_config(config).index is None and read_config(None).index is None
    store = {"index": {"embed": "./e.py:f", "dims": 3}, "ttl": {"default_ttl": 5}}
    config.write_text(json.dumps({"graphs": {}, "store": store}))
    read = read_config(config)
    assert read.index == store["index"] and read.base == tmp_path
    assert ttl_config(read) == {"default_ttl": 5, "omit_expired": True}
    assert read.sweep_seconds == 300
    for wrong, said in [
        ({"index": {"embed": "x:y"}}, "needs"),
        ({"ttl": {"forever": True}}, "may hold"),
        ({"path": "./s.py:store"}, "not supported"),
        ([], "must be an object"),
    ]:
        config.write_text(json.dumps({"graphs": {}, "store": wrong}))
        with pytest.raises(BadInput, match=said):
            read_config(config)


def test_a_store_handlers_filter_is_added_to_the_callers() -> None:
    assert with_auth(None, None) == {}
    assert with_auth({"tag": "x"}, {"owner": "u1"}) == {"tag": "x", "owner": "u1"}
    assert with_auth({"owner": "u1"}, {"owner": "u1"}) == {"owner": "u1"}
    assert with_auth({"owner": "u2"}, {"owner": "u1"}) is None  # no item passes both
    with pytest.raises(HttpError) as refused:
        with_auth(None, {"$or": [{"a": 1}, {"b": 2}]})
    assert refused.value.status == 500
