"""Schema validation of the single collection: its ``$jsonSchema``, the validator, why a write is refused (notebook 04)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..safety import workbook_collection
from .geo import GEO_FIELD
from .keys import (
    AIRCRAFT,
    AIRLINE,
    COLLECTION,
    REPORT,
    SEQ_DIGITS,
)


# ------------------------------------------------------------------------------------------
# Schema validation (notebook 04, section 4.10)
# ------------------------------------------------------------------------------------------
def aerodata_schema() -> dict[str, Any]:
    """The ``$jsonSchema`` of ``aerodata``: one ``oneOf`` branch per ``recordType`` (notebook 04).

    Airline: a 3-character ``_id`` and a name. Aircraft: ``AAA_hhhhhh`` and its icao24. Report: the
    full key, a timestamp, ``lat`` in [-90, 90], ``lon`` in [-180, 180] and a GeoJSON point.
    """
    num = ["double", "int", "long", "decimal"]
    return {"$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "recordType", "airline"],
        "properties": {"recordType": {"enum": [AIRLINE, AIRCRAFT, REPORT]},
                       "airline": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}$"}},
        "oneOf": [
            {"title": "airline", "required": ["name"],
             "properties": {"recordType": {"enum": [AIRLINE]}, "_id": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}$"},
                            "name": {"bsonType": "string", "minLength": 1}}},
            {"title": "aircraft", "required": ["icao24"],
             "properties": {"recordType": {"enum": [AIRCRAFT]},
                            "_id": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}_[0-9a-f]{6}$"},
                            "icao24": {"bsonType": "string", "pattern": "^[0-9a-f]{6}$"}}},
            {"title": "position report", "required": ["icao24", "timestamp", "lat", "lon", GEO_FIELD],
             "properties": {
                 "recordType": {"enum": [REPORT]},
                 "_id": {"bsonType": "string", "pattern": "^[A-Z0-9]{3}_[0-9a-f]{6}_[0-9]{%d}$" % SEQ_DIGITS},
                 "icao24": {"bsonType": "string", "pattern": "^[0-9a-f]{6}$"},
                 "timestamp": {"bsonType": num, "minimum": 0},
                 "lat": {"bsonType": num, "minimum": -90, "maximum": 90},
                 "lon": {"bsonType": num, "minimum": -180, "maximum": 180},
                 GEO_FIELD: {"bsonType": "object", "required": ["type", "coordinates"],
                             "properties": {"type": {"enum": ["Point"]},
                                            "coordinates": {"bsonType": "array", "minItems": 2, "maxItems": 2,
                                                            "items": {"bsonType": num}}}},
             }},
        ],
    }}


def apply_validator(db: Any, *, level: str = "strict", action: str = "error",
                    collection: str = COLLECTION) -> dict[str, Any]:
    """Put :func:`aerodata_schema` on the collection with ``collMod`` (existing documents are not checked).

    ``level``: "strict" (every insert and update) or "moderate" (updates of documents that already
    break the rules pass); ``action``: "error" (refuse, code 121) or "warn" (accept and log). Returns
    the collection's validation options as the server lists them. Refuses (``ForeignCollectionError``)
    a collection the workbook did not create. Introduced in notebook 04.
    """
    if level not in ("strict", "moderate", "off") or action not in ("error", "warn"):
        raise ValueError(f"apply_validator: level={level!r} must be 'strict', 'moderate' or 'off'; "
                         f"action={action!r} must be 'error' or 'warn'")
    workbook_collection(db, collection, create=False)  # as schema.set_validator: never somebody else's collection
    db.command("collMod", collection, validator=aerodata_schema(), validationLevel=level,
               validationAction=action)
    info = db.command("listCollections", filter={"name": collection})["cursor"]["firstBatch"][0]
    opts = info.get("options", {})
    return {"validationLevel": opts.get("validationLevel"), "validationAction": opts.get("validationAction")}


def why_refused(err_info: Mapping[str, Any]) -> list[str]:
    """The gist of a code-121 ``errInfo``: one line per rule broken, in the branch of the document's own
    ``recordType`` (the other ``oneOf`` branches fail on ``recordType`` alone and are left out).
    Introduced in notebook 04."""
    titles = [b.get("title", str(i)) for i, b in enumerate(aerodata_schema()["$jsonSchema"]["oneOf"])]
    out: list[str] = []

    def leaves(node: Any, where: str, prop: str | None) -> Iterable[str]:
        if isinstance(node, list):
            for n in node:
                yield from leaves(n, where, prop)
        elif isinstance(node, Mapping):
            prop = node.get("propertyName", prop)
            if "missingProperties" in node:
                yield f"{where}: missing {', '.join(node['missingProperties'])}"
            elif "reason" in node:
                value = f" ({node['consideredValue']!r})" if "consideredValue" in node else ""
                yield f"{where}: {prop or 'document'} {node.get('operatorName', '')}: {node['reason']}{value}"
            for key in ("details", "propertiesNotSatisfied", "schemaRulesNotSatisfied", "itemsNotSatisfied"):
                if key in node:
                    yield from leaves(node[key], where, prop)
            for branch in node.get("schemasNotSatisfied", []):
                lines = list(leaves(branch.get("details", []), titles[branch.get("index", 0)], None))
                if not any(": recordType " in line for line in lines):
                    yield from lines

    out.extend(leaves(err_info.get("details", {}), "document", None))
    return out


def invalid_documents(db: Any, *, collection: str = COLLECTION) -> list[dict[str, Any]]:
    """The documents that break :func:`aerodata_schema` (a query: ``{$nor: [schema]}``), in ``_id`` order."""
    return list(db[collection].find({"$nor": [aerodata_schema()]}, sort=[("_id", 1)]))



