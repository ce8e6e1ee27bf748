"""Export an inferred schema as a ``$jsonSchema`` validator, enforce it and check it (notebook 05).

:func:`to_json_schema` turns an inference into a validator; :func:`set_validator` installs one on a
workbook collection; :func:`try_write` runs a write and reports the server's refusal (code 121 and its
``errInfo``, flattened by :func:`refusal_reasons`); :func:`schema_violations` checks a document
against the same subset of ``$jsonSchema`` on the client, a labelled stand-in on an engine that
cannot validate. Its names are also imported from :mod:`helpers.schema`, the lesson module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from pymongo.errors import BulkWriteError, OperationFailure

from ..safety import (
    REGISTRY,
    ForeignCollectionError,
    check_copies,
    fresh_collection,
    is_workbook_collection,
)
from .infer import InferredSchema, SchemaError, _Node, bson_type


# ------------------------------------------------------------------------------------------
# Export: $jsonSchema
# ------------------------------------------------------------------------------------------
def _node_schema(node: _Node, required: bool, additional: bool, exact: bool) -> dict[str, Any]:
    kinds = sorted(node.types) if exact else sorted({"number" if t in _NUMBERS else t for t in node.types})
    schema: dict[str, Any] = {"bsonType": kinds[0] if len(kinds) == 1 else kinds}
    if "object" in node.types:
        objects = node.types["object"]
        if node.children:
            schema["properties"] = {k: _node_schema(c, required, additional, exact)
                                    for k, c in node.children.items()}
        must = [k for k, c in node.children.items() if c.count == objects]
        if required and must:
            schema["required"] = must
        if not additional:
            schema["additionalProperties"] = False
    if "array" in node.types and node.items is not None and node.items.count:
        schema["items"] = _node_schema(node.items, required, additional, exact)
    return schema


def to_json_schema(inferred: InferredSchema, *, required: bool = True,
                   additional_properties: bool = True, exact_types: bool = False) -> dict[str, Any]:
    """A ``$jsonSchema`` document accepting every document of the sample ``inferred`` came from.

    Each field gets the ``bsonType`` (or list of types) seen, a numeric one as ``"number"`` (any of
    ``int``, ``long``, ``double``, ``decimal``: an application that writes ``36000`` for a field
    stored as ``36000.0`` sends an ``int``); ``exact_types=True`` keeps the exact numeric types
    seen. Embedded documents get their
    ``properties``; arrays get ``items`` (the types of all their elements). With ``required``, a
    field present in every sampled instance of its parent is ``required`` (so a field the sample
    happened to always see is required even if unsampled documents lack it: check the validator
    against the whole collection before enforcing it). ``additional_properties=False`` also refuses
    fields the sample never saw. Use it as ``{"$jsonSchema": to_json_schema(inferred)}``.
    Raises :class:`SchemaError` for an inference of no documents. Introduced in notebook 05.
    """
    if inferred.sampled == 0:
        raise SchemaError(f"to_json_schema: the inference of {inferred.source} saw no documents "
                          f"(an empty collection or filter), so it knows no fields: a validator "
                          f"from it would accept anything. Load data first or widen the filter.")
    return _node_schema(inferred._root, required, additional_properties, exact_types)


def one_of_by(field_name: str, schemas: Mapping[Any, Mapping[str, Any]], *,
              absent: Any = None) -> dict[str, Any]:
    """``{"oneOf": [...]}`` with one branch per value of a discriminating field (``recordType``,
    ``schemaVersion``): each branch is its schema with ``field_name`` pinned to its value (``enum``).
    The branch of ``absent`` also accepts documents without the field (version 1 before versioning
    existed); every other branch requires it. Introduced in notebook 05.
    """
    branches = []
    for value, schema in schemas.items():
        branch = {**schema, "properties": {**schema.get("properties", {}), field_name: {"enum": [value]}}}
        must = [k for k in schema.get("required", []) if k != field_name]
        if value != absent or absent is None:
            must.append(field_name)
        if must:
            branch["required"] = must
        else:
            branch.pop("required", None)
        branches.append(branch)
    return {"oneOf": branches}


# ------------------------------------------------------------------------------------------
# Enforce: validators, refusals
# ------------------------------------------------------------------------------------------
def set_validator(db: Any, name: str, json_schema: Mapping[str, Any] | None, *, level: str = "strict",
                  action: str = "error") -> dict[str, Any]:
    """Set (``collMod``) a collection's validator, ``validationLevel`` and ``validationAction``.

    ``json_schema=None`` removes the validator (``validator: {}``). Unknown levels and actions are
    refused here, before the command is sent (an engine may accept what MongoDB refuses). So is a
    collection the workbook did not create, and its own registry (``helpers.safety``): the workbook
    changes only what it made. Returns the collection's options as the server now reports them
    (``listCollections``). Introduced in notebook 05.
    """
    if level not in ("off", "strict", "moderate"):
        raise SchemaError(f"level={level!r}: use 'strict' (the default), 'moderate' or 'off'")
    if action not in ("error", "warn", "errorAndLog"):
        raise SchemaError(f"action={action!r}: use 'error' (the default), 'warn', or 'errorAndLog' "
                          f"(MongoDB 8.1 and later)")

    if name == REGISTRY:
        raise SchemaError(f"set_validator: {REGISTRY!r} is the workbook's own registry; a validator there "
                          f"would break every later workbook_collection(); pick one of your collections")
    if not is_workbook_collection(db, name):
        raise ForeignCollectionError(
            f"set_validator: the collection {name!r} in database {db.name!r} was not created by this "
            f"workbook, so the workbook will not change its validator. Create it with "
            f"helpers.workbook_collection(db, {name!r}) first, or run collMod yourself if it is yours.")
    validator = {} if json_schema is None else {"$jsonSchema": dict(json_schema)}
    db.command("collMod", name, validator=validator, validationLevel=level, validationAction=action)
    return validator_of(db, name)


def validation_rights(db: Any) -> dict[str, bool]:
    """Whether this database user may change a validator (``collMod``) and bypass one
    (``bypassDocumentValidation``), tried on a scratch collection of the workbook's, then dropped.

    On a shared server a student with only the ``readWrite`` role has neither (``dbAdmin`` has both):
    the server refuses with code 13 (Unauthorized). Only meaningful where validators are enforced.
    Introduced in notebook 05.
    """

    rights = {"collMod": False, "bypassDocumentValidation": False}
    with check_copies(db, "schema_rights_probe") as (name,):  # one per call, refused if somebody else's
        fresh_collection(db, name, validator={"$jsonSchema": {"required": ["a"]}})
        try:
            db.command("collMod", name, validationLevel="strict")
            rights["collMod"] = True
        except OperationFailure:
            pass
        try:
            db[name].insert_one({"b": 1}, bypass_document_validation=True)
            rights["bypassDocumentValidation"] = True
        except OperationFailure:
            pass
    return rights


def validator_of(db: Any, name: str) -> dict[str, Any]:
    """The collection's validation options as the server reports them (``listCollections``)."""
    for info in db.list_collections(filter={"name": name}):
        options = info.get("options", {})
        return {k: options[k] for k in ("validator", "validationLevel", "validationAction") if k in options}
    raise SchemaError(f"no collection {name!r} in database {db.name!r}")


