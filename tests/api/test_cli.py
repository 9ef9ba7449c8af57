"""test_cli.py — the `fathom` command line as a user meets it: exit statuses (0 success, 1 input
refused or output lost, 2 usage error), one-line messages naming what is wrong, --help on
stdout, files read whole or refused, and output that could not be written. No server: the CLI
computes locally.
"""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from harness import FATHOM_CLI, SOURCE

PRESETS = os.path.join(SOURCE, "presets")
COMMANDS = ["transformer", "presets", "from-hf-config", "estimate", "validate", "search", "plan",
            "scaling", "scaling-fit", "goodput", "calibrate", "infer", "serve-plan"]
SEARCH = ["search", "gpt3-175B", "8", "8", "float16", "a100_80g", "--threads", "2"]


def cli(args, stdin=None, **kw):
    """Runs fathom with args (str or bytes each); returns the CompletedProcess (bytes out)."""
    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([FATHOM_CLI, "--presets", PRESETS] + args, input=stdin,
                          stderr=subprocess.PIPE, timeout=300, **kw)


class CliCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fathom-cli-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp])

    def file(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w" if isinstance(text, str) else "wb") as f:
            f.write(text)
        return path

    def assertUsageError(self, out, command, *words):
        """Exit 2, nothing on stdout, stderr "fathom COMMAND: ..." naming every word, then the
        hint to run --help."""
        err = out.stderr.decode(errors="replace")
        self.assertEqual(out.returncode, 2, err)
        self.assertEqual(out.stdout, b"")
        lines = err.splitlines()
        self.assertEqual(len(lines), 2, err)
        self.assertTrue(lines[0].startswith("fathom %s: " % command), err)
        for w in words:
            self.assertIn(w, lines[0])
        self.assertIn("fathom %s --help" % command, lines[1])


class Utf8Arguments(CliCase):
    """An argument that is not UTF-8 cannot be a JSON string: refused, named, never dropped."""

    def test_search_datatype(self):
        self.assertUsageError(cli(SEARCH[:4] + [b"float\xff", "a100_80g"]), "search", "DATATYPE",
                              "UTF-8")

    def test_search_value_options(self):
        for flag, value in [("--zero-stage", b"\xff"), ("--fused-activation", b"\xff\xfe"),
                            ("--attention-kernel", b"fused\xff")]:
            self.assertUsageError(cli(SEARCH + [flag, value]), "search", flag, "UTF-8")

    def test_search_finetune(self):
        out = cli(SEARCH + ["--finetune",
                            b'{"method":"lora","rank":16,"targets":["q_proj\xff"]}'])
        self.assertUsageError(out, "search", "--finetune", "UTF-8")

    def test_preset_names(self):
        ex = self.file("ex.json", '{"tensor_par": 1}')
        self.assertUsageError(cli(["estimate", b"megatron-1T\xff", ex, "a100_80g"]), "estimate",
                              "MODEL", "UTF-8")
        self.assertUsageError(cli(["estimate", "megatron-1T", ex, b"a100\xff"]), "estimate",
                              "SYSTEM", "UTF-8")
        self.assertUsageError(cli(["search", "gpt3-175B", "8", "8", "float16", b"a\xff"]),
                              "search", "SYSTEM", "UTF-8")

    def test_csv_not_utf8(self):
        path = self.file("bad.csv", b"compute,loss\n1e18,3\xff\n")
        out = cli(["scaling-fit", path])
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"not valid UTF-8", out.stderr)


