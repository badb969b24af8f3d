"""Validates SARIF files against the SARIF 2.1.0 JSON schema (draft-04) with Debian's
python3-jsonschema, formats included where jsonschema can check them.
Usage: sarif_validate.py SCHEMA FILE...  Prints each violation with its JSON path; exit 1 if any."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
bad = 0
for path in sys.argv[2:]:
    errors = sorted(validator.iter_errors(json.load(open(path))), key=lambda e: list(e.absolute_path))
    for e in errors:
        print("%s: %s: %s" % (path, "/".join(map(str, e.absolute_path)) or "(root)", e.message))
    print("%s: %s" % (path, "valid SARIF 2.1.0" if not errors else "%d violation(s)" % len(errors)))
    bad += bool(errors)
sys.exit(1 if bad else 0)
