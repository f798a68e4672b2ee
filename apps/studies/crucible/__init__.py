"""CRUCIBLE (seed 001): autonomy rungs × graded axes, its episodes (budgets and safety stops,
§8) and its battery manifest (§3–§5)."""