class Threads(CliCase):
    def test_range_is_named(self):
        self.assertUsageError(cli(SEARCH + ["--threads", "300"]), "search", "--threads", "256")
        plan = self.file("plan.json", "{}")
        self.assertUsageError(cli(["plan", plan, "--threads", "0"]), "plan", "--threads")
        self.assertUsageError(cli(["serve-plan", plan, "--threads", "257"]), "serve-plan",
                              "--threads")

    def test_default_follows_the_affinity_mask(self):
        # On one allowed CPU the search runs one worker: the process never has more than the
        # main thread and one other. The default counted every online core before.
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("one CPU: nothing to tell apart")
        p = subprocess.Popen([FATHOM_CLI, "--presets", PRESETS, "search", "llama3-70B", "64", "64",
                              "bfloat16", "h100_sxm"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, preexec_fn=lambda: os.sched_setaffinity(0, {
                                 min(os.sched_getaffinity(0))}))
        most = 0
        try:
            while p.poll() is None:
                try:
                    most = max(most, len(os.listdir("/proc/%d/task" % p.pid)))
                except FileNotFoundError:
                    break
                time.sleep(0.01)
        finally:
            p.kill()
            p.wait()
        self.assertGreater(most, 0)
        self.assertLessEqual(most, 2)


class Files(CliCase):
    def test_csv_over_the_body_limit_is_refused_not_cut(self):
        path = self.file("big.csv", "compute,loss\n" + "1e18,3.0\n" * 120000)
        self.assertGreater(os.path.getsize(path), 1 << 20)
        out = cli(["scaling-fit", path])
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stdout, b"")
        self.assertIn(b"too large", out.stderr)
        self.assertIn(b"1048576", out.stderr)

    def test_json_over_the_body_limit(self):
        path = self.file("big.json", '{"gpu": "V100", "pad": "%s"}' % ("x" * (1 << 20)))
        out = cli(["scaling", path])
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"too large", out.stderr)

    def test_directory_is_named(self):
        ex = self.file("ex.json", '{"tensor_par": 1}')
        for args in (["scaling", self.tmp], ["plan", self.tmp],
                     ["estimate", self.tmp, ex, "a100_80g"],
                     ["estimate", "megatron-1T", ex, self.tmp]):
            out = cli(args)
            self.assertEqual(out.returncode, 1, args)
            self.assertEqual(out.stdout, b"", args)
            self.assertIn(b"Is a directory", out.stderr, args)
            self.assertNotIn(b"empty", out.stderr, args)
            self.assertNotIn(b"preset", out.stderr, args)

    def test_csv_from_stdin(self):
        csv = os.path.join(SOURCE, "tests", "data", "scaling", "loss_vs_compute.csv")
        with open(csv, "rb") as f:
            text = f.read()
        by_name = cli(["scaling-fit", csv])
        by_stdin = cli(["scaling-fit", "-"], stdin=text)
        self.assertEqual(by_name.returncode, 0, by_name.stderr)
        self.assertEqual(by_stdin.returncode, 0, by_stdin.stderr)
        self.assertEqual(json.loads(by_stdin.stdout), json.loads(by_name.stdout))

    def test_plan_from_stdin(self):
        body = {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "batch_tokens": 1048576,
                "systems": ["h100_sxm"], "gpu_counts": [8]}
        path = self.file("plan.json", json.dumps(body))
        by_name = cli(["plan", path, "--json"])
        by_stdin = cli(["plan", "-", "--json"], stdin=json.dumps(body).encode())
        self.assertEqual(by_stdin.returncode, 0, by_stdin.stderr)
        self.assertEqual(json.loads(by_stdin.stdout), json.loads(by_name.stdout))

    def test_stdin_is_read_once(self):
        out = cli(["estimate", "-", "-", "a100_80g"], stdin=b'"megatron-1T"')
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"standard input", out.stderr)
        self.assertIn(b"twice", out.stderr)


class WriteErrors(CliCase):
    def test_full_disk(self):
        with open("/dev/full", "wb") as full:
            for args in (["presets"], ["validate"]):
                out = cli(args, stdout=full)
                self.assertEqual(out.returncode, 1, args)
                self.assertIn(b"cannot write the output", out.stderr)
                self.assertIn(b"No space left", out.stderr)

    def test_closed_stdout(self):
        out = subprocess.run([FATHOM_CLI, "--presets", PRESETS, "presets"],
                             stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"cannot write the output", out.stderr)

    def test_broken_pipe_with_sigpipe_ignored(self):
        r, w = os.pipe()
        os.close(r)
        try:
            out = subprocess.run([FATHOM_CLI, "--presets", PRESETS, "presets"], stdout=w,
                                 stderr=subprocess.PIPE, timeout=60, restore_signals=False,
                                 preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
        finally:
            os.close(w)
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"Broken pipe", out.stderr)


