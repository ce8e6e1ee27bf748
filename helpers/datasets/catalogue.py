"""The catalogue: every dataset ``load_dataset`` knows (its files or generator, its collections, its
scales), how each file's rows become documents (field tables, ``_id`` rules), and the scale rule."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .. import generators, settings
from .cache import typed_copy
from .checksums import verify_file
from .common import RESTORE, SEED, DatasetError
from .csvtyping import EPOCH, Fields, to_epoch, to_float, to_hex6, to_int, to_yn
from .sampling import evenly_spaced

__all__ = ["SPECS", "Spec", "ADSB_FIELDS", "AIRLINE_FIELDS", "CARRIER_FIELDS", "PLANE_FIELDS", "FLIGHT_FIELDS",
           "PLANE_CARRIER_FIELDS", "AIRPORT_FIELDS", "MOST", "MAX_SCALE", "dataset_names", "spec", "targets",
           "data_files", "default_scale", "lesson_scale", "check_scale", "as_dict"]


def default_scale() -> str | int:
    """``WORKBOOK_SCALE`` ("small", "full" or a number), else "small"."""
    return check_scale(settings.scale() or settings.DEFAULT_SCALE, "WORKBOOK_SCALE")


def lesson_scale(default: str | int) -> str | int:
    """The scale a lesson loads at: the lesson's own ``default`` (chosen so the notebook stays quick
    on every backend) unless ``WORKBOOK_SCALE`` asks for another (an instructor's ``full`` demo, a
    number). ``WORKBOOK_SCALE=small``, the documented default, means each lesson's own small: the
    same as leaving it unset. The one scale rule: :func:`load_dataset` without a scale follows it too.
    """
    asked = default_scale()
    return check_scale(default) if asked == settings.DEFAULT_SCALE else asked


#: the most parent records a generated dataset makes (each is built in memory first)
MOST = {"products": 100_000, "posts": 50_000, "authors_books": 1_000, "categories": 100}
#: no dataset holds more parent records than this (a larger WORKBOOK_SCALE is a mistake)
MAX_SCALE = max(MOST.values())


#: a number of parent records with more digits than this is a mistake, whatever the dataset (and
#: Python's ``int()`` refuses one of over 4,300 digits with an error of its own)
_MOST_DIGITS = 18


def check_scale(scale: Any, where: str = "scale") -> str | int:
    """``scale`` as the loader takes it ("small", "full" or a whole number >= 0, digits 0-9 in a
    text too), or a :class:`DatasetError` naming ``where`` (the argument, or ``WORKBOOK_SCALE``)
    and the values allowed."""
    allowed = (f"{where} must be 'small', 'full' or a number of parent records >= 0 (digits 0-9; no "
               f"dataset holds more than {MAX_SCALE:,})")
    if isinstance(scale, str) and re.fullmatch(r"[0-9]+", scale.strip()):  # ASCII digits only: int()
        digits = scale.strip().lstrip("0") or "0"  # would also take '١٠', and str.isdigit() takes '²'
        if len(digits) > _MOST_DIGITS:  # counted, never converted: int() refuses past 4,300 digits
            raise DatasetError(f"{allowed}, not a number of {len(digits):,} digits; use {where}=full for "
                               f"every record")
        scale = int(digits)
    if isinstance(scale, int) and not isinstance(scale, bool) and scale.bit_length() > 3 * _MOST_DIGITS + 6:
        raise DatasetError(f"{allowed}, not a number of about {int(scale.bit_length() * 0.30103):,} digits; "
                           f"use 'full' for every record")
    if isinstance(scale, bool) or not (scale in ("small", "full") or (isinstance(scale, int) and scale >= 0)):
        shown = repr(scale) if not isinstance(scale, str) or len(scale) <= 40 else \
            f"{scale[:20]!r}... ({len(scale):,} characters)"
        raise DatasetError(f"{allowed}, not {shown}")
    if where == "WORKBOOK_SCALE" and isinstance(scale, int) and scale > MAX_SCALE:
        raise DatasetError(f"WORKBOOK_SCALE={scale} is more parent records than any dataset holds (the "
                           f"most is {MAX_SCALE:,}); use WORKBOOK_SCALE=full for every record, or a smaller "
                           f"number")
    return scale


def as_dict(doc: Any) -> dict[str, Any]:
    """A document of the loader's (a dict, or the BSON of a typed copy) as a new dict of the caller's own."""
    raw = getattr(doc, "raw", None)
    if raw is None:
        return dict(doc)
    import bson

    return bson.decode(raw)


def _csv_dataset(file: str, fields: Fields, make_id: Callable[[dict[str, Any]], Any],
                 parent: str | None = None) -> Callable[[Path, int | None], Iterator[dict[str, Any]]]:
    """A source reading ``file``; with ``parent``, keep only the rows of ``n`` parent keys
    (:func:`~helpers.datasets.sampling.evenly_spaced` over the sorted keys)."""
    # the parent key's field in a document: ``_id`` when the column moved into it
    where = None if parent is None else "_id" if getattr(make_id, "key", None) == parent else parent

    def readonly(folder: Path, n: int | None, as_bson: bool = True) -> list[Any]:
        """The typed documents themselves, as BSON (``RawBSONDocument``), not copies: for a reader
        that changes none of them (``load_dataset``, which only inserts them, as they are);
        :func:`source` hands out dicts. ``as_bson=False``: dicts (for the mock, which inserts only dicts)."""
        path = verify_file(folder, file)
        # read once: every row typed and checked, every _id unique, before any is used
        copy = typed_copy(path, fields, make_id, where, as_bson, data_files=data_files())
        if where is None or n is None:
            return copy.docs
        chosen = evenly_spaced((key for key in copy.keys if key is not None), n)
        return [doc for doc, key in zip(copy.docs, copy.keys) if key is not None and key in chosen]

    def source(folder: Path, n: int | None) -> Iterator[dict[str, Any]]:
        yield from (as_dict(doc) for doc in readonly(folder, n))  # new documents, the caller's own

    source.readonly = readonly  # type: ignore[attr-defined]
    source.file = file  # type: ignore[attr-defined]
    source.fields = fields  # type: ignore[attr-defined]
    source.make_id = make_id  # type: ignore[attr-defined]
    source.where = where  # type: ignore[attr-defined]
    return source


def _pop(key: str) -> Callable[[dict[str, Any]], Any]:
    """The column ``key`` as the ``_id``; the document keeps it only as ``_id``."""
    def make_id(doc: dict[str, Any]) -> Any:
        return doc[key]

    make_id.key = key  # type: ignore[attr-defined]
    return make_id


ADSB_FIELDS: Fields = {
    "timestamp": (to_epoch, True, "timestamp"), "icao24": (to_hex6, True, "icao24"),
    "callsign": (str, False, "callsign"), "lat": (to_float, False, "lat"),
    "lon": (to_float, False, "lon"), "altitude": (to_float, False, "altitude"),
    "groundspeed": (to_float, False, "groundspeed"), "track": (to_float, False, "track"),
    "vertical_rate": (to_float, False, "vertical_rate"),
}
AIRLINE_FIELDS: Fields = {
    "airline_id": (to_int, True, "airline_id"), "name": (str, True, "name"),
    "alias": (str, False, "alias"), "iata": (str, False, "iata"), "icao": (str, False, "icao"),
    "callsign": (str, False, "callsign"), "country": (str, False, "country"),
    "active": (to_yn, True, "active"),
}
CARRIER_FIELDS: Fields = {"carrier": (str, True, "carrier"), "name": (str, True, "name"),
                     "icao": (str, True, "icao")}
PLANE_FIELDS: Fields = {
    "tailnum": (str, True, "tailnum"), "icao24": (to_hex6, True, "icao24"),
    "year": (to_int, False, "year"), "type": (str, False, "type"),
    "manufacturer": (str, False, "manufacturer"), "model": (str, False, "model"),
    "engines": (to_int, False, "engines"), "seats": (to_int, False, "seats"),
    "speed": (to_int, False, "speed"), "engine": (str, False, "engine"),
}
FLIGHT_FIELDS: Fields = {
    "year": (to_int, True, "year"), "month": (to_int, True, "month"), "day": (to_int, True, "day"),
    "dep_time": (to_int, False, "dep_time"), "arr_time": (to_int, False, "arr_time"),
    "carrier": (str, True, "carrier"), "flight": (to_int, True, "flight"),
    "tailnum": (str, False, "tailnum"), "origin": (str, True, "origin"), "dest": (str, True, "dest"),
    "air_time": (to_int, False, "air_time"), "distance": (to_int, True, "distance"),
}
PLANE_CARRIER_FIELDS: Fields = {
    "tailnum": (str, True, "tailnum"), "carrier": (str, True, "carrier"),
    "flights": (to_int, True, "flights"), "first_month": (to_int, True, "first_month"),
    "last_month": (to_int, True, "last_month"),
}
AIRPORT_FIELDS: Fields = {
    "icao": (str, True, "icao"), "iata": (str, False, "iata"), "name": (str, True, "name"),
    "city": (str, False, "city"), "subd": (str, False, "subd"), "country": (str, True, "country"),
    "lat": (to_float, True, "lat"), "lon": (to_float, True, "lon"),
}


def _flight_id(doc: dict[str, Any]) -> str:
    return (f"{doc['year']}-{doc['month']:02d}-{doc['day']:02d} "
            f"{doc['carrier']}{doc['flight']} {doc['origin']}")


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _json_list_lines(path: Path, text: str, fix: str) -> list[tuple[int, Any]]:
    """The items of a JSON list, each with the line it starts on; a key twice in one item is an error."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
    ws = re.compile(r"[ \t\n\r]*")
    pos = ws.match(text, 0).end()
    if not text.startswith("[", pos):
        raise DatasetError(f"{path}: line {text.count(chr(10), 0, pos) + 1}: expected a JSON list of nodes; {fix}")
    pos = ws.match(text, pos + 1).end()
    items: list[tuple[int, Any]] = []
    while not text.startswith("]", pos):
        line = text.count("\n", 0, pos) + 1
        try:
            item, pos = decoder.raw_decode(text, pos)
        except _DuplicateKey as exc:
            raise DatasetError(f"{path}: line {line}: node {len(items) + 1}: the key {exc.key!r} appears "
                               f"twice; {fix}") from None
        items.append((line, item))
        pos = ws.match(text, pos).end()
        if text.startswith(",", pos):
            pos = ws.match(text, pos + 1).end()
    return items


