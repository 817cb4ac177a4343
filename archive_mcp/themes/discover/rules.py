"""Discovery's rules, one frozen value passed in (`DISCOVERY_RULES` the shipped one).

Where the broad themes are cut in each vector space, how much TF-IDF joins the static vectors,
and how the topics inside them are found (the turn graph, Louvain, the one-session rule). A bench
tries another value with `dataclasses.replace(DISCOVERY_RULES, ...)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DiscoveryRules:
    # Where to cut the centroid dendrogram (cosine distance), per vector space. Calibrated on the
    # planted-theme corpus (bench/theme_corpus.py); data-driven cuts (silhouette, largest gap,
    # nearest-neighbour quantiles) did worse on every space we tried: see bench/RESULTS.md.
    cuts: dict[str, float] = field(
        default_factory=lambda: {
            "minilm-static-256": 0.35,
            "all-minilm-l6-v2": 0.6,
            "tfidf": 0.85,
        }
    )
    default_cut: float = 0.45
    # The static model's vectors are joined with TF-IDF/SVD of the texts at weight `tfidf_share`
    # (the words a topic is named by, which the static vectors weigh little) and cut there at
    # `mixed_cuts`: more labelled topics recovered in every fold held out by project, at the same
    # cluster counts (bench/results/themes-heldout.md). Past `graph.SAMPLE` turns the vectors stay
    # on disk and are clustered alone.
    tfidf_share: float = 0.5
    mixed_cuts: dict[str, float] = field(default_factory=lambda: {"minilm-static-256": 0.5})
    # The topics: each turn linked to its `neighbours` nearest turns and to the turns next to it
    # in its session at `topic_adjacent` (the walk of tagging keeps `graph.ADJACENT`; chosen held
    # out by project over 0.5, 1, 2 and 3), Louvain communities at `resolution`, each turn's
    # vector joined with its rare keywords and files at `term_weight` (topics.py).
    neighbours: int = 5
    topic_adjacent: float = 1.0
    resolution: float = 4.0
    term_weight: float = 0.3
    # A cluster inside one session is a theme from this many turns (0: never; a theme had to span
    # two sessions before). Chosen leave one project out from 0, 4, 6, 8, 12 on four labelled
    # projects: on a project of two long Codex sessions the two-session rule kept 5 clusters for
    # 13 labelled topics. 6 in three folds: 4 recovers as many topics everywhere but makes 16.3
    # clusters there, just over the grid's budget of 1.25 x 13 (bench/results/themes-heldout.md).
    one_session: int = 6


DISCOVERY_RULES = DiscoveryRules()
