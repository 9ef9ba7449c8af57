"""test_schemas.py — every schema in schemas/ is a valid JSON Schema (2020-12), and the served
OpenAPI document is the one scripts/gen_openapi.py assembles from them."""
import json
import os
import subprocess
import sys
import unittest

import jsonschema

from harness import SOURCE


class Schemas(unittest.TestCase):
    def test_each_schema_is_valid(self):
        d = os.path.join(SOURCE, "schemas")
        names = [f for f in os.listdir(d) if f.endswith(".json") and f != "openapi.json"]
        self.assertGreater(len(names), 3)
        for fn in names:
            with self.subTest(schema=fn):
                with open(os.path.join(d, fn)) as f:
                    schema = json.load(f)
                jsonschema.Draft202012Validator.check_schema(schema)
                self.assertTrue(schema.get("$id", "").startswith("urn:fathom:schema:"), fn)

    def test_openapi_is_current(self):
        r = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "gen_openapi.py"), "--check"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
