"""A large index's rows in a few principal directions: the estimates and the exact shortlist."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import archive_mcp.search.projection as projection
from archive_mcp import Archive
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.projection import Projection, shortlist, write_int8


def _segment(folder: Path, rows: np.ndarray) -> tuple[Projection, np.ndarray, np.ndarray]:
    """A segment folder of these float32 rows: float16 vectors, int8 copy, projection; loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    rows.astype(np.float16).tofile(folder / "vectors.f16")
    n, dim = rows.shape
    write_int8(folder, n, dim)
    projection.write_projection(folder, n, dim, np.abs(rows).sum(axis=1) > 0)
    q8 = np.memmap(folder / "vectors.q8", np.int8, "r", shape=(n, dim))
    loaded = Projection.load(folder, n, dim)
    assert loaded is not None
    return loaded, q8, np.load(folder / "scales.npy")


def _low_rank(rng: np.random.Generator, n: int, dim: int, rank: int) -> np.ndarray:
    """Unit rows lying (up to a little noise) in a `rank`-dimensional subspace."""
    x = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, dim))
    x += 0.01 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _sizes(monkeypatch: pytest.MonkeyPatch, rank: int, shortlist: int, sample: int) -> None:
    """Directions kept, shortlist and sample sizes small enough for a test's few rows."""
    monkeypatch.setattr(projection, "RANK", rank)
    monkeypatch.setattr(projection, "SHORTLIST", shortlist)
    monkeypatch.setattr(projection, "SAMPLE", sample)


def test_the_shortlist_takes_the_k_highest_scores_in_row_order() -> None:
    scores = np.array([0.3, 0.9, 0.1, 0.8, 0.5, 0.2], np.float32)
    assert shortlist(scores, 3).tolist() == [1, 3, 4]
    assert shortlist(scores, 10).tolist() == [0, 1, 2, 3, 4, 5]
    many = np.random.default_rng(4).permutation(20_000).astype(np.float32)  # past 64 x k
    assert shortlist(many, 100).tolist() == np.flatnonzero(many >= 19_900).tolist()


def test_rows_in_the_kept_directions_are_estimated_within_int8_rounding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(projection, "RANK", 8)
    rows = _low_rank(np.random.default_rng(3), 500, 64, 6)
    proj, q8, scale = _segment(tmp_path, rows)
    assert proj.rows.shape == (500, 8) and proj.basis.shape == (8, 64)
    assert np.allclose(proj.basis @ proj.basis.T, np.eye(8), atol=1e-5)  # orthonormal
    query = rows[42]
    estimate = proj.estimates(query)
    assert np.abs(estimate - rows @ query).max() < 0.05
    assert int(np.argmax(estimate)) == 42


def test_the_shortlist_gets_the_exact_int8_cosine_and_the_rest_their_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sizes(monkeypatch, rank=4, shortlist=20, sample=100)
    rows = _low_rank(np.random.default_rng(5), 2000, 64, 16)  # more than the 4 directions kept
    rows[40] = 0.0  # a turn without a vector: out of the sample
    proj, q8, scale = _segment(tmp_path, rows)
    has = np.abs(rows).sum(axis=1) > 0
    query = rows[42]
    got = proj.cosine(query, q8, scale, has)
    estimate = proj.estimates(query)
    near = shortlist(estimate, 20)
    exact = q8.astype(np.float32) @ query * scale
    sample = np.setdiff1d(np.arange(0, 2000, 20), [40])
    rest = np.setdiff1d(np.arange(2000), np.concatenate([near, sample]))
    assert near.size == 20 and 42 in near and sample.size == 99
    assert np.allclose(got[near], exact[near], atol=1e-6)
    assert np.allclose(got[sample], exact[sample], atol=1e-6)
    # the rest: the estimate, moved and stretched to the sample's exact mean and spread
    ratio = exact[sample].std() / estimate[sample].std()
    moved = exact[sample].mean() + (estimate[rest] - estimate[sample].mean()) * ratio
    assert np.allclose(got[rest], moved, atol=1e-5) and ratio > 1.0
    assert int(np.argmax(got)) == 42 and not np.allclose(estimate, exact, atol=0.05)


def test_rows_without_a_vector_are_never_shortlisted_so_every_row_with_one_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sizes(monkeypatch, rank=4, shortlist=150, sample=10)
    rows = _low_rank(np.random.default_rng(9), 300, 64, 16)
    rows[100:] = 0.0  # 200 turns without a vector, 100 with one: fewer than the shortlist
    proj, q8, scale = _segment(tmp_path, rows)
    has = np.abs(rows).sum(axis=1) > 0
    query = rows[7]
    estimate = proj.estimates(query)
    # their estimate stands above some rows with a vector: a shortlist by estimate alone takes them
    assert int(np.count_nonzero(~has[shortlist(estimate, 150)])) > 0
    got = proj.cosine(query, q8, scale, has)
    exact = q8.astype(np.float32) @ query * scale
    assert np.allclose(got[has], exact[has], atol=1e-6)
    assert int(np.argmax(got)) == 7


def test_a_projection_that_does_not_fit_the_rows_says_to_delete_the_cache(
    tmp_path: Path,
) -> None:
    rows = _low_rank(np.random.default_rng(1), 10, 64, 4)
    _segment(tmp_path / "search" / "base", rows)
    with pytest.raises(ValueError, match="delete .*search and search again to rebuild it"):
        Projection.load(tmp_path / "search" / "base", 11, 64)
    assert Projection.load(tmp_path / "elsewhere", 10, 64) is None


