"""Screen of rules for the cell means' interval (``stats.bounded_means``) on the suite's own data.

``python -m tests.calibration.screen_cell_means measure OUT.npz [--runs N] [--chunk C]
[--part i/n] [--ks K,…]`` draws the 36 designs whose "bounded mean" rows ``test_calibration``
asserts (the 20 skewed ones — logit-normal clusters of 1–60, 0/1 at p = 0.05 and 0.1, ICC 0.2
and 0.3, and F_att in quarters at 0.08 — and the 16 moderate ones the bootstrap-t is calibrated
on), with the same generators in the same order as the suite, so its first N runs of a design
are the suite's first N; ``--part i/n`` measures designs i, i + n, … (n processes share the
work), ``--ks`` the same designs at other numbers of clusters (names, so seeds, of their own).
Every run stores what a rule may read (the estimate, E*, n*, the clusters' skewness g₁, K) and
every candidate interval: the bootstrap-t with the suite's seed and the same on the logit
scale; Korn–Graubard (Clopper–Pearson at n*) and Wilson, Jeffreys and mid-p intervals at n*;
the beta-binomial interval of the units' counts with the F(1, K − 1) and the χ²₁ reference. Any
rule's coverage is then counted without drawing again. The file is rewritten after every chunk
of runs, so a screen stopped early is still read. ``python -m
tests.calibration.screen_cell_means rules OUT.npz [OUT2.npz …]`` prints docs/analysis.md's
table of the screen, the table of the rules screened for the band's upper edge
(:func:`band_rules`: the beta-binomial alone below c effective events, mid-p tails in the hull's
Korn–Graubard member, the χ²₁ cutoff at every K), the best of a grid of rules and the
product's design by design. Not part of the test run; docs/analysis.md gives the screen behind
the rule.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import django
import numpy as np
from scipy.special import expit, logit
from scipy.stats import beta as beta_distribution
from scipy.stats import norm
from scipy.stats import t as t_distribution

# designs imports the OPB template, whose module reads the protocols' models.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
django.setup()

from apps.analysis.stats.bootstrap import (  # noqa: E402
    cluster_standard_error,
    cluster_weights,
)
from apps.analysis.stats.bounded_means import (  # noqa: E402
    CHI2_BELOW_CLUSTERS,
    bootstrap_t_interval,
)
from apps.analysis.stats.proportions import (  # noqa: E402
    beta_binomial_interval,
    korn_graubard_interval,
    mid_p_interval,
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
    # Added for the band's upper edge (issue #36 §1): n*, and the other candidates.
    "n_eff",
    "kgw_lo",
    "kgw_hi",
    "kgj_lo",
    "kgj_hi",
    "kgm_lo",
    "kgm_hi",
    "bbz_lo",
    "bbz_hi",
    "btl_lo",
    "btl_hi",
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


def wilson_at(rate: float, n_eff: float, confidence: float) -> tuple[float, float]:
    """Wilson's (1927, JASA 22(158)) score interval of ``rate`` as a proportion of ``n_eff``
    trials: Korn–Graubard's n* with the score interval in place of Clopper–Pearson, one of the
    variants Dean & Pagano (2015, J. Surv. Stat. Methodol. 3(4)) compare."""
    z = float(norm.ppf(0.5 + confidence / 2.0))
    centre = (rate + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z / (1 + z * z / n_eff) * np.sqrt(rate * (1 - rate) / n_eff + z * z / (4 * n_eff**2))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def jeffreys_at(rate: float, n_eff: float, confidence: float) -> tuple[float, float]:
    """The Jeffreys interval (Brown, Cai & DasGupta 2001, Stat. Sci. 16(2)) at n* trials: the
    Beta(x* + ½, n* − x* + ½) quantiles, x* = rate·n*; 0 (1) at x* = 0 (n*)."""
    tail = (1.0 - confidence) / 2.0
    x = rate * n_eff
    lower = 0.0 if x <= 0 else float(beta_distribution.ppf(tail, x + 0.5, n_eff - x + 0.5))
    upper = 1.0 if x >= n_eff else float(beta_distribution.ppf(1 - tail, x + 0.5, n_eff - x + 0.5))
    return lower, upper


def mid_p_at(rate: float, n_eff: float, confidence: float) -> tuple[float, float]:
    """The mid-p Clopper–Pearson interval at n* trials, x* = rate·n*: the product's
    ``stats.proportions.mid_p_interval`` (Lancaster 1961; Agresti & Gottard 2007)."""
    return mid_p_interval(rate * n_eff, n_eff, confidence=confidence)


def logit_bootstrap_t(
    sums: np.ndarray,
    sizes: np.ndarray,
    estimate: float,
    *,
    seed: int,
    aggregation: str,
    replicates: int,
    confidence: float,
) -> tuple[float, float] | None:
    """The cluster bootstrap-t on the logit scale (Davison & Hinkley 1997 §5.2.2, a
    variance-stabilising transformation before studentising): t*_b = (logit θ*_b − logit θ̂) /
    (SE*_b / θ*_b(1 − θ*_b)), back-transformed; the draws of ``bootstrap_t_interval`` with the
    same seed. ``None`` for θ̂ of 0 or 1 or no spread."""
    if not 0.0 < estimate < 1.0:
        return None
    se = cluster_standard_error(sums, sizes, estimate, aggregation)
    if se == 0.0:
        return None
    k = sums.size
    w = cluster_weights(k, replicates, np.random.default_rng(seed)).astype(float)
    if aggregation == "cluster_mean":
        means = sums / sizes
        reps = (w @ means) / k
        var = np.maximum((w @ means**2) / k - reps**2, 0.0) * k / (k - 1) / k
    else:
        total = w @ sizes
        reps = (w @ sums) / total
        squares = w @ sums**2 - 2 * reps * (w @ (sums * sizes)) + reps**2 * (w @ sizes**2)
        var = np.maximum(squares, 0.0) * k / (k - 1) / total**2
    usable = (var > 1e-300) & (reps > 0) & (reps < 1)
    if not usable.any():
        return None
    r = reps[usable]
    t_star = (logit(r) - logit(estimate)) / (np.sqrt(var[usable]) / (r * (1 - r)))
    tail = (1.0 - confidence) / 2.0
    q_lo, q_hi = np.quantile(t_star, [tail, 1.0 - tail])
    se_logit = se / (estimate * (1 - estimate))
    centre = float(logit(estimate))
    return float(expit(centre - q_hi * se_logit)), float(expit(centre - q_lo * se_logit))


SUITE_KS = (10, 20, 40, 80)


def suite_designs(ks: tuple[int, ...] = SUITE_KS) -> list[dict]:
    """The suite's bounded-mean designs, in its order (with other numbers of clusters ``ks``,
    the same designs at those K: how a rule that reads K fares between the suite's)."""
    out = []
    for rate, icc, k in itertools.product((0.05, 0.1), (0.2, 0.3), ks):
        out.append(dict(kind="skewed", k=k, icc=icc, rate=rate, outcome="binary"))
    for k in ks:
        out.append(dict(kind="skewed", k=k, icc=0.2, rate=0.08, outcome="fatt"))
    for k, icc, aggregation in itertools.product(ks, (0.05, 0.2), ("observation", "cluster_mean")):
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
    # The beta-binomial with a χ²₁ reference (Wilks) in place of F(1, K − 1): the level whose
    # t(K − 1) quantile is z.
    z_level = 2.0 * float(t_distribution.cdf(norm.ppf(0.5 + CONFIDENCE / 2), sums.size - 1)) - 1
    _, bbz = beta_binomial_interval(sums * steps, sizes * steps, confidence=z_level)
    btl = logit_bootstrap_t(
        sums,
        sizes,
        estimate,
        seed=seed,
        aggregation=aggregation,
        replicates=REPLICATES,
        confidence=CONFIDENCE,
    )
    return [
        estimate,
        n_eff * min(estimate, 1.0 - estimate),
        cluster_skewness(sums, sizes, estimate, aggregation),
        *(bt if bt is not None else (np.nan, np.nan)),
        *kg,
        *bb,
        n_eff,
        *wilson_at(estimate, n_eff, CONFIDENCE),
        *jeffreys_at(estimate, n_eff, CONFIDENCE),
        *mid_p_at(estimate, n_eff, CONFIDENCE),
        *bbz,
        *(btl if btl is not None else (np.nan, np.nan)),
    ]


