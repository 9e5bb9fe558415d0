"""Pairing each departure of a link log with the arrival of the same packet, vectorised.

The logs carry no packet ids (the Pantheon's merge drops its uids), but a departure says when
its packet arrived: at T - DELAY. So a departure of flow f and size s at T with delay D pairs with
an arrival of flow f and size s at T - D. Equal keys are paired in order (the k-th departure
with a given key with the k-th arrival with it). The Pantheon prints T and DELAY rounded to µs
separately, so T - D may miss the arrival by a µs or two: arrivals left unpaired are tried again
at ±1 µs, then ±2 µs. Whatever is still unpaired after that is paired by order within its flow and
size (only an inconsistent log gets there).

Arrivals that pair with no departure are the packets that did not get through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Offsets (µs) tried in turn between a departure's T - DELAY and its arrival's timestamp.
OFFSETS_US = (0, -1, 1, -2, 2)


@dataclass
class Pairing:
    #: For each departure, the index of its arrival, or -1.
    arrival_of_departure: np.ndarray
    #: For each arrival, whether a departure paired with it.
    arrival_paired: np.ndarray
    #: Departures paired only by order, not by time (a sign of an inconsistent log).
    by_order: int
    #: Departures with no arrival at all.
    unpaired_departures: int


def _pair_on(
    arrivals: pd.DataFrame, departures: pd.DataFrame, keys: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs equal keys in order; returns (departure index, arrival index) of each pair."""
    a = arrivals.assign(occurrence=arrivals.groupby(keys, sort=False).cumcount())
    d = departures.assign(occurrence=departures.groupby(keys, sort=False).cumcount())
    pairs = d.merge(a, on=[*keys, "occurrence"], how="inner", suffixes=("_d", "_a"))
    return pairs["index_d"].to_numpy(), pairs["index_a"].to_numpy()


def pair_departures(
    arrival_us: np.ndarray,
    arrival_size: np.ndarray,
    arrival_flow: np.ndarray,
    departure_us: np.ndarray,
    departure_size: np.ndarray,
    departure_delay_us: np.ndarray,
    departure_flow: np.ndarray,
) -> Pairing:
    n_arrivals, n_departures = len(arrival_us), len(departure_us)
    of_departure = np.full(n_departures, -1, dtype=np.int64)
    paired = np.zeros(n_arrivals, dtype=bool)
    # Sorted by time, so that "in order" means in time order within a key.
    arrival_order = np.argsort(arrival_us, kind="stable")
    departure_order = np.argsort(departure_us - departure_delay_us, kind="stable")
    arrivals = pd.DataFrame(
        {
            "index": arrival_order,
            "flow": arrival_flow[arrival_order],
            "size": arrival_size[arrival_order],
            "t": arrival_us[arrival_order],
        }
    )
    departures = pd.DataFrame(
        {
            "index": departure_order,
            "flow": departure_flow[departure_order],
            "size": departure_size[departure_order],
            "t": (departure_us - departure_delay_us)[departure_order],
        }
    )
    for offset in OFFSETS_US:
        left_a = arrivals[~paired[arrivals["index"].to_numpy()]]
        left_d = departures[of_departure[departures["index"].to_numpy()] < 0]
        if left_a.empty or left_d.empty:
            break
        shifted = left_d.assign(t=left_d["t"] + offset)
        d_index, a_index = _pair_on(left_a, shifted, ["flow", "size", "t"])
        of_departure[d_index] = a_index
        paired[a_index] = True
    left_a = arrivals[~paired[arrivals["index"].to_numpy()]]
    left_d = departures[of_departure[departures["index"].to_numpy()] < 0]
    by_order = 0
    if not left_a.empty and not left_d.empty:
        d_index, a_index = _pair_on(left_a, left_d, ["flow", "size"])
        of_departure[d_index] = a_index
        paired[a_index] = True
        by_order = len(d_index)
    return Pairing(
        arrival_of_departure=of_departure,
        arrival_paired=paired,
        by_order=by_order,
        unpaired_departures=int((of_departure < 0).sum()),
    )
