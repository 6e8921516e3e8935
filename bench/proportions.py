"""Proportions for the Python reports, as src/bench/proportions.cpp computes them for the engine's
own: Wilson's 95% interval of k of n, and McNemar's exact two-sided test on the discordant pairs
of two paired runs (a binomial with p = 1/2 over the questions only one of them answers)."""
from __future__ import annotations

import math


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, c - h), min(1.0, c + h))


def mcnemar_p(a_only, b_only):
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2))
               for i in range(k + 1))
    return min(1.0, 2 * tail)
