"""Benchmark: ``helpers.schema.infer_documents`` against MongoDB's own schema analyser.

    .venv/bin/python bench/bench_schema.py [--repeat 7]

The reference is ``mongodb-schema`` (npm, the engine of Compass's schema view). Where Node.js and
npm are present, the benchmark installs ``mongodb-schema`` and ``bson`` into a private folder of its
own (``~/.cache/schema-workbook-bench``, made 0700; never into the project: the workbook's runtime
has no Node.js dependency) and runs both analysers on the same documents: the workbook's real
datasets, loaded by the checked loader into the mock and read back, then handed to Node.js as
canonical Extended JSON (so an int stays an Int32 and a float a Double). Each side is timed in its
own process on documents already in memory (parsing JSON is not timed), best of ``--repeat``, in
wall-clock time and in CPU time (Node.js's ``process.cpuUsage``, which also counts its garbage
collector's threads; Python's ``process_time``): on a busy machine CPU time measures the work.

The answers are compared too: every field path (``a.b``, ``a[]`` for array elements), the count of
values of each BSON type at that path, and the lengths of the arrays there (min, median, max).
Where Node.js is missing it says so and times the workbook's side alone.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from common import table  # noqa: E402

#: the collections compared: the workbook's real data at the default scale, of several shapes
COLLECTIONS = (("nyc_planes", "nyc_planes"), ("airlines", "airlines"), ("flare", "flare"),
               ("products", "products"), ("posts", "posts"))
PACKAGES = ("mongodb-schema@12.7.0", "bson@6")
NODE_DIR = Path.home() / ".cache" / "schema-workbook-bench"

#: mongodb-schema's type names, as ``helpers.schema.bson_type`` names them
TYPE_NAMES = {"String": "string", "Int32": "int", "Double": "double", "Long": "long", "Decimal128": "decimal",
              "Boolean": "bool", "Date": "date", "ObjectId": "objectId", "Null": "null", "Document": "object",
              "Array": "array", "Binary": "binData", "BSONRegExp": "regex", "Timestamp": "timestamp",
              "Code": "javascript", "MinKey": "minKey", "MaxKey": "maxKey", "Number": "double"}

NODE_SCRIPT = r"""
const fs = require('fs');
const { EJSON } = require('bson');
const { parseSchema } = require('mongodb-schema');
const [file, repeat] = [process.argv[2], Number(process.argv[3])];
const docs = EJSON.parse(fs.readFileSync(file, 'utf8'), { relaxed: false });
const median = a => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const flat = {};
function add(path, type) {
  if (type.name === 'Undefined') return;
  const f = flat[path] || (flat[path] = { types: {} });
  f.types[type.name] = (f.types[type.name] || 0) + type.count;
  if (type.name === 'Array') {
    const l = type.lengths;
    f.lengths = l.length ? [Math.min(...l), median(l), Math.max(...l)] : null;
    for (const t of type.types) add(path + '[]', t);
  } else if (type.name === 'Document') {
    for (const field of type.fields) for (const t of field.types) add(path + '.' + field.name, t);
  }
}
(async () => {
  let best = Infinity, bestCpu = Infinity, schema;
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    schema = await parseSchema(docs);
    const c = process.cpuUsage(c0);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
    bestCpu = Math.min(bestCpu, (c.user + c.system) / 1e3);
  }
  for (const field of schema.fields) for (const t of field.types) add(field.name, t);
  process.stdout.write(JSON.stringify({ ms: best, cpu_ms: bestCpu, fields: flat }));
})();
"""


def documents() -> dict[str, list[dict[str, Any]]]:
    """The compared collections' documents, as the checked loader types them (default scale)."""
    from helpers.backends import connect
    from helpers.datasets import load_dataset

    conn = connect("mock", db_name=f"wbbench_{uuid.uuid4().hex[:8]}", probe=False)
    try:
        out = {}
        for dataset, coll in COLLECTIONS:
            load_dataset(dataset, conn.db)
            out[coll] = list(conn.db[coll].find().sort("_id", 1))
        return out
    finally:
        conn.client.drop_database(conn.db.name)
        conn.close()


def workbook_side(docs: list[dict[str, Any]], repeat: int) -> tuple[float, float, dict[str, Any]]:
    from helpers.schema import infer_documents

    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = infer_documents(docs)
        best = min(best, (time.perf_counter() - t0) * 1000)
        best_cpu = min(best_cpu, (time.process_time() - c0) * 1000)
    assert result is not None
    fields = {}
    for path, f in result.fields.items():
        fields[path] = {"types": dict(f.types), "lengths": list(f.array_lengths) if f.array_lengths else None}
    return best, best_cpu, fields


