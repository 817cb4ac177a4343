"""TF-IDF, truncated SVD and mini-batch k-means (themes/discover/vectors.py, kmeans.py): what they
compute, and, when scikit-learn 1.9 is installed (the `test` extra), that they compute exactly
what it computes: the themes discovery found with scikit-learn stay the same to the bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from archive_mcp.themes.discover.kmeans import mini_batch_kmeans, nearest
from archive_mcp.themes.discover.vectors import tfidf, truncated_svd

# --- what they compute -----------------------------------------------------------------------


def test_tfidf_weighs_sorted_kept_terms_by_smoothed_idf_and_unit_rows() -> None:
    docs = [["b", "a", "a"], ["a", "c"], ["c", "b", "z"], []]
    m = tfidf(docs, min_df=2, sublinear_tf=True)
    # "z" is in one document only; columns are a, b, c in sorted order
    idf = [math.log(5 / 3) + 1] * 3
    rows = [
        [(1 + math.log(2)) * idf[0], idf[1], 0],
        [idf[0], 0, idf[2]],
        [0, idf[1], idf[2]],
        [0, 0, 0],
    ]
    want = np.array([r / (np.linalg.norm(r) or 1) for r in np.array(rows)])
    np.testing.assert_allclose(m.toarray(), want, rtol=1e-15)
    assert m.shape == (4, 3)


def test_tfidf_drops_terms_in_more_documents_than_max_df() -> None:
    docs = [["common", "x"], ["common", "x"], ["common", "y"], ["y", "q"]]
    assert tfidf(docs, min_df=2, max_df=2).shape == (4, 2)  # x and y; "common" is in 3
    assert tfidf(docs, min_df=2, max_df=0.75).shape == (4, 3)  # 0.75 x 4 = 3: common stays
    with pytest.raises(ValueError):
        tfidf(docs, min_df=5)
    with pytest.raises(ValueError):
        tfidf([[], []])


def test_truncated_svd_keeps_the_geometry_of_a_low_rank_matrix() -> None:
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    dense = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 30))
    m = sp.csr_matrix(dense)
    z = truncated_svd(m, 3, seed=0)
    assert z.shape == (40, 3)
    # rank 3: the projection on the top 3 singular vectors loses nothing
    np.testing.assert_allclose(z @ z.T, dense @ dense.T, atol=1e-9)
    np.testing.assert_array_equal(z, truncated_svd(m, 3, seed=0))
    with pytest.raises(ValueError):
        truncated_svd(m, 31)


def test_kmeans_finds_separated_groups_and_nearest_breaks_ties_low() -> None:
    rng = np.random.default_rng(3)
    centres = np.array([[10, 0], [0, 10], [-10, -10]], np.float32)
    truth = np.repeat(np.arange(3), 50)
    x = (centres[truth] + rng.normal(scale=0.5, size=(150, 2))).astype(np.float32)
    labels, found = mini_batch_kmeans(x, 3, seed=0, batch_size=64)
    assert labels.dtype == np.int32 and found.shape == (3, 2)
    # each true group is exactly one cell
    assert len({(t, c) for t, c in zip(truth.tolist(), labels.tolist(), strict=True)}) == 3
    assert sorted(np.unique(labels).tolist()) == [0, 1, 2]
    tie = nearest(np.array([[0, 0]], np.float32), np.array([[1, 0], [-1, 0]], np.float32))
    assert tie.tolist() == [0]
    with pytest.raises(ValueError):
        mini_batch_kmeans(x[:2], 3)


# --- the same as scikit-learn 1.9 -----------------------------------------------------------


def _sklearn() -> None:
    sklearn = pytest.importorskip("sklearn")
    if not sklearn.__version__.startswith("1.9."):
        pytest.skip("compared with scikit-learn 1.9, the version discovery used before")


def _docs(rng: np.random.Generator, n: int) -> list[list[str]]:
    words = [f"w{i}" for i in range(300)] + ["Zeta", "alpha", "ä", "b_c", "a", "日本"]
    p = 1 / np.arange(1, len(words) + 1)  # Zipf-like: some terms common, most rare
    p /= p.sum()
    return [list(rng.choice(words, size=int(rng.integers(0, 40)), p=p)) for _ in range(n)]


@pytest.mark.parametrize("trial", range(12))
def test_tfidf_and_svd_equal_scikit_learns(trial: int) -> None:
    _sklearn()
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    rng = np.random.default_rng(trial)
    docs = _docs(rng, int(rng.integers(3, 300)))
    max_df = [1.0, 0.5, max(2, int(0.02 * len(docs))), 7][trial % 4]
    options = {"min_df": 2, "max_df": max_df, "sublinear_tf": bool(trial % 3)}
    try:
        ref = TfidfVectorizer(analyzer=lambda d: d, **options).fit_transform(docs)
    except ValueError:
        with pytest.raises(ValueError):
            tfidf(docs, **options)
        return
    mine = tfidf(docs, **options)
    for part in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(mine, part), getattr(ref, part))
    for k in (2, 8, 64):
        if ref.shape[1] > k + 1:
            want = TruncatedSVD(k, random_state=trial).fit_transform(ref)
            np.testing.assert_array_equal(truncated_svd(mine, k, seed=trial), want)


@pytest.mark.parametrize("trial", range(10))
def test_mini_batch_kmeans_equals_scikit_learns(trial: int) -> None:
    _sklearn()
    from sklearn.cluster import MiniBatchKMeans

    rng = np.random.default_rng(100 + trial)
    n, d = int(rng.integers(10, 2500)), int(rng.choice([3, 7, 33, 384]))
    x = rng.normal(size=(n, d)).astype(np.float64 if trial % 5 == 0 else np.float32)
    if trial % 2:
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    k = int(rng.integers(2, max(3, min(n, 4 * int(math.sqrt(n))))))
    batch = [4096, 1024, 100][trial % 3]
    ref = MiniBatchKMeans(n_clusters=k, random_state=trial, n_init=1, batch_size=batch).fit(x)
    labels, centres = mini_batch_kmeans(x, k, seed=trial, batch_size=batch)
    np.testing.assert_array_equal(labels, ref.labels_)
    np.testing.assert_array_equal(centres, ref.cluster_centers_)
    assert centres.dtype == ref.cluster_centers_.dtype


def test_mini_batch_kmeans_seeded_on_a_sample_equals_scikit_learns() -> None:
    # more rows than 3 x batch: k-means++ runs on a random sample of the rows
    _sklearn()
    from sklearn.cluster import MiniBatchKMeans

    rng = np.random.default_rng(5)
    groups = rng.normal(size=(20, 16))
    x = (groups[rng.integers(0, 20, 1400)] + 0.8 * rng.normal(size=(1400, 16))).astype(np.float32)
    ref = MiniBatchKMeans(n_clusters=30, random_state=0, n_init=1, batch_size=128).fit(x)
    labels, centres = mini_batch_kmeans(x, 30, seed=0, batch_size=128)
    np.testing.assert_array_equal(labels, ref.labels_)
    np.testing.assert_array_equal(centres, ref.cluster_centers_)