class Numbers(CliCase):
    def test_top_n_whole_and_in_range(self):
        for flag in ("--top-n", "-t"):
            for junk in ("3.5", "2abc", "1e2", "abc", "", " 2"):
                self.assertUsageError(cli(SEARCH + [flag, junk]), "search", flag,
                                      "'%s'" % junk)
            self.assertUsageError(cli(SEARCH + [flag, "101"]), "search", flag, "100")
        out = cli(SEARCH + ["-t", "3"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(len(json.loads(out.stdout)["best"]), 3)

    def test_every_sweep_option_has_a_flag(self):
        # the search's options (schemas/sweep_optimal_execution.request.json) each have a flag
        # whose value the codec checks as it checks the sweep's: a bad one is the request's 422,
        # exit 1 with the error naming options.<name>
        flags = {"stack": "--stack", "compile": "--compile", "loss_kernel": "--loss-kernel",
                 "low_precision_gradients": "--low-precision-gradients"}
        for option, flag in flags.items():
            out = cli(SEARCH + [flag, "sometimes"])
            self.assertEqual(out.returncode, 1, (flag, out.stderr))
            self.assertEqual(json.loads(out.stdout)["error"]["field"], "options." + option)
        help_text = cli(["search", "--help"]).stdout.decode()
        with open(os.path.join(SOURCE, "schemas", "sweep_optimal_execution.request.json")) as f:
            schema = json.load(f)
        for name in schema["properties"]["options"]["properties"]:
            self.assertIn("--" + name.replace("_", "-"), help_text, name)

    def test_threads(self):
        self.assertUsageError(cli(SEARCH[:-1] + ["1.5"]), "search", "--threads", "'1.5'")
        plan = self.file("plan.json", "{}")
        self.assertUsageError(cli(["plan", plan, "--threads", "2x"]), "plan", "--threads")

    def test_positional_numbers(self):
        self.assertUsageError(cli(["search", "gpt3-175B", "", "8", "float16", "a100_80g"]),
                              "search", "NUM_PROCS")
        self.assertUsageError(cli(["search", "gpt3-175B", "8", "8x", "float16", "a100_80g"]),
                              "search", "MAX_BATCH")

    def test_value_missing(self):
        self.assertUsageError(cli(SEARCH + ["--top-n"]), "search", "--top-n", "needs a value")
        self.assertUsageError(cli(SEARCH + ["--zero-stage"]), "search", "--zero-stage",
                              "needs a value")
        self.assertUsageError(cli(["validate", "--runs"]), "validate", "--runs")
        self.assertUsageError(cli(["estimate", "a", "b", "c", "--training"]), "estimate",
                              "--training")


class ValidateRuns(CliCase):
    def rows(self):
        with open(os.path.join(PRESETS, "validation", "measured_runs.json")) as f:
            return json.load(f)

    def run_rows(self, rows):
        return cli(["validate", "--runs", self.file("rows.json", json.dumps(rows)), "--json"])

    def test_wrong_types_name_the_row_and_field(self):
        rows = self.rows()
        for key, value in [("tp", "4"), ("micro_batch", "2"), ("vp", "5"), ("hidden", 8192.5),
                           ("moe", "false"), ("gpu_type", 100),
                           ("tokens_per_s_per_gpu", "1664")]:
            bad = dict(rows[0], **{key: value})
            out = self.run_rows([rows[1], bad])
            self.assertEqual(out.returncode, 1, key)
            err = json.loads(out.stdout)["error"]
            self.assertEqual(err["field"], "runs[1].%s" % key)
            self.assertIn("row %s" % rows[0]["id"], err["message"])

    def test_integral_real_is_the_integer(self):
        # 2.0 is read as 2 (as every request reads integers), not as absent (1)
        rows = self.rows()
        row = next(r for r in rows if r.get("micro_batch") == 2)
        as_int = json.loads(self.run_rows([row]).stdout)
        as_real = json.loads(self.run_rows([dict(row, micro_batch=2.0)]).stdout)
        self.assertEqual(as_real["rows"][0]["estimated"], as_int["rows"][0]["estimated"])

    def test_rows_that_are_not_objects_estimate_nothing(self):
        out = self.run_rows([1, 2])
        self.assertEqual(out.returncode, 1)
        self.assertEqual(json.loads(out.stdout)["rows_estimated"], 0)
        self.assertIn(b"none of the 2 rows could be estimated", out.stderr)

    def test_no_row_estimated_fails(self):
        rows = self.rows()
        out = self.run_rows([dict(rows[0], gpu_type="TPU v5"), dict(rows[1], gpu_type="TPU")])
        self.assertEqual(out.returncode, 1)
        self.assertEqual(json.loads(out.stdout)["rows_estimated"], 0)
        self.assertIn(b"none of the 2 rows could be estimated", out.stderr)

    def test_descriptive_keys_are_left_alone(self):
        # the format is open to what a source states (doc/measured_runs.md)
        rows = self.rows()
        plain = json.loads(self.run_rows([rows[0]]).stdout)
        more = self.run_rows([dict(rows[0], url="https://example.com", run_date="2025-01-01")])
        self.assertEqual(more.returncode, 0)
        self.assertEqual(json.loads(more.stdout)["rows"][0]["estimated"],
                         plain["rows"][0]["estimated"])


class PlanMarks(CliCase):
    def test_no_pick_marks_nothing(self):
        # a deadline and budget no candidate meets: cheapest_within_deadline and
        # fastest_within_budget are null, so no row is C or F (candidate 0 was both)
        body = {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "batch_tokens": 1048576,
                "systems": ["h100_sxm"], "gpu_counts": [8, 16], "deadline_days": 0.0001,
                "budget_dollars": 1}
        path = self.file("plan.json", json.dumps(body))
        plan = json.loads(cli(["plan", path, "--json"]).stdout)
        self.assertIsNone(plan["cheapest_within_deadline"])
        self.assertIsNone(plan["fastest_within_budget"])
        out = cli(["plan", path])
        self.assertEqual(out.returncode, 0)
        rows = out.stdout.decode().splitlines()[1:1 + len(plan["candidates"])]
        self.assertEqual(len(rows), 2)
        for row in rows:
            self.assertEqual(row[1:3], "  ", row)

    def test_picks_are_marked(self):
        body = {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "batch_tokens": 1048576,
                "systems": ["h100_sxm"], "gpu_counts": [8, 16]}
        path = self.file("plan.json", json.dumps(body))
        plan = json.loads(cli(["plan", path, "--json"]).stdout)
        rows = cli(["plan", path]).stdout.decode().splitlines()[1:3]
        for k, mark in (("cheapest_within_deadline", "C"), ("fastest_within_budget", "F")):
            pick = plan[k]["index"]
            col = 1 if mark == "C" else 2
            self.assertEqual([r[col] for r in rows], [mark if i == pick else " "
                                                      for i in range(2)])


class Help(CliCase):
    def test_help_on_stdout_exit_0(self):
        for c in COMMANDS:
            for flag in ("--help", "-h"):
                out = cli([c, flag])
                self.assertEqual(out.returncode, 0, (c, flag, out.stderr))
                self.assertEqual(out.stderr, b"", c)
                self.assertTrue(out.stdout.startswith(b"usage: fathom " + c.encode()), c)
            self.assertEqual(cli(["help", c]).stdout, cli([c, "--help"]).stdout)

    def test_unknown_option_anywhere_is_an_error(self):
        for c in COMMANDS:
            self.assertUsageError(cli([c, "--bogus", "--help"]), c, "unknown option --bogus")
            self.assertUsageError(cli([c, "--help", "--bogus"]), c, "unknown option --bogus")

    def test_usage_errors_say_what_is_wrong(self):
        self.assertUsageError(cli(["validate", "--measured", "--inference"]), "validate",
                              "--measured", "--inference")
        self.assertUsageError(cli(["estimate", "--foo", "a", "b", "c"]), "estimate", "--foo")
        self.assertUsageError(cli(["estimate", "a", "b"]), "estimate", "3 arguments")
        self.assertUsageError(cli(["plan"]), "plan", "FILE")
        self.assertUsageError(cli(["scaling", "a", "b"]), "scaling", "'b'")
        self.assertUsageError(cli(["presets", "x"]), "presets", "'x'")

    def test_top_level_usage_errors(self):
        # --help before an unknown global option does not hide it (doc/operations.md)
        for args in ([], ["bogus"], ["--bogus"], ["help", "bogus"], ["--help", "--bogus"],
                     ["--bogus", "--help"]):
            out = cli(args)
            self.assertEqual(out.returncode, 2, args)
            lines = out.stderr.decode().splitlines()
            self.assertEqual(len(lines), 2, (args, lines))
            self.assertTrue(lines[0].startswith("fathom"), lines)
            self.assertIn("fathom --help", lines[1])

    def test_unknown_preset_points_to_the_presets_command(self):
        ex = self.file("ex.json", '{"tensor_par": 1}')
        out = cli(["estimate", "no-such-model", ex, "a100_80g"])
        self.assertEqual(out.returncode, 1)
        err = json.loads(out.stdout)["error"]
        self.assertEqual(err["field"], "model")
        self.assertIn("fathom presets lists them", err["message"])
        self.assertNotIn("/v1/presets", err["message"])

    def test_exit_statuses_are_documented(self):
        out = cli(["--help"])
        self.assertEqual(out.returncode, 0)
        self.assertIn(b"Exit status", out.stdout)
        self.assertIn(b"fathom help COMMAND", out.stdout)


if __name__ == "__main__":
    unittest.main()
