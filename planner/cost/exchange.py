"""The decentralized exchange through object storage (dtplan profile, sync_pattern "object_store";
docs/physics.md section 4, "Exchange through object storage").

Runs over the public internet that let anyone join (Templar / Covenant-72B) do not all-reduce:
each peer writes its compressed pseudo-gradient once to an object-storage bucket it owns and then
reads the payloads of the peers chosen for the round from theirs (tplr-ai/templar, neurons/miner.py:
`comms.put` of the merged gradient, then `comms.gather_with_reserve` over the round's peer list;
src/tplr/comms.py). What a round costs a peer, for a payload of v bits among G peers:

    fetched   k = G - 1, or min(S, G - 1) when the round's peer list has S entries
              (hparams `gather_peer_count`: S = 20 in the Covenant-72B run's hparams/hparams.json);
              min(S, G) with `exchange_fetch_own`: Templar's gather downloads every uid on the round's
              list, the peer's own among them when it was selected (src/tplr/comms.py `gather` never
              skips `my_uid`), so a peer among G contributors reads G payloads, its own included
    upload    t_up   = v / min(up, store) + lat_req
    download  t_down = k v / min(down, store) + waves lat_req,  waves = ceil(k / c) (c requests in
              flight at once; all k at once without a limit)
    round     t_up + t_down + lat   (the download starts after the upload: Templar's miner waits for
              its put before it gathers), or max(t_up, t_down) + lat when a run overlaps the two.

up and down are the peer's own links (asymmetric: residential and business links upload several
times slower than they download), `store` the object store's throughput for one peer in each
direction (none by default), lat_req the latency of one request to the store and lat the WAN
latency every sync pattern adds. All of it is non-decreasing in G (k is), so the planner's bounds
hold as for the all-gather (physics.sync_base_s).
"""

from __future__ import annotations

import numpy as np

from planner.cost.assumptions import Assumptions


def fetched_payloads(a: Assumptions, parties):
    """k, the payloads a peer downloads per round: the G - 1 other peers, or at most the round's
    peer list of S = `exchange_gather_peers` (0: every other peer); with `exchange_fetch_own` the
    peer's own payload counts too (G, or min(S, G): Templar's gather reads every uid on the list).
    Non-decreasing in G."""
    g = np.maximum(np.asarray(parties, dtype=float), 1.0)
    listed = g if a.exchange_fetch_own else g - 1.0
    return np.minimum(listed, a.exchange_gather_peers) if a.exchange_gather_peers > 0 else listed


def capped_bps(a: Assumptions, link_bps):
    """A peer's link in one direction, capped by the object store's throughput per peer
    (`exchange_store_gbps`; 0 = no cap): min(link, store)."""
    if a.exchange_store_gbps > 0:
        return np.minimum(link_bps, a.exchange_store_gbps * 1e9)
    return link_bps


def download_waves(a: Assumptions, fetched):
    """Rounds of requests a download needs: ceil(k / c) with c = `exchange_parallel_requests`
    requests in flight, one when all k go at once (c = 0); none for k = 0."""
    k = np.asarray(fetched, dtype=float)
    if a.exchange_parallel_requests > 0:
        return np.ceil(k / a.exchange_parallel_requests)
    return np.where(k > 0, 1.0, 0.0)


def object_store_parts_s(a: Assumptions, payload, parties, up_bps: float, down_bps: float):
    """(t_up, t_down) of one round through object storage, before the WAN latency (module docstring)."""
    v = np.asarray(payload, dtype=float)
    k = fetched_payloads(a, parties)
    lat_req = a.exchange_request_latency_s
    t_up = v / capped_bps(a, up_bps) + lat_req
    t_down = k * v / capped_bps(a, down_bps) + download_waves(a, k) * lat_req
    return t_up, t_down


def object_store_sync_s(a: Assumptions, payload, parties, up_bps: float, down_bps: float, latency_s: float):
    """One round's exchange through object storage: t_up + t_down + lat, or max(t_up, t_down) + lat
    with `exchange_overlap_up_down` (module docstring)."""
    t_up, t_down = object_store_parts_s(a, payload, parties, up_bps, down_bps)
    both = np.maximum(t_up, t_down) if a.exchange_overlap_up_down else t_up + t_down
    return both + latency_s