def measure(
    out: Path, runs: int, chunk: int, part: str = "1/1", ks: tuple[int, ...] = SUITE_KS
) -> None:
    """Measure ``runs`` runs of every design (of designs i, i + n, … for ``part`` "i/n", so
    n processes share the designs; ``rules`` reads their files together)."""
    index, count = (int(v) for v in part.split("/"))
    plan = suite_designs(ks)[index - 1 :: count]
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


INTERVALS = ("bt", "btl", "kg", "kgw", "kgj", "kgm", "bb", "bbz")
LABELS = {
    "bt": "bootstrap-t",
    "btl": "logit bootstrap-t",
    "kg": "Korn–Graubard (Clopper–Pearson at n*)",
    "kgw": "Wilson at n*",
    "kgj": "Jeffreys at n*",
    "kgm": "mid-p Clopper–Pearson at n*",
    "bb": "beta-binomial, F(1, K − 1)",
    "bbz": "beta-binomial, χ²₁",
}


def load(paths: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The screens' files read together, in the suite's design order, cut to the fewest runs
    any of them holds: ``(data[design, run, field], names, truths, ks)``."""
    files = [np.load(p) for p in paths]
    runs = min(f["data"].shape[1] for f in files)
    data = np.concatenate([f["data"][:, :runs] for f in files])
    names = np.concatenate([f["names"] for f in files])
    every = sorted({int(k) for f in files for k in f["ks"]})
    order = {d["name"]: i for i, d in enumerate(suite_designs(tuple(every)))}
    index = np.argsort([order[str(n)] for n in names])
    truths = np.concatenate([f["truths"] for f in files])
    ks = np.concatenate([f["ks"] for f in files])
    return data[index], names[index], truths[index], ks[index]


def interval(data: np.ndarray, spec: str) -> tuple[np.ndarray, np.ndarray]:
    """A candidate's limits per run: a name of ``INTERVALS``, or "a|b", the hull of two."""
    col = {name: i for i, name in enumerate(FIELDS)}
    parts = spec.split("|")
    lo = np.min([data[..., col[f"{p}_lo"]] for p in parts], axis=0)
    hi = np.max([data[..., col[f"{p}_hi"]] for p in parts], axis=0)
    return lo, hi


def rule_coverage(
    data: np.ndarray, truths: np.ndarray, choice: list[tuple[np.ndarray, str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per design: coverage, share of runs with the truth below and above the interval, under
    a rule given as (mask, candidate) pairs, the first mask that holds choosing (the last
    mask should hold everywhere). Runs the rule leaves without an interval (a bootstrap-t
    without spread) are counted apart, as the suite does, and their number returned."""
    lo = np.full(data.shape[:2], np.nan)
    hi = np.full(data.shape[:2], np.nan)
    chosen = np.zeros(data.shape[:2], dtype=bool)
    for mask, spec in choice:
        c_lo, c_hi = interval(data, spec)
        take = mask & ~chosen
        lo = np.where(take, c_lo, lo)
        hi = np.where(take, c_hi, hi)
        chosen |= take
    given = np.isfinite(lo) & np.isfinite(hi)
    t = truths[:, None]
    runs = given.sum(axis=1)
    cov = ((lo <= t) & (t <= hi) & given).sum(axis=1) / runs
    below = ((t < lo) & given).sum(axis=1) / runs
    above = ((t > hi) & given).sum(axis=1) / runs
    return cov, below, above, int((~given).sum())


def skewness_of(data: np.ndarray) -> np.ndarray:
    """γ* per run (``bounded_means.estimate_skewness``) from the stored estimate and n*."""
    col = {name: i for i, name in enumerate(FIELDS)}
    y, n = data[..., col["estimate"]], data[..., col["n_eff"]]
    spread = n * y * (1 - y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, np.abs(1 - 2 * y) / np.sqrt(spread), np.inf)


def candidate_rules(data: np.ndarray, ks: np.ndarray, names: np.ndarray) -> list[tuple[str, list]]:
    """The rules screened: a studentised interval where γ* is at most c, else a fallback; the
    fallback may change at a second bound on γ* or with K."""
    gamma = skewness_of(data)
    k = np.broadcast_to(ks[:, None], gamma.shape)
    everywhere = np.ones_like(gamma, dtype=bool)
    fallbacks = ["kg|bb", "bb", "bbz", "kg", "kgw", "kgj", "kgm", "kgj|bb", "kgm|bb", "kgw|bb"]
    fallbacks += ["kg|bbz", "kgj|bbz", "kgm|bbz", "btl"]
    out: list[tuple[str, list]] = []
    for spec in (*INTERVALS, "kg|bb"):
        out.append((f"{LABELS.get(spec, spec)} always", [(everywhere, spec)]))
    for inner, c, fallback in itertools.product(
        ("bt", "btl"), (0.14, 0.16, 0.18, 0.2, 0.25, 0.3), fallbacks
    ):
        out.append(
            (
                f"{inner} where γ*<={c}, else {fallback}",
                [(gamma <= c, inner), (everywhere, fallback)],
            )
        )
    # Three tiers: the studentised interval, then a narrower fallback, then a wider one.
    for inner, c1, c2, mid, outer in itertools.product(
        ("bt",),
        (0.16, 0.18, 0.2),
        (0.25, 0.3, 0.4, 0.5),
        ("bb", "kg", "kgj", "bbz"),
        ("kg|bb", "bb", "kgj|bb", "kgm|bb"),
    ):
        if mid == outer:
            continue
        out.append(
            (
                f"bt where γ*<={c1}, {mid} where γ*<={c2}, else {outer}",
                [(gamma <= c1, inner), (gamma <= c2, mid), (everywhere, outer)],
            )
        )
    # By K: one fallback below CHI2_BELOW_CLUSTERS clusters (the product's 15), another from it.
    for c, small, large in itertools.product(
        (0.16, 0.17, 0.18, 0.2),
        ("bb", "bbz", "kgj|bb", "kgm|bb", "kg|bb", "kg|bbz", "kgm|bbz", "kgj|bbz"),
        ("kg|bb", "bb", "kgm|bb", "kg|bbz"),
    ):
        if small == large:
            continue
        out.append(
            (
                f"bt where γ*<={c}, else {small} for K<{CHI2_BELOW_CLUSTERS}, "
                f"{large} from K={CHI2_BELOW_CLUSTERS}",
                [(gamma <= c, "bt"), (k < CHI2_BELOW_CLUSTERS, small), (everywhere, large)],
            )
        )
    out.extend(band_rules(data, ks, names))
    return out


# The product's rule (bounded_means, 6 December 2026): the bootstrap-t where γ* ≤ 0.16, else the
# hull of Korn–Graubard and the beta-binomial, on χ²₁ below 15 clusters and F(1, K − 1) from 15.
PRODUCT_RULE = f"bt where γ*<=0.16, else kg|bbz for K<{CHI2_BELOW_CLUSTERS}, kg|bb from K=15"
# The effective numbers of events E* at which band_rules' first candidates take the
# beta-binomial alone.
EVENT_BOUNDS = (2, 3, 4, 5, 6, 7, 8, 10)


def events_of(data: np.ndarray) -> np.ndarray:
    """E* = n* · min(ȳ, 1 − ȳ) per run (``bounded_means.effective_events``), as stored."""
    return data[..., FIELDS.index("events")]


def band_rules(data: np.ndarray, ks: np.ndarray, names: np.ndarray) -> list[tuple[str, list]]:
    """The rules screened for the band's upper edge (issue #36 §1; docs/analysis.md), each a
    change of the product's rule that a source motivates:

    - by the effective number of events E*: the beta-binomial profile-likelihood interval alone
      where E* < c, the product's rule elsewhere. Exact intervals over-cover most where a
      binomial count is smallest and most discrete (Agresti & Coull 1998, Am. Stat. 52(2);
      Brown, Cai & DasGupta 2001, Stat. Sci. 16(2)), and the hull's Korn–Graubard member is
      Clopper–Pearson at n* trials. The beta-binomial member on χ²₁ ("bbz") at every K, or on
      the product's reference ("bbr": χ²₁ below 15 clusters, F(1, K − 1) from 15);
    - the mid-p Clopper–Pearson at n* ("kgm": Lancaster 1961; Berry & Armitage 1995, The
      Statistician 44(4); Agresti & Gottard 2007, Stat. Med. 26) in place of Korn–Graubard's
      exact one, in the hull below 15 clusters, from 15 or at every K, or alone in place of
      the hull;
    - the beta-binomial member's cutoff: χ²₁ (Wilks 1938) at every K instead of F(1, K − 1)
      from 15 clusters;
    - the E* choice with the mid-p or χ²₁ hulls;
    - the E* choice only where every response is one unit (the 0/1 designs, "0/1 bbz"): there
      the beta-binomial is the units' own model, while F_att's units of one response share
      more than the item's correlation, which a beta-binomial of the units' counts ignores.
    """
    gamma = skewness_of(data)
    events = events_of(data)
    k = np.broadcast_to(ks[:, None], gamma.shape)
    small = k < CHI2_BELOW_CLUSTERS
    one_unit = np.broadcast_to(np.array(["fatt" not in str(n) for n in names])[:, None], k.shape)
    everywhere = np.ones_like(gamma, dtype=bool)
    hulls = {
        "product": ("kg|bbz", "kg|bb"),
        "kgm below 15": ("kgm|bbz", "kg|bb"),
        "kgm from 15": ("kg|bbz", "kgm|bb"),
        "kgm at every K": ("kgm|bbz", "kgm|bb"),
        "kgm alone": ("kgm", "kgm"),
        "bbz at every K": ("kg|bbz", "kg|bbz"),
        "kgm|bbz at every K": ("kgm|bbz", "kgm|bbz"),
    }

    def rule(hull: str, below: str = "", c: float = 0.0) -> list:
        few, many = hulls[hull]
        choice = []
        if below == "bbz":
            choice.append((events < c, "bbz"))
        elif below == "bbr":
            choice += [((events < c) & small, "bbz"), (events < c, "bb")]
        elif below == "bbz below 15":
            choice.append(((events < c) & small, "bbz"))
        elif below == "0/1 bbz":
            choice.append(((events < c) & one_unit, "bbz"))
        elif below == "0/1 bbz below 15":
            choice.append(((events < c) & one_unit & small, "bbz"))
        return [*choice, (gamma <= 0.16, "bt"), (small, few), (everywhere, many)]

    out = [(f"band: {hull}", rule(hull)) for hull in hulls]
    for below, c, hull in itertools.product(
        ("bbz", "bbr", "bbz below 15", "0/1 bbz", "0/1 bbz below 15"),
        EVENT_BOUNDS,
        ("product", "kgm at every K", "bbz at every K"),
    ):
        out.append((f"band: {below} where E*<{c}, else {hull}", rule(hull, below, c)))
    return out


def short_name(name: str) -> str:
    """A design's name without what every design of its kind shares."""
    name = str(name)
    if name.startswith("skewed "):  # all with sizes 1–60, every response weighing the same
        return name.removeprefix("skewed ").replace(" observation sizes 1–60", "")
    return "moderate " + name.removeprefix("binary ").replace(" p=0.3", "")


def band_table(data: np.ndarray, names: np.ndarray, truths: np.ndarray, ks: np.ndarray) -> None:
    """For every rule of :func:`band_rules`: how many designs fall in 93.5–96.5 %, how many
    below and above, and the lowest and highest design (coverage in %), as docs/analysis.md
    tabulates the band's screen."""
    print("| rule | in band | below | above | lowest | highest |")
    print("|---|---|---|---|---|---|")
    for label, choice in band_rules(data, ks, names):
        cov, *_ = rule_coverage(data, truths, choice)
        low, high = int(np.argmin(cov)), int(np.argmax(cov))
        inband = int(np.sum((cov >= 0.935) & (cov <= 0.965)))
        print(
            f"| {label.removeprefix('band: ')} | {inband} | {int(np.sum(cov < 0.935))} | "
            f"{int(np.sum(cov > 0.965))} | {100 * cov[low]:.2f} ({short_name(names[low])}) | "
            f"{100 * cov[high]:.2f} ({short_name(names[high])}) |"
        )


# The rows of docs/analysis.md's table of this screen, by their labels in candidate_rules.
DOCS_RULES = (
    "bootstrap-t always",
    "kg|bb always",
    "Korn–Graubard (Clopper–Pearson at n*) always",
    "beta-binomial, F(1, K − 1) always",
    "beta-binomial, χ²₁ always",
    "Wilson at n* always",
    "Jeffreys at n* always",
    "mid-p Clopper–Pearson at n* always",
    "logit bootstrap-t always",
    "bt where γ*<=0.16, else kg|bb",
    "btl where γ*<=0.16, else kg|bb",
    "bt where γ*<=0.16, else kg|bbz",
    "bt where γ*<=0.16, else bb for K<15, kg|bb from K=15",
    "bt where γ*<=0.16, else kgj|bbz for K<15, kg|bb from K=15",
    "bt where γ*<=0.16, else kgm|bbz for K<15, kg|bb from K=15",
    "bt where γ*<=0.16, else kg|bbz for K<15, kg|bb from K=15",
    "bt where γ*<=0.18, else kg|bbz for K<15, kg|bb from K=15",
)


def docs_table(data: np.ndarray, names: np.ndarray, truths: np.ndarray, ks: np.ndarray) -> None:
    """Ranges of coverage (%) over groups of designs for ``DOCS_RULES``, and how many designs
    fall in 93.5–96.5 %, as docs/analysis.md tabulates them."""
    rules = dict(candidate_rules(data, ks, names))
    skewed = np.array(["skewed" in str(n) for n in names])
    fatt = np.array(["fatt" in str(n) for n in names])
    groups = {
        "skewed 0/1, K = 10": skewed & ~fatt & (ks == 10),
        "skewed 0/1, K ≥ 20": skewed & ~fatt & (ks >= 20),
        "skewed F_att": fatt,
        "moderate 0/1": ~skewed,
    }
    print("| rule | " + " | ".join(f"{g} ({m.sum()})" for g, m in groups.items()) + " | in band |")
    print("|---" * (len(groups) + 2) + "|")
    for label in DOCS_RULES:
        cov, *_ = rule_coverage(data, truths, rules[label])
        cells = [f"{100 * cov[m].min():.1f}–{100 * cov[m].max():.1f}" for m in groups.values()]
        inband = int(np.sum((cov >= 0.935) & (cov <= 0.965)))
        print(f"| {label} | " + " | ".join(cells) + f" | {inband} |")


def rules(paths: list[Path], show: int = 30, detail: int = 6) -> None:
    """Count every candidate rule on the screens' runs and print the docs' table, the best rules,
    and the product's rule (γ* ≤ 0.16, else the hull, its beta-binomial member with the χ²₁
    reference below 15 clusters) and the best ones design by design."""
    data, names, truths, ks = load(paths)
    runs = data.shape[1]
    print(f"{runs} runs per design, {len(names)} designs")
    docs_table(data, names, truths, ks)
    print()
    band_table(data, names, truths, ks)
    print()
    results = []
    for label, choice in candidate_rules(data, ks, names):
        cov, below, above, none = rule_coverage(data, truths, choice)
        inband = int(np.sum((cov >= 0.935) & (cov <= 0.965)))
        results.append((label, cov, below, above, none, inband))
    # Best: no design under 94 % (0.5 point of margin), then most in band, then the lowest high.
    results.sort(key=lambda r: (r[1].min() >= 0.94, r[5], -r[1].max()), reverse=True)
    for label, cov, _, _, none, inband in results[:show]:
        print(
            f"min {100 * cov.min():5.1f}  max {100 * cov.max():5.1f}  in band {inband:2d}/36  "
            f"no interval {none}  {label}"
        )
    print()
    product = [r for r in results if r[0] == PRODUCT_RULE]
    for label, cov, below, above, _, inband in product + results[:detail]:
        print(f"{label}: min {100 * cov.min():.1f}, {inband} in band")
        for i, name in enumerate(names):
            c = cov[i]
            flag = "" if 0.935 <= c <= 0.965 else ("  LOW" if c < 0.935 else "  high")
            print(
                f"   {100 * c:5.1f} ({100 * below[i]:4.1f} / {100 * above[i]:4.1f})  {name}{flag}"
            )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=("measure", "rules"))
    parser.add_argument("paths", type=Path, nargs="+")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--part", default="1/1", help="i/n: designs i, i + n, … (measure)")
    parser.add_argument(
        "--ks", default=",".join(map(str, SUITE_KS)), help="numbers of clusters (measure)"
    )
    args = parser.parse_args(argv)
    if args.action == "measure":
        ks = tuple(int(k) for k in args.ks.split(","))
        measure(args.paths[0], args.runs, args.chunk, args.part, ks)
    else:
        rules(args.paths)


if __name__ == "__main__":
    main(sys.argv[1:])
