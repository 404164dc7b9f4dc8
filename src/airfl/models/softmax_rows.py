"""Compiled loops of `SoftmaxRegression.grads_rows` around its two GEMMs per client: gathering the
models' weights on the client's input columns, and writing each model's gradient row (l2 term,
the client's columns, the bias) straight into the [J, N, d] output (numba).

Why: per client, the torch version spent more time in the ops
around the GEMMs than in the GEMMs (two index_selects, a multiply, an index_add_, an index_put_
and a zero fill, each its own pass and call); these loops do each in one pass
(benchmarks/client_gradients.py). They add and multiply in float32 in the same order as those
ops: the l2 row is params * l2, then the client's gradient entries are added (tests/core/test_lockstep.py
compares with the per-model gradients). No parallel or fast-math options: the same inputs give
the same bits on every run. Compiled on first use and cached next to this file.
"""

from __future__ import annotations

import numba

__all__ = ["gather_class_columns", "write_gradient_rows"]


@numba.njit(cache=True, nogil=True)
def gather_class_columns(params, models, cols, classes, out, bias):  # pragma: no cover
    """out[c J_m + i, :] = params[models[i], c (p+1) + cols] and bias[c J_m + i] =
    params[models[i], c (p+1) + p]: the class-major weight rows of the chosen models on the
    client's columns (params [J, C (p+1)], models [J_m], cols [p_m]; out [C J_m, p_m])."""
    n_chosen = models.shape[0]
    width = params.shape[1] // classes
    for c in range(classes):
        base = c * width
        for i in range(n_chosen):
            source = params[models[i]]
            row = c * n_chosen + i
            target = out[row]
            for k in range(cols.shape[0]):
                target[k] = source[base + cols[k]]
            bias[row] = source[base + width - 1]


@numba.njit(cache=True, nogil=True)
def write_gradient_rows(grad, m, models, params, l2, columns_grad, bias_grad, cols,
                        classes):  # pragma: no cover
    """grad[j, m] = l2 params[j] + the client's gradient (columns_grad [C J_m, p_m] on cols,
    bias_grad [C J_m] on the biases, class-major rows as `gather_class_columns`) for the models
    j in `models` (ascending), and 0 for every other j (grad [J, N, d])."""
    n_chosen = models.shape[0]
    width = params.shape[1] // classes
    i = 0
    for j in range(grad.shape[0]):
        row = grad[j, m]
        if i < n_chosen and models[i] == j:
            source = params[j]
            for t in range(row.shape[0]):
                row[t] = source[t] * l2
            for c in range(classes):
                base = c * width
                entries = columns_grad[c * n_chosen + i]
                for k in range(cols.shape[0]):
                    row[base + cols[k]] += entries[k]
                row[base + width - 1] += bias_grad[c * n_chosen + i]
            i += 1
        else:
            for t in range(row.shape[0]):
                row[t] = 0.0
