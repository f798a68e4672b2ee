"""Screen of rules for the cell means' interval (``stats.bounded_means``) on the suite's own data.

``python -m tests.calibration.screen_cell_means measure OUT.npz [--runs N] [--chunk C]`` draws
the 36 designs whose "bounded mean" rows ``test_calibration`` asserts (the 20 skewed ones —
logit-normal clusters of 1–60, 0/1 at p = 0.05 and 0.1, ICC 0.2 and 0.3, and F_att in quarters
at 0.08 — and the 16 moderate ones the bootstrap-t is calibrated on), with the same generators
in the same order as the suite, so its first N runs of a design are the suite's first N. Every
run stores what a rule may read (the estimate, E*, the clusters' skewness g₁, K) and every
candidate interval (the bootstrap-t with the suite's seed, Korn–Graubard, the beta-binomial
interval of the units' counts), so any rule's coverage is counted afterwards without drawing
again. The file is rewritten after every chunk of runs, so a screen stopped early is still
read. ``python -m tests.calibration.screen_cell_means rules OUT.npz`` counts a grid of rules.
Not part of the test run; docs/analysis.md gives the screen behind the rule.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import django
import numpy as np

# designs imports the OPB template, whose module reads the protocols' models.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
django.setup()

from apps.analysis.stats.bounded_means import bootstrap_t_interval  # noqa: E402
from apps.analysis.stats.proportions import (  # noqa: E402
    beta_binomial_interval,
    korn_graubard_interval,
)
from tests.calibration import designs  # noqa: E402

CONFIDENCE = designs.CONFIDENCE
REPLICATES = 999  # the suite's
FIELDS = (
    "estimate",
    "events",
    "skewness",
    "bt_lo",
    "bt_hi",
    "kg_lo",
    "kg_hi",
    "bb_lo",
    "bb_hi",
)


def cluster_skewness(sums: np.ndarray, sizes: np.ndarray, estimate: float, aggregation: str):
    """Sample skewness g₁ = m₃ / m₂^(3/2) (Joanes & Gill 1998, *The Statistician* 47(1)) of the
    clusters' contributions to the mean: the cluster means for ``cluster_mean``, the ratio
    estimator's linearised values sₖ − θ̂·nₖ for ``observation`` (Cochran 1977, §6.13); 0 when
    they show no spread. A rule of Cochran's form (K ≥ c·g₁²; Cochran 1977 §2.15, Sugden, Smith
    & Jones 2000, JRSS B 62(4)) was screened on it and rejected (docs/analysis.md)."""
    u = sums / sizes if aggregation == "cluster_mean" else sums - estimate * sizes
    u = u - u.mean()
    m2 = float(np.mean(u**2))
    return 0.0 if m2 <= 0.0 else float(np.mean(u**3)) / m2**1.5


def suite_designs() -> list[dict]:
    """The suite's bounded-mean designs, in its order."""
    out = []
    for rate, icc, k in itertools.product((0.05, 0.1), (0.2, 0.3), (10, 20, 40, 80)):
        out.append(dict(kind="skewed", k=k, icc=icc, rate=rate, outcome="binary"))
    for k in (10, 20, 40, 80):
        out.append(dict(kind="skewed", k=k, icc=0.2, rate=0.08, outcome="fatt"))
    for k, icc, aggregation in itertools.product(
        (10, 20, 40, 80), (0.05, 0.2), ("observation", "cluster_mean")
    ):
        out.append(dict(kind="binary", k=k, icc=icc, rate=0.3, aggregation=aggregation))
    for d in out:
        d.setdefault("aggregation", "observation")
        if d["kind"] == "skewed":
            d["name"] = designs.skewed_name(
                d["k"], d["icc"], d["rate"], d["outcome"], "observation"
            )
            d["steps"] = designs.STEPS[d["outcome"]]
            d["mu"], d["sigma"] = designs.logit_normal_for(d["rate"], d["icc"])
        else:
            d["name"] = designs.binary_name(d["k"], d["icc"], d["rate"], d["aggregation"])
            d["steps"] = 1
    return out


