"""Simulated truths for the calibration suite, run through the product's own interval functions.

Every design draws data whose true value is known, computes the interval exactly as the
pipelines do (``apps.analysis.stats``) and counts how often it covers the truth. Vectorised with
numpy: one generator per design (seeded from the design's name), simulations stacked in arrays
wherever the product function accepts a batch (the beta-regression fits and sandwiches), and one
``replicates × clusters`` draw matrix per run for the bootstrap.

The figures this module produces are the table in docs/analysis.md, which ``make calibrate``
writes from the runs of ``test_calibration`` (conftest.py); ``screen_cell_means`` draws the cell
means' designs through the same ``draw_*`` functions to compare rules on the suite's own data.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logit
from scipy.stats import t as t_distribution

from apps.analysis.stats.beta_bootstrap import (
    beta_cluster_robust,
    fit_beta_many,
    fit_beta_weighted,
)
from apps.analysis.stats.bootstrap import (
    cluster_standard_error,
    cluster_weights,
    expanded_percentile_interval,
    percentile_interval,
    replicate_means,
    studentized_interval,
)
from apps.analysis.stats.bounded_means import (
    BOOTSTRAP_T_MAX_SKEWNESS,
    BOOTSTRAP_T_METHOD,
    CHI2_BELOW_CLUSTERS,
    bounded_mean_from_clusters,
)
from apps.analysis.stats.decision import evaluate_decision_table
from apps.analysis.stats.proportions import (
    METHOD,
    beta_binomial_interval,
    clustered_rate_interval,
    korn_graubard_interval,
)
from apps.studies.opb.pipeline import OPB

CONFIDENCE = 0.95
SEED = 20261201
RATE_HULL_LABEL = "Korn–Graubard ∪ beta-binomial profile likelihood (the rate interval)"
BOUNDED_MEAN_LABEL = (
    "bounded mean: bootstrap-t where γ* ≤ "
    f"{BOOTSTRAP_T_MAX_SKEWNESS:g} ({{share:.0f}} % of runs), else Korn–Graubard (mid-p) ∪ "
    f"beta-binomial (χ²₁ reference below K = {CHI2_BELOW_CLUSTERS})"
)


def rng_for(name: str) -> np.random.Generator:
    """A generator per design, so one design's figures do not depend on which others ran."""
    digest = hashlib.sha256(f"{SEED}:{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


@dataclass
class Coverage:
    """Coverage of one method on one design, with the Monte Carlo standard error."""

    design: str
    method: str
    runs: int
    hits: int
    below: int  # truth below the interval (interval too high)
    above: int  # truth above the interval
    extra: dict = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        return self.hits / self.runs

    @property
    def mc_se(self) -> float:
        p = self.coverage
        return float(np.sqrt(max(p * (1 - p), 1e-12) / self.runs))

    def row(self) -> str:
        return (
            f"| {self.design} | {self.method} | {100 * self.coverage:.1f} | "
            f"{100 * self.mc_se:.1f} | {100 * self.below / self.runs:.1f} / "
            f"{100 * self.above / self.runs:.1f} | {self.runs} |"
        )


def _tally(design: str, method: str, lo: np.ndarray, hi: np.ndarray, truth, **extra) -> Coverage:
    truth = np.broadcast_to(np.asarray(truth, dtype=float), lo.shape)
    below = int(np.sum(truth < lo))
    above = int(np.sum(truth > hi))
    return Coverage(design, method, lo.size, lo.size - below - above, below, above, extra)


# -- 1. clustered binary outcomes: the cluster bootstrap-t --------------------------------------


def binary_name(n_clusters: int, icc: float, rate: float, aggregation: str) -> str:
    """The name (and generator seed) of a :func:`clustered_binary` design."""
    return f"binary K={n_clusters} ICC={icc} p={rate} {aggregation}"


def draw_binary(
    n_clusters: int, icc: float, rate: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One run of :func:`clustered_binary`'s data: the clusters' (event counts, sizes).

    Sizes 2–20; cluster probabilities Beta(rate·s, (1 − rate)·s), s = 1/icc − 1.
    """
    s = 1.0 / icc - 1.0
    sizes = rng.integers(2, 21, size=n_clusters).astype(float)
    sums = rng.binomial(sizes.astype(int), rng.beta(rate * s, (1 - rate) * s, n_clusters))
    return sums.astype(float), sizes


def clustered_binary(
    n_clusters: int,
    icc: float,
    *,
    rate: float = 0.3,
    aggregation: str = "observation",
    runs: int,
    replicates: int = 999,
    method: str = "studentized",
) -> Coverage:
    """Binary outcomes in clusters of unequal size (2–20), intra-cluster correlation ``icc``.

    Cluster probabilities are Beta(rate·s, (1 − rate)·s) with s = 1/icc − 1 (so the ICC of the
    0/1 outcomes is ``icc``) and every cluster's expected rate is ``rate``, the truth of both
    aggregations. The interval is ``stats.bootstrap.studentized_interval``, as
    ``family_cluster_bootstrap`` forms it, or with ``method="percentile"`` the plain percentile
    interval of ``family_cluster_bootstrap(method="percentile")`` (what the ``crucible``
    pipeline reports, as CRUCIBLE §9.1 preregisters), on the same simulated data; with
    ``method="bounded_mean"`` the interval of F_att and A_att cell means
    (``stats.bounded_means``: the bootstrap-t or the rate hull, by the estimate's skewness
    γ*).
    """
    name = binary_name(n_clusters, icc, rate, aggregation)
    rng = rng_for(name)
    lo, hi = np.empty(runs), np.empty(runs)
    methods_used: dict[str, int] = {}
    for r in range(runs):
        sums, sizes = draw_binary(n_clusters, icc, rate, rng)
        if aggregation == "cluster_mean":
            estimate = float(np.mean(sums / sizes))
        else:
            estimate = float(sums.sum() / sizes.sum())
        if method == "bounded_mean":
            _, interval, used, _, _ = bounded_mean_from_clusters(
                sums,
                sizes,
                sums,
                sizes,
                seed=int(rng.integers(2**32)),
                aggregation=aggregation,
                replicates=replicates,
                confidence=CONFIDENCE,
            )
            methods_used[used] = methods_used.get(used, 0) + 1
            lo[r], hi[r] = interval if interval is not None else (np.nan, np.nan)
            continue
        weights = cluster_weights(n_clusters, replicates, rng)
        if method == "percentile":
            reps = replicate_means(weights, sums, sizes, aggregation)
            lo[r], hi[r] = percentile_interval(reps, CONFIDENCE)
            continue
        (lo[r], hi[r]), _, _ = studentized_interval(
            weights, sums, sizes, estimate, aggregation, CONFIDENCE
        )
    label = {
        "percentile": "cluster percentile bootstrap",
        "bounded_mean": BOUNDED_MEAN_LABEL.format(
            share=100 * methods_used.get(BOOTSTRAP_T_METHOD, 0) / runs
        ),
    }.get(method, "cluster bootstrap-t")
    given = np.isfinite(lo)
    if not given.all():
        label += f" (no interval in {100 * (1 - given.mean()):.1f} % of runs)"
    return _tally(name, label, lo[given], hi[given], rate, unavailable=int((~given).sum()))


# -- 2. rates: Korn–Graubard, and its hull with the beta-binomial for larger clusters ---------


def rare_rate(
    rate: float, *, items: int = 200, repetitions: int = 1, icc: float = 0.0, runs: int
) -> Coverage:
    """A label rate over ``items`` items with ``repetitions`` responses each (XSTest: 200 × 1).

    With ``icc`` > 0, item probabilities are Beta-distributed around ``rate`` as above.
    """
    name = f"rate p={rate} items={items}×{repetitions} ICC={icc}"
    rng = rng_for(name)
    sizes = np.full(items, float(repetitions))
    if icc > 0:
        s = 1.0 / icc - 1.0
        probs = rng.beta(rate * s, (1 - rate) * s, size=(runs, items))
    else:
        probs = np.full((runs, items), rate)
    sums = rng.binomial(repetitions, probs).astype(float)
    lo, hi = np.empty(runs), np.empty(runs)
    widths_zero = 0
    method = ""
    for r in range(runs):
        _, (lo[r], hi[r]), _, _, method = clustered_rate_interval(
            sums[r], sizes, confidence=CONFIDENCE
        )
        widths_zero += hi[r] <= lo[r]
    # The product's rate interval: Korn–Graubard alone for clusters of one response, else its
    # hull with the beta-binomial interval (stats.proportions.clustered_rate_interval).
    label = "Korn–Graubard" if method == METHOD else RATE_HULL_LABEL
    return _tally(name, label, lo, hi, rate, zero_width=int(widths_zero))


# -- 3. OPB-01-shaped F_att: beta regression with item random intercepts and slopes -----------


@dataclass(frozen=True)
class FattDesign:
    items: int = 8
    repetitions: int = 5
    levels: tuple[int, ...] = (0, 1, 2, 3)
    intercept: float = -1.0
    slope: float = 0.0
    intercept_sd: float = 0.5
    slope_sd: float = 0.2
    precision: float = 10.0

    def design(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(level, item, X) for one family: items × levels × repetitions responses."""
        item = np.repeat(np.arange(self.items), len(self.levels) * self.repetitions)
        level = np.tile(np.repeat(np.asarray(self.levels, float), self.repetitions), self.items)
        return level, item, np.column_stack([np.ones(level.size), level])

    def draw(self, runs: int, rng: np.random.Generator) -> np.ndarray:
        """``runs`` × n outcomes, squeezed into (0, 1) as the pipeline does."""
        level, item, _ = self.design()
        u0 = rng.normal(0, self.intercept_sd, (runs, self.items))[:, item]
        u1 = rng.normal(0, self.slope_sd, (runs, self.items))[:, item]
        mu = expit(self.intercept + u0 + (self.slope + u1) * level)
        y = rng.beta(mu * self.precision, (1 - mu) * self.precision)
        n = level.size
        # Smithson & Verkuilen (2006), as betareg.squeeze_unit_interval (the clip guards the
        # float64 rounding of beta draws to exactly 0 or 1).
        return (np.clip(y, 0.0, 1.0) * (n - 1) + 0.5) / n

    def pseudo_true_slope(self) -> float:
        """The slope the (marginal) beta regression estimates: its fit on 20,000 items."""
        if self.slope_sd == 0 and self.intercept_sd == 0:
            return self.slope
        big = FattDesign(**{**self.__dict__, "items": 20_000, "repetitions": 1})
        rng = rng_for(f"pseudo-true {self}")
        _level, _, X = big.design()
        y = big.draw(1, rng)
        params, _ = fit_beta_many(y, X, start=np.array([self.intercept, self.slope, 2.0]))
        return float(params[0, 1])


def fatt_slopes(spec: FattDesign, runs: int, rng: np.random.Generator) -> dict:
    """β per run with its cluster-robust (by item) SE and df, as the pipeline's analytic path."""
    _level, item, X = spec.design()
    y = spec.draw(runs, rng)
    start = np.array([logit(np.clip(y.mean(), 0.01, 0.99)), 0.0, np.log(spec.precision)])
    params, converged = fit_beta_many(y, X, start=start)
    ok = converged
    cov, groups = beta_cluster_robust(y[ok], X, params[ok], item)
    return {
        "beta": params[ok, 1],
        "se": np.sqrt(cov[:, 1, 1]),
        "df": groups - 1,
        "not_converged": int((~ok).sum()),
    }


def fatt_coverage(spec: FattDesign, *, runs: int) -> Coverage:
    name = (
        f"F_att β items={spec.items} slope={spec.slope} item slope SD={spec.slope_sd} "
        f"intercept SD={spec.intercept_sd}"
    )
    fits = fatt_slopes(spec, runs, rng_for(name))
    half = t_distribution.ppf(0.5 + CONFIDENCE / 2, fits["df"]) * fits["se"]
    truth = spec.pseudo_true_slope()
    return _tally(
        name,
        "Wald, SE clustered by item, t(G − 1)",
        fits["beta"] - half,
        fits["beta"] + half,
        truth,
        not_converged=fits["not_converged"],
        pseudo_true_slope=round(truth, 4),
    )


# -- 4. the decision table under known truths ---------------------------------------------------


def decision_rates(
    truth: str,
    *,
    beta_a: float,
    beta_b: float,
    items_a: int = 10,
    items_b: int = 10,
    epsilon: float = 0.15,
    runs: int,
) -> dict[str, float]:
    """How often each finding (or a contradiction) is reported when (β_A, β_B) is the truth.

    Both families are drawn with an item random slope (SD 0.2) and fitted as the pipeline's
    analytic path does; β_LF = β_A − β_B with the smaller family's t df; the OPB template's
    decision table is evaluated with the interval criterion and the TOST (1 − 2α) interval for
    ``within``.
    """
    rng = rng_for(f"decision {truth}")
    fits = {}
    for arm, beta, items in (("B", beta_b, items_b), ("A", beta_a, items_a)):
        spec = FattDesign(items=items, slope=beta, intercept=-1.0)
        fits[arm] = fatt_slopes(spec, runs, rng)
    n = min(fits["A"]["beta"].size, fits["B"]["beta"].size)
    counts: dict[str, int] = {}
    alpha = 1 - CONFIDENCE
    for r in range(n):
        estimates = {}
        for name, b, se, df in (
            ("beta_A", fits["A"]["beta"][r], fits["A"]["se"][r], fits["A"]["df"]),
            ("beta_B", fits["B"]["beta"][r], fits["B"]["se"][r], fits["B"]["df"]),
            (
                "beta_LF",
                fits["A"]["beta"][r] - fits["B"]["beta"][r],
                np.hypot(fits["A"]["se"][r], fits["B"]["se"][r]),
                min(fits["A"]["df"], fits["B"]["df"]),
            ),
        ):
            wide = t_distribution.ppf(1 - alpha / 2, df) * se
            narrow = t_distribution.ppf(1 - alpha, df) * se
            estimates[name] = {
                "estimate": float(b),
                "interval": (float(b - wide), float(b + wide)),
                "equivalence_interval": (float(b - narrow), float(b + narrow)),
            }
        outcome = evaluate_decision_table(
            estimates, {"epsilon": epsilon, "disclosure_epsilon": 0.05}, table=OPB.decision_table
        )
        keys = [r.rule_id for r in outcome.matched if r.rule_id not in outcome.contradicted]
        keys += ["contradictory" for _ in outcome.contradictions]
        for key in keys or ["no finding"]:
            counts[key] = counts.get(key, 0) + 1
    return {key: value / n for key, value in sorted(counts.items())} | {"runs": n}


def fatt_bootstrap_coverage(spec: FattDesign, *, runs: int, replicates: int = 499) -> Coverage:
    """β's item-clustered bootstrap (``interval_method = bootstrap``), expanded percentile.

    The steps of ``beta_bootstrap.beta_cluster_bootstrap`` — items drawn with
    ``cluster_weights``, every replicate refitted by ``fit_beta_weighted``, the interval by
    ``expanded_percentile_interval`` — called directly, so that designs below the product's
    floor can be measured too (that is how the floor was found).
    """
    name = f"F_att β bootstrap items={spec.items} slope={spec.slope} item slope SD={spec.slope_sd}"
    rng = rng_for(name)
    _, item, X = spec.design()
    y = spec.draw(runs, rng)
    start = np.array([logit(np.clip(y.mean(), 0.01, 0.99)), 0.0, np.log(spec.precision)])
    full, converged = fit_beta_many(y, X, start=start)
    lo, hi = np.full(runs, np.nan), np.full(runs, np.nan)
    for r in np.flatnonzero(converged):
        draws = cluster_weights(spec.items, replicates, rng)
        params, _ = fit_beta_weighted(y[r], X, draws[:, item], start=full[r])
        slopes = params[:, 1][np.isfinite(params[:, 1])]
        lo[r], hi[r] = expanded_percentile_interval(slopes, CONFIDENCE, spec.items)
    ok = np.isfinite(lo)
    return _tally(
        name,
        "item bootstrap, expanded percentile",
        lo[ok],
        hi[ok],
        spec.pseudo_true_slope(),
        not_converged=int((~ok).sum()),
    )


# -- 5. seed 002's paired task-block contrasts, simple effects included --------------------------

SIMPLE_EFFECT_FACTORS = {
    "alternate": ("absent", "present"),
    "framing": ("quality", "safety"),
    "friction": ("low", "high"),
}


def simple_effect_coverage(
    *,
    blocks: int = 64,
    runs: int,
    replicates: int = 999,
    contrast: str = "friction_at_alternate_present",
) -> tuple[Coverage, Coverage, Coverage]:
    """Binary outcomes in task blocks of seed 002's 2×2×2 design with a friction × alternate
    interaction, through ``stats.task_blocks.paired_contrasts`` with every simple effect
    (``simple_effects``): the coverage of ``contrast``'s block bootstrap-t, paired t and
    Newcombe paired score intervals (the last is the one a 0/1 endpoint's decision reads).

    Condition c of block b completes with probability p_c + a_b: p_c = 0.5 − 0.10·friction
    − 0.15·friction·alternate + 0.05·framing (each factor coded 0/1 at its low/high level), so
    friction's effect is −0.10 where the alternate is absent and −0.25 where it is present;
    a_b ~ Uniform(−0.15, 0.15) is the block's shared ability (so the paired differences are
    correlated within a block, and every probability stays in [0.1, 0.9]). The truth of a
    simple effect is the mean of its condition probabilities' weighted sum, a_b cancelling.
    """
    from apps.analysis.stats.task_blocks import paired_contrasts, simple_effects

    names = sorted(SIMPLE_EFFECT_FACTORS)
    combos = [
        dict(zip(names, c, strict=True))
        for c in itertools.product(*(SIMPLE_EFFECT_FACTORS[n] for n in names))
    ]
    high = {n: np.array([c[n] == SIMPLE_EFFECT_FACTORS[n][1] for c in combos]) for n in names}
    p = (
        0.5
        - 0.10 * high["friction"]
        - 0.15 * high["friction"] * high["alternate"]
        + 0.05 * high["framing"]
    )
    contrasts = [c for c in simple_effects(combos, SIMPLE_EFFECT_FACTORS) if c.name == contrast]
    (target,) = contrasts
    truth = float(np.asarray(target.weights) @ p)
    name = f"simple effect {contrast} blocks={blocks}"
    rng = rng_for(name)
    boot_lo, boot_hi = np.empty(runs), np.empty(runs)
    t_lo, t_hi = np.empty(runs), np.empty(runs)
    score_lo, score_hi = np.empty(runs), np.empty(runs)
    for r in range(runs):
        ability = rng.uniform(-0.15, 0.15, size=(blocks, 1))
        y = (rng.random((blocks, len(combos))) < p + ability).astype(float)
        (result,) = paired_contrasts(
            y,
            contrasts,
            replicates=replicates,
            confidence=CONFIDENCE,
            seed=int(rng.integers(2**32)),
        ).contrasts
        boot_lo[r], boot_hi[r] = result.bootstrap_interval
        t_lo[r], t_hi[r] = result.t_interval
        score_lo[r], score_hi[r] = result.score_interval
    return (
        _tally(name, "block bootstrap-t", boot_lo, boot_hi, truth),
        _tally(name, "paired t", t_lo, t_hi, truth),
        _tally(name, "Newcombe paired score interval", score_lo, score_hi, truth),
    )


# -- 6. skewed and rare clustered means and rates (issue #36) ----------------------------------

# Gauss–Hermite (probabilists') nodes for the moments of a logit-normal cluster probability.
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()


def logit_normal_for(rate: float, icc: float) -> tuple[float, float]:
    """(μ, σ) of logit p ~ N(μ, σ²) with E[p] = ``rate`` and var(p) / [rate(1 − rate)] = ``icc``.

    The ICC of the 0/1 outcomes of clusters with probability p is var(p) / [E p (1 − E p)];
    the moments by Gauss–Hermite quadrature, μ and σ by nested root finding.
    """
    from scipy.optimize import brentq

    def moments(mu: float, sigma: float) -> tuple[float, float]:
        p = expit(mu + sigma * _GH_NODES)
        mean = float(_GH_WEIGHTS @ p)
        return mean, float(_GH_WEIGHTS @ (p - mean) ** 2)

    def mu_for(sigma: float) -> float:
        return brentq(lambda mu: moments(mu, sigma)[0] - rate, -40, 40)

    def icc_gap(sigma: float) -> float:
        mean, var = moments(mu_for(sigma), sigma)
        return var / (mean * (1 - mean)) - icc

    sigma = brentq(icc_gap, 1e-3, 8.0)
    return mu_for(sigma), sigma


def unequal_sizes(n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """Very unequal cluster sizes, 1 to 60: a rounded log-normal, median 8, log-SD 1."""
    return np.clip(np.round(np.exp(rng.normal(np.log(8), 1.0, n_clusters))), 1, 60)


# Units per response: a 0/1 outcome is one unit, the discrete F_att a share of 4.
STEPS = {"binary": 1, "fatt": 4}


def skewed_name(n_clusters: int, icc: float, rate: float, outcome: str, aggregation: str) -> str:
    """The name (and generator seed) of a :func:`skewed_clustered` design."""
    return f"skewed {outcome} K={n_clusters} ICC={icc} p={rate} {aggregation} sizes 1–60"


def draw_skewed(
    n_clusters: int, mu: float, sigma: float, steps: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One run of :func:`skewed_clustered`'s data: the clusters' (sums of values, sizes).

    Sizes :func:`unequal_sizes`; logit pₖ ~ N(``mu``, ``sigma``²); each response's value is
    Binomial(``steps``, pₖ) / ``steps``.
    """
    sizes = unequal_sizes(n_clusters, rng)
    p = expit(mu + sigma * rng.standard_normal(n_clusters))
    return rng.binomial(sizes.astype(int) * steps, p) / steps, sizes


def skewed_clustered(
    n_clusters: int,
    icc: float,
    rate: float,
    *,
    outcome: str = "binary",
    aggregation: str = "observation",
    method: str = "studentized",
    runs: int,
    replicates: int = 999,
) -> Coverage:
    """The independent simulation's designs: logit-normal clusters of very unequal size.

    Cluster k has size nₖ (:func:`unequal_sizes`, 1–60) and probability pₖ, logit-normal with
    E[p] = ``rate`` and the 0/1 outcomes' ICC ``icc`` (:func:`logit_normal_for`), so the truth
    of both aggregations is ``rate``. ``outcome="binary"``: each observation is 0/1;
    ``outcome="fatt"``: each is a discrete F_att, Binomial(4, pₖ)/4, so most are exactly 0
    at a mean of 0.08. ``method``: ``"studentized"`` (the cluster bootstrap-t of means),
    ``"korn_graubard"``, ``"beta_binomial"`` (``stats.proportions.beta_binomial_interval``) or
    ``"clustered_rate"`` (the product's rate interval, the hull of the two:
    ``stats.proportions.clustered_rate_interval``) or ``"bounded_mean"`` (the product's
    interval of F_att and A_att cell means, ``stats.bounded_means``, the units' counts being
    the outcomes' steps).
    """
    name = skewed_name(n_clusters, icc, rate, outcome, aggregation)
    rng = rng_for(name)
    mu, sigma = logit_normal_for(rate, icc)
    steps = STEPS[outcome]
    lo, hi = np.empty(runs), np.empty(runs)
    methods_used: dict[str, int] = {}
    for r in range(runs):
        sums, sizes = draw_skewed(n_clusters, mu, sigma, steps, rng)
        if method == "korn_graubard":
            _, (lo[r], hi[r]), _, _ = korn_graubard_interval(
                sums, sizes, aggregation=aggregation, confidence=CONFIDENCE
            )
            continue
        if method == "clustered_rate":
            _, (lo[r], hi[r]), _, _, _ = clustered_rate_interval(
                sums, sizes, aggregation=aggregation, confidence=CONFIDENCE
            )
            continue
        if method == "beta_binomial":
            _, (lo[r], hi[r]) = beta_binomial_interval(sums, sizes, confidence=CONFIDENCE)
            continue
        if method == "bounded_mean":
            # The product's interval of F_att / A_att cell means (issue #36 §1): the units'
            # counts are the outcomes' steps (4 per F_att response, 1 per 0/1 outcome).
            _, interval, used, _, _ = bounded_mean_from_clusters(
                sums,
                sizes,
                sums * steps,
                sizes * steps,
                seed=int(rng.integers(2**32)),
                aggregation=aggregation,
                replicates=replicates,
                confidence=CONFIDENCE,
            )
            methods_used[used] = methods_used.get(used, 0) + 1
            lo[r], hi[r] = interval if interval is not None else (np.nan, np.nan)
            continue
        if aggregation == "cluster_mean":
            estimate = float(np.mean(sums / sizes))
        else:
            estimate = float(sums.sum() / sizes.sum())
        weights = cluster_weights(n_clusters, replicates, rng)
        if cluster_standard_error(sums, sizes, estimate, aggregation) == 0.0:
            lo[r] = hi[r] = np.nan  # no spread: family_cluster_bootstrap gives no interval
            continue
        try:
            (lo[r], hi[r]), _, _ = studentized_interval(
                weights, sums, sizes, estimate, aggregation, CONFIDENCE
            )
        except ValueError:  # every replicate without spread: the product reports no interval
            lo[r] = hi[r] = np.nan
            continue
        lo[r], hi[r] = max(lo[r], 0.0), min(hi[r], 1.0)
    label = {
        "korn_graubard": "Korn–Graubard",
        "clustered_rate": RATE_HULL_LABEL,
        "beta_binomial": "beta-binomial profile likelihood, F(1, K − 1)",
        "bounded_mean": BOUNDED_MEAN_LABEL.format(
            share=100 * methods_used.get(BOOTSTRAP_T_METHOD, 0) / runs
        ),
    }.get(method, "cluster bootstrap-t")
    given = np.isfinite(lo)
    if not given.all():
        label += f" (no interval in {100 * (1 - given.mean()):.1f} % of runs)"
    return _tally(
        name,
        label,
        lo[given],
        hi[given],
        rate,
        unavailable=int((~given).sum()),
        bootstrap_t_runs=methods_used.get(BOOTSTRAP_T_METHOD, 0),
    )


def task_clustered_coverage(
    *, tasks: int, rounds: int, task_sd: float = 0.12, runs: int, replicates: int = 999
) -> tuple[Coverage, ...]:
    """Seed 002's friction main effect when tasks repeat over rounds (issue #36 §4).

    ``tasks × rounds`` blocks of the 2×2×2 design, 0/1 outcomes. Condition c of block b (task
    t) completes with probability 0.5 − 0.10·friction + 0.05·framing + a_b + δ_t·(friction − ½):
    a_b ~ Uniform(−0.15, 0.15) the block's ability, δ_t ~ N(0, ``task_sd``²) the task's own
    friction effect, shared by its blocks over the rounds. The truth is −0.10 (E δ = 0).
    Returns the coverage of the blocks-as-independent bootstrap-t, and of the task-clustered
    bootstrap-t and t intervals (``paired_contrasts(tasks=…)``; below 10 tasks, its exact
    sign-flip interval over the task means), with the share of runs the task-clustered interval
    is unavailable in the method's name; an interval never given has no row.
    """
    from apps.analysis.stats.task_blocks import factor_contrasts, paired_contrasts

    names = sorted(SIMPLE_EFFECT_FACTORS)
    combos = [
        dict(zip(names, c, strict=True))
        for c in itertools.product(*(SIMPLE_EFFECT_FACTORS[n] for n in names))
    ]
    high = {n: np.array([c[n] == SIMPLE_EFFECT_FACTORS[n][1] for c in combos]) for n in names}
    p = 0.5 - 0.10 * high["friction"] + 0.05 * high["framing"]
    (friction,) = [
        c for c in factor_contrasts(combos, SIMPLE_EFFECT_FACTORS, []) if c.name == "friction"
    ]
    truth = -0.10
    name = f"block contrast tasks={tasks}×rounds={rounds} task SD={task_sd}"
    rng = rng_for(name)
    labels = np.repeat(np.arange(tasks), rounds)
    bounds = {k: (np.full(runs, np.nan), np.full(runs, np.nan)) for k in ("blocks", "boot", "t")}
    for r in range(runs):
        delta = rng.normal(0, task_sd, tasks)[labels][:, None]
        ability = rng.uniform(-0.15, 0.15, size=(tasks * rounds, 1))
        prob = np.clip(p + ability + delta * (high["friction"] - 0.5), 0.0, 1.0)
        y = (rng.random(prob.shape) < prob).astype(float)
        seed = int(rng.integers(2**32))
        (independent,) = paired_contrasts(
            y, [friction], replicates=replicates, confidence=CONFIDENCE, seed=seed
        ).contrasts
        (clustered,) = paired_contrasts(
            y, [friction], replicates=replicates, confidence=CONFIDENCE, seed=seed, tasks=labels
        ).contrasts
        for key, interval in (
            ("blocks", independent.bootstrap_interval),
            ("boot", clustered.bootstrap_interval),
            ("t", clustered.t_interval),
        ):
            if interval is not None:
                bounds[key][0][r], bounds[key][1][r] = interval

    def tally(key: str, label: str) -> Coverage | None:
        lo, hi = bounds[key]
        given = np.isfinite(lo)
        if not given.any():
            return None
        if not given.all():
            label += f" (no interval in {100 * (1 - given.mean()):.1f} % of runs)"
        return _tally(name, label, lo[given], hi[given], truth, unavailable=int((~given).sum()))

    results = (
        tally("blocks", "block bootstrap-t, blocks independent"),
        tally(
            "boot",
            "task-clustered bootstrap-t"
            if tasks >= 10
            else "task sign-flip interval over task means (Hartigan 1969)",
        ),
        tally("t", "task-clustered t(G − 1), CR1"),
    )
    return tuple(c for c in results if c is not None)


def rare_block_contrast_coverage(
    *,
    rate: float = 0.005,
    effect: float = 0.0,
    blocks: int = 64,
    runs: int,
    replicates: int = 999,
) -> tuple[Coverage, ...]:
    """Seed 002's friction main effect on a rare 0/1 endpoint (issue #36 §4).

    ``blocks`` task blocks of the 2×2×2 design; condition c of block b has the event with
    probability (``rate`` + ``effect``·friction)·g_b, g_b ~ Gamma(2, ½) (mean 1) the block's
    frailty, shared by its 8 conditions (so events cluster in blocks, and the block's pairs are
    dependent). The truth is ``effect`` (E g = 1). Returns the coverage of the block bootstrap-t
    (an interval never given, the runs with no spread, counts as a miss and is reported as
    zero-width) and of Newcombe's paired score interval (``score_interval``) with its
    zero-width count.
    """
    from apps.analysis.stats.task_blocks import factor_contrasts, paired_contrasts

    names = sorted(SIMPLE_EFFECT_FACTORS)
    combos = [
        dict(zip(names, c, strict=True))
        for c in itertools.product(*(SIMPLE_EFFECT_FACTORS[n] for n in names))
    ]
    high = np.array([c["friction"] == "high" for c in combos])
    p = rate + effect * high
    (friction,) = [
        c for c in factor_contrasts(combos, SIMPLE_EFFECT_FACTORS, []) if c.name == "friction"
    ]
    name = f"rare block contrast rate={rate} effect={effect} blocks={blocks}"
    rng = rng_for(name)
    bounds = {k: (np.full(runs, np.nan), np.full(runs, np.nan)) for k in ("boot", "score")}
    for r in range(runs):
        frailty = rng.gamma(2.0, 0.5, size=(blocks, 1))
        y = (rng.random((blocks, len(combos))) < np.clip(p * frailty, 0, 1)).astype(float)
        (result,) = paired_contrasts(
            y,
            [friction],
            replicates=replicates,
            confidence=CONFIDENCE,
            seed=int(rng.integers(2**32)),
        ).contrasts
        for key, interval in (
            ("boot", result.bootstrap_interval),
            ("score", result.score_interval),
        ):
            # No interval (every block's difference alike) is the zero-width (est, est).
            lo, hi = interval if interval is not None else (result.estimate,) * 2
            bounds[key][0][r], bounds[key][1][r] = lo, hi

    def tally(key: str, label: str) -> Coverage:
        lo, hi = bounds[key]
        zero = int(np.sum(hi - lo <= 0))
        return _tally(name, f"{label} ({zero} zero-width)", lo, hi, effect, zero_width=zero)

    return (
        tally("boot", "block bootstrap-t"),
        tally("score", "Newcombe paired score interval"),
    )


# -- the general comparison: differences and ratios between two conditions (issue 34 §10) ------


def condition_difference_coverage(
    n_clusters: int,
    icc: float,
    *,
    design: str = "nested",
    rates: tuple[float, float] = (0.2, 0.35),
    runs: int,
) -> tuple[Coverage, Coverage, Coverage]:
    """Coverage of the comparison pipeline's intervals for B − A: the difference of clustered
    rates and their ratio (``stats.comparison.clustered_difference``, ``clustered_rate_ratio``)
    and the difference of clustered means.

    ``design`` ``nested``: ``n_clusters`` items in each condition (each item in one condition,
    the pipeline's ``cluster=item`` of a between-item design); ``crossed``: ``n_clusters``
    blocks, each holding both conditions (``cluster=block``: the same prompt under both), the
    block's effect shared. Cluster sizes very unequal (``unequal_sizes``, 1 to 60 per condition
    and cluster). Rates: a cluster's probability is logit-normal with mean ``rates[c]`` and
    intra-cluster correlation ``icc`` (``logit_normal_for``), so the true rates, difference and
    ratio are known exactly. Means: y = 0.5·B + u + e, u ~ N(0, icc), e ~ N(0, 1 − icc), so
    the truth is 0.5. Returns (rate difference, rate ratio, mean difference).
    """
    from apps.analysis.stats.comparison import clustered_difference, clustered_rate_ratio

    rng = rng_for(f"comparison/{design}/{n_clusters}/{icc}/{rates}")
    params = [logit_normal_for(rate, icc) for rate in rates]
    bounds: dict[str, list[tuple[float, float]]] = {"diff": [], "ratio": [], "mean": []}
    skipped = 0
    for _ in range(runs):
        if design == "nested":
            arms = np.repeat([0, 1], n_clusters)
            clusters = np.arange(2 * n_clusters)
        else:
            arms = np.tile([0, 1], n_clusters)
            clusters = np.repeat(np.arange(n_clusters), 2)
        shared = rng.standard_normal(clusters.max() + 1)[clusters]
        sizes = unequal_sizes(arms.size, rng).astype(int)
        arm = np.repeat(arms, sizes)
        cluster = np.repeat(clusters, sizes)
        z = np.repeat(shared, sizes)
        mu = np.array([p[0] for p in params])[arm]
        sigma = np.array([p[1] for p in params])[arm]
        y = (rng.random(arm.size) < expit(mu + sigma * z)).astype(float)
        diff = clustered_difference(y, arm, cluster, confidence=CONFIDENCE)
        ratio = clustered_rate_ratio(y, arm, cluster, confidence=CONFIDENCE)
        x = 0.5 * arm + np.sqrt(icc) * z + np.sqrt(1 - icc) * rng.standard_normal(arm.size)
        mean = clustered_difference(x, arm, cluster, confidence=CONFIDENCE)
        if diff.interval is None or ratio.interval is None or mean.interval is None:
            skipped += 1  # every observation alike, or a rate of 0: no interval is claimed
            continue
        bounds["diff"].append(diff.interval)
        bounds["ratio"].append(ratio.interval)
        bounds["mean"].append(mean.interval)
    label = f"{design} K={n_clusters} per condition ICC={icc} p={rates[0]}→{rates[1]}"
    method = "OLS, CR2 cluster-robust, Bell–McCaffrey t"
    truths = {"diff": rates[1] - rates[0], "ratio": rates[1] / rates[0], "mean": 0.5}
    names = {
        "diff": f"rate difference, {method}",
        "ratio": "rate ratio, log scale, delta method with CR2, Bell–McCaffrey t",
        "mean": f"mean difference, {method}",
    }
    out = []
    for key in ("diff", "ratio", "mean"):
        pairs = np.asarray(bounds[key])
        out.append(
            _tally(
                f"two conditions, {label}",
                names[key],
                pairs[:, 0],
                pairs[:, 1],
                truths[key],
                skipped=skipped,
            )
        )
    return out[0], out[1], out[2]


def condition_level_coverage(n_clusters: int, icc: float, *, runs: int) -> Coverage:
    """Coverage of the comparison pipeline's interval for one condition's mean
    (``stats.comparison.clustered_mean``: intercept-only OLS, CR2, Bell–McCaffrey t under
    independence): y = u + e, u ~ N(0, icc), e ~ N(0, 1 − icc), so the truth
    is 0; ``n_clusters`` items of very unequal sizes (``unequal_sizes``)."""
    from apps.analysis.stats.comparison import clustered_mean

    rng = rng_for(f"comparison/level/{n_clusters}/{icc}")
    lo, hi = np.empty(runs), np.empty(runs)
    for run in range(runs):
        sizes = unequal_sizes(n_clusters, rng).astype(int)
        cluster = np.repeat(np.arange(n_clusters), sizes)
        shared = rng.standard_normal(n_clusters)[cluster]
        y = np.sqrt(icc) * shared + np.sqrt(1 - icc) * rng.standard_normal(cluster.size)
        interval = clustered_mean(y, cluster, confidence=CONFIDENCE).interval
        assert interval is not None
        lo[run], hi[run] = interval
    return _tally(
        f"one condition, K={n_clusters} ICC={icc} sizes 1–60",
        "mean, intercept-only OLS, CR2 cluster-robust, Bell–McCaffrey t",
        lo,
        hi,
        0.0,
    )


# -- judge validation: α and κ of a machine scorer, items resampled (issue 34 §5) --------------


def judge_truth(prevalence: float, accuracy: float) -> tuple[float, float]:
    """The population's Cohen's κ and Krippendorff's α (nominal) of a binary judge that agrees
    with the humans with probability ``accuracy``, independently of the label, when the humans'
    label is 1 with probability ``prevalence``: κ = (p_o − p_e) / (1 − p_e) (Cohen 1960), and
    α = 1 − D_o / D_e, its large-sample form (Krippendorff 2011: D_o the share of disagreeing
    pairs, D_e = 1 − Σ_c π_c² over the pooled values)."""
    judge = accuracy * prevalence + (1 - accuracy) * (1 - prevalence)
    chance = prevalence * judge + (1 - prevalence) * (1 - judge)
    kappa = (accuracy - chance) / (1 - chance)
    pooled = (prevalence + judge) / 2
    alpha = 1 - (1 - accuracy) / (1 - pooled**2 - (1 - pooled) ** 2)
    return kappa, alpha


def judge_coverage(
    *,
    items: int,
    per_item: int,
    runs: int,
    replicates: int = 499,
    prevalence: float = 0.4,
    accuracy: float = 0.85,
    spread: float = 8.0,
) -> tuple[Coverage, Coverage]:
    """A judge with known agreement, items resampled: the coverage of α's and κ's intervals.

    Each of ``items`` items has its own prevalence ~ Beta(prevalence·s, (1 − prevalence)·s) and
    its own judge accuracy ~ Beta(accuracy·s, (1 − accuracy)·s) (s = ``spread``), so responses
    to one item are alike in both (the clustering the bootstrap must respect); ``per_item``
    audited responses each. The population's κ and α are ``judge_truth(prevalence,
    accuracy)``. Intervals are ``stats.judge.compare``'s, exactly as a run computes them.
    """
    from apps.analysis.stats.judge import Bootstrap, compare

    name = f"judge K={items} m={per_item} p={prevalence} acc={accuracy}"
    rng = rng_for(name)
    kappa_truth, alpha_truth = judge_truth(prevalence, accuracy)
    bounds = {name: (np.full(runs, np.nan), np.full(runs, np.nan)) for name in ("alpha", "kappa")}
    clusters = np.repeat(np.arange(items), per_item)
    for r in range(runs):
        item_rate = rng.beta(prevalence * spread, (1 - prevalence) * spread, items)[clusters]
        item_accuracy = rng.beta(accuracy * spread, (1 - accuracy) * spread, items)[clusters]
        human = (rng.random(clusters.size) < item_rate).astype(float)
        judge = np.where(rng.random(clusters.size) < item_accuracy, human, 1 - human)
        result = compare(
            human,
            judge,
            list(clusters),
            level="nominal",
            n_categories=2,
            bootstrap=Bootstrap(replicates, CONFIDENCE, int(rng.integers(2**31))),
        )
        for key, (lo, hi) in bounds.items():
            if result[f"{key}_interval"] is not None:
                lo[r], hi[r] = result[f"{key}_interval"]
    method = "cluster bootstrap (items), expanded percentile"
    return (
        _tally(f"{name} α", method, *bounds["alpha"], alpha_truth),
        _tally(f"{name} κ", method, *bounds["kappa"], kappa_truth),
    )


# -- CRUCIBLE's acceptance verdicts at the policy's limits (issue #36 §3, §6) ------------------


def _family_probabilities(
    mean: float, icc: float, families: int, rng: np.random.Generator
) -> np.ndarray:
    """Per-family probabilities Beta(mean·s, (1 − mean)·s), s = 1/icc − 1 (all ``mean`` at
    ICC 0), so the 0/1 outcomes' intra-family correlation is ``icc``."""
    if icc == 0:
        return np.full(families, mean)
    s = 1.0 / icc - 1.0
    return rng.beta(mean * s, (1 - mean) * s, families)


def acceptance_at_the_limits(
    *,
    families: int,
    episodes: int,
    fail_icc: float,
    ungraded: float,
    runs: int,
    floor: float = 0.6,
    ceiling: float = 0.05,
    axis_icc: float = 0.2,
    replicates: int = 999,
) -> dict:
    """How often CRUCIBLE's acceptance verdict accepts a rung that sits exactly at its limits.

    One evaluand × rung: ``families`` scenario families × ``episodes`` episodes. Its policy
    (``stats.acceptance.rung_failures``) has a floor on the axis interval's lower bound and a
    ceiling on one hard-fail channel's rate. The axis: each episode scores 0/1 with its
    family's probability (:func:`_family_probabilities`: mean ``floor``, ICC ``axis_icc``), so
    the true axis mean is the floor; its interval is the ``crucible`` pipeline's default, the
    family bootstrap-t of ``stats.bootstrap.family_cluster_bootstrap`` (family means). The
    channel: each episode fails with its family's probability (mean ``ceiling``, ICC
    ``fail_icc``), so the true rate is the ceiling; a share ``ungraded`` of episodes is not
    graded, its failures unseen and counted as not failing (the default). Returns the shares of
    runs in which the floor, the ceiling and the whole policy are met (each is a false
    acceptance here), the runs and the design's name.
    """
    from apps.analysis.stats.acceptance import rung_failures
    from apps.analysis.stats.bootstrap import family_cluster_bootstrap

    name = (
        f"acceptance {families} families × {episodes} episodes, hard-fail ICC {fail_icc}, "
        f"{100 * ungraded:g} % ungraded"
    )
    rng = rng_for(name)
    policy = {
        "code": "limits",
        "floors": [{"axis": "axis", "minimum": floor, "on": "lower_bound"}],
        "hard_fail_ceilings": [{"channel": "fail", "maximum": ceiling, "on": "rate"}],
    }
    family = np.repeat(np.arange(families), episodes)
    met = {"floor": 0, "ceiling": 0, "rung": 0}
    for _ in range(runs):
        scores = (
            rng.random(family.size) < _family_probabilities(floor, axis_icc, families, rng)[family]
        )
        failed = (
            rng.random(family.size)
            < _family_probabilities(ceiling, fail_icc, families, rng)[family]
        )
        graded = rng.random(family.size) >= ungraded
        axis = family_cluster_bootstrap(
            scores.astype(float),
            family,
            seed=int(rng.integers(2**32)),
            aggregation="cluster_mean",
            replicates=replicates,
            confidence=CONFIDENCE,
            support=(0.0, 1.0),
        )
        count = int(np.sum(failed & graded))
        cells = {
            "axes": {
                "axis": {
                    "estimate": axis.estimate,
                    "interval": axis.interval,
                    "n_families": families,
                }
            },
            "hard_fails": {
                "fail": {
                    "count": count,
                    "rate": count / family.size,
                    "episodes": family.size,
                    "graded": int(graded.sum()),
                }
            },
        }
        failures = rung_failures(policy, **cells, incidents=0, confidence=CONFIDENCE)
        met["floor"] += not any(f.startswith("axis:") for f in failures)
        met["ceiling"] += not any(f.startswith("fail:") for f in failures)
        met["rung"] += not failures
    return {key: value / runs for key, value in met.items()} | {"runs": runs, "design": name}


# -- seed 002's block contrasts when tasks repeat over rounds: rare 0/1 endpoints and round ----
# -- effects (issue #36 §4) ---------------------------------------------------------------------


def _friction_design() -> tuple[list[dict[str, str]], np.ndarray, object]:
    """Seed 002's 2×2×2 conditions, which of them have friction high, and friction's main
    effect contrast (``stats.task_blocks.factor_contrasts``)."""
    from apps.analysis.stats.task_blocks import factor_contrasts

    names = sorted(SIMPLE_EFFECT_FACTORS)
    combos = [
        dict(zip(names, c, strict=True))
        for c in itertools.product(*(SIMPLE_EFFECT_FACTORS[n] for n in names))
    ]
    high = np.array([c["friction"] == "high" for c in combos])
    (friction,) = [
        c for c in factor_contrasts(combos, SIMPLE_EFFECT_FACTORS, []) if c.name == "friction"
    ]
    return combos, high, friction


def _tally_given(
    name: str, label: str, lo: np.ndarray, hi: np.ndarray, truth: float | np.ndarray
) -> Coverage | None:
    """Coverage over the runs that gave an interval (NaN: none), the share without one in the
    method's name and ``extra["unavailable"]``, zero-width intervals in ``extra["zero_width"]``;
    None when no run gave one. ``truth``: one value, or one per run."""
    given = np.isfinite(lo)
    truth = np.broadcast_to(np.asarray(truth, dtype=float), lo.shape)[given]
    if not given.any():
        return None
    if not given.all():
        label += f" (no interval in {100 * (1 - given.mean()):.1f} % of runs)"
    return _tally(
        name,
        label,
        lo[given],
        hi[given],
        truth,
        unavailable=int((~given).sum()),
        zero_width=int(np.sum(hi[given] - lo[given] <= 0)),
    )


def rare_task_contrast_coverage(
    *,
    tasks: int,
    rounds: int,
    rate: float = 0.005,
    effect: float = 0.0,
    task_shape: float = 2.0,
    runs: int,
    replicates: int = 999,
) -> tuple[Coverage, ...]:
    """Seed 002's friction main effect on a rare 0/1 endpoint when tasks repeat over rounds.

    ``tasks × rounds`` task blocks of the 2×2×2 design; condition c of block b (task t) has the
    event with probability (``rate`` + ``effect``·friction)·g_t·h_b, g_t ~ Gamma(``task_shape``,
    1/``task_shape``) the task's frailty (coefficient of variation 1/√shape), shared by its
    blocks over the rounds, and h_b ~ Gamma(2, ½) the block's (both mean 1), so events cluster
    in tasks and in blocks, and each task has its own effect ``effect``·g_t. The truth is
    ``effect`` (E g h = 1). Returns the coverage of Newcombe's
    score interval with the pairs taken as independent (no task labels), of the task-clustered
    bootstrap-t or sign-flip interval (``bootstrap_interval``; a run without one counted as a
    miss, reported as zero-width, as in :func:`rare_block_contrast_coverage`), and of the
    interval decisions read with the tasks given (``ContrastResult.interval``: Newcombe's on
    the pairs' task-clustered effective number).
    """
    from apps.analysis.stats.task_blocks import paired_contrasts

    combos, high, friction = _friction_design()
    p = rate + effect * high
    name = f"rare block contrast tasks={tasks}×rounds={rounds} rate={rate} effect={effect}"
    if task_shape != 2.0:
        name += f" task frailty Gamma({task_shape})"
    rng = rng_for(name)
    labels = np.repeat(np.arange(tasks), rounds)
    bounds = {k: (np.full(runs, np.nan), np.full(runs, np.nan)) for k in ("pairs", "boot", "dec")}
    methods: dict[str, int] = {}
    for r in range(runs):
        frailty = rng.gamma(task_shape, 1 / task_shape, size=(tasks, 1))[labels] * rng.gamma(
            2.0, 0.5, size=(tasks * rounds, 1)
        )
        y = (rng.random((tasks * rounds, len(combos))) < np.clip(p * frailty, 0, 1)).astype(float)
        seed = int(rng.integers(2**32))
        (independent,) = paired_contrasts(
            y, [friction], replicates=replicates, confidence=CONFIDENCE, seed=seed
        ).contrasts
        (clustered,) = paired_contrasts(
            y, [friction], replicates=replicates, confidence=CONFIDENCE, seed=seed, tasks=labels
        ).contrasts
        methods[clustered.interval_method] = methods.get(clustered.interval_method, 0) + 1
        boot = clustered.bootstrap_interval or (clustered.estimate,) * 2
        for key, interval in (
            ("pairs", independent.score_interval),
            ("boot", boot),
            ("dec", clustered.interval),
        ):
            if interval is not None:
                bounds[key][0][r], bounds[key][1][r] = interval
    boot_label = (
        "task-clustered bootstrap-t" if tasks >= 10 else "task sign-flip interval (Hartigan 1969)"
    )
    zero = int(np.sum(bounds["boot"][1] - bounds["boot"][0] <= 0))
    results = (
        _tally_given(
            name, "Newcombe paired score interval, pairs independent", *bounds["pairs"], effect
        ),
        _tally_given(name, f"{boot_label} ({zero} zero-width)", *bounds["boot"], effect),
        _tally_given(
            name,
            "Newcombe score interval on the task-clustered effective pairs (the decision's)",
            *bounds["dec"],
            effect,
        ),
    )
    out = tuple(c for c in results if c is not None)
    for c in out:
        c.extra["methods"] = methods
    return out


def two_way_coverage(
    *,
    tasks: int,
    rounds: int,
    task_sd: float = 0.12,
    round_sd: float = 0.15,
    runs: int,
    replicates: int = 999,
) -> tuple[Coverage, ...]:
    """Seed 002's friction main effect when both tasks and rounds carry an effect on it.

    As :func:`task_clustered_coverage` (0/1 outcomes, probability 0.5 − 0.10·friction
    + 0.05·framing + a_b + (δ_t + ρ_r)·(friction − ½)), with ρ_r ~ N(0, ``round_sd``²) the
    round's own friction effect, shared by every block of the round (a provider change or a time
    of day between rounds). The truth is −0.10, over the population of rounds. Returns the
    coverage of the task-clustered interval alone (the bootstrap-t, or below 10 tasks the
    sign-flip interval), of the two-way cluster-robust t interval (``two_way_interval``:
    Cameron, Gelbach & Miller 2011) and of the interval decisions read for this 0/1 endpoint
    (``interval``: Newcombe's on the effective pairs, design effect two-way). With fewer than
    ``TWO_WAY_MIN_CLUSTERS`` rounds the pipeline treats the rounds as fixed (clusters by task
    only): there is no two-way row, and the decision's interval is measured against the truth
    for the rounds run, −0.10 + the mean of their ρ_r.
    """
    from apps.analysis.stats.task_blocks import TWO_WAY_MIN_CLUSTERS, paired_contrasts

    combos, high, friction = _friction_design()
    framing = np.array([c["framing"] == "safety" for c in combos])
    p = 0.5 - 0.10 * high + 0.05 * framing
    truth = -0.10
    name = f"block contrast tasks={tasks}×rounds={rounds} task SD={task_sd} round SD={round_sd}"
    rng = rng_for(name)
    task_of = np.repeat(np.arange(tasks), rounds)
    round_of = np.tile(np.arange(rounds), tasks)
    two_way = tasks >= TWO_WAY_MIN_CLUSTERS and rounds >= TWO_WAY_MIN_CLUSTERS
    bounds = {k: (np.full(runs, np.nan), np.full(runs, np.nan)) for k in ("task", "two", "dec")}
    for_rounds_run = np.full(runs, truth)
    for r in range(runs):
        rho = rng.normal(0, round_sd, rounds)
        for_rounds_run[r] += rho.mean()
        shift = rng.normal(0, task_sd, tasks)[task_of] + rho[round_of]
        ability = rng.uniform(-0.15, 0.15, size=(tasks * rounds, 1))
        prob = np.clip(p + ability + shift[:, None] * (high - 0.5), 0.0, 1.0)
        y = (rng.random(prob.shape) < prob).astype(float)
        (result,) = paired_contrasts(
            y,
            [friction],
            replicates=replicates,
            confidence=CONFIDENCE,
            seed=int(rng.integers(2**32)),
            tasks=task_of,
            rounds=round_of,
        ).contrasts
        for key, interval in (
            ("task", result.bootstrap_interval),
            ("two", result.two_way_interval),
            ("dec", result.interval),
        ):
            if interval is not None:
                bounds[key][0][r], bounds[key][1][r] = interval
    task_label = (
        "task-clustered bootstrap-t" if tasks >= 10 else "task sign-flip interval (Hartigan 1969)"
    )
    results = (
        _tally_given(name, f"{task_label}, tasks only", *bounds["task"], truth),
        _tally_given(name, "two-way (task, round) CR t(min G − 1)", *bounds["two"], truth),
        _tally_given(
            name,
            "Newcombe score interval on the effective pairs, two-way design effect (the decision's)"
            if two_way
            else "Newcombe score interval on the effective pairs, task design effect, against "
            "the truth for the rounds run (the decision's)",
            *bounds["dec"],
            truth if two_way else for_rounds_run,
        ),
    )
    return tuple(c for c in results if c is not None)


# -- the full null: OPB-01's decision table when nothing has an effect (issue #36 §6) ----------


def _beta_estimates(y: np.ndarray, spec: FattDesign) -> dict:
    """β per run of outcomes ``y`` (runs × n, squeezed, ``spec``'s design) with its
    cluster-robust (by item) SE and df: :func:`fatt_slopes`'s fit on given data."""
    _level, item, X = spec.design()
    start = np.array([logit(np.clip(y.mean(), 0.01, 0.99)), 0.0, np.log(spec.precision)])
    params, converged = fit_beta_many(y, X, start=start)
    cov, groups = beta_cluster_robust(y[converged], X, params[converged], item)
    beta = np.full(y.shape[0], np.nan)
    se = np.full(y.shape[0], np.nan)
    beta[converged] = params[converged, 1]
    se[converged] = np.sqrt(cov[:, 1, 1])
    return {"beta": beta, "se": se, "df": groups - 1}


def full_null_rates(
    *,
    items: int = 10,
    arm_sd: float = 0.2,
    epsilon: float = 0.15,
    disclosure_epsilon: float = 0.05,
    runs: int,
) -> dict[str, float]:
    """How often each OPB-01 §8 finding is reported when no effect exists anywhere.

    Every estimate the template's decision table reads is drawn with a true value of 0:
    β_B, β_A and β_force (three families of ``items`` items, F_att's logit slope 0 with an item
    random intercept SD 0.5 and slope SD 0.2, :class:`FattDesign`), so β_LF = 0 too, and §5's
    three-way disclosure contrasts (C_SPXI, the sham C₀ and plain Family A paired by base item):
    each Family A item's C_SPXI and C₀ items share its intercept and slope, each arm with its own
    N(0, ``arm_sd``²) intercept shift, the three arms exchangeable, so every contrast's truth is
    0. Slopes are fitted as the pipeline's analytic path does (cluster-robust by item,
    t(items − 1); β_LF with the two fits' SEs and the smaller df), the contrasts by
    ``stats.paired.paired_contrast`` (paired t over base items, the mean over levels first as
    ``opb``'s three-way contrast does), the table by ``evaluate_decision_table`` with the
    interval criterion and (1 − 2α) intervals for ``within``. Every finding here is false.

    Returns each finding's share of runs (a rule matched and not contradicted), "contradictory",
    "no finding", "any finding" (the share with at least one finding: the family-wise rate)
    and ``runs`` (runs whose every slope converged).
    """
    from apps.analysis.stats.paired import paired_contrast

    rng = rng_for(f"full null items={items} arm SD={arm_sd}")
    spec = FattDesign(items=items, slope=0.0, intercept=-1.0)
    level, item, _ = spec.design()
    n = level.size
    # Family A (the plain arm) and its two disclosure arms, sharing each item's effects.
    u0 = rng.normal(0, spec.intercept_sd, (runs, items))[:, item]
    u1 = rng.normal(0, spec.slope_sd, (runs, items))[:, item]
    arms = {}
    for arm in ("plain", "SPXI", "sham"):
        shift = rng.normal(0, arm_sd, (runs, items))[:, item]
        mu = expit(spec.intercept + u0 + shift + (spec.slope + u1) * level)
        raw = np.clip(rng.beta(mu * spec.precision, (1 - mu) * spec.precision), 0.0, 1.0)
        arms[arm] = raw
    squeezed = (arms["plain"] * (n - 1) + 0.5) / n  # Smithson & Verkuilen 2006, as FattDesign
    fits = {
        "beta_A": _beta_estimates(squeezed, spec),
        "beta_B": _beta_estimates(spec.draw(runs, rng), spec),
        "beta_force": _beta_estimates(spec.draw(runs, rng), spec),
    }
    # Balanced cells: the per-base-item mean over levels of the cell means is the item's mean.
    base_means = {arm: values.reshape(runs, items, -1).mean(axis=2) for arm, values in arms.items()}
    contrasts = {
        "F_att_SPXI_vs_plain": base_means["SPXI"] - base_means["plain"],
        "F_att_sham_vs_plain": base_means["sham"] - base_means["plain"],
        "F_att_SPXI_vs_sham": base_means["SPXI"] - base_means["sham"],
    }
    alpha = 1 - CONFIDENCE
    counts: dict[str, int] = {}
    used = 0
    for r in range(runs):
        slopes = {key: (fit["beta"][r], fit["se"][r], fit["df"]) for key, fit in fits.items()}
        if not all(np.isfinite(b) for b, _, _ in slopes.values()):
            continue
        used += 1
        (b_a, se_a, df_a), (b_b, se_b, df_b) = slopes["beta_A"], slopes["beta_B"]
        slopes["beta_LF"] = (b_a - b_b, float(np.hypot(se_a, se_b)), min(df_a, df_b))
        estimates: dict[str, dict] = {}
        for key, (b, se, df) in slopes.items():
            wide = t_distribution.ppf(1 - alpha / 2, df) * se
            narrow = t_distribution.ppf(1 - alpha, df) * se
            estimates[key] = {
                "estimate": float(b),
                "interval": (float(b - wide), float(b + wide)),
                "equivalence_interval": (float(b - narrow), float(b + narrow)),
            }
        for key, differences in contrasts.items():
            estimates[key] = paired_contrast(
                differences[r], method="analytic", confidence=CONFIDENCE
            ).to_dict()
        outcome = evaluate_decision_table(
            estimates,
            {"epsilon": epsilon, "disclosure_epsilon": disclosure_epsilon},
            table=OPB.decision_table,
        )
        keys = [o.rule_id for o in outcome.matched if o.rule_id not in outcome.contradicted]
        keys += ["contradictory" for _ in outcome.contradictions]
        for key in keys or ["no finding"]:
            counts[key] = counts.get(key, 0) + 1
        if any(k != "contradictory" for k in keys):
            counts["any finding"] = counts.get("any finding", 0) + 1
    return {key: value / used for key, value in sorted(counts.items())} | {"runs": used}
