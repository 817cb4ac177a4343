"""The 1-bit codes of a large index's vectors: the shortlist they pick and the cosines it gets."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import archive_mcp.search.signs as signs
from archive_mcp import Archive
from archive_mcp.search.index import _quantize
from archive_mcp.search.signs import Signs, planes_of, shortlist


def _segment(folder: Path, rows: np.ndarray) -> tuple[Signs, np.ndarray, np.ndarray, np.ndarray]:
    """A segment folder of these float32 rows: float16 vectors, int8 copy, codes; loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    rows.astype(np.float16).tofile(folder / "vectors.f16")
    n, dim = rows.shape
    has = np.abs(rows).sum(axis=1) > 0
    _quantize(folder, n, dim)
    signs.write(folder, n, dim, has)
    q8 = np.memmap(folder / "vectors.q8", np.int8, "r", shape=(n, dim))
    loaded = Signs.load(folder, n, dim)
    assert loaded is not None
    return loaded, q8, np.load(folder / "scales.npy"), has


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_code_sets_the_bit_of_each_dimension_above_the_mean_in_planes_of_64() -> None:
    rows = np.zeros((2, 70), np.float32)
    rows[0, [0, 7, 64]] = 1.0
    rows[1, [1, 69]] = 1.0
    planes = planes_of(rows, np.zeros(70, np.float32))
    assert planes.dtype == np.uint64 and planes.shape == (2, 2)
    bits = np.unpackbits(np.ascontiguousarray(planes.T).view(np.uint8), axis=1)
    assert [list(np.flatnonzero(b)) for b in bits] == [[0, 7, 64], [1, 69]]


def test_the_shortlist_takes_the_k_nearest_in_row_order_and_ties_at_the_cut_by_row() -> None:
    dist = np.array([3, 1, 2, 1, 0, 5], np.uint16)
    assert shortlist(dist, 3).tolist() == [1, 3, 4]
    assert shortlist(np.array([1, 1, 1, 0], np.uint16), 2).tolist() == [0, 3]
    assert shortlist(dist, 10).tolist() == [0, 1, 2, 3, 4, 5]


def test_the_hamming_distance_counts_the_dimensions_on_the_other_side_of_the_mean(
    tmp_path: Path,
) -> None:
    rows = _unit(np.random.default_rng(3), 50, 100)
    codes, *_ = _segment(tmp_path, rows)
    query = rows[7]
    dist = codes.distances(query)
    above = rows > codes.mean
    assert dist.dtype == np.uint16 and dist[7] == 0
    assert dist.tolist() == (above != (query > codes.mean)).sum(axis=1).tolist()


def test_the_shortlist_and_sample_get_the_exact_int8_cosine_and_the_rest_the_fitted_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signs, "SHORTLIST", 20)
    monkeypatch.setattr(signs, "SAMPLE", 100)
    rng = np.random.default_rng(5)
    rows = _unit(rng, 2000, 64)
    rows[11] = 0.0  # a turn without a vector: never sampled
    codes, q8, scale, has = _segment(tmp_path, rows)
    query = rows[42]
    got = codes.cosine(query, q8, scale, has)
    exact = q8.astype(np.float32) @ query * scale
    dist = codes.distances(query)
    near = shortlist(dist, 20)
    sample = np.arange(0, 2000, 20)
    sample = sample[has[sample]]
    assert near.size == 20 and 42 in near and 11 not in sample
    assert np.allclose(got[near], exact[near], atol=1e-6)
    assert np.allclose(got[sample], exact[sample], atol=1e-6)
    slope, icept = np.polyfit(dist[sample].astype(np.float32), exact[sample], 1)
    rest = np.setdiff1d(np.arange(2000), np.concatenate([near, sample]))
    assert np.allclose(got[rest], icept + slope * dist[rest], atol=1e-5)
    assert slope < 0 and int(np.argmax(got)) == 42  # farther codes, lower cosine


def test_codes_that_do_not_fit_the_rows_say_to_delete_the_cache(tmp_path: Path) -> None:
    _segment(tmp_path / "search" / "base", _unit(np.random.default_rng(1), 10, 64))
    with pytest.raises(ValueError, match="delete .*search and search again to rebuild it"):
        Signs.load(tmp_path / "search" / "base", 11, 64)
    assert Signs.load(tmp_path / "elsewhere", 10, 64) is None


def test_a_large_index_keeps_codes_and_with_every_row_shortlisted_ranks_as_its_int8_scan(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.search.index as index

    monkeypatch.setattr(index, "DENSE_MAX_BYTES", 0)
    shutil.rmtree(archive.workspace("webapp").cache_dir / "search", ignore_errors=True)
    large = Archive(embedder=archive._embedder)
    built = large.index(large.workspace("webapp")).refresh()
    seg = built.segments[0]
    assert seg.signs is not None and (built.folder / "base" / "signs.u64").exists()
    assert built.estimates() and built.n_docs == 8

    def hits() -> list[list[tuple[str, int, float]]]:
        return [
            [(h.session_id, h.turn, h.score) for h in large.search(q, workspace="webapp")]
            for q in ("dark mode toggle", "parse config", "fix the failing test")
        ]

    with_codes = hits()
    seg.signs = None  # the same index scanned whole
    assert not built.estimates()
    scanned = hits()
    assert with_codes == scanned and sum(map(len, scanned)) > 3
    query = np.asarray(archive._embedder.embed(["dark mode toggle"])[0], np.float32)
    sims, _ = built.cosine(query)
    assert np.array_equal(built.exact_cosine(query, [7, 0, 3]), sims[[7, 0, 3]])
