"""OPB-01: its pipeline (β_B then β_A, R, ρ_OP, TOST against ε, the force arm, the disclosure
three-way contrast), its plots, the disclosure and sham checks of its design (§5) and its human
panel (§6.1)."""
