#!/usr/bin/env bash
# findings.sarif, as a CI system reads it: for the campaign that report_campaign.sh made, the
# log validates against the SARIF 2.1.0 schema, has one result per finding with a distinct
# signature fingerprint, and its locations resolve to files in the campaign folder (the reduced
# gelu finding points at its repro.py and names aten::gelu). The validator is shown to reject a
# log that breaks the schema, so a pass means something.
# Usage: report_sarif.sh SRC WORK SCHEMA
set -euo pipefail
SRC=$1; WORK=$2; SCHEMA=$3
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
S="$WORK/camp/findings.sarif"
[ -f "$S" ] || fail "$S missing: the report_campaign fixture did not run"
"$SRC/tools/sarif-schema.sh" "$SCHEMA" || fail "could not get the SARIF schema"
"$PY" "$SRC/tests/cli/sarif_validate.py" "$SCHEMA" "$S" || fail "findings.sarif does not validate"
"$PY" - "$S" "$WORK/camp/findings.jsonl" "$WORK/camp" "$WORK/broken.sarif" <<'PYEOF' || fail "findings.sarif does not say what the findings are"
import json, os, sys, urllib.parse
log, rows, camp = json.load(open(sys.argv[1])), [json.loads(l) for l in open(sys.argv[2])], sys.argv[3]
assert log["version"] == "2.1.0" and len(log["runs"]) == 1
run = log["runs"][0]
results = run["results"]
assert len(results) == len(rows) > 0, (len(results), len(rows))
fps = [r["partialFingerprints"]["flowmutSignature/v1"] for r in results]
assert len(set(fps)) == len(fps) and set(fps) == {r["key"] for r in rows}, "fingerprints are the findings' keys, distinct"
base = urllib.parse.urlparse(run["originalUriBaseIds"]["CAMPAIGN"]["uri"])
assert base.scheme == "file" and os.path.samefile(urllib.parse.unquote(base.path), camp), base
rules = run["tool"]["driver"]["rules"]
for r in results:
    assert rules[r["ruleIndex"]]["id"] == r["ruleId"], r["ruleId"]
    for loc in [l["physicalLocation"] for l in r["locations"]] + [l["physicalLocation"] for l in r.get("relatedLocations", [])]:
        a = loc["artifactLocation"]
        assert a["uriBaseId"] == "CAMPAIGN" and os.path.isfile(os.path.join(camp, a["uri"])), a
gelu = [r for r in results if r["locations"][0].get("logicalLocations", [{}])[0].get("name") == "aten::gelu"]
assert gelu and gelu[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("/repro.py"), "the gelu finding points at its repro.py"
assert gelu[0]["properties"]["reduction"]["repro_py"] == "REPRODUCED"
# A log that breaks the schema: a level SARIF does not have, a property it does not know.
results[0]["level"] = "fatal"
results[0]["signature"] = "x"
json.dump(log, open(sys.argv[4], "w"))
print("findings.sarif: %d results, %d rules, locations resolve" % (len(results), len(rules)))
PYEOF
if "$PY" "$SRC/tests/cli/sarif_validate.py" "$SCHEMA" "$WORK/broken.sarif" > "$WORK/broken.out"; then
  fail "the validator accepted a log with level 'fatal' and an unknown property"
fi
grep -q "fatal" "$WORK/broken.out" && grep -q "signature" "$WORK/broken.out" || { cat "$WORK/broken.out"; fail "the validator did not name both violations"; }
echo "report_sarif: all checks passed"
