from __future__ import annotations

import math

import numpy as np
import pytest

from archive_mcp import Archive
from archive_mcp.search.confidence import Evidence, evidence, term_weights
from archive_mcp.search.lexical import Postings


def test_cover_is_the_idf_weighted_share_of_query_words_a_turn_holds_across_segments() -> None:
    first = Postings.build([["sqlite", "lock"], ["lock"]])
    second = Postings.build([["sqlite"], ["other"]])
    parts = [first, second]
    weights = term_weights(["sqlite", "lock", "postgr"], parts, 4)
    # df: sqlite 2, lock 2, postgr 0 (a word the workspace never saw weighs the most)
    assert weights["sqlite"] == pytest.approx(math.log(1 + 2.5 / 2.5))
    assert weights["postgr"] == pytest.approx(math.log(1 + 4.5 / 0.5))
    total = sum(weights.values())
    ev = evidence([0, 2, 3], weights, parts, [0, 2, 4], None, np.ones(4, bool))
    assert ev[0].terms == ["sqlite", "lock"]
    assert ev[0].cover == pytest.approx(round((weights["sqlite"] + weights["lock"]) / total, 4))
    assert ev[1].terms == ["sqlite"]  # doc 2 is the second segment's doc 0, not the first's
    assert ev[2].terms == [] and ev[2].cover == 0.0 and ev[2].lift == 0.0


def test_lift_is_the_cosine_above_the_workspace_background() -> None:
    sem = np.array([0.9, 0.1, 0.1, 0.1, -1.0], np.float32)  # the last has no vector
    parts = [Postings.build([["a"]] * 5)]
    ev = evidence([0, 4], {"a": 1.0}, parts, [0, 5], sem, np.ones(5, bool))
    valid = sem[:4]
    assert ev[0].lift == pytest.approx(round((0.9 - valid.mean()) / valid.std(), 3))
    assert ev[1].lift == 0.0


@pytest.mark.parametrize(
    "cover, lift, expected",
    [(0.5, 0.0, "strong"), (0.3, 3.5, "strong"), (0.3, 1.0, "weak"), (0.1, 9.0, "weak")],
)
def test_strong_needs_most_of_the_query_or_part_of_it_well_above_background(
    cover: float, lift: float, expected: str
) -> None:
    assert Evidence(cover, lift, []).confidence == expected


def test_a_real_question_is_strong_and_nonsense_says_there_is_no_strong_match(
    archive: Archive,
) -> None:
    found = archive.search("handleLogin bound twice", workspace="webapp")
    assert found[0].confidence == "strong" and found.note is None
    assert found[0].evidence is not None and "handlelogin" in found[0].evidence["terms"]
    assert found.to_json()["strong"] is True
    junk = archive.search("qwertyzzzplugh", workspace="webapp")
    assert all(h.confidence == "weak" for h in junk)
    assert junk.to_json()["strong"] is False
    best = f"{junk[0].session_id}:{junk[0].turn}" if junk else None
    assert junk.note == (
        f"no strong match for 'qwertyzzzplugh'; closest: {best}"
        if junk
        else "no match for 'qwertyzzzplugh'"
    )


def test_lexical_is_never_claimed_for_a_turn_without_a_query_word(archive: Archive) -> None:
    for query in ("handleLogin bound twice", "why is the login form submitting", "turbojpeg"):
        for hit in archive.search(
            query, workspace="ml-pipeline" if query == "turbojpeg" else "webapp"
        ):
            assert ("lexical" in hit.matched) == bool(hit.evidence and hit.evidence["terms"])