def _draw(d: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if d["kind"] == "skewed":
        return designs.draw_skewed(d["k"], d["mu"], d["sigma"], d["steps"], rng)
    return designs.draw_binary(d["k"], d["icc"], d["rate"], rng)


def _measure(d: dict, rng: np.random.Generator) -> list[float]:
    sums, sizes = _draw(d, rng)
    seed = int(rng.integers(2**32))  # the suite's next draw: the bootstrap-t's seed
    aggregation = d["aggregation"]
    estimate, kg, n_eff, _ = korn_graubard_interval(
        sums, sizes, aggregation=aggregation, confidence=CONFIDENCE
    )
    bt = bootstrap_t_interval(
        sums,
        sizes,
        estimate,
        seed=seed,
        aggregation=aggregation,
        replicates=REPLICATES,
        confidence=CONFIDENCE,
    )
    steps = d["steps"]
    _, bb = beta_binomial_interval(sums * steps, sizes * steps, confidence=CONFIDENCE)
    return [
        estimate,
        n_eff * min(estimate, 1.0 - estimate),
        cluster_skewness(sums, sizes, estimate, aggregation),
        *(bt if bt is not None else (np.nan, np.nan)),
        *kg,
        *bb,
    ]


def measure(out: Path, runs: int, chunk: int) -> None:
    plan = suite_designs()
    rngs = [designs.rng_for(d["name"]) for d in plan]
    rows: list[list[list[float]]] = [[] for _ in plan]
    for start in range(0, runs, chunk):
        for i, d in enumerate(plan):
            rows[i].extend(_measure(d, rngs[i]) for _ in range(min(chunk, runs - start)))
        np.savez(
            out,
            data=np.array(rows, dtype=float),
            names=np.array([d["name"] for d in plan]),
            truths=np.array([d["rate"] for d in plan]),
            ks=np.array([d["k"] for d in plan]),
        )
        print(f"{len(rows[0])} runs per design written to {out}", flush=True)


def coverage(data: np.ndarray, truths: np.ndarray, use_bt: np.ndarray, fallback: str) -> np.ndarray:
    """Per design: the share of runs covering the truth under a rule (``use_bt`` per run)."""
    col = {name: i for i, name in enumerate(FIELDS)}
    if fallback == "hull":
        lo = np.minimum(data[..., col["kg_lo"]], data[..., col["bb_lo"]])
        hi = np.maximum(data[..., col["kg_hi"]], data[..., col["bb_hi"]])
    else:
        lo, hi = data[..., col[f"{fallback}_lo"]], data[..., col[f"{fallback}_hi"]]
    lo = np.where(use_bt, data[..., col["bt_lo"]], lo)
    hi = np.where(use_bt, data[..., col["bt_hi"]], hi)
    t = truths[:, None]
    return np.mean((lo <= t) & (t <= hi), axis=1)


def rules(path: Path) -> None:
    f = np.load(path)
    data, names, truths, ks = f["data"], f["names"], f["truths"], f["ks"]
    col = {name: i for i, name in enumerate(FIELDS)}
    events = data[..., col["events"]]
    g1 = data[..., col["skewness"]]
    k = ks[:, None].astype(float)
    bt_given = np.isfinite(data[..., col["bt_lo"]])
    runs = data.shape[1]
    print(f"{runs} runs per design, {len(names)} designs")
    candidates: list[tuple[str, np.ndarray, str]] = []
    for fallback in ("hull", "kg", "bb"):
        for t in (np.inf, 40, 30, 20, 15, 10, 5):
            candidates.append((f"E*>={t}", events >= t, fallback))
        for t_hi, t_lo, c in itertools.product(
            (30, np.inf), (0, 2, 5, 10), (2, 4, 6, 8, 10, 15, 25, 40)
        ):
            use = (events >= t_hi) | ((events >= t_lo) & (k >= c * g1**2))
            candidates.append((f"E*>={t_hi} or (E*>={t_lo} and K>={c}g1^2)", use, fallback))
        # Sugden, Smith & Jones (2000)'s form of Cochran's rule: K > 28 + 25 g1^2.
        candidates.append(("K>28+25g1^2", k > 28 + 25 * g1**2, fallback))
    results = []
    for label, use, fallback in candidates:
        # A run the rule gives the bootstrap-t without spread has no interval: counted apart.
        cov = coverage(data, truths, use & bt_given, fallback)
        none = int(np.sum(use & ~bt_given))
        inband = int(np.sum((cov >= 0.935) & (cov <= 0.965)))
        results.append((float(cov.min()), inband, label, fallback, cov, float(use.mean()), none))
    results.sort(key=lambda r: (r[0] >= 0.94, r[1], r[0]), reverse=True)
    for low, inband, label, fallback, _cov, share, none in results[:40]:
        print(
            f"min {100 * low:5.1f}  in band {inband:2d}/36  bt {100 * share:4.1f} %  "
            f"no interval {none}  {fallback:4s} {label}"
        )
    print()
    baseline = [r for r in results if r[2] == "E*>=30" and r[3] == "hull"]
    for low, inband, label, fallback, cov, *_ in baseline + results[:6]:
        print(f"{label} ({fallback}): min {100 * low:.1f}, {inband} in band")
        for name, c in zip(names, cov, strict=True):
            flag = "" if 0.935 <= c <= 0.965 else ("  LOW" if c < 0.935 else "  high")
            print(f"   {100 * c:5.1f} {name}{flag}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=("measure", "rules"))
    parser.add_argument("path", type=Path)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=250)
    args = parser.parse_args(argv)
    if args.action == "measure":
        measure(args.path, args.runs, args.chunk)
    else:
        rules(args.path)


if __name__ == "__main__":
    main(sys.argv[1:])