def _rebuilt(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, limit: str, value: int
) -> tuple[Archive, WorkspaceIndex]:
    """A fresh archive over the same home and its webapp index built again from nothing with the
    index's `limit` at `value`."""
    import archive_mcp.search.index as index

    monkeypatch.setattr(index, limit, value)
    shutil.rmtree(archive.workspace("webapp").cache_dir / "search", ignore_errors=True)
    large = Archive(embedder=archive._embedder)
    return large, large.index(large.workspace("webapp")).refresh()


def test_a_large_index_keeps_a_projection_and_with_every_row_shortlisted_ranks_as_its_scan(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    large, built = _rebuilt(archive, monkeypatch, "DENSE_MAX_BYTES", 0)
    seg = built.segments[0]
    assert seg.projection is not None and (built.folder / "base" / "proj.q8").exists()
    assert built.n_docs == 8

    def hits() -> list[list[tuple[str, int, float]]]:
        return [
            [(h.session_id, h.turn, h.score) for h in large.search(q, workspace="webapp")]
            for q in ("dark mode toggle", "parse config", "fix the failing test")
        ]

    with_projection = hits()
    seg.projection = None  # the same index scanned whole
    scanned = hits()
    assert with_projection == scanned and sum(map(len, scanned)) > 3
    query = np.asarray(archive._embedder.embed(["dark mode toggle"])[0], np.float32)
    sims, _ = built.cosine(query)
    assert np.array_equal(built.exact_cosine(query, [7, 0, 3]), sims[[7, 0, 3]])


def test_rows_taken_from_a_map_in_parts_equal_a_plain_gather(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.search.ondisk as ondisk

    monkeypatch.setattr(ondisk, "TAKE", 3)
    data = np.arange(40 * 4, dtype=np.int8).reshape(40, 4)
    data.tofile(tmp_path / "m.bin")
    m = np.memmap(tmp_path / "m.bin", np.int8, "r", shape=(40, 4))
    at = np.array([0, 2, 3, 9, 17, 18, 39])
    assert np.array_equal(ondisk.take_rows(m, at), data[at])
    assert ondisk.take_rows(m, np.zeros(0, np.int64)).shape == (0, 4)


def test_rows_read_through_the_file_of_a_map_equal_a_plain_gather_and_its_descriptor_closes(
    tmp_path: Path,
) -> None:
    import gc
    import os

    import archive_mcp.search.ondisk as ondisk

    data = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
    data.tofile(tmp_path / "m.bin")
    m = ondisk.open_rows(tmp_path / "m.bin", np.float32, (40, 3))
    fd = ondisk._FILES[id(m)]
    at = np.array([0, 2, 3, 9, 17, 18, 39])
    assert np.array_equal(ondisk.take_rows(m, at), data[at])
    assert ondisk.take_rows(m, np.zeros(0, np.int64)).shape == (0, 3)
    del m
    gc.collect()
    assert fd not in ondisk._FILES.values()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_npy_file_opened_for_reads_gives_its_rows_and_slices_as_np_load_does(
    tmp_path: Path,
) -> None:
    import archive_mcp.search.ondisk as ondisk

    data = np.arange(50, dtype=np.int32) * 7
    np.save(tmp_path / "a.npy", data)
    np.save(tmp_path / "empty.npy", np.zeros(0, np.float32))
    m = ondisk.open_npy(tmp_path / "a.npy")
    assert id(m) in ondisk._FILES
    assert np.array_equal(ondisk.read_rows(m, 3, 11), data[3:11])
    assert np.array_equal(ondisk.read_rows(m, 45, 60), data[45:60])
    assert ondisk.read_rows(m, 20, 20).shape == (0,)
    assert np.array_equal(ondisk.take_rows(m, np.array([0, 9, 49])), data[[0, 9, 49]])
    empty = ondisk.open_npy(tmp_path / "empty.npy")
    assert empty.shape == (0,) and empty.dtype == np.float32


def test_a_dense_index_past_projected_rows_keeps_a_projection_and_ranks_as_its_scan(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    large, built = _rebuilt(archive, monkeypatch, "PROJECTED_ROWS", 4)
    seg = built.segments[0]
    dense = seg.dense()
    assert seg.projection is not None and seg.quantized is None and dense is not None
    assert built.segments[1].projection is None  # the empty delta: under PROJECTED_ROWS
    query = np.asarray(archive._embedder.embed(["dark mode toggle"])[0], np.float32)
    sims, _ = built.cosine(query)
    # every row is shortlisted (8 rows): each gets its exact float32 cosine, row by row
    assert np.allclose(sims, dense @ query, atol=1e-6)
    assert np.array_equal(built.exact_cosine(query, [7, 0, 3]), sims[[7, 0, 3]])

    def hits() -> list[list[tuple[str, int]]]:
        return [
            [(h.session_id, h.turn) for h in large.search(q, workspace="webapp")]
            for q in ("dark mode toggle", "parse config", "fix the failing test")
        ]

    with_projection = hits()
    seg.projection = None  # the same index scanned whole
    assert hits() == with_projection and sum(map(len, with_projection)) > 3