@dataclass(frozen=True)
class WriteOutcome:
    """A write's fate: accepted, or refused with the server's code and reasons."""

    accepted: bool
    code: int | None = None
    reasons: tuple[str, ...] = ()
    error: str | None = None  # the error class, for anything other than a refusal

    def __str__(self) -> str:
        if self.accepted:
            return "accepted"
        head = f"refused, code {self.code}" if self.code is not None else f"failed: {self.error}"
        return head + "".join(f"\n    {r}" for r in self.reasons)


def try_write(write: Callable[[], Any]) -> WriteOutcome:
    """Run ``write`` and report whether the server accepted it; a refusal (code 121, "Document
    failed validation") carries its reasons, flattened from ``errInfo``. Introduced in notebook 05.
    """
    try:
        write()
        return WriteOutcome(True)
    except BulkWriteError as e:
        errors = e.details.get("writeErrors", [])
        first = errors[0] if errors else {}
        return WriteOutcome(False, first.get("code"), tuple(refusal_reasons(first.get("errInfo"))))
    except OperationFailure as e:
        info = (e.details or {}).get("errInfo")
        return WriteOutcome(False, e.code, tuple(refusal_reasons(info)))
    except NotImplementedError as e:
        return WriteOutcome(False, None, (), error=f"NotImplementedError: {e}")


def refusal_reasons(err_info: Mapping[str, Any] | None) -> list[str]:
    """``errInfo`` of a validation failure as readable lines: ``"lat: maximum 90, got 123.4"``.

    The server's ``errInfo.details`` nests one entry per failed rule; this walks it and names the
    field path of each failure. Introduced in notebook 05.
    """
    out: list[str] = []

    def walk(items: Any, path: str) -> None:
        for item in items or []:
            op = item.get("operatorName", "?")
            if op == "properties":
                for prop in item.get("propertiesNotSatisfied", []):
                    name = prop.get("propertyName", "?")
                    walk(prop.get("details"), f"{path}.{name}" if path else name)
            elif op == "required":
                out.append(f"{path or '(document)'}: missing required {', '.join(item.get('missingProperties', []))}")
            elif op == "items":
                walk(item.get("details"), f"{path}[{item.get('itemIndex', '?')}]")
            elif op in ("oneOf", "anyOf", "allOf"):
                branches = item.get("schemasNotSatisfied", [])
                if not branches and op == "oneOf":
                    out.append(f"{path or '(document)'}: oneOf: matches more than one schema "
                               f"({item.get('matchingSchemaIndexes', '?')})")
                for b in branches:
                    walk(b.get("details"), path + f"<{op} {b.get('index', '?')}>")
            elif op == "additionalProperties":
                out.append(f"{path or '(document)'}: fields not allowed: "
                           f"{', '.join(item.get('additionalProperties', []))}")
            else:
                spec = item.get("specifiedAs", {})
                got = item.get("consideredValue", item.get("consideredType", ""))
                rule = ", ".join(f"{k} {v}" for k, v in spec.items()) if spec else op
                out.append(f"{path or '(document)'}: {rule}, got {got!r}"
                           + (f" ({item['consideredType']})" if "consideredType" in item and
                              "consideredValue" in item else ""))

    details = (err_info or {}).get("details", {})
    walk([details] if details.get("operatorName") != "$jsonSchema" else details.get("schemaRulesNotSatisfied"), "")
    return out


