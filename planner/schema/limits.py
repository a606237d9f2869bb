"""Magnitude bounds of every input field: what the cost model and the search can compute.

Values beyond these are rejected at validation (exit 2, the bound named in the message)
rather than overflowing later (integer conversions of 10^30 nodes, 1e308 days turned into
seconds, arrays as long as a 1e308-token batch). Each bound is far beyond any real run,
so that no sensible instance meets it:

- nodes <= 10^7: ten million nodes, ~100x the largest fleets planned today; the search
  holds node counts in int64 arrays and scans them in boxes.
- parameters <= 10^15 (a thousand times the largest models); tokens <= 10^25;
  FLOP <= 10^40; local batch <= 2^30 tokens per inner step.
- days <= 10^6 (2,700 years); bandwidth <= 10^12 Mbit/s (1 Ebit/s); latency <= 10^6 ms.
- money: <= 10^9 USD per accelerator, <= 10^15 USD of budget.
- search lists: at most 64 values each (compression, group sizes, ...; the default lists
  hold 2 to 63), at most 32 candidate model sizes; each extra value multiplies the work.
- any other number: |x| <= 10^30; any other integer <= 10^9; text <= 10,000 characters.
"""

MAX_NODES = 10**7
MAX_PARAMS = 1e15
MAX_TOKENS = 1e25
MAX_FLOP = 1e40
MAX_BATCH_TOKENS = 2**30
MAX_DAYS = 1e6
MAX_MBPS = 1e12
MAX_RTT_MS = 1e6
MAX_PRICE_USD = 1e9
MAX_BUDGET_USD = 1e15
MAX_RATIO = 1e6                  # compression ratios (pseudo-gradients, activations)
MAX_GROWTH = 1e3                 # x per year
MAX_INNER_STEPS = 10**9          # a plan's H (the search's own bound is 10^4)
MAX_STAGES = 10**4
MAX_MICRO_BATCHES = 10**6
MAX_REGIONAL_ROUNDS = 10**6
MAX_MOE_LAYERS = 10**4
MAX_ACCELERATORS_PER_NODE = 10**5
MAX_TFLOPS = 1e7                 # per accelerator
MAX_HBM_GB = 1e7                 # per accelerator
MAX_HIDDEN_SIZE = 1e8
MAX_EXPONENT = 10.0              # |exponent| of the power laws among the assumption constants
MAX_NUMBER = 1e30                # any other number
MAX_INTEGER = 10**9              # any other integer
MAX_LIST = 64
MAX_SIZES = 32
MAX_TEXT = 10_000
MAX_SITES = 1000                 # network.sites: far beyond any real run's sites (the site graph is dense)
MAX_SITE_LINKS = 10**5           # network.links: ~ every pair of 450 sites
