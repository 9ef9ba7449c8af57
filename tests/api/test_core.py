"""test_core.py — fathomd's foundation: health, readiness, version, the transformer endpoint,
the result cache, every error class, restart, migrations and graceful shutdown."""
import json
import os
import shutil
import signal
import sqlite3
import tempfile
import unittest

from harness import SOURCE, Server, ServerTestCase, sqlite_only, validate

GPT2 = {"model": {"hidden": 768, "attn_heads": 12, "num_blocks": 12, "seq_size": 1024,
                  "vocab_size": 50257, "bias": False, "tied_embeddings": True}}


class Basics(ServerTestCase):
    def test_healthz(self):
        r = self.server.get("/healthz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), {"status": "ok"})
        self.assertRegex(r.header("X-Request-Id"), "^[0-9a-f]{32}$")

    def test_readyz(self):
        r = self.server.get("/readyz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["status"], "ready")
        self.assertGreaterEqual(r.json()["schema_version"], 1)

    def test_version(self):
        r = self.server.get("/v1/version")
        self.assertEqual(r.status, 200)
        v = r.json()
        self.assertIn("/v1/transformer", v["estimate_endpoints"])
        validate(v, "version.response.json")

    def test_estimator_version_is_the_digest_of_what_answers(self):
        # The digest is recomputed here from the tree: SHA-256 of "path sha256" lines over every
        # core/ and codec/ source and preset file, sorted by path. A build whose cache key missed
        # a change to any of them would serve an older estimator's answers after an upgrade.
        import glob
        import hashlib
        paths = []
        for pattern in ("core/**/*.c", "core/**/*.h", "codec/**/*.c", "codec/**/*.h",
                        "presets/**/*.json"):
            paths += glob.glob(pattern, root_dir=SOURCE, recursive=True)
        listing = ""
        for path in sorted(paths):
            with open(os.path.join(SOURCE, path), "rb") as f:
                listing += "%s %s\n" % (path, hashlib.sha256(f.read()).hexdigest())
        digest = hashlib.sha256(listing.encode()).hexdigest()[:16]
        self.assertEqual(self.server.get("/v1/version").json()["estimator_version"],
                         "2+" + digest)

    def test_openapi(self):
        r = self.server.get("/openapi.json")
        self.assertEqual(r.status, 200)
        doc = r.json()
        self.assertEqual(doc["openapi"], "3.1.0")
        self.assertIn("/v1/transformer", doc["paths"])

    def test_transformer_gpt2(self):
        r = self.server.post("/v1/transformer", GPT2)
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertEqual(out["params"]["total"], 124337664)
        self.assertEqual(out["flops"]["forward_total"], 291648307200)
        self.assertEqual(out["palm"]["flops_per_sequence"], 875062886400)
        validate(out, "transformer.response.json")

    def test_transformer_mfu_over_every_gpu(self):
        """batch_size is the step's global batch: MFU divides by the peak of all num_gpus GPUs
        (nanoGPT's notebook, 100 sequences in 0.755 s on one A100, is 37.14%; 1,024 GPUs running
        a global batch of 102,400 in the same time use the same fraction, not 1,024 times it)."""
        one = dict(GPT2, batch_size=100, measured_step_time_s=0.755, gpu_peak_flops=312e12)
        many = dict(one, batch_size=102400, num_gpus=1024)
        for body in (one, many):
            r = self.server.post("/v1/transformer", body)
            self.assertEqual(r.status, 200, r.body)
            self.assertAlmostEqual(r.json()["mfu"]["fraction"], 0.371429, places=5)
            self.assertFalse([w for w in r.json()["warnings"] if "mfu" in w])
        # the global batch without the GPUs that ran it: 1,024 times the peak, said in a warning
        r = self.server.post("/v1/transformer", {k: v for k, v in many.items() if k != "num_gpus"})
        self.assertEqual(r.status, 200, r.body)
        self.assertGreater(r.json()["mfu"]["fraction"], 1)
        self.assertTrue([w for w in r.json()["warnings"] if "give num_gpus" in w], r.json())

    def test_curl_default_form_content_type_is_json(self):
        r = self.server.post("/v1/transformer", json.dumps(GPT2),
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(r.status, 200, r.body)
        r = self.server.post("/v1/transformer", json.dumps(GPT2), headers={})
        self.assertEqual(r.status, 200, r.body)

    def test_cache_hit_same_body_and_hash(self):
        body = {"model": dict(GPT2["model"], seq_size=512), "tokens": 1e9}
        first = self.server.post("/v1/transformer", body)
        second = self.server.post("/v1/transformer", body)
        self.assertEqual(first.header("X-Fathom-Cache"), "miss")
        self.assertEqual(second.header("X-Fathom-Cache"), "hit")
        self.assertEqual(first.body, second.body)
        self.assertEqual(first.header("ETag"), second.header("ETag"))
        # Key order, whitespace and an explicit default do not change the hash.
        reordered = '{ "tokens" : 1e9,\n "model": {"tied_embeddings": true, "seq_size": 512, ' \
                    '"vocab_size": 50257, "num_blocks": 12, "attn_heads": 12, "hidden": 768, ' \
                    '"bias": false, "feedforward": 3072}, "backward_forward_ratio": 2.0 }'
        third = self.server.post("/v1/transformer", reordered)
        self.assertEqual(third.header("ETag"), first.header("ETag"))
        self.assertEqual(third.header("X-Fathom-Cache"), "hit")
        # The log line says hit or miss (written when the request completes, just after the
        # client has its answer).
        from harness import wait_until

        def caches():
            seen = {rec.get("cache") for rec in self.server.log_records() if rec.get("path") == "/v1/transformer"}
            return {"hit", "miss"} <= seen
        wait_until(caches, "log lines saying hit and miss")

    def test_result_link(self):
        r = self.server.post("/v1/transformer", dict(GPT2, tokens=2e9))
        h = r.header("ETag").strip('"')
        got = self.server.get("/v1/results/" + h)
        self.assertEqual(got.status, 200)
        doc = got.json()
        self.assertEqual(doc["hash"], h)
        self.assertEqual(doc["endpoint"], "transformer")
        self.assertEqual(doc["path"], "/v1/transformer")
        self.assertEqual(doc["response"], r.json())
        self.assertEqual(doc["request"]["model"]["hidden"], 768)
        self.assertError(self.server.get("/v1/results/" + "0" * 64), 404, "not_found")
        self.assertError(self.server.get("/v1/results/nothex"), 404, "not_found")


class Errors(ServerTestCase):
    def test_invalid_json_has_line_and_column(self):
        err = self.assertError(self.server.post("/v1/transformer", '{"model":\n  {"hidden": }'),
                               400, "invalid_json")
        self.assertEqual(err["line"], 2)
        self.assertGreater(err["column"], 0)

    def test_empty_body(self):
        self.assertError(self.server.post("/v1/transformer", ""), 400, "invalid_json")

    def test_nan_and_duplicates_are_invalid_json(self):
        self.assertError(self.server.post("/v1/transformer", '{"model": NaN}'), 400, "invalid_json")
        self.assertError(self.server.post("/v1/transformer", '{"tokens": 1, "tokens": 2}'), 400, "invalid_json")
        self.assertError(self.server.post("/v1/transformer", '[' * 1000 + ']' * 1000), 400, "invalid_json")

    def test_invalid_fields_name_the_field(self):
        m = GPT2["model"]
        cases = [
            ({}, "model"),
            ({"model": dict(m, hidden="768")}, "model.hidden"),                # wrong type
            ({"model": {k: v for k, v in m.items() if k != "seq_size"}}, "model.seq_size"),  # missing
            ({"model": dict(m, depth=3)}, "model.depth"),                      # unknown
            ({"model": dict(m, hidden=-768)}, "model.hidden"),                 # negative
            ({"model": dict(m, hidden=10**7)}, "model.hidden"),                # out of range
            ({"model": dict(m, hidden=2**53 + 1)}, "model.hidden"),            # past 2^53
            (dict(GPT2, mfu=0), "mfu"),
            (dict(GPT2, tokens=-1), "tokens"),
            (dict(GPT2, lora={"rank": 0}), "lora.rank"),
            ({"model": "not-a-preset"}, "model"),
        ]
        for body, field in cases:
            with self.subTest(field=field):
                self.assertError(self.server.post("/v1/transformer", body), 422, "invalid_field", field)

    def test_body_too_large(self):
        r = self.server.send_oversized("/v1/transformer", 1024 * 1024 + 1)
        self.assertError(r, 413, "body_too_large")
        r = self.server.send_oversized("/v1/transformer", 64 * 1024 * 1024, total=256 * 1024)
        self.assertError(r, 413, "body_too_large")

    def test_wrong_method(self):
        r = self.server.get("/v1/transformer")
        self.assertError(r, 405, "method_not_allowed")
        self.assertEqual(r.header("Allow"), "POST")
        r = self.server.post("/healthz", {})
        self.assertError(r, 405, "method_not_allowed")
        self.assertEqual(r.header("Allow"), "GET")

    def test_unknown_path(self):
        self.assertError(self.server.get("/v1/nothing"), 404, "not_found")
        self.assertError(self.server.post("/nothing", {}), 404, "not_found")

    def test_unsupported_media_type(self):
        r = self.server.post("/v1/transformer", json.dumps(GPT2), headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "unsupported_media_type")
        r = self.server.post("/v1/transformer", json.dumps(GPT2), headers={"Content-Type": "multipart/form-data; boundary=x"})
        self.assertError(r, 415, "unsupported_media_type")

    def test_errors_match_schema(self):
        validate(self.server.post("/v1/transformer", "{").json(), "error.json")
        validate(self.server.post("/v1/transformer", {}).json(), "error.json")


class Lifecycle(unittest.TestCase):
    def test_cache_survives_restart_and_shutdown_is_clean(self):
        tmp = tempfile.mkdtemp(prefix="fathom-api-")
        try:
            s = Server(db_dir=tmp).start()
            first = s.post("/v1/transformer", GPT2)
            self.assertEqual(first.header("X-Fathom-Cache"), "miss")
            self.assertEqual(s.stop(signal.SIGTERM), 0)
            self.assertTrue(any(r.get("msg") == "stopped cleanly" for r in s.log_records()))
            # A clean close checkpoints and removes the WAL.
            self.assertFalse(os.path.exists(s.db + "-wal"))
            s = Server(db_dir=tmp).start()
            again = s.post("/v1/transformer", GPT2)
            self.assertEqual(again.header("X-Fathom-Cache"), "hit")
            self.assertEqual(again.body, first.body)
            self.assertEqual(s.stop(signal.SIGINT), 0)
            # Hit counts are batched in memory and written at shutdown at the latest.
            s = Server(db_dir=tmp).start()
            h = first.header("ETag").strip('"')
            self.assertEqual(s.get("/v1/results/" + h).json()["hit_count"], 1)
            self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp)

    @sqlite_only
    def test_old_database_migrates_forward(self):
        tmp = tempfile.mkdtemp(prefix="fathom-api-")
        try:
            migrations = sorted(f for f in os.listdir(os.path.join(SOURCE, "migrations")) if f.endswith(".sql"))
            old = os.path.join(tmp, "old-migrations")
            os.mkdir(old)
            shutil.copy(os.path.join(SOURCE, "migrations", migrations[0]), old)
            s = Server(db_dir=tmp, extra_args=["--migrations", old]).start()
            self.assertEqual(s.get("/readyz").json()["schema_version"], 1)
            s.post("/v1/transformer", GPT2)
            self.assertEqual(s.stop(), 0)
            s = Server(db_dir=tmp).start()
            latest = int(migrations[-1][:4])
            self.assertEqual(s.get("/readyz").json()["schema_version"], latest)
            self.assertEqual(s.post("/v1/transformer", GPT2).header("X-Fathom-Cache"), "hit")
            self.assertEqual(s.stop(), 0)
            db = sqlite3.connect(s.db)
            self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], latest)
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual([r[0] for r in db.execute("SELECT version FROM schema_migrations ORDER BY version")],
                             [int(m[:4]) for m in migrations])
            db.close()
        finally:
            shutil.rmtree(tmp)

    @sqlite_only
    def test_misnamed_migration_is_refused(self):
        """A .sql file that is not NNNN_name.sql would be left out silently; it stops start-up."""
        for bad in ("12_short.sql", "0004-dash.sql", "00x4_letters.sql", "0004_UPPER.sql"):
            with self.subTest(name=bad):
                tmp = tempfile.mkdtemp(prefix="fathom-api-")
                try:
                    mig = os.path.join(tmp, "migrations")
                    shutil.copytree(os.path.join(SOURCE, "migrations"), mig)
                    with open(os.path.join(mig, bad), "w") as f:
                        f.write("SELECT 1;\n")
                    s = Server(db_dir=tmp, extra_args=["--migrations", mig])
                    with self.assertRaises(AssertionError):
                        s.start(timeout=10)
                    self.assertNotEqual(s.proc.wait(10), 0)
                    self.assertTrue(any(bad in line and "misnamed" in line for line in s.lines), s.lines)
                finally:
                    shutil.rmtree(tmp)

    @sqlite_only
    def test_corrupt_database_is_refused(self):
        tmp = tempfile.mkdtemp(prefix="fathom-api-")
        try:
            with open(os.path.join(tmp, "fathom.db"), "wb") as f:
                f.write(b"this is not a database" * 200)
            s = Server(db_dir=tmp)
            with self.assertRaises(AssertionError):
                s.start(timeout=10)
            self.assertNotEqual(s.proc.wait(10), 0)
            self.assertTrue(any("database" in line for line in s.lines), s.lines)
        finally:
            shutil.rmtree(tmp)

    def test_bad_flag_exits_2(self):
        s = Server(extra_args=["--threads", "zero"])
        with self.assertRaises(AssertionError):
            s.start(timeout=10)
        self.assertEqual(s.proc.wait(10), 2)
        s.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
