"""TF-IDF and truncated SVD in numpy and scipy: the vectors discovery clusters when a workspace
has no embeddings (`discovery.tfidf_vectors`) and the rare keywords and files joined to each
turn's vector (`topics.with_topic_terms`).

Both compute what scikit-learn 1.9 computes for the options those callers use
(`TfidfVectorizer(min_df=, max_df=, sublinear_tf=)` with its defaults `norm="l2"`,
`smooth_idf=True`; `TruncatedSVD(k, random_state=)`: randomized, 5 LU-normalised power iterations,
10 oversamples), operation for operation and through the same numpy, scipy and LAPACK calls, so
that the themes found stay the same to the bit (tests/test_vectors.py compares them with
scikit-learn when it is installed). scikit-learn is no dependency: with what only it pulls it was
about 55 MB of the default install, for these two and `kmeans.mini_batch_kmeans`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp


def tfidf(
    docs: Iterable[list[str]],
    min_df: int = 1,
    max_df: int | float = 1.0,
    sublinear_tf: bool = False,
) -> sp.csr_matrix:
    """Rows of unit-length (L2) TF-IDF over each document's terms (a term list, used as is).

    A term is kept when it is in at least `min_df` documents and at most `max_df` (a count, or a
    share of the documents when a float). Columns are the kept terms in sorted order; idf is
    ln((1 + n) / (1 + df)) + 1; with `sublinear_tf` a count c weighs 1 + ln(c). Within a row the
    terms stay in the order they first appeared in the documents, as scikit-learn leaves them:
    the order of the sums below (and in the SVD's sparse products) depends on it.
    Raises ValueError when no term is kept (no document has one, or none passes the limits)."""
    counts, vocab = _counts(docs)
    n = counts.shape[0]
    high = max_df if isinstance(max_df, int) else max_df * n
    if high < min_df:
        raise ValueError("max_df keeps fewer documents than min_df")
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    keep = (df <= high) & (df >= min_df)
    if not keep.any():
        raise ValueError("no term is in enough documents and few enough")
    column = np.full(len(vocab), -1, np.int32)  # first-seen id -> sorted column of a kept term
    for new, (_, old) in enumerate(sorted((t, j) for t, j in vocab.items() if keep[j])):
        column[old] = new
    kept = keep[counts.indices]
    m = sp.csr_matrix(
        (
            counts.data[kept],
            column[counts.indices[kept]],
            np.concatenate(([0], np.cumsum(kept)))[counts.indptr].astype(np.int32),
        ),
        shape=(n, int(keep.sum())),
    )
    doc_freq = np.bincount(m.indices, minlength=m.shape[1]).astype(np.float64)
    doc_freq += 1.0
    idf = np.full_like(doc_freq, fill_value=n + 1)
    idf /= doc_freq
    np.log(idf, out=idf)
    idf += 1.0
    if sublinear_tf:
        np.log(m.data, m.data)
        m.data += 1.0
    m.data *= idf[m.indices]
    _unit_rows(m)
    return m


def _counts(docs: Iterable[list[str]]) -> tuple[sp.csr_matrix, dict[str, int]]:
    """Term counts (float64), columns in order of first appearance, entries of a row sorted by
    column; and term -> column. Raises ValueError when no document has a term."""
    vocab: dict[str, int] = {}
    indices: list[int] = []
    values: list[int] = []
    indptr = [0]
    for doc in docs:
        seen: dict[int, int] = {}
        for term in doc:
            j = vocab.setdefault(term, len(vocab))
            seen[j] = seen.get(j, 0) + 1
        indices += seen
        values += seen.values()
        indptr.append(len(indices))
    if not vocab:
        raise ValueError("no document has a term")
    m = sp.csr_matrix(
        (
            np.asarray(values, np.float64),
            np.asarray(indices, np.int32),
            np.asarray(indptr, np.int32),
        ),
        shape=(len(indptr) - 1, len(vocab)),
    )
    m.sort_indices()
    return m, vocab


def _unit_rows(m: sp.csr_matrix) -> None:
    """Divide each non-zero row by its L2 norm, in place. The squares are summed in row order,
    one entry at a time (as scikit-learn's `normalize` does), for every row at once."""
    lengths = np.diff(m.indptr)
    sums = np.zeros(m.shape[0])
    for j in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > j)
        at = m.indptr[rows] + j
        sums[rows] += m.data[at] * m.data[at]
    norms = np.sqrt(sums)
    norms[sums == 0.0] = 1.0  # an empty row stays as it is
    m.data /= np.repeat(norms, lengths)


def truncated_svd(
    m: sp.spmatrix, k: int, seed: int = 0, n_iter: int = 5, oversamples: int = 10
) -> np.ndarray:
    """`m` (float64, sparse) projected on its top `k` right singular vectors, found by randomized
    SVD (Halko et al. 2009): a Gaussian range of k + `oversamples` columns drawn from
    `RandomState(seed)`, `n_iter` power iterations each normalised by an LU factorisation, a QR
    basis, the SVD of the small projected matrix. The wider side is worked on transposed. Each
    singular vector's sign makes its largest coordinate positive. Returns m @ V (not U x S)."""
    import scipy.linalg  # here: the MCP server imports discovery at start-up

    if k > m.shape[1]:
        raise ValueError(f"{k} components of {m.shape[1]} features")
    rng = np.random.RandomState(seed)
    transpose = m.shape[0] < m.shape[1]
    a = m.T if transpose else m
    q = rng.normal(size=(a.shape[1], k + oversamples))
    for _ in range(n_iter):
        q, _ = scipy.linalg.lu(a @ q, permute_l=True, check_finite=False)
        q, _ = scipy.linalg.lu(a.T @ q, permute_l=True, check_finite=False)
    q, _ = scipy.linalg.qr(a @ q, mode="economic", check_finite=False)
    uhat, _, vt = scipy.linalg.svd(q.T @ a, full_matrices=False, lapack_driver="gesdd")
    u = q @ uhat
    v = u[:, :k].T if transpose else vt[:k, :]  # m's right singular vectors, one a row
    largest = np.argmax(np.abs(v), axis=1)
    v *= np.sign(v[np.arange(v.shape[0]), largest])[:, np.newaxis]
    return m @ v.T
