"""Positions on the sphere for notebook 04: a report's GeoJSON point, and great-circle distance (notebook 04).

And the geo queries on them (:func:`within_km`, :func:`ensure_geo_index`, :func:`nearest`), imported
from :mod:`helpers.aerodata`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ..backends import info_of
from .keys import QUERY_BATCH, REPORT
from .messages import _number

__all__ = ["GEO_FIELD", "EARTH_RADIUS_KM", "geo_point", "distance_km", "within_km", "ensure_geo_index", "nearest"]

GEO_FIELD = "geoPoint"  # a report's position as GeoJSON: {type: "Point", coordinates: [lon, lat]}
EARTH_RADIUS_KM = 6378.1  # the radius the MongoDB manual uses to turn km into $centerSphere radians


def geo_point(lon: float, lat: float, *, region: tuple[float, float, float, float] | None = None
              ) -> dict[str, Any]:
    """A GeoJSON point, ``{"type": "Point", "coordinates": [lon, lat]}``: LONGITUDE FIRST.

    Refuses a latitude outside [-90, 90] or a longitude outside [-180, 180]. With ``region`` (a box
    ``(min_lon, min_lat, max_lon, max_lat)``, e.g. the bounds of the data), also refuses a point
    outside it whose swapped coordinates would be inside: the (lat, lon) mix-up that stays on the
    globe. Introduced in notebook 04.
    """
    for name, v, lim in (("lon", lon, 180), ("lat", lat, 90)):
        if _number(v) is None or not -lim <= v <= lim:
            raise ValueError(f"geo_point: {name}={v!r} is not a number in [-{lim}, {lim}]; GeoJSON is "
                             f"[longitude, latitude]: did you pass (lat, lon)?")
    if region is not None:
        lo_x, lo_y, hi_x, hi_y = region
        inside = lo_x <= lon <= hi_x and lo_y <= lat <= hi_y
        if not inside and lo_x <= lat <= hi_x and lo_y <= lon <= hi_y:
            raise ValueError(f"geo_point: ({lon}, {lat}) is outside the region {region} but ({lat}, {lon}) "
                             f"is inside: longitude and latitude look swapped (GeoJSON is [lon, lat])")
    return {"type": "Point", "coordinates": [lon, lat]}


def distance_km(a: Sequence[float], b: Sequence[float]) -> float:
    """Great-circle distance in km between two ``[lon, lat]`` points, on MongoDB's sphere (6378.1 km)."""
    (lon1, lat1), (lon2, lat2) = map(lambda p: (math.radians(p[0]), math.radians(p[1])), (a, b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


# ------------------------------------------------------------------------------------------
# Geo (notebook 04, section 4.11)
# ------------------------------------------------------------------------------------------
def _caps(coll: Any) -> Any:
    """The probed capabilities of the engine behind ``coll`` (None for a client the workbook did not open)."""

    info = info_of(coll)
    return None if info is None else info.caps


def within_km(coll: Any, point: Mapping[str, Any], km: float) -> dict[str, Any]:
    """The filter for the reports within ``km`` of a GeoJSON ``point``: ``$geoWithin`` with
    ``$centerSphere`` (its radius in radians: km / :data:`EARTH_RADIUS_KM`), or, on an engine
    without ``$centerSphere`` (``caps.geo_center_sphere``), the same set with ``$near`` and
    ``$maxDistance`` in metres. Introduced in notebook 04."""
    caps = _caps(coll)
    if caps is None or caps.geo_center_sphere:
        return {"recordType": REPORT,
                GEO_FIELD: {"$geoWithin": {"$centerSphere": [list(point["coordinates"]), km / EARTH_RADIUS_KM]}}}
    return {"recordType": REPORT, GEO_FIELD: {"$near": {"$geometry": dict(point), "$maxDistance": km * 1000}}}


def ensure_geo_index(coll: Any) -> str | None:
    """Create the ``2dsphere`` index on :data:`GEO_FIELD`, or find it if it exists (under any name);
    returns its name, or None on an engine without geo indexes (``caps.geo_index``). Introduced in
    notebook 04."""
    caps = _caps(coll)
    if caps is not None and not caps.geo_index:
        return None
    key = [(GEO_FIELD, "2dsphere")]
    for name, spec in coll.index_information().items():  # there already: a cell run twice, say
        if list(spec["key"]) == key:  # a server says "already exists"; SecantusDB refuses (docs/ENGINES.md)
            return name
    return coll.create_index(key)


def nearest(coll: Any, point: Sequence[float], k: int, *, max_km: float, near_sorted: bool | None = None
            ) -> list[dict[str, Any]]:
    """The ``k`` reports nearest to ``point`` (``[lon, lat]``) within ``max_km``, nearest first.

    One ``$near`` query (``$maxDistance`` in metres, on the 2dsphere index). A server returns them
    nearest first, so ``limit(k)`` is enough; where ``near_sorted`` is False (an engine whose
    ``$near`` order is not by distance, probed as ``caps.near_sorted``) it fetches every report within
    ``max_km`` and sorts them client-side by :func:`distance_km`; None: as the engine was probed.
    Introduced in notebook 04.
    """
    if near_sorted is None:
        caps = _caps(coll)
        near_sorted = caps is None or caps.near_sorted
    query = {"recordType": REPORT, GEO_FIELD: {"$near": {"$geometry": {"type": "Point", "coordinates": list(point)},
                                                          "$maxDistance": max_km * 1000}}}
    if near_sorted:
        return list(coll.find(query).limit(k))
    found = list(coll.find(query, batch_size=QUERY_BATCH))
    found.sort(key=lambda d: (distance_km(point, d[GEO_FIELD]["coordinates"]), d["_id"]))
    return found[:k]

