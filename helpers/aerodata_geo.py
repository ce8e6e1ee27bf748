"""Positions on the sphere for notebook 04: a report's GeoJSON point, and great-circle distance (notebook 04).

The geo queries themselves (:func:`helpers.aerodata.within_km`, :func:`helpers.aerodata.nearest`)
are in :mod:`helpers.aerodata`, which imports these names too.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from .aerodata_messages import _number

__all__ = ["GEO_FIELD", "EARTH_RADIUS_KM", "geo_point", "distance_km"]

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