def node_ready() -> str | None:
    """Why the reference cannot run here, or None when it can (installing it on first use)."""
    if not shutil.which("node") or not shutil.which("npm"):
        return "Node.js and npm are not installed: only the workbook's side is timed"
    if not (NODE_DIR / "node_modules" / "mongodb-schema").is_dir():
        NODE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        if NODE_DIR.stat().st_uid != os.getuid() or NODE_DIR.stat().st_mode & 0o022:
            return f"{NODE_DIR} is not a private folder of this user's: not installing there"
        (NODE_DIR / "package.json").write_text('{"name": "schema-workbook-bench", "private": true}\n')
        rc = subprocess.call(["npm", "install", "--silent", "--no-audit", "--no-fund", *PACKAGES], cwd=NODE_DIR,
                             stdout=subprocess.DEVNULL)
        if rc != 0:
            return f"npm install {' '.join(PACKAGES)} failed (exit {rc}): only the workbook's side is timed"
    return None


def node_side(docs: list[dict[str, Any]], repeat: int, tmp: Path) -> tuple[float, float, dict[str, Any]]:
    from bson import json_util

    data = tmp / "docs.json"
    data.write_text(json_util.dumps(docs, json_options=json_util.CANONICAL_JSON_OPTIONS))
    script = tmp / "parse.js"
    script.write_text(NODE_SCRIPT)
    env = {**os.environ, "NODE_PATH": str(NODE_DIR / "node_modules")}
    out = subprocess.run(["node", str(script), str(data), str(repeat)], env=env, capture_output=True, text=True,
                         check=True)
    got = json.loads(out.stdout)
    fields = {p: {"types": {TYPE_NAMES.get(k, k): v for k, v in f["types"].items()}, "lengths": f.get("lengths")}
              for p, f in got["fields"].items()}
    return got["ms"], got["cpu_ms"], fields


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    out = []
    for path in sorted(set(ours) | set(theirs)):
        a, b = ours.get(path), theirs.get(path)
        if a is None or b is None:
            out.append(f"{path}: only in {'mongodb-schema' if a is None else 'the workbook'}")
            continue
        if a["types"] != b["types"]:
            out.append(f"{path}: types {a['types']} vs {b['types']}")
        la, lb = a["lengths"], b["lengths"]
        if (la is None) != (lb is None) or (la and [float(x) for x in la] != [float(x) for x in lb]):
            out.append(f"{path}: array lengths {la} vs {lb}")
    return out


def compare(repeat: int = 7) -> tuple[list[dict[str, str]], bool, str | None]:
    """One row per collection (times, ratios, same answers), whether every answer was the same, and
    why mongodb-schema could not run (None when it ran)."""
    why_not = node_ready()
    if why_not:
        print(why_not)
    rows, all_same = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for name, docs in documents().items():
            ours_ms, ours_cpu, ours = workbook_side(docs, repeat)
            row = {"collection": name, "documents": len(docs), "paths": len(ours),
                   "workbook ms (CPU)": f"{ours_ms:.1f} ({ours_cpu:.1f})"}
            if not why_not:
                theirs_ms, theirs_cpu, theirs = node_side(docs, repeat, Path(tmp))
                diff = differences(ours, theirs)
                all_same &= not diff
                row.update({"mongodb-schema ms (CPU)": f"{theirs_ms:.1f} ({theirs_cpu:.1f})",
                            "ratio": f"{ours_ms / theirs_ms:.2f}x", "CPU ratio": f"{ours_cpu / theirs_cpu:.2f}x",
                            "same answers": "yes" if not diff else f"NO ({len(diff)})"})
                for d in diff[:5]:
                    print(f"  {name}: {d}")
            rows.append(row)
    return rows, all_same, why_not


def goal_rows(repeat: int = 7) -> list[dict[str, str]]:
    """``bench/run.py``'s rows: schema inference at most 1.00x mongodb-schema's CPU time, same answers."""
    rows, same, why_not = compare(repeat)
    if why_not:
        return [{"goal": "infer_documents vs mongodb-schema", "engine": "-", "measured": why_not, "ratio": "",
                 "bound": "<= 1.00x", "holds": "-"}]
    out = []
    for r in rows:
        ratio = float(r["CPU ratio"][:-1])
        out.append({"goal": f"infer_documents vs mongodb-schema 12.7, {r['collection']} ({r['documents']} docs)",
                    "engine": "none (in memory)", "measured": f"CPU ms {r['workbook ms (CPU)'].split('(')[1][:-1]} vs "
                    f"{r['mongodb-schema ms (CPU)'].split('(')[1][:-1]}, same answers: {r['same answers']}",
                    "ratio": f"{ratio:.2f}x", "bound": "<= 1.00x", "holds": "yes" if ratio <= 1.0 and same else "NO"})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per side; the best counts")
    args = parser.parse_args(argv)
    rows, all_same, why_not = compare(args.repeat)
    if why_not:
        print(why_not)
    print(table(rows))
    if not why_not:
        wall = statistics.geometric_mean([float(r["ratio"][:-1]) for r in rows])
        cpu = statistics.geometric_mean([float(r["CPU ratio"][:-1]) for r in rows])
        worst = max(float(r["CPU ratio"][:-1]) for r in rows)
        print(f"geometric mean ratio: wall {wall:.2f}x, CPU {cpu:.2f}x, worst CPU {worst:.2f}x (goal: at most "
              f"1.00x; best of {args.repeat} runs each; CPU time counts the work on a busy machine); "
              f"answers {'the same' if all_same else 'DIFFER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
