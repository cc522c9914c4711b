"""The picture of a graph on a run's page: nodes in rows by their distance from
``__start__``, ``__end__`` last, an edge back to an earlier row curved, and the nodes the
run is at marked."""

from __future__ import annotations

from waystone.web.picture import END, START, layout, rows


def test_rows_follow_the_edges_with_end_last() -> None:
    nodes = [START, "a", "b", "c", "lonely", END]
    edges = [(START, "a"), ("a", "b"), ("a", END), ("b", "c"), ("c", "a")]
    assert rows(nodes, edges) == [[START], ["a"], ["b"], ["c"], ["lonely"], [END]]


def test_the_layout_marks_the_current_node_and_curves_a_loop() -> None:
    labels = {START: START, "draft": "draft", "ask": "ask", END: END}
    edges = [(START, "draft", False), ("draft", "ask", False), ("ask", "draft", True)]
    picture = layout(labels, edges + [("ask", END, False)], current=["ask"])
    boxes = {b.id: b for b in picture.boxes}
    assert [b.id for b in picture.boxes if b.current] == ["ask"] and picture.current == ("ask",)
    assert boxes[START].y < boxes["draft"].y < boxes["ask"].y < boxes[END].y
    arrows = {(a.source, a.target): a for a in picture.arrows}
    assert arrows[("draft", "ask")].path.startswith("M") and " L" in arrows[("draft", "ask")].path
    assert " C" in arrows[("ask", "draft")].path and arrows[("ask", "draft")].conditional
    for b in picture.boxes:  # everything inside the picture
        assert b.x >= 0 and b.x + b.width <= picture.width and b.y + b.height <= picture.height