def _flare(folder: Path, n: int | None) -> Iterator[dict[str, Any]]:
    path = verify_file(folder, "flare.json")
    fix = RESTORE.format(name="flare.json") + "."
    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)  # the syntax first: its error names the line
    except (ValueError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", "?")
        raise DatasetError(f"{path}: line {line}: not valid JSON ({exc}); {fix}") from None
    seen: dict[int, tuple[int, int]] = {}
    for number, (line, item) in enumerate(_json_list_lines(path, text, fix), start=1):
        for key, kind, required in (("id", int, True), ("name", str, True), ("parent", int, False),
                                    ("size", int, False)):
            value = item.get(key) if isinstance(item, dict) else None
            # bool is an int in Python, never in the data: True as an id would be stored as a boolean
            if (value is None and required) or (value is not None and (
                    isinstance(value, bool) or not isinstance(value, kind))):
                raise DatasetError(f"{path}: line {line}: node {number}: field {key!r} = {value!r} is not "
                                   f"{'an integer' if kind is int else 'text'}; {fix}")
        if item["id"] in seen:
            first_line, first = seen[item["id"]]
            raise DatasetError(f"{path}: lines {first_line} and {line}: node {number} has the same id "
                               f"{item['id']} as node {first}; node ids must be unique; {fix}")
        seen[item["id"]] = (line, number)
        doc = {"_id": item["id"], "name": item["name"]}
        for key in ("parent", "size"):
            if key in item:
                doc[key] = item[key]
        yield doc


_flare.file = "flare.json"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Spec:
    """A dataset of the catalogue: its collections, its scales and where its documents come from."""

    collections: tuple[str, ...]
    small: int | None  # parent records at "small"; None = the whole dataset
    full: int | None  # parent records at "full"; None = the whole file
    parent: str  # what an int scale counts
    source: Callable[[Path, int | None], Any]
    generated: bool = False


def _generated(fn: Callable[..., Any]) -> Callable[[Path, int | None], Any]:
    return lambda folder, n: fn(n, SEED)


SPECS: dict[str, Spec] = {
    "adsb_reports": Spec(("adsb_reports",), 100, None, "aircraft (icao24)",
                         _csv_dataset("adsb_switzerland.csv.gz", ADSB_FIELDS,
                                      lambda d: f"{d['icao24']}:{int((d['timestamp'] - EPOCH).total_seconds())}",
                                      parent="icao24")),
    "airlines": Spec(("airlines",), None, None, "airlines",
                     _csv_dataset("openflights_airlines.csv", AIRLINE_FIELDS, _pop("airline_id"),
                                  parent="airline_id")),
    "nyc_carriers": Spec(("nyc_carriers",), None, None, "carriers",
                         _csv_dataset("nyc_carriers.csv", CARRIER_FIELDS, _pop("carrier"), parent="carrier")),
    "nyc_planes": Spec(("nyc_planes",), None, None, "planes",
                       _csv_dataset("nyc_planes.csv", PLANE_FIELDS, _pop("tailnum"), parent="tailnum")),
    "nyc_flights": Spec(("nyc_flights",), 1000, None, "planes (tailnum)",
                        _csv_dataset("nyc_flights_2013_01.csv.gz", FLIGHT_FIELDS, _flight_id, parent="tailnum")),
    "nyc_plane_carriers": Spec(("nyc_plane_carriers",), None, None, "planes",
                               _csv_dataset("nyc_plane_carriers_2013.csv", PLANE_CARRIER_FIELDS,
                                            lambda d: f"{d['tailnum']} {d['carrier']}", parent="tailnum")),
    "flare": Spec(("flare",), None, None, "nodes (always the whole tree)", _flare),
    "airports": Spec(("airports",), 100, None, "countries",
                     _csv_dataset("airports.csv.gz", AIRPORT_FIELDS, _pop("icao"), parent="country")),
    "products": Spec(("products",), 1_000, 20_000, "products",
                     _generated(generators.products_with_reviews), generated=True),
    "posts": Spec(("posts",), 1_000, 10_000, "posts",
                   _generated(generators.posts_with_comments), generated=True),
    # "full" for generated data: as big as a live demo on the embedded server stays quick with
    # (an unindexed $lookup per author over every book, a query per tree node)
    "authors_books": Spec(("authors", "books"), 30, 100, "authors",
                          _generated(generators.authors_and_books), generated=True),
    "categories": Spec(("categories",), 10, 30, "top-level categories",
                       _generated(generators.category_tree), generated=True),
}


def dataset_names() -> list[str]:
    """The names :func:`load_dataset` accepts, sorted."""
    return sorted(SPECS)


def spec(name: str) -> Spec:
    """The catalogue's entry for dataset ``name``; a :class:`DatasetError` lists the names otherwise."""
    if name not in SPECS:
        raise DatasetError(f"unknown dataset {name!r}; choose one of: {', '.join(dataset_names())}")
    return SPECS[name]


def data_files() -> frozenset[str]:
    """The names of the shipped CSV files (the only files the typed-copy cache keeps copies of)."""
    return frozenset(s.source.file for s in SPECS.values() if hasattr(s.source, "fields"))


def targets(entry: Spec, collection: str | None) -> tuple[str, ...]:
    """The collections a load of ``entry`` writes: its own, or ``collection`` (for a dataset of
    several collections, a prefix: ``<collection>_<name>``)."""
    if collection is None:
        return entry.collections
    if len(entry.collections) == 1:
        return (collection,)
    return tuple(f"{collection}_{c}" for c in entry.collections)  # a prefix for multi-collection
