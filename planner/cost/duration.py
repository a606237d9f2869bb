"""Maximum useful run duration (docs/cost_model.md section 8).

Runs longer than L are dominated by waiting for better hardware, software and budgets
(Epoch AI, "The longest training run", 2022): L = 1 / ((g_hw + g_sw + g_inv) ln 10)
years, rates in orders of magnitude per year (log10 of the yearly factor).
Defaults 1.37x, 3.0x and 3.5x per year give 136.9 days with a 365-day year.
"""

from __future__ import annotations

import math

SECONDS_PER_DAY = 86400.0


def max_run_years(hardware_x_per_year: float, software_x_per_year: float, investment_x_per_year: float) -> float:
    """L in years from three yearly growth factors (each > 1)."""
    ooms_per_year = math.log10(hardware_x_per_year) + math.log10(software_x_per_year) + math.log10(investment_x_per_year)
    return 1.0 / (ooms_per_year * math.log(10.0))


def max_run_days(hardware_x_per_year: float, software_x_per_year: float, investment_x_per_year: float,
                 days_per_year: float = 365.0) -> float:
    """L in days."""
    return max_run_years(hardware_x_per_year, software_x_per_year, investment_x_per_year) * days_per_year