# ------------------------------------------------------------------------------------------
# The same $jsonSchema subset, checked on the client (a labelled stand-in for engines that cannot)
# ------------------------------------------------------------------------------------------
_NUMBERS = ("int", "long", "double", "decimal")
_KEYWORDS = {"bsonType", "required", "properties", "additionalProperties", "items", "minimum",
             "maximum", "enum", "oneOf", "anyOf", "description", "title"}


def _type_ok(value: Any, wanted: Any) -> bool:
    kinds = [wanted] if isinstance(wanted, str) else list(wanted)
    actual = bson_type(value)
    return actual in kinds or ("number" in kinds and actual in _NUMBERS)


def _equal(a: Any, b: Any) -> bool:
    """BSON equality for enum: numbers compare by value (1 == 1.0), a bool is not a number."""
    ta, tb = bson_type(a), bson_type(b)
    if ta in _NUMBERS and tb in _NUMBERS:
        return float(a) == float(b)
    return ta == tb and a == b


def schema_violations(doc: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Why ``doc`` fails ``schema`` (empty list: it passes), for the ``$jsonSchema`` subset this
    module writes: ``bsonType``, ``required``, ``properties``, ``additionalProperties`` (boolean),
    ``items`` (one schema), ``minimum``, ``maximum``, ``enum``, ``oneOf``, ``anyOf``.

    A client-side stand-in, labelled as such, for an engine that does not validate; a real server's
    verdict is the reference (the tests compare the two on SecantusDB). Raises :class:`SchemaError`
    for any other keyword rather than guess. Introduced in notebook 05.
    """
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise SchemaError(f"schema_violations: keyword(s) {sorted(unknown)} not supported client-side; "
                          f"validate on a server that enforces $jsonSchema")
    where = path or "(document)"
    out: list[str] = []
    if "bsonType" in schema and not _type_ok(doc, schema["bsonType"]):
        return [f"{where}: bsonType {schema['bsonType']}, got {doc!r} ({bson_type(doc)})"]
    if "enum" in schema and not any(_equal(doc, v) for v in schema["enum"]):
        out.append(f"{where}: enum {schema['enum']}, got {doc!r}")
    if bson_type(doc) in _NUMBERS:
        if "minimum" in schema and doc < schema["minimum"]:
            out.append(f"{where}: minimum {schema['minimum']}, got {doc!r}")
        if "maximum" in schema and doc > schema["maximum"]:
            out.append(f"{where}: maximum {schema['maximum']}, got {doc!r}")
    if isinstance(doc, Mapping):
        missing = [k for k in schema.get("required", []) if k not in doc]
        if missing:
            out.append(f"{where}: missing required {', '.join(missing)}")
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key in doc:
                out += schema_violations(doc[key], sub, f"{path}.{key}" if path else key)
        if schema.get("additionalProperties") is False:
            extra = [k for k in doc if k not in props]
            if extra:
                out.append(f"{where}: fields not allowed: {', '.join(extra)}")
    if isinstance(doc, (list, tuple)) and isinstance(schema.get("items"), Mapping):
        for i, element in enumerate(doc):
            out += schema_violations(element, schema["items"], f"{path}[{i}]")
    for op in ("oneOf", "anyOf"):
        if op in schema:
            results = [schema_violations(doc, branch, path) for branch in schema[op]]
            passing = sum(1 for r in results if not r)
            if op == "anyOf" and passing == 0 or op == "oneOf" and passing != 1:
                out.append(f"{where}: {op}: {passing} of {len(results)} schemas match")
    return out


def count_valid(collection: Any, json_schema: Mapping[str, Any], *, server: bool) -> int:
    """How many documents of ``collection`` satisfy ``json_schema``: on the server with the
    ``$jsonSchema`` query operator (``server=True``), else checked client-side with
    :func:`schema_violations` (every document is read). Introduced in notebook 05.
    """
    if server:
        return collection.count_documents({"$jsonSchema": dict(json_schema)})
    return sum(1 for d in collection.find() if not schema_violations(d, json_schema))
